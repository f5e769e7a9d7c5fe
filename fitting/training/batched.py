"""Several survival-MLP seeds trained as one batched computation (needs torch).

The parameters of B runs are stacked along a leading axis and every layer
is one batched matrix product (``torch.baddbmm``); the loss is the sum of
the B per-run losses, so each run receives exactly its own gradient, and
AdamW (element-wise) updates each slice as it would update that run alone.
Every seed starts from the parameters and split of its sequential run
(:func:`fitting.training.models.survival_initial_parameters`), and its
trajectory matches :func:`fitting.training.train` to 1e-10 in float64.
"""

from __future__ import annotations

import copy
import json

import os
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import numpy as np
import torch

from particles.core.io import atomic_write_text
from particles.core.validation import check_bool, check_choice, check_seeds
from particles.core.version import package_version
from particles.datasets import modular_addition
from particles.trajectory import Trajectory

from ..signals import DC_SCALAR, fourier_signals, n_frequencies
from .compiling import compiled_or_plain
from .configs import SurvivalMLPConfig
from .devices import check_device, device_arg
from .loop import Checkpoint, Progress, check_checkpointing, run_steps
from .models import survival_initial_parameters
from .cluster import cluster_client, on_cluster
from .processes import run_parts
from .schedule import resolve_schedule, snapshot_due
from .trainer import SeriesRecorder, TrainingDivergedError, check_training_memory, finished_run
from .stacked import survival_mlp_forward

__all__ = ["train_batched", "batched_checkpoint_path", "batched_groups", "finished_seeds"]

LAYERS = ("layer1", "layer2", "layer3")


def _train_in_groups(config: SurvivalMLPConfig, seeds: list[int], out_dir, *, callback, compile: str,
                     checkpoint_every: int | None, resume: bool, n_jobs: int, gradients: bool,
                     device: str | None = None, client=None) -> list[Trajectory]:
    """The seeds in ``n_jobs`` contiguous groups, each a stack of its own in
    a worker process (:func:`fitting.training.processes.run_parts`) or a
    task on ``client``'s cluster (:func:`_groups_on_cluster`), on ``device``
    (None: the worker's ``EMBDYN_DEVICE``, else the CPU)."""
    groups = batched_groups(seeds, n_jobs)
    jobs = [((config, group, out_dir), {"compile": compile, "checkpoint_every": checkpoint_every,
                                        "resume": resume, "gradients": gradients, "device": device})
            for group in groups]
    if client is not None:
        return _groups_on_cluster(client, config, groups, jobs, out_dir, resume, callback)
    return [traj for trajs in run_parts(train_batched, jobs, config.steps, callback=callback) for traj in trajs]


def units_journal(config: SurvivalMLPConfig, seeds: Sequence[int], out_dir: str | os.PathLike) -> Path:
    """The folder where a batched run in ``out_dir`` on a cluster journals its finished groups."""
    return batched_checkpoint_path(config, seeds, out_dir).with_suffix("").with_suffix(".units")


def _journal_identity(config: SurvivalMLPConfig, seeds: list[int], compile: str, gradients: bool) -> dict:
    """What a batched run on a cluster is, for its journal (what its checkpoints also name)."""
    return {"config": config.to_dict(), "seeds": seeds, "compile": compile, "gradients": bool(gradients),
            "torch_version": str(torch.__version__)}


def _groups_on_cluster(client, config: SurvivalMLPConfig, groups: list[list[int]], jobs: list, out_dir, resume: bool,
                       callback) -> list[Trajectory]:
    """The groups as units on ``client``'s cluster (:func:`fitting.training.cluster.run_units`),
    journaled in ``out_dir``: the client writes every seed's file there
    itself as its group arrives (workers that do not share its file system
    write theirs elsewhere), and the journal names the group's seeds, whose
    files a resumed run reads back."""
    from .cluster import UnitJournal, run_units

    journal, checkpoints = None, None
    if out_dir is not None:
        seeds = [s for group in groups for s in group]
        kwargs = jobs[0][1]
        identity = _journal_identity(config, seeds, kwargs["compile"], kwargs["gradients"])

        def save(folder: Path, unit: int, trajectories: list) -> None:
            for traj in trajectories:
                traj.save(Path(out_dir) / f"{config.model}_seed{traj.meta['seed']}.npz")
            atomic_write_text(folder / f"unit{unit}.json", json.dumps([t.meta["seed"] for t in trajectories]))

        def load(folder: Path, unit: int) -> list | None:
            if not (folder / f"unit{unit}.json").is_file():
                return None
            done = [finished_run(Path(out_dir) / f"{config.model}_seed{s}.npz", config, s, kwargs["gradients"])
                    for s in groups[unit]]
            return None if any(t is None for t in done) else done

        journal = UnitJournal(units_journal(config, seeds, out_dir), identity, len(groups), resume=resume,
                              save=save, load=load)
        checkpoints = [batched_checkpoint_path(config, group, out_dir) for group in groups]
        if not resume:
            for ckpt in checkpoints:
                ckpt.unlink(missing_ok=True)
    runs = run_units(client, train_batched, jobs, config.steps, callback=callback, journal=journal,
                     checkpoints=checkpoints)
    if journal is not None:
        journal.remove()
    return [traj for trajs in runs for traj in trajs]


