"""The hand-written forward (and, for the toy decoder, backward) passes of
the stacked trainers: B networks of the same shape with a leading run axis,
each layer one batched matrix product. They compute, run by run, what the
``nn.Module`` classes of :mod:`fitting.training.models` compute (tested to
float rounding against them), on the device their inputs are on (the index
tensors they make are made there)."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .activations import tanh_fast
from .models import predict_labels

__all__ = ["survival_mlp_forward", "constant_attention_forward", "loss_and_accuracy", "pair_incidence",
           "decoder_step"]


def survival_mlp_forward(E: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor,
             w3: torch.Tensor, b3: torch.Tensor, pairs: torch.Tensor, labels: torch.Tensor,
             d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-run mean cross-entropy (B,) and logits (B, n, p) of B stacked MLPs
    (the sequential model's factored first layer, one batched product per half).

    The gathers use flat row indices into (B * p, hidden) and the loss a
    (B * n, p) view, so neither the gather's backward nor the cross-entropy
    copies a transposed tensor (13 % faster in float64)."""
    B, p = E.shape[0], E.shape[1]
    n = pairs.shape[1]
    hidden = w1.shape[1]
    offset = (torch.arange(B, device=pairs.device) * p)[:, None]
    proj_a = torch.bmm(E, w1[:, :, :d].transpose(1, 2)).reshape(B * p, hidden)
    proj_b = torch.bmm(E, w1[:, :, d:].transpose(1, 2)).reshape(B * p, hidden)
    rows_a = (pairs[..., 0] + offset).reshape(-1)
    rows_b = (pairs[..., 1] + offset).reshape(-1)
    x = F.silu((proj_a.index_select(0, rows_a) + proj_b.index_select(0, rows_b)).view(B, n, hidden)
               + b1[:, None, :])
    x = F.silu(torch.baddbmm(b2[:, None, :], x, w2.transpose(1, 2)))
    logits = torch.baddbmm(b3[:, None, :], x, w3.transpose(1, 2))
    losses = F.cross_entropy(logits.reshape(B * n, -1), labels.reshape(-1), reduction="none").view(B, n).mean(dim=1)
    return losses, logits


def constant_attention_forward(embedding: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor,
             pairs: torch.Tensor) -> torch.Tensor:
    """Logits (runs, n, p) of the stacked network on ``pairs`` (runs, n, 2)."""
    rows = torch.arange(embedding.shape[0], device=embedding.device)[:, None]
    s = embedding[rows, pairs[..., 0]] + embedding[rows, pairs[..., 1]]
    h = F.relu(torch.baddbmm(b1[:, None, :], s, w1))
    return torch.baddbmm(b2[:, None, :], h, w2)


def loss_and_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    loss = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none").mean(dim=1)
    acc = (logits.detach().argmax(dim=2) == labels).to(torch.float64).mean(dim=1)
    return loss, acc


def pair_incidence(pairs: torch.Tensor, p: int, dtype: torch.dtype) -> torch.Tensor:
    """(C, p, n): how often symbol i occurs in training pair r of each cell
    (pairs (C, n, 2))."""
    symbols = torch.arange(p, device=pairs.device)[None, :, None]
    return (pairs[:, None, :, 0] == symbols).to(dtype) + (pairs[:, None, :, 1] == symbols).to(dtype)


def decoder_step(x_train: torch.Tensor, x_val: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor,
                  b2: torch.Tensor, w3: torch.Tensor, b3: torch.Tensor, train_labels: torch.Tensor,
                  val_labels: torch.Tensor, targets: torch.Tensor, classification: bool,
                  fast_tanh: bool = False, incidence: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Forward of the stacked tanh decoders on the training and validation
    inputs together, and the backward of the per-cell training loss, written
    out (no autograd).

    Shapes: ``x_*`` (C, n, in), ``w_k`` (C, in_k, out_k) (weights stored
    transposed), ``b_k`` (C, out_k), labels (C, n) and (C, m), ``targets``
    (C, labels, out). Returns the per-cell training loss (C,), the per-cell
    training and validation accuracy (C,) (float64; predictions by
    :func:`~fitting.training.models.predict_labels`), the gradients of w1,
    b1, w2, b2, w3, b3 and that of ``x_train``, or, given ``incidence`` (C, p, n) (how often each symbol
    occurs in each training pair), that of the embedding, for decoder inputs
    E_a + E_b.

    One product per layer serves both row sets (the validation rows ride
    along at no extra call), and the backward runs on the training rows only;
    a first layer with a single input is an outer product, done element-wise.
    The formulas are autograd's for ``train``'s loss (mean squared error over
    rows and output components, or mean cross-entropy), so every cell follows
    its single run to float rounding. ``fast_tanh`` uses
    :func:`~fitting.training.activations.tanh_fast` (absolute error <= 2 eps)
    instead of ``torch.tanh``."""
    tanh = tanh_fast if fast_tanh else torch.tanh
    n = x_train.shape[1]
    x = torch.cat([x_train, x_val], dim=1)
    if x.shape[2] == 1:
        h1 = tanh(x * w1 + b1[:, None, :])
    else:
        h1 = tanh(torch.baddbmm(b1[:, None, :], x, w1))
    h2 = tanh(torch.baddbmm(b2[:, None, :], h1, w2))
    out = torch.baddbmm(b3[:, None, :], h2, w3)
    out_train = out[:, :n]
    if classification:
        logp = torch.log_softmax(out_train, dim=2)
        loss = -logp.gather(2, train_labels[:, :, None]).squeeze(2).mean(dim=1)
        g_out = torch.exp(logp)
        g_out = (g_out - F.one_hot(train_labels, out.shape[2]).to(out.dtype)) / n
    else:
        rows = torch.arange(out.shape[0], device=out.device)[:, None]
        diff = out_train - targets[rows, train_labels]
        loss = diff.pow(2).mean(dim=(1, 2))
        g_out = diff * (2.0 / (n * out.shape[2]))
    h1t, h2t = h1[:, :n], h2[:, :n]
    g_w3 = torch.bmm(h2t.transpose(1, 2), g_out)
    g_b3 = g_out.sum(dim=1)
    g_a2 = torch.bmm(g_out, w3.transpose(1, 2)) * (1 - h2t * h2t)
    g_w2 = torch.bmm(h1t.transpose(1, 2), g_a2)
    g_b2 = g_a2.sum(dim=1)
    g_a1 = torch.bmm(g_a2, w2.transpose(1, 2)) * (1 - h1t * h1t)
    g_b1 = g_a1.sum(dim=1)
    if x.shape[2] == 1:
        g_w1 = (x_train * g_a1).sum(dim=1, keepdim=True)
        g_x = (g_a1 * w1).sum(dim=2, keepdim=True)
    else:
        g_w1 = torch.bmm(x_train.transpose(1, 2), g_a1)
        g_x = torch.bmm(g_a1, w1.transpose(1, 2))
    pred = predict_labels(out, targets, classification)
    train_acc = (pred[:, :n] == train_labels).to(torch.float64).mean(dim=1)
    val_acc = (pred[:, n:] == val_labels).to(torch.float64).mean(dim=1)
    if incidence is not None:  # x = E_a + E_b: the embedding's gradient sums its rows' gradients
        g_x = torch.bmm(incidence, g_x)
    return loss, train_acc, val_acc, g_w1, g_b1, g_w2, g_b2, g_w3, g_b3, g_x
