"""The toy-model cells of a grid as one stacked model: parameters, data and
AdamW state with a leading cell axis (:class:`CellStack`); the hand-written
step of every cell at once is :func:`fitting.training.stacked.decoder_step`.
The cells are built on the CPU (each from its single run's task) and the stack
is then moved to the run's device."""

from __future__ import annotations


import torch


from .configs import ToyConfig
from .grid_result import GRID_FIELDS
from .models import ToyTask
from .stacked import pair_incidence

__all__ = ["CellStack"]


class CellStack:
    """Parameters, optimiser state and data of the active cells."""

    NAMES = ("embedding", "w1", "b1", "w2", "b2", "w3", "b3")

    def __init__(self, config: ToyConfig, cells: list[dict[str, float]], seeds: list[int],
                 device: torch.device | str | None = None):
        self.config = config
        tasks = [ToyTask(config.replace(**cell), seed) for cell, seed in zip(cells, seeds)]
        self.tensors: dict[str, torch.Tensor] = {}
        emb = torch.stack([t.model.embedding.detach() for t in tasks])
        lin = [[t.model.decoder[i] for t in tasks] for i in (0, 2, 4)]
        self.tensors["embedding"] = emb.clone()
        for k, layers in enumerate(lin, start=1):
            self.tensors[f"w{k}"] = torch.stack([layer.weight.detach().T for layer in layers]).contiguous()
            self.tensors[f"b{k}"] = torch.stack([layer.bias.detach() for layer in layers]).clone()
        for name in self.NAMES:
            self.tensors[f"m_{name}"] = torch.zeros_like(self.tensors[name])
            self.tensors[f"v_{name}"] = torch.zeros_like(self.tensors[name])
        self.tensors["train_pairs"] = torch.stack([t.train_pairs for t in tasks])
        self.tensors["train_labels"] = torch.stack([t.train_labels for t in tasks])
        self.tensors["val_pairs"] = torch.stack([t.val_pairs for t in tasks])
        self.tensors["val_labels"] = torch.stack([t.val_labels for t in tasks])
        self.tensors["targets"] = torch.stack([t.targets for t in tasks])
        self.tensors["incidence"] = pair_incidence(self.tensors["train_pairs"], emb.shape[1], emb.dtype)
        for key in GRID_FIELDS:  # float64: per-cell scalars are rounded once, as torch rounds Python floats
            self.tensors[key] = torch.tensor([getattr(t.config, key) for t in tasks], dtype=torch.float64)
        self.tensors["index"] = torch.arange(len(tasks))
        self.to(device)

    @property
    def device(self) -> torch.device:
        return self.tensors["index"].device

    def to(self, device: torch.device | str | None) -> None:
        """Every tensor of the stack moved to ``device`` (None, or the device they are on: untouched)."""
        if device is not None and torch.device(device) != self.device:
            self.tensors = {k: v.to(device) for k, v in self.tensors.items()}

    def select(self, keep: torch.Tensor) -> None:
        keep = keep.to(self.device)
        self.tensors = {k: v[keep].contiguous() for k, v in self.tensors.items()}

    def __len__(self) -> int:
        return int(self.tensors["index"].shape[0])