def _cluster_groups(client, config: SurvivalMLPConfig, seeds: list[int], out_dir, resume: bool, compile: str,
                    gradients: bool) -> int:
    """The groups of a batched run on a cluster: the split of this run's
    journal being resumed, else one per worker thread (at most one per seed)."""
    from .cluster import UnitJournal, cluster_slots

    if resume and out_dir is not None:
        units = UnitJournal.units_of(units_journal(config, seeds, out_dir),
                                     _journal_identity(config, seeds, compile, gradients))
        if units is not None:
            return units
    return max(1, min(len(seeds), sum(cluster_slots(client).values())))


def batched_groups(seeds: Sequence[int], n_jobs: int) -> list[list[int]]:
    """The seeds in ``n_jobs`` contiguous groups, one stack (and checkpoint) each."""
    return [[int(s) for s in g] for g in np.array_split(np.array(list(seeds)), n_jobs)]


def finished_seeds(config: SurvivalMLPConfig, seeds: Sequence[int], out_dir: str | os.PathLike, n_jobs: int = 1,
                   gradients: bool = False) -> dict[int, Trajectory]:
    """The seeds that ``resume=True`` skips, with their trajectories: those
    of every group (:func:`batched_groups`) whose seeds all have their
    finished file in ``out_dir`` (:func:`fitting.training.trainer.finished_run`)."""
    found: dict[int, Trajectory] = {}
    for group in batched_groups(seeds, n_jobs):
        done = {s: finished_run(Path(out_dir) / f"{config.model}_seed{s}.npz", config, s, gradients) for s in group}
        if all(t is not None for t in done.values()):
            found.update(done)
    return found


def _resume_check(config, seeds: list[int], out_dir, n_jobs: int, compile: str, gradients: bool
                  ) -> list[Trajectory] | None:
    """Every seed's finished trajectory when all are in ``out_dir``; else None, after reading the
    checkpoint of every group still to train (one that cannot be used is refused before any training)."""
    done = finished_seeds(config, seeds, out_dir, n_jobs, gradients)
    if len(done) == len(seeds):
        return [done[s] for s in seeds]
    for group in batched_groups(seeds, n_jobs):
        if not all(s in done for s in group):
            _checkpoint(config, group, out_dir, compile, gradients).load()
    return None


def _recording(cfg: SurvivalMLPConfig, seeds: list[int], splits, out_dir, gradients: bool):
    """What each seed records: its series recorder, the snapshot schedule, its metadata and its file."""
    K = n_frequencies(cfg.p)
    series = ["train_loss", "train_acc", "val_loss", "val_acc", DC_SCALAR, "grad_norm_embedding",
              *[f"grad_norm_{name}" for name in LAYERS]]
    recorders = [SeriesRecorder(cfg.steps, K, series) for _ in seeds]
    every = resolve_schedule(cfg.snapshot_every, cfg.spacing, gradients)  # "auto": geometric with gradients
    metas = _metas(cfg, seeds, splits, every)
    paths = [None if out_dir is None else Path(out_dir) / f"{cfg.model}_seed{s}.npz" for s in seeds]
    return recorders, every, metas, paths


def batched_checkpoint_path(config: SurvivalMLPConfig, seeds: Sequence[int], out_dir: str | os.PathLike) -> Path:
    """Checkpoint file of a batched run in ``out_dir``."""
    seeds = list(seeds)
    return Path(out_dir) / f"{config.model}_batched_seed{seeds[0]}-{seeds[-1]}_n{len(seeds)}.ckpt.pt"


