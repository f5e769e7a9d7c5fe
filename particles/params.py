"""Parameters of the clustering-and-alignment force law (SPEC section 1)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = ["ForceParams", "ALIGNMENTS", "ALIGNMENT_FORMS"]

#: How the alignment force moves a pair sum: ``"gradient"`` is the exact
#: -dU_ali/ds; ``"polar"`` keeps only the turning part and makes the angular
#: rate equal to the torque, f = |s|^2 f_grad - (s . f_grad) s.
ALIGNMENTS = ("gradient", "polar")
#: Which alignment energy: ``"cosine"`` is SPEC's baseline on c; ``"axial"``
#: uses c**2, so a class is aligned when its pair sums lie on one line
#: through the origin (either sign), as they do in a perfect circle.
ALIGNMENT_FORMS = ("cosine", "axial")


@dataclass(frozen=True)
class ForceParams:
    """Parameters of the energy U = U_clu + lam U_ali + (wd/2) sum |x|^2.

    Attributes
    ----------
    k_a, sig_a : float
        Strength (>= 0) and range (> 0) of the Gaussian attraction between
        same-class pair sums.
    k_r, sig_r : float
        Strength (>= 0) and range (> 0) of the Gaussian repulsion between
        different-class pair sums.
    lam : float
        Weight (>= 0) of the alignment energy; 0 switches alignment off.
    sig_t : float
        Angular range (> 0) of the repulsion between different-class
        directions, exp(-(1 - c) / sig_t**2).
    eps : float
        Softening (> 0) of the norm in the cosine, rho(s) = sqrt(|s|^2 + eps^2);
        pair sums much shorter than eps carry little direction.
    wd : float
        Weight decay (>= 0): a force -wd x on every particle.
    alignment : {"gradient", "polar"}
        Exact gradient of U_ali, or the torque-driven variant (not a gradient).
    alignment_form : {"cosine", "axial"}
        Baseline cosine energy, or the axial variant on c**2.

    The defaults are the clustering-only setting that forms grids (SPEC
    section 1): k_a = 3, sig_a = 3, k_r = 1, sig_r = 1, wd = 0.1, lam = 0.
    """

    k_a: float = 3.0
    sig_a: float = 3.0
    k_r: float = 1.0
    sig_r: float = 1.0
    lam: float = 0.0
    sig_t: float = 0.2
    eps: float = 1.0
    wd: float = 0.1
    alignment: str = "gradient"
    alignment_form: str = "cosine"

    def __post_init__(self) -> None:
        for name in ("k_a", "sig_a", "k_r", "sig_r", "lam", "sig_t", "eps", "wd"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"ForceParams.{name} must be a real number, got {type(value).__name__}")
            if not math.isfinite(value):
                raise ValueError(f"ForceParams.{name} must be finite, got {value}")
            object.__setattr__(self, name, float(value))
        for name in ("k_a", "k_r", "lam", "wd"):
            if getattr(self, name) < 0:
                raise ValueError(f"ForceParams.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("sig_a", "sig_r", "sig_t", "eps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ForceParams.{name} must be > 0, got {getattr(self, name)}")
        if self.alignment not in ALIGNMENTS:
            raise ValueError(f"ForceParams.alignment must be one of {ALIGNMENTS}, got {self.alignment!r}")
        if self.alignment_form not in ALIGNMENT_FORMS:
            raise ValueError(f"ForceParams.alignment_form must be one of {ALIGNMENT_FORMS}, got {self.alignment_form!r}")

    @property
    def is_gradient(self) -> bool:
        """True when the forces are -grad U (so U decreases along the flow)."""
        return self.alignment == "gradient" or self.lam == 0.0

    def replace(self, **changes: Any) -> "ForceParams":
        """A copy with some fields changed (validated again)."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"unknown ForceParams field(s): {sorted(unknown)}")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def as_array(self):
        """The numeric parameters in the order the compiled kernels expect."""
        import numpy as np

        return np.array([self.k_a, self.sig_a, self.k_r, self.sig_r, self.lam, self.sig_t, self.eps, self.wd,
                         float(ALIGNMENTS.index(self.alignment)), float(ALIGNMENT_FORMS.index(self.alignment_form))])
