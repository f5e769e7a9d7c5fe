"""A run's layer states as the sandbox reads them: :class:`LayerStates`
from a trajectory (file or object) recorded with every layer's state
(``fitting.training.train(..., layers=True)``, ``embdyn train sparse-modular
--layers`` or a :class:`fitting.training.layers.LayerRecorder` on one's own
model), and the per-step curves beside them (loss, accuracy, gradient
norms), from the trainer's per-step series or a recorder's logged curves.

The arrays and their shapes are listed in :mod:`fitting.training.layers`;
here each is ``states[name]`` with the ``layer_`` prefix dropped and a
leading axis over the recorded steps (S, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.core.validation import check_int
from particles.trajectory import Trajectory

__all__ = ["LayerStates", "load_layers", "check_layer_states", "envelope", "NoLayersError", "LAYER_PREFIX", "HOW_TO_RECORD"]

#: prefix of the layer arrays among a trajectory's snapshot arrays (as fitting.training.layers writes them)
LAYER_PREFIX = "layer_"
#: what a run without layer states is told
HOW_TO_RECORD = ("record them with fitting.training.train(config, seed, out, layers=True), "
                 "'embdyn train sparse-modular --layers --out RUN.npz', or a fitting.training.layers.LayerRecorder "
                 "on your own model (docs/sandbox.md)")


class NoLayersError(ValueError):
    """The run has no layer states."""


@dataclass
class LayerStates:
    """Every layer's state of one run at its recorded steps.

    Attributes
    ----------
    steps : ndarray of int, shape (S,)
        The recorded steps.
    states : dict of str to ndarray (S, ...)
        The layer arrays by name (``token_embedding``, ``sequence``,
        ``regions_sequence``, ... ; :mod:`fitting.training.layers`).
    probe_tokens : ndarray of int, shape (B, T)
    probe_labels : ndarray of int, shape (B,)
    probe_split : ndarray of str, shape (B,)
        "train" or "val" for each probe sequence.
    p : int
        Number of classes.
    curves : dict of str to (steps, values)
        Per-step values: ``train_loss``, ``train_acc``, ``val_loss``,
        ``val_acc``, ``grad_norm_<group>``, ``batch_loss`` when recorded.
    meta : dict
        The run's metadata.
    """

    steps: np.ndarray
    states: dict[str, np.ndarray]
    probe_tokens: np.ndarray
    probe_labels: np.ndarray
    probe_split: np.ndarray
    p: int
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.steps)

    def index(self, step: Any) -> int:
        """The position of recorded step ``step``; a ValueError naming
        ``step`` and the nearest recorded steps when it was not recorded."""
        step = check_int(step, "step", 0, int(np.iinfo(np.int64).max))
        hits = np.flatnonzero(self.steps == step)
        if hits.size:
            return int(hits[0])
        order = np.argsort(np.abs(self.steps - step), kind="stable")[:2]
        near = ", ".join(str(int(s)) for s in sorted(self.steps[order]))
        raise ValueError(f"step {step} was not recorded: the nearest recorded steps are {near} (recorded: "
                         f"{int(self.steps[0])} to {int(self.steps[-1])}, {len(self.steps)} steps)")

    def at(self, step: Any) -> dict[str, np.ndarray]:
        """Every state at recorded step ``step`` (:meth:`index`)."""
        i = self.index(step)
        return {name: arr[i] for name, arr in self.states.items()}

    def curve(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(steps, values) of a per-step value, or None when the run has none by that name."""
        return self.curves.get(name)

    @property
    def grad_norm_groups(self) -> list[str]:
        """The parameter groups with a gradient-norm curve."""
        return sorted(n[len("grad_norm_"):] for n in self.curves if n.startswith("grad_norm_"))


def check_layer_states(layers: Any) -> LayerStates:
    """``layers`` when it is a :class:`LayerStates`; a TypeError saying how to get one otherwise."""
    if not isinstance(layers, LayerStates):
        raise TypeError(f"layers must be a fitting.sandbox.LayerStates (load_layers(run)), got "
                        f"{type(layers).__name__}")
    return layers


def load_layers(run: Trajectory | str | os.PathLike) -> LayerStates:
    """The layer states of ``run`` (a :class:`~particles.Trajectory` or the
    path of its file).

    Raises
    ------
    NoLayersError
        (a ValueError) when the run has no layer states, saying how to record them.
    """
    traj = run if isinstance(run, Trajectory) else Trajectory.load(run)
    info = traj.meta.get("layers")
    arrays = {k[len(LAYER_PREFIX):]: v for k, v in traj.snapshot_arrays.items() if k.startswith(LAYER_PREFIX)}
    if not isinstance(info, dict) or not arrays:
        where = "" if isinstance(run, Trajectory) else f"{str(run)!r} "
        raise NoLayersError(f"the run {where}has no layer states: {HOW_TO_RECORD}")
    try:
        tokens = np.asarray(info["probe_tokens"], dtype=np.int64)
        labels = np.asarray(info["probe_labels"], dtype=np.int64)
        split = np.asarray(info["probe_split"], dtype=str)
        p = int(info["p"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"meta['layers'] of the run is damaged ({exc}): record the run again") from None
    if tokens.ndim != 2 or labels.shape != (len(tokens),) or split.shape != labels.shape:
        raise ValueError(f"meta['layers'] of the run is damaged: probe_tokens {tokens.shape}, probe_labels "
                         f"{labels.shape}, probe_split {split.shape}: record the run again")
    for name in ("sequence", "logits"):
        if name not in arrays:
            raise ValueError(f"the run's layer states lack {name!r}: record the run again")
    if arrays["sequence"].shape[1] != len(labels):
        raise ValueError(f"the run's layer states hold {arrays['sequence'].shape[1]} sequences where its probe "
                         f"set has {len(labels)}: record the run again")
    curves = {name: (traj.steps, values) for name, values in traj.scalars.items()}
    curves.update(traj.curves)
    return LayerStates(steps=traj.snapshot_steps.copy(), states=arrays, probe_tokens=tokens, probe_labels=labels,
                       probe_split=split, p=p, curves=curves, meta=dict(traj.meta))


def envelope(s: np.ndarray, v: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """At most about ``most`` points of a long series ``v`` at steps ``s``: the least and the greatest
    value of each block of consecutive points, in order, so that a one-step spike stays (a faster drawing of
    the same line; the frame's curves and the explorer's Layers tab both thin with it)."""
    k = int(np.ceil(len(v) / max(most // 2, 1)))
    if k < 2:
        return s, v
    n = len(v) // k * k
    vb, sb = v[:n].reshape(-1, k), s[:n].reshape(-1, k)
    with np.errstate(invalid="ignore"):
        lo = np.nanargmin(np.where(np.isnan(vb), np.inf, vb), axis=1)
        hi = np.nanargmax(np.where(np.isnan(vb), -np.inf, vb), axis=1)
    first, second = np.minimum(lo, hi), np.maximum(lo, hi)
    rows = np.arange(len(vb))
    ss = np.column_stack([sb[rows, first], sb[rows, second]]).ravel()
    vv = np.column_stack([vb[rows, first], vb[rows, second]]).ravel()
    return np.concatenate([ss, s[n:]]), np.concatenate([vv, v[n:]])