def _check_batched(config, seeds, out_dir, compile, checkpoint_every, resume, n_jobs, gradients, cluster=False
                   ) -> tuple[list[int], bool]:
    """The arguments of :func:`train_batched` checked (the seeds as a list, and gradients), and the
    memory the whole stack would take (before it is built)."""
    if not isinstance(config, SurvivalMLPConfig):
        raise TypeError(f"train_batched trains SurvivalMLPConfig runs, got {type(config).__name__}")
    seeds = check_seeds(seeds)
    check_choice(compile, "compile", ("auto", "never"))
    check_checkpointing(checkpoint_every, resume, out_dir, "an output folder (out_dir=...)")
    if not (cluster and n_jobs is None) and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int)
                                             or not 1 <= n_jobs <= len(seeds)):
        raise ValueError(f"n_jobs must be None or an int in [1, {len(seeds)}] (at most one job per seed), "
                         f"got {n_jobs!r}")
    gradients = check_bool(gradients, "gradients")
    check_training_memory(config, len(seeds), gradients=gradients, seed=seeds[0])
    return seeds, gradients


class StackedRuns(NamedTuple):
    """The survival MLPs of several seeds as stacked tensors (leading axis: the seed)."""

    splits: list
    tr_pairs: torch.Tensor  # (B, n, 2)
    tr_labels: torch.Tensor
    va_pairs: torch.Tensor
    va_labels: torch.Tensor
    E: torch.Tensor  # (B, p, d)
    weights: list  # three (B, out, in)
    biases: list  # three (B, out)
    params: list  # E, w0, b0, w1, b1, w2, b2


def _stacked_runs(cfg: SurvivalMLPConfig, seeds: list[int], device: torch.device | None = None) -> StackedRuns:
    """Every seed's split and initial parameters, stacked (the same values
    as the single-run trainer draws for that seed: drawn on the CPU, then
    moved to ``device``)."""
    data = modular_addition(cfg.p, ordered=True)
    inits = [survival_initial_parameters(cfg, s) for s in seeds]
    splits = [data.split(cfg.train_fraction, np.random.default_rng(ss)) for _, _, ss in inits]
    device = torch.device("cpu") if device is None else device

    def stacked(part: int, field: str) -> torch.Tensor:
        return torch.as_tensor(np.stack([getattr(split[part], field) for split in splits]), dtype=torch.long
                               ).to(device)

    E = torch.stack([e for e, _, _ in inits]).to(device).requires_grad_()
    weights = [torch.stack([layers[i][0] for _, layers, _ in inits]).to(device).requires_grad_() for i in range(3)]
    biases = [torch.stack([layers[i][1] for _, layers, _ in inits]).to(device).requires_grad_() for i in range(3)]
    params = [E, *[t for pair in zip(weights, biases) for t in pair]]
    return StackedRuns(splits, stacked(0, "pairs"), stacked(0, "labels"), stacked(1, "pairs"), stacked(1, "labels"),
                       E, weights, biases, params)


def _metas(cfg: SurvivalMLPConfig, seeds: list[int], splits: list, schedule: int | str) -> list[dict]:
    """Every seed's trajectory metadata."""
    base = {"source": "fitting.training", "model": cfg.model, "p": cfg.p, "d": cfg.d, "config": cfg.to_dict(),
            "snapshot_schedule": schedule,
            "signal_power": 1, "version": package_version(), "torch_version": torch.__version__,
            "batched": len(seeds)}
    return [{**base, "seed": s, "train_indices": t.indices.tolist(), "val_indices": v.indices.tolist()}
            for s, (t, v) in zip(seeds, splits)]


def _restore(state: dict | None, params: list, optimizer, recorders: list) -> int:
    """Parameters, optimiser and recorders from a checkpoint's state; the step to start from (0 without)."""
    if state is None:
        return 0
    if len(state["params"]) != len(params) or len(state["recorders"]) != len(recorders):
        raise ValueError(f"{len(state['params'])} parameters and {len(state['recorders'])} recorders for "
                         f"{len(params)} and {len(recorders)}")
    with torch.no_grad():
        for param, saved in zip(params, state["params"]):
            if tuple(saved.shape) != tuple(param.shape):
                raise ValueError(f"a parameter of shape {tuple(saved.shape)} for {tuple(param.shape)}")
            param.copy_(saved)
    optimizer.load_state_dict(state["optimizer"])
    start = 0
    for rec, rec_state in zip(recorders, state["recorders"]):
        start = rec.load_state(rec_state)
    return start


