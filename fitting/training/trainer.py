"""Train one run, record it step by step and export a trajectory (needs torch).

Per step t (at the parameters before update t): train and validation loss
and accuracy, Fourier signals of the token embedding (k = 1..(p-1)//2, power
1) and its DC signal (scalar ``signal_dc``), gradient norms per layer
(``grad_norm_<layer>``). Embedding snapshots at every ``snapshot_every``-th
step (or on the geometric schedule, ``snapshot_every="geometric"``, dense
early: :mod:`fitting.training.schedule`) and after the last update (step ``steps``); the transformer adds the
sequence embeddings of its probe set (``snapshot_sequence_embedding``).

Interrupted runs (KeyboardInterrupt, an exception, a non-finite loss) leave
a valid trajectory file of the completed steps (``meta["completed"]`` is
False) and, with ``checkpoint_every``, a checkpoint from which
``resume=True`` continues to the same result as an uninterrupted run.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from particles.core.limits import check_budget, format_bytes
from particles.core.validation import check_bool, check_path
from particles.core.version import package_version
from particles.datasets import TASK_LABELS
from particles.trajectory import Trajectory

from ..signals import DC_SCALAR, fourier_signals, n_frequencies
from .configs import TrainingConfig
from .devices import check_device, check_device_dtype
from .loop import Checkpoint, Progress, check_checkpointing, run_steps
from .models import make_task
from .schedule import resolve_schedule, snapshot_count, snapshot_due
from .threads import threads_for_work, torch_threads

__all__ = ["train", "TrainingDivergedError", "checkpoint_path", "run_memory", "check_run_memory",
           "check_training_memory", "check_layers", "finished_run", "check_checkpoint"]


class TrainingDivergedError(FloatingPointError):
    """The training loss became non-finite; the steps before it were saved."""


def checkpoint_path(out: str | os.PathLike) -> Path:
    """Checkpoint file that belongs to the trajectory file ``out``."""
    out = Path(out)
    return out.with_name(out.stem + ".ckpt.pt")


def run_memory(steps: int, columns: int, every: int | str, snapshot_bytes: int) -> int:
    """Bytes one run's records take: ``columns`` float64 values a step
    (signals and series) and the snapshots of the schedule ``every``, each
    ``snapshot_bytes``; twice, for the copy in the trajectory (or a
    checkpoint) that is made from them."""
    return 2 * (8 * steps * columns + snapshot_count(steps, every) * snapshot_bytes)


def check_run_memory(config: TrainingConfig, runs: int, columns: int, every: int | str, snapshot_bytes: int,
                     fixed_bytes: int = 0, what: str = "") -> None:
    """Refuse ``runs`` runs of ``config`` held in memory at once (one, or
    the seeds of a batched stack), each recording ``columns`` values a step
    and snapshots of ``snapshot_bytes``, plus ``fixed_bytes`` a run (the
    model and its optimiser), when they exceed the memory budget
    (:func:`particles.core.limits.memory_budget`), before anything is
    allocated; the message names ``steps`` and ``snapshot_every``."""
    need = runs * (run_memory(config.steps, columns, every, snapshot_bytes) + fixed_bytes)
    snaps = snapshot_count(config.steps, every)
    runs_text = "a run" if runs == 1 else f"{runs} runs (seeds)"
    check_budget(need, f"{what or config.model}: {runs_text} of steps={config.steps} recording {columns} values a "
                       f"step and {snaps} snapshots of {format_bytes(snapshot_bytes)} (snapshot_every={every!r})",
                 "use fewer steps or a sparser snapshot_every" + (" or fewer seeds" if runs > 1 else ""))


def finished_run(path: str | os.PathLike, config: TrainingConfig, seed: int, gradients: bool = False,
                 layers: bool = False) -> Trajectory | None:
    """The trajectory at ``path`` when it is the finished run of ``config``
    and ``seed`` (written by :func:`train` or :func:`train_batched`:
    complete, of this config and seed, with gradients and layer states when
    asked for) and
    reads as a valid trajectory file; None otherwise (missing, interrupted,
    damaged or of another run), and the run is trained again."""

    path = Path(path)
    if not path.is_file() or path.is_symlink():
        return None
    try:
        traj = Trajectory.load(path)
    except (ValueError, OSError):  # damaged, foreign, unreadable: not a finished run
        return None
    meta = traj.meta
    same_config = same_config_dict(meta.get("config"), config)
    if (meta.get("source") != "fitting.training" or meta.get("completed") is not True or not same_config
            or meta.get("seed") != int(seed) or meta.get("steps_done") != config.steps
            or (traj.gradients is not None) != bool(gradients) or ("layers" in meta) != bool(layers)):
        return None
    return traj


def same_config_dict(saved: Any, config: TrainingConfig) -> bool:
    """Whether ``saved`` (a run file's ``meta["config"]``) is ``config``: the
    same fields and values, where a field added since the file was written
    (absent from it) counts as the same when ``config`` keeps its default."""
    import json

    now = config.to_dict()
    if not isinstance(saved, dict):
        return False
    if json.dumps(saved, sort_keys=True) == json.dumps(now, sort_keys=True):
        return True
    defaults = type(config)().to_dict()
    return (set(saved) <= set(now) and all(json.dumps(saved[k], sort_keys=True) == json.dumps(now[k], sort_keys=True)
                                            for k in saved)
            and all(now[k] == defaults[k] for k in set(now) - set(saved)))


def _recording(task, config: TrainingConfig, gradients: bool) -> tuple[int, list[str], int | str, int]:
    """What a run of ``task`` records: the number of signals K, the series'
    names, the snapshot schedule and the bytes of one snapshot."""
    p, d = task.embedding().shape
    series = (["train_loss", "train_acc", "val_loss", "val_acc", DC_SCALAR]
              + [f"grad_norm_{g}" for g in task.layer_groups] + list(task.extra_series))
    every = resolve_schedule(config.snapshot_every, config.spacing, gradients)  # "auto": geometric with gradients
    snapshot_bytes = 8 * p * d * (3 if gradients else 1) + sum(a.nbytes for a in task.snapshot_arrays().values())
    return n_frequencies(p), series, every, snapshot_bytes


def _measured_task(config: TrainingConfig, seed: int, layers: bool):
    """A task of ``config`` to measure a run's records from (its layer states recorded with ``layers``)."""
    task = make_task(config, seed)
    if layers:
        task.record_layers()
    return task


def check_training_memory(config: TrainingConfig, runs: int = 1, *, gradients: bool = False, seed: int = 0,
                          layers: bool = False) -> None:
    """Refuse, before any output or training, ``runs`` runs of ``config``
    held in memory at once (1 for :func:`train`; the seeds of a batched
    stack) whose records (:func:`run_memory`, with the layer states when
    ``layers``), model and optimiser exceed the memory budget; builds one
    small task of ``seed`` to measure them."""
    task = _measured_task(config, seed, layers)
    K, series, every, snapshot_bytes = _recording(task, config, gradients)
    model = sum(t.numel() * t.element_size() for t in task.model.parameters())  # with gradient and AdamW's two
    check_run_memory(config, runs, K + len(series), every, snapshot_bytes, fixed_bytes=4 * model)


def check_layers(config: TrainingConfig, seed: int = 0, gradients: bool = False) -> None:
    """Refuse ``layers=True`` for ``config`` before any output or training:
    a model without layer states (another model, d != 2), or layer states
    over :data:`fitting.training.layers.LAYER_BUDGET` (the message names
    ``steps`` and ``snapshot_every``)."""
    from .layers import check_layer_budget

    task = make_task(config, seed)
    recorder = task.record_layers()
    every = resolve_schedule(config.snapshot_every, config.spacing, gradients)  # the run's own schedule
    check_layer_budget(snapshot_count(config.steps, every), recorder.snapshot_bytes(),
                       f"{config.model} with steps={config.steps} and snapshot_every={config.snapshot_every!r}",
                       "use a sparser snapshot_every or fewer steps")


def check_training_disk(config: TrainingConfig, seeds: int, out: str | os.PathLike, *, gradients: bool = False,
                        seed: int = 0, layers: bool = False) -> None:
    """Refuse, before any output or training, ``seeds`` runs of ``config`` whose files (one a seed, about
    half of :func:`run_memory`: the records, uncompressed) would not fit in the free space of the disk that
    holds ``out`` (its nearest existing folder); the message names ``--seeds``."""
    import shutil

    task = _measured_task(config, seed, layers)
    K, series, every, snapshot_bytes = _recording(task, config, gradients)
    per_run = run_memory(config.steps, K + len(series), every, snapshot_bytes) // 2
    folder = Path(out).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if seeds * per_run > free:
        raise ValueError(f"--seeds {seeds} runs of {config.model} would write about {format_bytes(seeds * per_run)} "
                         f"({format_bytes(per_run)} a seed), more than the {format_bytes(free)} free on the disk "
                         f"of {str(folder)!r}: use fewer --seeds, or another --out")


class SeriesRecorder:
    """Per-step series and snapshots of one run, preallocated."""

    def __init__(self, steps: int, K: int, series: list[str]):
        self.signals = np.zeros((steps, K))
        self.series = {name: np.zeros(steps) for name in series}
        self.snapshot_steps: list[int] = []
        self.snapshots: list[np.ndarray] = []
        self.probes: dict[str, list[np.ndarray]] = {}
        self.gradients: list[np.ndarray] = []
        self.updates: list[np.ndarray] = []

    def forces(self, gradient: np.ndarray, update: np.ndarray) -> None:
        """The loss gradient at the last snapshot and the update taken from it."""
        self.gradients.append(gradient)
        self.updates.append(update)

    def record(self, t: int, values: dict[str, float], signals: np.ndarray) -> None:
        self.signals[t] = signals
        for name, value in values.items():
            self.series[name][t] = value

    def snapshot(self, t: int, embedding: np.ndarray, probes: dict[str, np.ndarray]) -> None:
        self.snapshot_steps.append(t)
        self.snapshots.append(embedding)
        for name, arr in probes.items():
            self.probes.setdefault(name, []).append(arr)

    def to_state(self, n_done: int) -> dict[str, Any]:
        keep = [i for i, s in enumerate(self.snapshot_steps) if s < n_done]  # later ones are retaken on resume
        return {"signals": torch.from_numpy(self.signals[:n_done].copy()),
                "series": {k: torch.from_numpy(v[:n_done].copy()) for k, v in self.series.items()},
                "snapshot_steps": [self.snapshot_steps[i] for i in keep],
                "snapshots": [torch.from_numpy(self.snapshots[i]) for i in keep],
                "probes": {k: [torch.from_numpy(v[i]) for i in keep] for k, v in self.probes.items()},
                "gradients": [torch.from_numpy(self.gradients[i]) for i in keep if i < len(self.gradients)],
                "updates": [torch.from_numpy(self.updates[i]) for i in keep if i < len(self.updates)]}

    def load_state(self, state: dict[str, Any]) -> int:
        n = state["signals"].shape[0]
        self.signals[:n] = state["signals"].numpy()
        for k, v in state["series"].items():
            self.series[k][:n] = v.numpy()
        self.snapshot_steps = list(state["snapshot_steps"])
        self.snapshots = [s.numpy() for s in state["snapshots"]]
        self.probes = {k: [a.numpy() for a in v] for k, v in state["probes"].items()}
        self.gradients = [g.numpy() for g in state.get("gradients", [])]
        self.updates = [g.numpy() for g in state.get("updates", [])]
        return n

    def trajectory(self, n_done: int, p: int, d: int, meta: dict[str, Any], train: Any = None) -> Trajectory:
        """The recorded steps up to ``n_done`` as a Trajectory; ``train`` (a
        PairDataset of a pair model, or None) travels in the file as its
        training set, so a force fit needs nothing else."""
        keep = [i for i, s in enumerate(self.snapshot_steps) if s <= n_done]
        forces = bool(self.gradients)
        if forces:  # recorded with gradients: the snapshots that have theirs (an interrupted run may lack the last)
            keep = [i for i in keep if i < len(self.gradients)]
        embeddings = np.stack([self.snapshots[i] for i in keep]) if keep else np.zeros((0, p, d))
        if train is not None and train.name in TASK_LABELS:  # the labels are then checked against the task
            meta = {**meta, "task": train.name}
        return Trajectory(
            embeddings=embeddings,
            snapshot_steps=np.array([self.snapshot_steps[i] for i in keep], dtype=np.int64),
            steps=np.arange(n_done),
            signals=self.signals[:n_done],
            scalars={k: v[:n_done] for k, v in self.series.items()},
            snapshot_arrays={k: np.stack([v[i] for i in keep]) for k, v in self.probes.items() if keep},
            meta=meta,
            gradients=np.stack([self.gradients[i] for i in keep]) if forces and keep else None,
            updates=np.stack([self.updates[i] for i in keep]) if forces and keep else None,
            train_pairs=None if train is None else train.pairs,
            train_labels=None if train is None else train.labels,
        )


def _restore(task, rec: SeriesRecorder, state: dict) -> int:
    """A run's task and recorder from its checkpoint's state; the step to start from."""
    task.load_state_dict(state["task"])
    start = rec.load_state(state["recorder"])
    if not 0 <= start <= rec.signals.shape[0]:
        raise ValueError(f"the checkpoint is at step {start}, outside the run's 0 .. {rec.signals.shape[0]}")
    return start


def _run_checkpoint(out: Path | None, config: TrainingConfig, seed: int, gradients: bool,
                    layers: bool = False) -> Checkpoint:
    """The checkpoint of the run of ``config`` and ``seed`` written to ``out`` (none without ``out``)."""
    identity = {"config": config.to_dict(), "seed": int(seed), **({"gradients": True} if gradients else {}),
                **({"layers": True} if layers else {})}

    def same(saved: dict) -> bool:  # a checkpoint from before a config field existed: the field at its default
        rest = {k: v for k, v in identity.items() if k != "config"}
        return same_config_dict(saved.get("config"), config) and \
            {k: v for k, v in saved.items() if k != "config"} == rest

    return Checkpoint(checkpoint_path(out) if out is not None else None, identity, same=same,
                      keys=("task", "recorder"))


def check_checkpoint(config: TrainingConfig, seed: int, out: str | os.PathLike, gradients: bool = False,
                     layers: bool = False) -> None:
    """What ``train(config, seed, out, resume=True)`` does with the
    checkpoint of ``out`` before its first step, without training: read it,
    check it is this run's and put it into a fresh run. A checkpoint that
    cannot be used raises :class:`~fitting.training.loop.CheckpointError`
    naming it; none is fine."""
    task = make_task(config, seed)
    if layers:
        task.record_layers()
    K, series, _, _ = _recording(task, config, gradients)
    checkpoint = _run_checkpoint(Path(out), config, seed, gradients, layers)
    state = checkpoint.load()
    if state is not None:
        rec = SeriesRecorder(config.steps, K, series)
        checkpoint.restore(lambda st: _restore(task, rec, st), state)


def probe_step(task) -> tuple[np.ndarray, np.ndarray]:
    """The loss gradient at the task's current embedding and the update the
    optimiser would make from there: the step is taken, then undone."""
    E = task.embedding()
    saved = copy.deepcopy(task.state_dict())
    try:
        task.step()
        gradient = task.embedding_gradient()
        task.apply_update()
        update = task.embedding() - E
    finally:  # also when interrupted: the task is as it was
        task.load_state_dict(saved)
    return gradient, update


def train(config: TrainingConfig, seed: int = 0, out: str | os.PathLike | None = None, *,
          checkpoint_every: int | None = None, resume: bool = False,
          callback: Callable[[int, int], None] | None = None, gradients: bool = False, layers: bool = False,
          device: str | torch.device | None = None) -> Trajectory:
    """Train one run of ``config`` from ``seed`` and return its trajectory.

    Parameters
    ----------
    config : SurvivalMLPConfig, ToyConfig, ConstantAttentionConfig or SparseModularConfig
    seed : int >= 0
        Controls the split, the initialisation and the minibatches.
    out : path ending in .npz, optional
        Where the trajectory is written (atomically), also when the run is
        interrupted (then with ``meta["completed"] = False``).
    checkpoint_every : int, optional
        Write a checkpoint (``<out stem>.ckpt.pt``) every this many steps;
        needs ``out``. The checkpoint is removed when the run completes.
    resume : bool
        Continue from the checkpoint of ``out`` (one that cannot be used is a
        ``CheckpointError`` naming it, before any step), or return the
        finished run at ``out`` without training (:func:`finished_run`).
    callback : callable(done, total), optional
        Called after every step (progress bars).
    gradients : bool
        Also record, at every snapshot, the loss gradient with respect to
        the embedding and the update the optimiser takes from there
        (``Trajectory.gradients`` / ``updates``; docs/force_fit.md). For
        the last snapshot (after the last update) the step that would
        follow is taken and undone.
    layers : bool
        Also record, at every snapshot, every layer's state on a fixed probe
        set (:mod:`fitting.training.layers`: half training, half validation
        sequences, :data:`~fitting.training.layers.LAYER_PROBE` in all) for
        :mod:`fitting.sandbox`; sparse-modular and constant-attention at
        d = 2 only. Refused before any step when the run's layer states
        would exceed :data:`~fitting.training.layers.LAYER_BUDGET`.
    device : str or torch.device, optional
        Where the model, its data and its optimiser state live: ``"cpu"``,
        ``"cuda"``, ``"cuda:1"``, ``"mps"``
        (:func:`fitting.training.devices.check_device`; None: the
        environment variable ``EMBDYN_DEVICE``, else the CPU). The initial
        parameters are drawn on the CPU as always, then moved; the recorded
        embedding rows and values are copied to the CPU. A checkpoint
        written on one device resumes on another. ``meta["device"]`` says
        where the run trained.

    Raises
    ------
    TrainingDivergedError
        if a loss becomes non-finite (the steps before it are saved).
    ValueError
        naming ``device`` when it is not one of this machine's devices
        (before anything is built or written).
    """
    out, gradients = _check_train_args(checkpoint_every, resume, out, gradients)
    layers = check_bool(layers, "layers")
    device = check_device(device)
    check_device_dtype(device, getattr(config, "dtype", None))
    if layers:  # refused before anything is written: another model, another d, over the budget
        check_layers(config, seed, gradients)
    done = finished_run(out, config, seed, gradients, layers) if resume and out is not None else None
    if done is not None:  # finished before: nothing to redo
        return done
    task = make_task(config, seed).to(device)
    if layers:
        task.record_layers()
    p, d = task.embedding().shape
    rec, every, checkpoint, start = _prepare_run(task, config, seed, out, resume, gradients, layers)
    meta = _train_meta(task, config, seed, every, p, d)
    with torch_threads(threads_for_work(task.step_work())):
        run_steps(start, config.steps, _step_function(task, rec, config, every, gradients),
                  checkpoint_every=checkpoint_every, callback=callback,
                  **_run_hooks(task, rec, checkpoint, config, gradients, out, meta))
    traj = _trajectory(rec, task, meta, config.steps, completed=True, steps_done=config.steps)
    if out is not None:
        traj.save(out)
        checkpoint.remove()
    return traj


def _check_train_args(checkpoint_every: Any, resume: Any, out: Any, gradients: Any) -> tuple[Path | None, bool]:
    """The arguments of :func:`train` checked before anything is built or
    written: (out as a path or None, gradients)."""
    check_checkpointing(checkpoint_every, resume, out)
    gradients = check_bool(gradients, "gradients")
    if out is not None:
        out = check_path(out, "out")
    if out is not None and Path(out).suffix != ".npz":
        raise ValueError(f"out must end in .npz, got {str(out)!r}")
    return out, gradients


def _prepare_run(task, config: TrainingConfig, seed: int, out: Path | None, resume: bool, gradients: bool,
                 layers: bool = False) -> tuple[SeriesRecorder, int | str, Checkpoint, int]:
    """A run's recorder (refused first when its records exceed the memory
    budget), snapshot schedule and checkpoint, and the step it starts from:
    0, or with ``resume`` its checkpoint's (put into ``task`` and the recorder)."""
    K, series, every, snapshot_bytes = _recording(task, config, gradients)
    check_run_memory(config, 1, K + len(series), every, snapshot_bytes)  # before the recorder is allocated
    rec = SeriesRecorder(config.steps, K, series)
    checkpoint = _run_checkpoint(out, config, seed, gradients, layers)
    start = 0
    state = checkpoint.load() if resume else None
    if state is not None:
        start = checkpoint.restore(lambda st: _restore(task, rec, st), state)
    return rec, every, checkpoint, start


def _train_meta(task, config: TrainingConfig, seed: int, every: int | str, p: int, d: int) -> dict[str, Any]:
    """A run's trajectory metadata: its source, model, sizes, seed, config, schedule, versions and split."""
    return {"source": "fitting.training", "model": config.model, "p": int(p), "d": int(d), "seed": int(seed),
            "config": config.to_dict(), "snapshot_schedule": every, "signal_power": 1, "version": package_version(),
            "torch_version": torch.__version__, "device": str(task.device), **task.split_meta(),
            **({"layers": task.layers.meta()} if task.layers is not None else {})}


def _trajectory(rec: SeriesRecorder, task, meta: dict[str, Any], done: int, **status: Any) -> Trajectory:
    """The trajectory of a run's first ``done`` steps, ``status`` (completed,
    steps_done, ...) added to its ``meta``; a pair model's training pairs
    travel with it (sequence models have none)."""
    return rec.trajectory(done, meta["p"], meta["d"], {**meta, **status}, getattr(task, "train_set", None))


def _step_function(task, rec: SeriesRecorder, config: TrainingConfig, every: int | str, gradients: bool
                   ) -> Callable[[int, Progress], None]:
    """``step(t, progress)`` for :func:`run_steps`: update t of ``task``,
    refused when a loss is non-finite, with its series (and, when due, its
    snapshot and with ``gradients`` the gradient and update there) recorded
    into ``rec``."""

    def step(t: int, progress: Progress) -> None:
        # from here the task moves (its minibatch generator and clock first): an interruption inside the step
        # keeps the last checkpoint rather than writing one a step ahead of its count
        progress.consistent = False
        values = task.step()
        values.update(task.evaluate())
        if not (np.isfinite(values["train_loss"]) and np.isfinite(values["val_loss"])):
            raise TrainingDivergedError(f"{config.model}: non-finite loss at step {t} "
                                        f"(train {values['train_loss']}, val {values['val_loss']})")
        values.update({f"grad_norm_{g}": v for g, v in task.grad_norms().items()})
        E = task.embedding()
        S = fourier_signals(E, dc=True)
        values[DC_SCALAR] = float(S[0])
        due = snapshot_due(t, every)
        if due:
            rec.snapshot(t, E, task.snapshot_arrays())
        rec.record(t, values, S[1:])
        gradient = task.embedding_gradient() if due and gradients else None
        task.apply_update()
        if gradient is not None:
            rec.forces(gradient, task.embedding() - E)

    return step


def _run_hooks(task, rec: SeriesRecorder, checkpoint: Checkpoint, config: TrainingConfig, gradients: bool,
               out: Path | None, meta: dict[str, Any]) -> dict[str, Callable]:
    """What :func:`run_steps` calls besides the step: ``finish`` (the
    snapshot after the last update, and with ``gradients`` the step that
    would follow, taken and undone), ``save`` (a checkpoint of the steps
    done) and ``on_stop`` (the trajectory of the steps done, written to
    ``out`` when the run is interrupted)."""

    def finish(done: int) -> None:
        rec.snapshot(config.steps, task.embedding(), task.snapshot_arrays())
        if gradients:
            rec.forces(*probe_step(task))

    def save(done: int) -> None:
        checkpoint.save({"task": task.state_dict(), "recorder": rec.to_state(done)})

    def on_stop(done: int, exc: BaseException) -> None:
        if out is not None:
            _trajectory(rec, task, meta, done, completed=False, steps_done=done,
                        stopped_by=type(exc).__name__).save(out)

    return {"finish": finish, "save": save, "on_stop": on_stop}
