"""A fast tanh for the stacked grid trainer, with its error bound.

``torch.tanh`` costs about 3 ns an element in float32 on one AVX2 core
(three times ``exp``); in the grid trainer's compiled step (176 cells of
the paper's toy) the two tanh layers took ~13 % of the time.
:func:`tanh_fast` computes tanh(x) = e / (e + 2) with e = expm1(2x), on x
clipped to [-20, 20] (where tanh is 1 to within 1e-17). Its absolute error
is at most :data:`ABS_ERROR_EPS` machine epsilons of the dtype (measured
against an extended-precision tanh: 1.24 eps in float32, 1.25 in float64;
``torch.tanh`` 0.5), eager and compiled, tested on a dense grid and on
random inputs. Eager, its relative error is also a few eps (``expm1`` is
accurate near 0; tested). Under ``torch.compile`` the CPU backend computes
``expm1`` as ``exp(x) - 1``: the absolute error stays within the bound, but
the relative error grows like eps / (2|x|) for small |x| (1e-3 relative
below |x| ~ 1e-4 in float32), where tanh(x) ~ x is a rounding-level
contribution to the next layer's sums. Compiled is the only place the fast
tanh pays: eager it is five element-wise passes and slower than
``torch.tanh``.

The exact switch is ``train_grid(..., tanh="exact")``: ``torch.tanh``,
the function of ``nn.Tanh`` in the single-run trainer.
"""

from __future__ import annotations

import torch

__all__ = ["ABS_ERROR_EPS", "TANH_CHOICES", "tanh_fast", "tanh_of"]

ABS_ERROR_EPS = 2.0
"""Bound on |tanh_fast(x) - tanh(x)| in machine epsilons of x's dtype (measured: 1.24 in float32, 1.25 in
float64)."""

TANH_CHOICES = ("fast", "exact")
CLIP = 20.0


def tanh_fast(x: torch.Tensor) -> torch.Tensor:
    """tanh(x) from one ``expm1`` and a division; same shape and dtype as ``x``."""
    e = torch.expm1(2 * x.clamp(-CLIP, CLIP))
    return e / (e + 2)


def tanh_of(name: str):
    """The tanh function for ``name`` in :data:`TANH_CHOICES` (ValueError naming ``tanh`` otherwise)."""
    if name == "fast":
        return tanh_fast
    if name == "exact":
        return torch.tanh
    raise ValueError(f"tanh must be one of {TANH_CHOICES}, got {name!r}")
