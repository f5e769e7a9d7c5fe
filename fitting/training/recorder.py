"""Bring your own run: record the embedding of any torch model while it
trains, or load it from a series of saved checkpoints, as our
:class:`~particles.Trajectory` (with Fourier signals at every recorded step),
ready for :mod:`fitting` (signals, survival, ODE fits).

This lives in :mod:`fitting.training` because it touches torch; nothing else
of the distribution imports torch.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from particles.datasets import as_training_set
from particles.trajectory import Trajectory
from particles.core.validation import check_bool, check_int
from particles.core.version import package_version

from ..signals import fourier_signals
from .schedule import AUTO, check_snapshot_every, resolve_schedule, snapshot_due

__all__ = ["EmbeddingRecorder", "load_checkpoints"]


def _token_rows(tokens: Any, n_rows: int) -> np.ndarray:
    """``tokens`` (a range or a sequence of distinct row indices) as an int array, checked."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__"):
        raise TypeError(f"tokens must be a range or a sequence of row indices, got {type(tokens).__name__}")
    rows = np.asarray(list(tokens))
    if rows.ndim != 1 or rows.size == 0 or rows.dtype.kind not in "iu":
        raise TypeError(f"tokens must be a non-empty sequence of integer row indices, got {rows.dtype} of shape "
                        f"{rows.shape}")
    if rows.min() < 0 or rows.max() >= n_rows:
        raise ValueError(f"tokens must name rows in 0..{n_rows - 1} of the embedding, got {rows.min()}..{rows.max()}")
    if np.unique(rows).size != rows.size:
        raise ValueError("tokens must name distinct rows")
    return rows.astype(np.int64)


def _as_matrix(value: Any, name: str) -> np.ndarray:
    if isinstance(value, torch.Tensor):  # on any device: copied to the CPU first, then widened there
        value = value.detach().to("cpu").to(torch.float64).numpy()  # (MPS has no float64)
    arr = np.asarray(value)
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise ValueError(f"{name} must be a real matrix (p, d), got shape {arr.shape} and dtype {arr.dtype}")
    return np.array(arr, dtype=np.float64)


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % k for k in range(2, int(n ** 0.5) + 1))


def _looks_like_p_plus_one(n_rows: int) -> bool:
    """``n_rows - 1`` is an odd prime and ``n_rows`` is not: the shape of p tokens plus an ``=`` row."""
    return n_rows > 3 and _is_prime(n_rows - 1) and not _is_prime(n_rows)


