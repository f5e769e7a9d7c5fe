"""Train a whole hyper-parameter grid of the toy model as one stacked model
(needs torch).

Every cell (grid point x seed) keeps its own parameters, data split,
targets and AdamW state; they are stacked along a leading axis, every layer
is one batched matrix product (training and validation rows in one
product), and the backward is written out per cell (the embedding's
gradient of E_a + E_b as one product with the cell's pair incidence;
autograd only through the matrix products of the S_3 input), so each cell
receives exactly its own gradient. Accuracies are computed in the same
compiled step. AdamW is applied
element-wise with per-cell learning rates and weight decays (the formulas of
``torch.optim.AdamW``), fused into one compiled kernel where
``torch.compile`` works and in plain torch otherwise. A cell stops once its
outcome is decided (both accuracies reached the threshold), diverges, or
the budget ends; stopped cells are removed from the stack, so the rest of
the grid runs faster.

Each cell starts from the parameters, split and targets of the single run
``train(config.replace(**cell), seed)``, and records the first step at which
its training and validation accuracy (measured before the update of that
step, as ``train`` records them) reach ``threshold``.
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from effective_theory.metrics import classify_phase
from particles.core.validation import check_seeds

from .activations import tanh_of
from .configs import ToyConfig
from .devices import STACK_FLOAT64, device_arg
from .grid_cells import grid_checkpoint, train_cells
from .cluster import cluster_client, on_cluster
from .grid_parts import checkpoints_found, max_jobs, part_checkpoints, train_parts, units_journal
from .grid_result import GRID_FIELDS, TANH_BEFORE_OPTION, GridFormatError, GridResult, check_grid, finite_or_none

__all__ = ["train_grid", "GridResult", "GRID_FIELDS", "GridFormatError", "finished_grid", "check_grid_memory"]


def _check_grid_args(config, grid, seeds, steps, threshold, gap, stop_when, compile, tanh, checkpoint_every, out,
                     resume) -> tuple[dict[str, list[float]], list[int], int]:
    """The arguments of :func:`train_grid` checked: (grid, seeds, steps)."""
    if not isinstance(config, ToyConfig):
        raise TypeError(f"config must be a ToyConfig, got {type(config).__name__}")
    grid = check_grid(grid)
    seeds = check_seeds(seeds)
    steps = config.steps if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    steps = int(steps)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not (math.isfinite(gap) and gap > 0):
        raise ValueError(f"gap must be a finite number > 0, got {gap!r}")
    if stop_when not in ("decided", "never"):
        raise ValueError(f"stop_when must be 'decided' or 'never', got {stop_when!r}")
    if compile not in ("auto", "never"):
        raise ValueError(f"compile must be 'auto' or 'never', got {compile!r}")
    tanh_of(tanh)  # ValueError naming tanh
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"checkpoint_every must be None or an int >= 1, got {checkpoint_every!r}")
    if out is not None and Path(out).suffix != ".json":
        raise ValueError(f"out must end in .json, got {str(out)!r}")
    if (checkpoint_every or resume) and out is None:
        raise ValueError("checkpoint_every and resume need an output path (out=...)")
    return grid, seeds, steps


def _drop_checkpoints_of_other_splits(out: str | os.PathLike, n_jobs: int, resume: bool) -> None:
    """Refuse to resume from the checkpoints of a run split over another
    ``n_jobs``; a fresh run removes them."""
    found = checkpoints_found(out)
    others = {path: k for path, k in found.items() if path not in part_checkpoints(out, n_jobs)}
    if resume and others:
        splits = sorted(set(others.values()))
        raise ValueError(f"resume: checkpoints of {Path(out).name} were written with n_jobs={splits} "
                         f"({sorted(p.name for p in others)}); resume with that n_jobs (got n_jobs={n_jobs})")
    for path in others:  # a fresh run replaces the checkpoints of a run with another split
        path.unlink()


#: bytes a cell of the stack takes beyond its tensors (the per-cell arrays, records and bookkeeping)
CELL_OVERHEAD_BYTES = 4096


def check_grid_memory(config: ToyConfig, cells: int, name: str = "seeds") -> None:
    """Refuse, before any cell is built, a grid of ``cells`` cells (grid
    points x seeds) whose stacked tensors (those of one cell, measured,
    twice: a step's new values and the stack's reordering) exceed the
    memory budget (:func:`particles.core.limits.memory_budget`)."""
    from particles.core.limits import check_budget

    from .grid_stack import CellStack

    one = CellStack(config, [{}], [0])
    per_cell = 2 * sum(t.numel() * t.element_size() for t in one.tensors.values()) + CELL_OVERHEAD_BYTES
    check_budget(cells * per_cell, f"a grid of {cells} cells (grid points x {name}) of {per_cell} bytes each",
                 f"use fewer {name} or grid points")


def _check_jobs(n_jobs, n_cells: int, config: ToyConfig, cluster: bool = False) -> int | None:
    """``n_jobs`` checked against the grid's cells and CPUs (on a cluster:
    its cells only; None stays None there), and the grid's memory (before any cell is built)."""
    if n_jobs is None and cluster:
        check_grid_memory(config, n_cells)
        return None
    n_jobs = 1 if n_jobs is None else n_jobs
    top = n_cells if cluster else max_jobs(n_cells)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or not 1 <= n_jobs <= top:
        where = "at most one unit per cell" if cluster else "at most one process per cell and per CPU"
        raise ValueError(f"n_jobs must be None or an int in [1, {top}] ({where}), got {n_jobs!r}")
    check_grid_memory(config, n_cells)
    return int(n_jobs)


