"""AdamW for stacked models: one learning rate and weight decay per member.

The formulas of ``torch.optim.AdamW`` (single-tensor form, amsgrad off),
applied element-wise to parameters stacked along a leading axis, so every
member of a stack (a grid cell, a seed) gets exactly the update the
single-model optimiser would give it.
"""

from __future__ import annotations

import torch

__all__ = ["BETAS", "EPS", "adamw_update", "adamw_scalars"]

BETAS = (0.9, 0.999)
EPS = 1e-8


def adamw_scalars(lr: torch.Tensor, weight_decay: torch.Tensor, t: int, dtype: torch.dtype
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(decay, step_size, bias_correction2_sqrt)`` of update number ``t`` (1-based).

    ``lr`` and ``weight_decay`` are float64 tensors with one entry per member;
    decay = 1 - lr * weight_decay and step_size = lr / (1 - beta1^t) are
    computed in float64 and rounded once to ``dtype``, as torch rounds its
    Python-float scalars. All three live on ``lr``'s device (the stack's)."""
    bias_correction1 = 1 - BETAS[0] ** t
    bc2s = torch.tensor((1 - BETAS[1] ** t) ** 0.5, dtype=torch.float64, device=lr.device)
    return (1 - lr * weight_decay).to(dtype), (lr / bias_correction1).to(dtype), bc2s


def adamw_update(params: list[torch.Tensor], grads: list[torch.Tensor], exp_avgs: list[torch.Tensor],
                 exp_avg_sqs: list[torch.Tensor], decays: list[torch.Tensor], step_sizes: list[torch.Tensor],
                 bias_correction2_sqrt: torch.Tensor) -> None:
    """One AdamW step in place, with ``decays`` and ``step_sizes`` of shape
    (members,) per parameter (see :func:`adamw_scalars`)."""
    for p, g, m, v, decay, step in zip(params, grads, exp_avgs, exp_avg_sqs, decays, step_sizes):
        shape = (p.shape[0],) + (1,) * (p.dim() - 1)
        p.mul_(decay.view(shape))
        m.lerp_(g, 1 - BETAS[0])
        v.mul_(BETAS[1]).addcmul_(g, g, value=1 - BETAS[1])
        denom = (v.sqrt() / bias_correction2_sqrt).add_(EPS)
        p.sub_(step.view(shape) * m / denom)