class EmbeddingRecorder:
    """Record a token-embedding matrix during training.

    Parameters
    ----------
    embedding : torch.Tensor or callable returning one
        The embedding matrix: a parameter such as ``model.embed.weight`` (a
        (vocab, d) matrix; pass the weight, not the ``nn.Embedding`` module),
        or a function that returns the current embedding (for example
        ``lambda: model.W_E``).
    p : int, optional
        Number of tokens: the first p rows. Default all rows. A p smaller
        than the number of rows warns (a p that is not the modulus gives
        wrong frequencies) unless ``tokens`` says which rows are the tokens.
    tokens : sequence of int, optional
        The rows that are the tokens, in token order (for example
        ``range(p)`` when row p is an ``=`` token). Sets p.
    every : int >= 1
        Record the Fourier signals every this many calls of :meth:`record`
        (with :meth:`attach`: optimiser steps).
    snapshot_every : int >= 1 or "geometric", optional
        Keep the whole embedding every this many calls, or on the geometric
        schedule (every call below 100, then 90 a decade:
        :mod:`fitting.training.schedule`). Default: geometric with
        ``gradients=True`` (the forces of the early steps, where the
        representation forms, are what the force fit needs), else 100 x
        ``every``. The first and the last state are always kept.
    power : {1, 2}
        Signals ||F_k|| or ||F_k||^2 (see :func:`fitting.fourier_signals`).
    gradients : bool
        Also record, for each snapshot, the loss gradient with respect to
        the embedding and the update the optimiser then made
        (``Trajectory.gradients`` / ``updates``, for
        :class:`fitting.ForceLawFit`). Both are read at the next call of
        :meth:`record` (after the next optimiser step, whose backward pass
        computed the gradient at the snapshot's state). The final snapshot
        is kept like every other; when no step followed it, it has no
        gradient, and ``gradients`` then has one entry fewer than the
        snapshots.
    gradient : callable returning a tensor, optional
        Where the gradient is read (default: ``embedding.grad`` of a tensor
        embedding; needed when ``embedding`` is a function).
    train : PairDataset or (pairs, labels), optional
        The training set, stored in the trajectory (``Trajectory.train``)
        so that :class:`fitting.ForceLawFit` and ``embdyn force-fit`` find
        it: pairs (M, 2) of token indices in 0..p-1 and labels (M,).

    Notes
    -----
    The model may live on any device (``"cuda"``, ``"mps"``, ...): the
    recorder has no ``device`` argument, it reads the embedding (and its
    gradient) where the tensor is, selects the token rows there and copies
    only those rows to the CPU (as float64) at each recorded step.

    The network's own curves (training and validation loss and accuracy)
    go into the file through :meth:`log`; :func:`fitting.stages` and the
    explorer read them. An embedding of p + 1 rows, p prime, recorded
    without ``tokens=`` or ``p=`` warns: the last row is most likely an
    ``=`` token, which is not one of the p residues.

    Examples
    --------
    >>> rec = EmbeddingRecorder(model.embed.weight, p=113)   # doctest: +SKIP
    >>> handle = rec.attach(optimizer)                        # doctest: +SKIP
    >>> ... train ...                                         # doctest: +SKIP
    >>> rec.trajectory().save("run.npz")                      # doctest: +SKIP
    """

    def __init__(self, embedding: torch.Tensor | Callable[[], Any], *, p: int | None = None,
                 tokens: Sequence[int] | None = None, every: int = 1, snapshot_every: int | None = None,
                 power: int = 1, gradients: bool = False, gradient: Callable[[], Any] | None = None,
                 train: Any = None) -> None:
        if isinstance(embedding, torch.nn.Module):
            hint = "model.embed.weight" if hasattr(embedding, "weight") else "the module's weight tensor"
            raise TypeError(f"embedding must be the embedding's weight tensor, not the module "
                            f"{type(embedding).__name__}: pass .weight (e.g. {hint})")
        if not (isinstance(embedding, torch.Tensor) or callable(embedding)):
            raise TypeError("embedding must be a torch.Tensor or a function returning the embedding, got "
                            f"{type(embedding).__name__}")
        self._source = embedding
        self._rows: slice | np.ndarray = slice(None)
        self._n_rows = -1
        first = self._read()
        n_rows = self._n_rows = first.shape[0]
        if tokens is not None:
            rows = _token_rows(tokens, n_rows)
            if p is not None and check_int(p, "p", 3) != len(rows):
                raise ValueError(f"p = {p} disagrees with tokens, which names {len(rows)} rows: give one of them")
            self.p = len(rows)
            if self.p < 3:
                raise ValueError(f"tokens must name at least 3 rows, got {self.p}")
            self._rows = slice(0, self.p) if np.array_equal(rows, np.arange(self.p)) else rows
        else:
            self.p = n_rows if p is None else check_int(p, "p", 3)
            if p is None and tokens is None and train is None and _looks_like_p_plus_one(n_rows):
                warnings.warn(f"the embedding has {n_rows} rows and {n_rows - 1} is prime: if row {n_rows - 1} is an "
                              f"'=' token, pass tokens=range({n_rows - 1}), or the frequencies are those of mod "
                              f"{n_rows}; pass p={n_rows} to silence this warning", UserWarning, stacklevel=2)
            if self.p > n_rows:
                raise ValueError(f"p = {self.p} is more than the embedding's {n_rows} rows")
            if self.p < n_rows:
                warnings.warn(f"p = {self.p} records the first {self.p} of the embedding's {n_rows} rows as the "
                              f"tokens; if p is not the modulus the frequencies are wrong. Pass tokens=range({self.p}) "
                              "(or the token rows) to say so and silence this warning", UserWarning, stacklevel=2)
            self._rows = slice(0, self.p)
        self.tokens = np.arange(n_rows)[self._rows]
        self.train = None if train is None else as_training_set(train, self.p, name="train")
        if self.train is not None and tokens is None and p is None:
            used = int(self.train.pairs.max()) + 1
            if used < self.p:  # e.g. an '=' row after the tokens, recorded as a token
                warnings.warn(f"the training pairs use tokens 0..{used - 1} but all {self.p} rows of the embedding "
                              f"are recorded as tokens; if row {used} on is not a token (an '=' or padding row), "
                              f"pass tokens=range({used}), or the frequencies are those of mod {self.p}",
                              UserWarning, stacklevel=2)
        self._hook = None
        self.every = check_int(every, "every", 1)
        self.gradients = check_bool(gradients, "gradients")
        # None: the configs' "auto" (geometric with gradients: the formation kept step by step), else 100 x every
        self.snapshot_every = resolve_schedule(AUTO, 100 * self.every, self.gradients) if snapshot_every is None \
            else check_snapshot_every(snapshot_every)
        if power not in (1, 2):
            raise ValueError(f"power must be 1 or 2, got {power!r}")
        self.power = power
        if gradient is not None and not callable(gradient):
            raise TypeError(f"gradient must be a function returning the gradient tensor, got {type(gradient).__name__}")
        if self.gradients and gradient is None and not isinstance(embedding, torch.Tensor):
            raise ValueError("gradients=True with a function as embedding needs gradient=... (a function returning "
                             "the embedding's gradient, e.g. lambda: model.W_E.grad)")
        self._gradient = gradient if gradient is not None else (lambda: embedding.grad)
        self._forces: list[tuple[np.ndarray, np.ndarray]] = []  # (gradient, update) of each snapshot so far
        self.calls = 0
        self._steps: list[int] = []
        self._signals: list[np.ndarray] = []
        self._snap_steps: list[int] = []
        self._snaps: list[np.ndarray] = []
        self._last: tuple[int, np.ndarray] | None = None
        self._last_step = -1
        self._curves: dict[str, tuple[list[int], list[float]]] = {}

    def log(self, step: Any, **values: Any) -> None:
        """Store the network's own curves at ``step``: ``recorder.log(step,
        train_loss=..., val_acc=...)``, each value a number (or a 0-d tensor),
        or ``step`` a sequence of steps and each value a sequence of the same
        length. Names are identifiers (``train_loss``, ``train_acc``,
        ``val_loss``, ``val_acc`` are the ones :func:`fitting.stages` and
        the explorer read). Each curve's steps must increase from one call
        to the next and its values be finite; a ``ValueError`` naming the
        curve otherwise, and nothing of that call is stored."""
        if not values:
            raise ValueError("log needs at least one curve, e.g. log(step, train_loss=0.5)")
        if isinstance(step, (np.ndarray, torch.Tensor)) and step.ndim == 0:  # a 0-d tensor or array: one step
            step = step.item()
        if isinstance(step, (list, tuple, np.ndarray, torch.Tensor)):
            steps = np.asarray(step.detach().cpu() if isinstance(step, torch.Tensor) else step)
            if steps.ndim != 1 or steps.size == 0:
                raise ValueError(f"step must be an int or a non-empty 1-D sequence of ints, got shape {steps.shape}")
            steps = [check_int(s.item() if hasattr(s, "item") else s, "step", 0) for s in steps]
        else:
            steps = [check_int(step, "step", 0)]
        if any(b <= a for a, b in zip(steps, steps[1:])):
            raise ValueError(f"step must increase within one call, got {steps} for "
                             f"{', '.join(values)}")
        staged = {}
        for name, value in values.items():
            if not name.isidentifier():
                raise ValueError(f"curve names must be identifiers, got {name!r}")
            arr = np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value, dtype=np.float64)
            arr = arr.reshape(1) if arr.ndim == 0 else arr
            if arr.ndim != 1 or arr.shape[0] != len(steps):
                raise ValueError(f"{name} has {arr.size} value{'s' if arr.size != 1 else ''} for {len(steps)} "
                                 f"step{'s' if len(steps) != 1 else ''}: give one value per step")
            if not np.all(np.isfinite(arr)):
                bad = steps[int(np.argmin(np.isfinite(arr)))]
                raise ValueError(f"{name} is not finite at step {bad}")
            known = self._curves.get(name)
            if known is not None and known[0] and steps[0] <= known[0][-1]:
                raise ValueError(f"{name}: step must increase, got {steps[0]} after {known[0][-1]}")
            staged[name] = arr.tolist()
        for name, vals in staged.items():
            known_steps, known_vals = self._curves.setdefault(name, ([], []))
            known_steps.extend(steps)
            known_vals.extend(vals)

    def _read(self) -> np.ndarray:
        """The token rows of the current embedding (selected before any copy to the CPU)."""
        value = self._source() if callable(self._source) and not isinstance(self._source, torch.Tensor) \
            else self._source
        return _as_matrix(self._select(value), "embedding")

    def _select(self, value: Any) -> Any:
        """The token rows of a (rows, d) tensor or array (other shapes are left to the checks); a value
        that already has one row per token (a ``gradient=`` function returning the token rows) is kept."""
        rows = self._rows
        if (isinstance(rows, slice) and rows == slice(None)) or not hasattr(value, "shape") or len(value.shape) != 2:
            return value
        if value.shape[0] == self.p and self._n_rows != self.p:
            return value
        if isinstance(rows, slice):
            return value[rows]
        if isinstance(value, torch.Tensor):
            return value[torch.as_tensor(rows, device=value.device)]
        return np.asarray(value)[rows]

    def record(self, step: int | None = None) -> None:
        """Record the current state (call it after each optimiser step);
        ``step`` defaults to the number of calls so far."""
        step = self.calls if step is None else check_int(step, "step", 0)
        if step <= self._last_step:
            raise ValueError(f"step must increase, got {step} after {self._last_step}")
        due_signal = self.calls % self.every == 0
        due_snapshot = snapshot_due(self.calls, self.snapshot_every)
        self.calls += 1
        self._last_step = step
        pending = self.gradients and len(self._forces) < len(self._snaps)
        if not (due_signal or due_snapshot or pending):
            return
        E = self._read()
        if pending:  # the step just taken started from the last snapshot
            grad = self._gradient()
            if grad is None:
                raise ValueError("gradients=True but the embedding has no gradient after this step (is it trained "
                                 "by backward()? give gradient=... if it lives elsewhere)")
            grad = _as_matrix(self._select(grad), "gradient")
            if grad.shape != E.shape:
                raise ValueError(f"the gradient has shape {grad.shape} where the embedding has {E.shape}: give "
                                 "gradient=... returning the embedding's own gradient")
            if not np.all(np.isfinite(grad)):
                raise FloatingPointError(f"the gradient is not finite at step {step}")
            self._forces.append((grad, E - self._snaps[-1]))
        if not (due_signal or due_snapshot):
            return
        if not np.all(np.isfinite(E)):
            raise FloatingPointError(f"the embedding is not finite at step {step}")
        self._last = (step, E)
        if due_signal:
            self._steps.append(step)
            self._signals.append(fourier_signals(E, power=self.power))
        if due_snapshot:
            self._snap_steps.append(step)
            self._snaps.append(E)

    def attach(self, optimizer: torch.optim.Optimizer):
        """Record the current (initial) state as step 0 if nothing was
        recorded yet, then after every step of ``optimizer`` (a post-step
        hook), so step n is the state after n updates. Returns the hook's
        handle (``handle.remove()`` detaches it)."""
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        if self.attached:
            raise ValueError("optimizer: this recorder is already attached (a second hook would record every step "
                             "twice); call .remove() on the handle attach() returned first, or make a new recorder")
        if self.calls == 0:
            self.record()
        self._hook = optimizer.register_step_post_hook(lambda opt, args, kwargs: self.record())
        return self._hook

    @property
    def attached(self) -> bool:
        """Whether a hook of :meth:`attach` is active (not removed)."""
        if self._hook is None:
            return False
        hooks = self._hook.hooks_dict_ref()
        return hooks is not None and self._hook.id in hooks

    def trajectory(self, meta: dict[str, Any] | None = None) -> Trajectory:
        """The recording as a :class:`~particles.Trajectory`: snapshots
        (with the last recorded state), and ``signals`` at every recorded
        step (``meta["signal_power"]``)."""
        if self._last is None:
            raise ValueError("nothing recorded yet: call record() (or attach() to an optimizer) first")
        snap_steps, snaps = list(self._snap_steps), list(self._snaps)
        forces = {}
        if self.gradients:
            n = len(self._forces)
            if n == 0:
                raise ValueError("gradients=True but no snapshot was followed by a step yet: record after a step")
            forces = {"gradients": np.stack([g for g, _ in self._forces]),
                      "updates": np.stack([u for _, u in self._forces])}
        if snap_steps[-1] != self._last_step:
            if self._last[0] == self._last_step:
                snaps.append(self._last[1])
            else:  # the state after the last call, not read then: the current one
                last = self._read()
                if not np.all(np.isfinite(last)):
                    raise FloatingPointError(f"the embedding is not finite after step {self._last_step}")
                snaps.append(last)
            snap_steps.append(self._last_step)
        info = {"source": "fitting.training.EmbeddingRecorder", "p": self.p, "d": int(snaps[0].shape[1]),
                "signal_power": self.power, "every": self.every, "version": package_version()}
        if not isinstance(self._rows, slice):
            info["tokens"] = self.tokens.tolist()
        if self.train is not None:
            info["n_train"] = len(self.train)
            forces.update(train_pairs=self.train.pairs, train_labels=self.train.labels)
        info.update(meta or {})
        curves = {name: (np.asarray(s, dtype=np.int64), np.asarray(v)) for name, (s, v) in self._curves.items()}
        late = [name for name, (s, _) in curves.items() if s.size and int(s[-1]) > int(self._last_step)]
        if late:
            warnings.warn(f"the curve{'s' if len(late) > 1 else ''} {', '.join(late)} go{'' if len(late) > 1 else 'es'} "
                          f"past the last recorded step {self._last_step}: record the embedding at the step you log "
                          f"last, or the stages and the explorer see curves the embedding has no state for",
                          stacklevel=2)
        return Trajectory(np.stack(snaps), np.asarray(snap_steps, dtype=np.int64),
                          steps=np.asarray(self._steps, dtype=np.int64), signals=np.stack(self._signals), meta=info,
                          curves=curves, **forces)


