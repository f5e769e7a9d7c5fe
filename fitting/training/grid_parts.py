"""A grid split over processes: the cells dealt into parts, each trained as
its own stack in a worker (:func:`train_parts`), with one checkpoint per part."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np


from .configs import ToyConfig
from .grid_cells import train_cells
from .processes import run_parts
from .threads import threads_per_job
from .trainer import checkpoint_path

__all__ = ["max_jobs", "part_checkpoints", "checkpoints_found", "train_parts"]


def max_jobs(cells: int) -> int:
    """Largest ``n_jobs`` for a grid of ``cells`` cells: one process per
    cell and per CPU this process may run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cells, cpus))


def part_checkpoints(out: str | os.PathLike, n_jobs: int) -> list[Path]:
    """The checkpoint files of a grid written to ``out`` with ``n_jobs``
    processes: ``<stem>.ckpt.pt``, or ``<stem>.part<k>of<n>.ckpt.pt``."""
    out = Path(out)
    if n_jobs == 1:
        return [checkpoint_path(out)]
    return [out.with_name(f"{out.stem}.part{k + 1}of{n_jobs}.ckpt.pt") for k in range(n_jobs)]


def checkpoints_found(out: str | os.PathLike) -> dict[Path, int]:
    """Every checkpoint of ``out``'s stem on disk, with the ``n_jobs`` that wrote it."""
    out = Path(out)
    found = {}
    for path in out.parent.glob(f"{glob.escape(out.stem)}.*ckpt.pt"):
        match = re.fullmatch(r"(?:\.part\d+of(\d+))?\.ckpt\.pt", path.name[len(out.stem):])
        if match:
            found[path] = int(match[1]) if match[1] else 1
    return found


def train_parts(config: ToyConfig, cells: list[dict[str, float]], cell_seeds: list[int], identity: dict, *,
                n_jobs: int, out: str | os.PathLike | None, callback: Callable[[int, int], None] | None,
                client: Any = None, **run_args: Any) -> dict[str, Any]:
    """:func:`train_cells` over ``n_jobs`` round-robin parts of ``cells``,
    each in a reusable loky worker (:func:`fitting.training.processes.run_parts`:
    progress, stopping and grace period for checkpoints) or, with a Dask
    ``client``, each a task on its cluster (:func:`fitting.training.cluster.run_units`,
    journaled in ``<out stem>.units/`` when ``out`` is given); the per-cell
    arrays back in grid order."""
    parts = [list(range(k, len(cells), n_jobs)) for k in range(n_jobs)]
    ckpts = part_checkpoints(out, n_jobs) if out is not None else [None] * n_jobs
    jobs = [((config, [cells[i] for i in idx], [cell_seeds[i] for i in idx],
              identity if n_jobs == 1 else {**identity, "part": k + 1, "parts": n_jobs}),
             {"ckpt": ckpts[k], **run_args})
            for k, idx in enumerate(parts)]
    if client is None:
        runs = run_parts(train_cells, jobs, run_args["steps"], callback=callback)
    else:
        runs = _run_on_cluster(client, jobs, identity, n_jobs, out, callback, run_args)
    n = len(cells)
    merged: dict[str, Any] = {"steps_train": np.empty(n, dtype=np.int64), "steps_val": np.empty(n, dtype=np.int64),
                              "steps_run": np.empty(n, dtype=np.int64), "last": np.empty((n, 3)),
                              "diverged": np.empty(n, dtype=bool)}
    for idx, run in zip(parts, runs):
        for key, arr in merged.items():
            arr[idx] = run[key]
    merged.update(seconds=max(r["seconds"] for r in runs), cell_steps=sum(r["cell_steps"] for r in runs),
                  compiled=all(r["compiled"] for r in runs),
                  threads=threads_per_job(n_jobs) if client is None else min(r["threads"] for r in runs))
    return merged


def units_journal(out: str | os.PathLike) -> Path:
    """The folder where a grid written to ``out`` on a cluster journals its finished units."""
    out = Path(out)
    return out.with_name(f"{out.stem}.units")


def _run_on_cluster(client: Any, jobs: list, identity: dict, n_jobs: int, out: str | os.PathLike | None,
                    callback: Callable[[int, int], None] | None, run_args: dict) -> list[dict[str, Any]]:
    """The parts as units on ``client``'s cluster, journaled beside ``out``.
    A fresh run removes its split's checkpoints first: a unit that finds its
    checkpoint then knows it is its own, from an attempt on a worker that died."""
    from .cluster import UnitJournal, run_units

    journal = None
    if out is not None:
        journal = UnitJournal(units_journal(out), identity, n_jobs, resume=run_args["resume"])
        if not run_args["resume"]:
            for ckpt in part_checkpoints(out, n_jobs):
                ckpt.unlink(missing_ok=True)
    checkpoints = part_checkpoints(out, n_jobs) if out is not None else None
    runs = run_units(client, train_cells, jobs, run_args["steps"], callback=callback, journal=journal,
                     checkpoints=checkpoints)
    return runs