def _grad_norms(runs: StackedRuns) -> dict[str, np.ndarray]:
    """The gradient norm of the embedding and of each layer, per seed."""
    norms = {"grad_norm_embedding": runs.E.grad.pow(2).sum(dim=(1, 2))}
    for i, name in enumerate(LAYERS):
        norms[f"grad_norm_{name}"] = (runs.weights[i].grad.pow(2).sum(dim=(1, 2))
                                      + runs.biases[i].grad.pow(2).sum(dim=1))
    return {k: v.sqrt().cpu().numpy() for k, v in norms.items()}


def _per_run_losses(runs: StackedRuns, forward: Callable, d: int) -> Callable:
    """``(pairs, labels) -> (per-seed losses, per-seed accuracies)`` of the stacked networks."""

    def per_run(pairs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
        w, b = runs.weights, runs.biases
        losses, logits = forward(runs.E, w[0], b[0], w[1], b[1], w[2], b[2], pairs, labels, d)
        acc = (logits.detach().argmax(dim=2) == labels).to(torch.float64).mean(dim=1)
        return losses, acc.cpu().numpy()

    return per_run


def _checkpoint(cfg: SurvivalMLPConfig, seeds: list[int], out_dir, compile: str, gradients: bool) -> Checkpoint:
    """The batched run's checkpoint (none without ``out_dir``), with its identity."""
    identity = {"config": cfg.to_dict(), "seeds": seeds, "compile": compile, "torch_version": str(torch.__version__),
                **({"gradients": True} if gradients else {})}
    path = None if out_dir is None else batched_checkpoint_path(cfg, seeds, out_dir)
    return Checkpoint(path, identity, kind="batched run", keys=("params", "optimizer", "recorders"))


def _completed(recorders: list, metas: list, paths: list, cfg: SurvivalMLPConfig, splits: list) -> list[Trajectory]:
    """Every seed's trajectory of the completed run (with its training set),
    saved where a path is given."""
    trajectories = [rec.trajectory(cfg.steps, cfg.p, cfg.d, {**meta, "completed": True, "steps_done": cfg.steps},
                                   train_set)
                    for rec, meta, (train_set, _) in zip(recorders, metas, splits)]
    for traj, path in zip(trajectories, paths):
        if path is not None:
            traj.save(path)
    return trajectories


def _record(recorders: list, t: int, due: bool, values: dict, signals: np.ndarray, emb: np.ndarray) -> None:
    """Step t's series of every seed, and its snapshot when ``due``."""
    for b, rec in enumerate(recorders):
        if due:
            rec.snapshot(t, emb[b], {})
        rec.record(t, {k: v[b] for k, v in values.items()}, signals[b, 1:])


def _record_forces(recorders: list, gradient: np.ndarray, update: np.ndarray) -> None:
    """Every seed's gradient and update (stacked (B, p, d)) at its last snapshot."""
    for b, rec in enumerate(recorders):
        rec.forces(gradient[b], update[b])


def _final_snapshots(recorders: list, E: torch.Tensor, step: int, probe: Callable | None = None) -> None:
    """Every seed's embedding after the last step (and, with ``probe``, the
    gradient and update of the step that would follow, taken and undone)."""
    final = E.detach().cpu().numpy().copy()
    for b, rec in enumerate(recorders):
        rec.snapshot(step, final[b], {})
    if probe is not None:
        _record_forces(recorders, *probe())


def _probe_step(E: torch.Tensor, params: list, optimizer, loss: Callable) -> tuple[np.ndarray, np.ndarray]:
    """The stacked embedding's gradient and the update one more step would
    make; the parameters and the optimiser are restored after."""
    saved = ([p.detach().clone() for p in params], copy.deepcopy(optimizer.state_dict()))
    before = E.detach().cpu().numpy().copy()
    try:
        optimizer.zero_grad(set_to_none=False)
        loss().backward()
        gradient = E.grad.detach().cpu().numpy().copy()
        optimizer.step()
        update = E.detach().cpu().numpy() - before
    finally:
        with torch.no_grad():
            for p, value in zip(params, saved[0]):
                p.copy_(value)
        optimizer.load_state_dict(saved[1])
    return gradient, update


def train_batched(config: SurvivalMLPConfig, seeds: Sequence[int], out_dir: str | os.PathLike | None = None, *,
                  callback: Callable[[int, int], None] | None = None, compile: str = "never",
                  checkpoint_every: int | None = None, resume: bool = False, n_jobs: int | None = None,
                  gradients: bool = False, device: str | torch.device | None = None,
                  scheduler=None) -> list[Trajectory]:
    """Train the survival MLP for every seed at once.

    Parameters
    ----------
    config : SurvivalMLPConfig
    seeds : sequence of distinct ints >= 0
    out_dir : folder, optional
        One trajectory file per seed, ``survival-mlp_seed<seed>.npz`` (written
        atomically, also when interrupted, with ``meta["completed"] = False``).
    callback : callable(done, total), optional
    compile : {"never", "auto"}
        ``"auto"`` fuses the forward (and its backward) with
        ``torch.compile`` where it works; same formulas.
    checkpoint_every : int >= 1, optional
        Write a checkpoint of all seeds (:func:`batched_checkpoint_path`)
        every this many steps and at an interruption between steps; needs
        ``out_dir``; removed when the run completes.
    resume : bool
        Continue from that checkpoint (bit-identical; another run's or an unusable one is refused
        before any training); groups whose finished files are there are skipped (:func:`finished_seeds`).
    n_jobs : int >= 1, optional
        Split the seeds into ``n_jobs`` contiguous groups (1 by default), each
        trained as one stack in its own process (joblib) with ``cores //
        n_jobs`` torch threads; checkpoints are per group; ``callback``
        reports as groups finish. On a cluster, the number of groups
        (default: one per worker thread, at most one per seed).
    scheduler : None, dask.distributed.Client, "local:N" or address, optional
        Train the groups as tasks on a Dask cluster, as
        :func:`fitting.training.train_grid` (None: the client of an active
        ``joblib.parallel_config(backend="dask")``, else local processes).
        With ``out_dir`` the finished groups are journaled there
        (``<model>_batched_seed<a>-<b>_n<N>.units/``) and the client writes
        every seed's file itself.
    gradients : bool
        Record each seed's embedding gradient and update at every snapshot, as :func:`fitting.training.train`.
    device : str or torch.device, optional
        Where the stack trains: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``
        (float32 only) (:func:`fitting.training.devices.check_device`,
        checked before any work; on a cluster only the name, and each worker
        checks that it has the device). None: each process's ``EMBDYN_DEVICE``,
        else the CPU. The seeds start from the parameters drawn on the CPU;
        each step copies the per-seed values and the embeddings to the CPU.

    Returns
    -------
    list of Trajectory, one per seed, in the order of ``seeds``
    """
    cluster = on_cluster(scheduler)
    # before any work; None stays the workers' (on a cluster only the name is checked here: they check theirs)
    device = device_arg(device, here=not cluster, dtype=getattr(config, "dtype", None))
    seeds, gradients = _check_batched(config, seeds, out_dir, compile, checkpoint_every, resume,
                                      1 if n_jobs is None and not cluster else n_jobs, gradients, cluster)
    if cluster:
        with cluster_client(scheduler) as client:
            if n_jobs is None:
                n_jobs = _cluster_groups(client, config, seeds, out_dir, resume, compile, gradients)
            if resume and out_dir is not None and (done := _resume_check(config, seeds, out_dir, n_jobs, compile,
                                                                        gradients)):
                return done
            return _train_in_groups(config, seeds, out_dir, callback=callback, compile=compile,
                                    checkpoint_every=checkpoint_every, resume=resume, n_jobs=n_jobs,
                                    gradients=gradients, device=device, client=client)
    n_jobs = 1 if n_jobs is None else n_jobs
    if resume and out_dir is not None and (done := _resume_check(config, seeds, out_dir, n_jobs, compile, gradients)):
        return done  # every seed finished before: nothing to redo
    if n_jobs > 1:
        return _train_in_groups(config, seeds, out_dir, callback=callback, compile=compile,
                                checkpoint_every=checkpoint_every, resume=resume, n_jobs=n_jobs, gradients=gradients,
                                device=device)
    return _train_stack(config, seeds, out_dir, callback=callback, compile=compile, checkpoint_every=checkpoint_every,
                        resume=resume, gradients=gradients, device=check_device(device))


def _train_stack(cfg: SurvivalMLPConfig, seeds: list[int], out_dir: str | os.PathLike | None, *,
                 callback: Callable[[int, int], None] | None, compile: str, checkpoint_every: int | None,
                 resume: bool, gradients: bool, device: torch.device | None = None) -> list[Trajectory]:
    """The seeds trained as one stack in this process (from the checkpoint
    with ``resume``); every seed's trajectory, saved in ``out_dir`` (also
    when interrupted), whose checkpoint is removed once the run completes."""
    device = torch.device("cpu") if device is None else device
    runs = _stacked_runs(cfg, seeds, device)
    E, params, splits = runs.E, runs.params, runs.splits
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    per_run = _per_run_losses(runs, compiled_or_plain(survival_mlp_forward, compile), cfg.d)

    recorders, every, metas, paths = _recording(cfg, seeds, splits, out_dir, gradients)
    metas = [{**meta, "device": str(device)} for meta in metas]
    checkpoint = _checkpoint(cfg, seeds, out_dir, compile, gradients)
    start = checkpoint.restore(lambda st: _restore(st, params, optimizer, recorders),
                               checkpoint.load() if resume else None)
    step = _step_function(runs, per_run, optimizer, recorders, seeds, every, gradients)

    # the gradient and update from the final state (gradients=True)
    probe = (lambda: _probe_step(E, params, optimizer, lambda: per_run(runs.tr_pairs, runs.tr_labels)[0].sum())
             ) if gradients else None

    def save(done: int) -> None:
        checkpoint.save({"params": [p.detach() for p in params], "optimizer": optimizer.state_dict(),
                         "recorders": [rec.to_state(done) for rec in recorders]})

    def on_stop(done: int, exc: BaseException) -> None:
        if out_dir is not None:
            for rec, meta, path, (train_set, _) in zip(recorders, metas, paths, splits):
                rec.trajectory(done, cfg.p, cfg.d, {**meta, "completed": False, "steps_done": done,
                                                    "stopped_by": type(exc).__name__}, train_set).save(path)

    run_steps(start, cfg.steps, step, save=save, checkpoint_every=checkpoint_every, callback=callback,
              on_stop=on_stop, finish=lambda done: _final_snapshots(recorders, E, cfg.steps, probe=probe))
    trajectories = _completed(recorders, metas, paths, cfg, splits)  # saved before the checkpoint goes
    checkpoint.remove()
    return trajectories


def _step_function(runs: StackedRuns, per_run: Callable, optimizer, recorders: list, seeds: list[int],
                   every: int | str, gradients: bool) -> Callable[[int, Progress], None]:
    """``step(t, progress)`` for :func:`run_steps`: one AdamW update of every
    seed of the stack, refused (naming the seeds) when a loss is non-finite,
    with every seed's series (and, when due, its snapshot and with
    ``gradients`` its gradient and update there) recorded."""
    E = runs.E

    def step(t: int, progress: Progress) -> None:
        optimizer.zero_grad(set_to_none=False)
        losses, train_acc = per_run(runs.tr_pairs, runs.tr_labels)
        losses.sum().backward()
        with torch.no_grad():
            val_losses, val_acc = per_run(runs.va_pairs, runs.va_labels)
        train_loss = losses.detach().cpu().numpy()
        val_loss = val_losses.cpu().numpy()
        if not (np.all(np.isfinite(train_loss)) and np.all(np.isfinite(val_loss))):
            bad = [s for s, a, b in zip(seeds, train_loss, val_loss) if not (np.isfinite(a) and np.isfinite(b))]
            raise TrainingDivergedError(f"survival-mlp: non-finite loss at step {t} for seeds {bad}")
        norms = _grad_norms(runs)
        emb = E.detach().cpu().numpy().copy()
        signals = fourier_signals(emb, dc=True)  # (B, K + 1)
        progress.consistent = False
        values = {"train_loss": train_loss, "train_acc": train_acc, "val_loss": val_loss, "val_acc": val_acc,
                  DC_SCALAR: signals[:, 0], **norms}
        due = snapshot_due(t, every)
        _record(recorders, t, due, values, signals, emb)
        gradient = E.grad.detach().cpu().numpy().copy() if due and gradients else None
        optimizer.step()
        if gradient is not None:
            _record_forces(recorders, gradient, E.detach().cpu().numpy() - emb)

    return step