def load_checkpoints(paths: Sequence[str | os.PathLike], key: str | Callable[[dict], Any], *,
                     steps: Sequence[int] | None = None, p: int | None = None, power: int = 1,
                     train: Any = None) -> Trajectory:
    """A :class:`~particles.Trajectory` from a series of saved checkpoints.

    Parameters
    ----------
    paths : sequence of paths
        Files written by ``torch.save`` (a state dict, or a dict holding
        one under ``"model"``/``"state_dict"``), in training order; loaded
        with ``weights_only=True``.
    key : str or callable
        The embedding's entry in the state dict (e.g. ``"embed.W_E"``), or a
        function from the loaded object to the (p, d) embedding.
    steps : sequence of int, optional
        Training step of each checkpoint (default 0, 1, 2, ...).
    p : int, optional
        Number of tokens (rows used); default all rows.
    power : {1, 2}
        Signal power, as in :class:`EmbeddingRecorder`.
    train : PairDataset or (pairs, labels), optional
        The training set, stored in the trajectory as by
        :class:`EmbeddingRecorder` (checked against p before any file is
        read).

    Raises
    ------
    fitting.training.loop.CheckpointError
        (a ValueError) naming the file: empty, truncated or damaged, not a
        ``torch.save`` file, or holding objects that ``weights_only=True``
        refuses (a pickle of a foreign class, or a hostile one: nothing in
        it is run); ``CheckpointEntryError`` (also a KeyError) when the
        state has no entry ``key``.
    """
    if isinstance(paths, (str, os.PathLike)) or not len(paths):
        raise TypeError("paths must be a non-empty list of checkpoint files")
    steps = list(range(len(paths))) if steps is None else [check_int(s, "steps[i]", 0) for s in steps]
    if len(steps) != len(paths):
        raise ValueError(f"steps has {len(steps)} entries for {len(paths)} checkpoints")
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise ValueError("steps must increase")
    p = None if p is None else check_int(p, "p", 3)
    if train is not None and p is not None:
        train = as_training_set(train, p, name="train")  # refused before any checkpoint is read
    from .loop import CheckpointEntryError, read_torch_file

    snaps = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint {path} does not exist")
        obj = read_torch_file(path)  # damaged, truncated, foreign or hostile files: CheckpointError naming it
        if callable(key):
            value = key(obj)
        else:
            state = obj
            for wrapper in ("model", "state_dict"):
                if isinstance(state, dict) and key not in state and isinstance(state.get(wrapper), dict):
                    state = state[wrapper]
            if not isinstance(state, dict) or key not in state:
                names = sorted(map(str, state))[:8] if isinstance(state, dict) else type(state).__name__
                raise CheckpointEntryError(f"checkpoint {path} has no entry {key!r} (entries: {names} ...)")
            value = state[key]
        E = _as_matrix(value, f"checkpoint {path} entry {key!r}")
        if p is not None and p > E.shape[0]:
            raise ValueError(f"p = {p} is more than the {E.shape[0]} rows of checkpoint {path} entry "
                             f"{'(key function)' if callable(key) else repr(key)}: p must be <= {E.shape[0]}")
        snaps.append(E if p is None else E[:p])
    shapes = {s.shape for s in snaps}
    if len(shapes) != 1:
        raise ValueError(f"the checkpoints' embeddings differ in shape: {sorted(shapes)}")
    stack = np.stack(snaps)
    traj = Trajectory(stack, np.asarray(steps, dtype=np.int64), signals=fourier_signals(stack, power=power),
                      meta={"source": "fitting.training.load_checkpoints", "p": int(stack.shape[1]),
                            "d": int(stack.shape[2]), "signal_power": power, "files": [str(x) for x in paths],
                            "version": package_version()})
    return traj if train is None else traj.with_train(train)