def _cluster_units(client, n_jobs: int | None, n_cells: int, out, resume: bool, identity: dict) -> int:
    """The units of a grid on a cluster: ``n_jobs``, else the split of this
    run's journal being resumed, else one per worker thread (at most one per cell)."""
    if n_jobs is not None:
        return n_jobs
    from .cluster import UnitJournal, cluster_slots

    if resume and out is not None and (units := UnitJournal.units_of(units_journal(out), identity)) is not None:
        return units
    return max(1, min(n_cells, sum(cluster_slots(client).values())))


def _identity(config: ToyConfig, grid: dict, seeds: list[int], steps: int, threshold: float, stop_when: str,
              compile: str, tanh: str) -> dict:
    """What a grid run is: its checkpoints and finished result carry it."""
    return {"config": config.to_dict(), "grid": grid, "seeds": seeds, "steps": steps, "threshold": float(threshold),
            "stop_when": stop_when, "compile": compile, "tanh": tanh, "torch_version": str(torch.__version__)}


def _finished(out: str | os.PathLike, identity: dict, n_cells: int) -> GridResult | None:
    """The result at ``out`` when it is the finished grid of ``identity`` (every cell recorded); else None."""
    import json

    path = Path(out)
    if not path.is_file() or path.is_symlink():
        return None
    try:
        result = GridResult.load(path)
    except (ValueError, OSError):  # damaged or foreign: trained again
        return None
    meta = {"tanh": TANH_BEFORE_OPTION, **result.meta}
    same = all(json.dumps(meta.get(k), sort_keys=True) == json.dumps(v, sort_keys=True) for k, v in identity.items())
    return result if same and len(result.records) == n_cells else None


def _resume_check(out, identity: dict, n_cells: int, n_jobs: int) -> GridResult | None:
    """The finished result at ``out`` (:func:`_finished`); else None, after reading every checkpoint of
    the run (one that cannot be used is refused before any part trains)."""
    done = _finished(out, identity, n_cells)
    if done is None:
        _drop_checkpoints_of_other_splits(out, n_jobs, True)  # refuses another split first, by name
        for k, ckpt in enumerate(part_checkpoints(out, n_jobs)):
            grid_checkpoint(ckpt, identity if n_jobs == 1 else {**identity, "part": k + 1, "parts": n_jobs}).load()
    return done


def finished_grid(out: str | os.PathLike, config: ToyConfig, grid: Mapping[str, Sequence[float]],
                  seeds: Sequence[int] = (0,), *, steps: int | None = None, threshold: float = 0.9,
                  stop_when: str = "decided", compile: str = "auto", tanh: str = "fast") -> GridResult | None:
    """The result at ``out`` when ``train_grid`` with these arguments (its
    defaults) finished it before, so that ``resume=True`` returns it without
    training; None otherwise."""
    grid, seeds, steps = _check_grid_args(config, grid, seeds, steps, threshold, 1.0, stop_when, compile, tanh,
                                          None, out, False)
    return _finished(out, _identity(config, grid, seeds, steps, threshold, stop_when, compile, tanh),
                     len(seeds) * math.prod(len(v) for v in grid.values()))


def _records(cells: list[dict], cell_seeds: list[int], run: dict, steps: int, gap: float) -> list[dict]:
    """One record per cell and seed from a run's per-cell arrays."""
    steps_train, steps_val, steps_run, last, diverged = (run[k] for k in ("steps_train", "steps_val", "steps_run",
                                                                          "last", "diverged"))
    records = []
    for i in range(len(cells)):
        t_tr = int(steps_train[i]) if steps_train[i] >= 0 else None
        t_va = int(steps_val[i]) if steps_val[i] >= 0 else None
        records.append({**cells[i], "seed": cell_seeds[i], "steps_train": t_tr, "steps_val": t_va,
                        "phase": classify_phase(t_tr, t_va, budget=float(steps), gap=float(gap),
                                                val_without_train="confusion"),
                        "steps_run": int(steps_run[i]),
                        "train_acc": finite_or_none(last[i, 0]), "val_acc": finite_or_none(last[i, 1]), "train_loss": finite_or_none(last[i, 2]),
                        "diverged": bool(diverged[i])})
    return records


def train_grid(config: ToyConfig, grid: Mapping[str, Sequence[float]], seeds: Sequence[int] = (0,), *,
               steps: int | None = None, threshold: float = 0.9, gap: float = 1000.0, stop_when: str = "decided",
               out: str | os.PathLike | None = None, checkpoint_every: int | None = None, resume: bool = False,
               callback: Callable[[int, int], None] | None = None, compile: str = "auto",
               tanh: str = "fast", n_jobs: int | None = None, scheduler=None,
               device: str | torch.device | None = None) -> GridResult:
    """Train every cell of ``grid`` (and every seed) of the toy model at once.

    Parameters
    ----------
    config : ToyConfig
        The fields that do not vary (for example from
        :func:`fitting.training.toy_phase_setting`); its ``dtype`` (float32 or
        float64) is used.
    grid : dict of field -> list of numbers
        Fields among ``GRID_FIELDS``; every combination is a cell.
    seeds : list of distinct ints >= 0
        Every cell runs once per seed (split, initialisation and targets as
        ``train(config, seed)``).
    steps : int >= 1, optional
        Step budget; ``config.steps`` by default.
    threshold : float in (0, 1]
        Accuracy that counts as reached (0.9 in the paper).
    gap : float > 0
        Grokking gap for ``effective_theory.classify_phase`` (paper: 1e3).
    stop_when : {"decided", "never"}
        ``"decided"`` stops a cell once both accuracies reached the
        threshold (its phase can no longer change); ``"never"`` trains every
        cell for the whole budget.
    out : path ending in .json, optional
        Where the result is written (atomically), with a CSV beside it.
        Needed for checkpoints.
    checkpoint_every : int >= 1, optional
        Write ``<out stem>.ckpt.pt`` every this many steps (removed when the
        grid completes); ``resume=True`` continues from it bit-identically
        (or returns this grid's finished result at ``out``: :func:`finished_grid`).
    callback : callable(done, total), optional
        Called after every step.
    compile : {"auto", "never"}
        ``"auto"`` fuses the AdamW update with ``torch.compile`` when it
        works (about 5x less time in the update on 2 cores); ``"never"`` uses
        plain torch (same formulas).
    tanh : {"fast", "exact"}
        The decoder's activation: ``"fast"`` (default)
        :func:`~fitting.training.activations.tanh_fast`, within 2 machine
        epsilons of tanh, ~10 % less time per compiled step (slower in plain
        torch: use ``"exact"``, ``torch.tanh``, with ``compile="never"``).
        Either way cells agree with single runs to float rounding.
    n_jobs : int >= 1, optional
        Processes (1 by default; joblib's reusable loky workers, through
        ``joblib.Parallel``). With ``n_jobs > 1`` the cells are dealt
        round-robin into ``n_jobs`` parts, each trained as
        its own stack in its own process with ``torch threads // n_jobs``
        threads; the records are the same, bit for bit, as with one
        process (cells are independent and the result does not depend on
        the thread count; tested plain in float64 and compiled in
        float32; timings in docs/training.md, "Speed"). Checkpoints are then
        one file per part (``<out stem>.part<k>of<n>.ckpt.pt``),
        ``resume=True`` needs the same ``n_jobs``, and ``callback`` reports
        the slowest part's step (at most twice a second). On a cluster:
        units (default: one per worker thread, or the resumed journal's split).
    scheduler : None, dask.distributed.Client, "local:N" or address, optional
        The parts as tasks on a Dask cluster (:mod:`fitting.training.cluster`;
        None: an active ``joblib.parallel_config(backend="dask")``'s client,
        else local processes), journaled in ``<out stem>.units/``; with
        ``resume=True`` only unfinished units train. Same records, bit for bit.
    device : str or torch.device, optional
        Where the cells train: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` (not ``"mps"``: float64 rates), checked
        before any work (:func:`fitting.training.devices.check_device`; on a cluster only the name, each
        worker checks it has the device). None: each process's ``EMBDYN_DEVICE``, else the CPU.

    Returns
    -------
    GridResult
        One record per cell and seed, in the order of
        ``itertools.product(*grid.values())`` then ``seeds``.
    """
    grid, seeds, steps = _check_grid_args(config, grid, seeds, steps, threshold, gap, stop_when, compile, tanh,
                                          checkpoint_every, out, resume)
    n_cells = len(seeds) * math.prod(len(v) for v in grid.values())
    device = device_arg(device, here=not on_cluster(scheduler), dtype="float64", why=STACK_FLOAT64)
    n_jobs = _check_jobs(n_jobs, n_cells, config, cluster=on_cluster(scheduler))
    identity = _identity(config, grid, seeds, steps, threshold, stop_when, compile, tanh)
    with cluster_client(scheduler) as client:
        if client is not None:
            n_jobs = _cluster_units(client, n_jobs, n_cells, out, resume, identity)
        if resume and out is not None and (done := _resume_check(out, identity, n_cells, n_jobs)) is not None:
            return done  # finished before: nothing to redo
        cells, cell_seeds = _cells(grid, seeds)
        if out is not None:
            _drop_checkpoints_of_other_splits(out, n_jobs, resume)
        run = _run_cells(config, cells, cell_seeds, identity, out, n_jobs, callback,
                         dict(steps=steps, threshold=threshold, stop_when=stop_when, checkpoint_every=checkpoint_every,
                              resume=resume, compile=compile, tanh=tanh, device=device), client)
    records = _records(cells, cell_seeds, run, steps, gap)
    result = GridResult(records, _grid_meta(identity, gap, run, n_jobs))
    if out is not None:
        _write_result(result, out, n_jobs)
    return result


def _cells(grid: dict[str, list[float]], seeds: list[int]) -> tuple[list[dict], list[int]]:
    """The cells of a grid run, one per grid point and seed (in the order of
    ``itertools.product(*grid.values())`` then ``seeds``), and their seeds."""
    keys = list(grid)
    points = [dict(zip(keys, values)) for values in itertools.product(*grid.values())]
    return [pt for pt in points for _ in seeds], [s for _ in points for s in seeds]


def _run_cells(config: ToyConfig, cells: list[dict], cell_seeds: list[int], identity: dict,
               out: str | os.PathLike | None, n_jobs: int, callback: Callable[[int, int], None] | None,
               run_args: dict, client=None) -> dict:
    """Train the cells as one stack in this process, or as ``n_jobs`` parts
    in worker processes or on ``client``'s cluster; the run's per-cell arrays and figures."""
    if client is not None:
        return train_parts(config, cells, cell_seeds, identity, n_jobs=n_jobs, out=out, callback=callback,
                           client=client, **run_args)
    if n_jobs == 1:
        ckpt = part_checkpoints(out, 1)[0] if out is not None else None
        return train_cells(config, cells, cell_seeds, identity, ckpt=ckpt, callback=callback, **run_args)
    return train_parts(config, cells, cell_seeds, identity, n_jobs=n_jobs, out=out, callback=callback, **run_args)


def _grid_meta(identity: dict, gap: float, run: dict, n_jobs: int) -> dict:
    """A finished grid's meta: its ``identity``, the phase rule and the run's figures."""
    return {**identity, "gap": float(gap), "val_without_train": "confusion", "seconds": run["seconds"],
            "cell_steps": run["cell_steps"], "compiled": run["compiled"], "torch_version": str(torch.__version__),
            "threads": run["threads"], "n_jobs": n_jobs}


def _write_result(result: GridResult, out: str | os.PathLike, n_jobs: int) -> None:
    """Write a finished grid to ``out`` and the CSV beside it, then remove
    the checkpoints of its ``n_jobs`` parts."""
    result.save(out)
    result.save(Path(out).with_suffix(".csv"))
    for ckpt in part_checkpoints(out, n_jobs):
        if ckpt.exists():
            ckpt.unlink()
    for unit in units_journal(out).glob("unit*.npz"):  # a cluster run's journal keeps its header and events as a log
        unit.unlink()
