"""A grid split over processes: the cells dealt into parts, each trained as
its own stack in a worker (:func:`train_parts`), with one checkpoint per part."""

from __future__ import annotations

import glob
import math
import os
import queue as queue_lib
import re
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch


from .configs import ToyConfig
from .grid_cells import train_cells
from .threads import threads_per_job, worker_sigint
from .trainer import checkpoint_path

__all__ = ["max_jobs", "part_checkpoints", "checkpoints_found", "part_worker", "train_parts"]


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


def part_worker(threads: int, queue: Any, stop: str, part: int, config: ToyConfig, cells: list[dict[str, float]],
                 cell_seeds: list[int], identity: dict, ckpt: Path | None, run_args: dict) -> dict[str, Any]:
    """One part of a grid in a worker process. Reports its step to ``queue``
    (at most twice a second, and at its end) and stops like an interrupted
    run (checkpoint at the last whole step, if checkpointing) once the file
    ``stop`` exists or the calling process is gone, checked every 0.2 s.

    A Ctrl-C in a terminal reaches the whole process group; the worker
    ignores it from now on (the caller receives it and creates ``stop``), so
    a part always stops between two steps, where its checkpoint is
    consistent. It stays ignored after the part, while the worker idles: a
    Ctrl-C there would end the worker, and loky then kills the whole pool,
    parts still checkpointing included (an interrupted joblib caller kills
    its workers anyway)."""
    torch.set_num_threads(threads)
    caller = os.getppid()
    sent, checked = [-math.inf], [time.monotonic()]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - sent[0] >= 0.5:
            sent[0] = now
            queue.put((part, done))
        if now - checked[0] >= 0.2:
            checked[0] = now
            if os.path.exists(stop) or os.getppid() != caller:
                raise KeyboardInterrupt("the grid was interrupted")
    worker_sigint(ignore=True)
    result = train_cells(config, cells, cell_seeds, identity, ckpt=ckpt, callback=report, **run_args)
    queue.put((part, run_args["steps"]))  # also when the part had finished before a resume
    return result


def train_parts(config: ToyConfig, cells: list[dict[str, float]], cell_seeds: list[int], identity: dict, *,
                 n_jobs: int, out: str | os.PathLike | None, callback: Callable[[int, int], None] | None,
                 **run_args: Any) -> dict[str, Any]:
    """:func:`train_cells` over ``n_jobs`` round-robin parts of ``cells``,
    each in a reusable loky worker; the per-cell arrays back in grid order.

    On an exception in this process (an interruption, or an error raised by
    ``callback``) or in one part, the other parts are asked to stop and get
    a grace period to write their checkpoints before their workers are
    killed. The stop signal is a file, not the manager's: a Ctrl-C during a
    read of the progress queue can leave the manager's connection unusable,
    and creating a file does not depend on it."""
    import shutil
    import tempfile
    from concurrent.futures import wait

    from joblib.executor import get_memmapping_executor
    from joblib.externals.loky.backend.context import get_context

    parts = [list(range(k, len(cells), n_jobs)) for k in range(n_jobs)]
    ckpts = part_checkpoints(out, n_jobs) if out is not None else [None] * n_jobs
    threads = threads_per_job(n_jobs)
    steps = run_args["steps"]
    manager, futures, executor = None, [], None
    stop_dir = tempfile.mkdtemp(prefix="embdyn-grid-")
    stop = os.path.join(stop_dir, "stop")  # created to ask every part to stop
    try:
        manager = get_context("loky").Manager()  # loky's context: no re-run of the caller's __main__
        progress = manager.Queue()
        # joblib's own reusable executor (the one joblib.Parallel(backend="loky") uses and may take over);
        # idle workers stay 5 minutes, as joblib's
        executor = get_memmapping_executor(n_jobs, timeout=300)
        futures = [executor.submit(part_worker, threads, progress, stop, k, config, [cells[i] for i in idx],
                                   [cell_seeds[i] for i in idx], {**identity, "part": k + 1, "parts": n_jobs},
                                   ckpts[k], run_args) for k, idx in enumerate(parts)]
        done, reported = [0] * n_jobs, 0
        while True:
            try:
                k, step = progress.get(timeout=0.2)
                done[k] = max(done[k], step)
            except queue_lib.Empty:
                if all(f.done() for f in futures) or any(f.done() and f.exception() is not None for f in futures):
                    break
                continue
            if callback is not None and min(done) > reported:
                reported = min(done)
                callback(reported, steps)
        for f in futures:  # a part's error, without waiting for the other parts to finish
            if f.done() and f.exception() is not None:
                raise f.exception()
        runs = [f.result() for f in futures]
        if callback is not None and reported < steps:
            callback(steps, steps)
    except BaseException:
        try:
            if futures:
                Path(stop).touch()
                wait(futures, timeout=60)  # the parts write their checkpoints at their last whole step
        except OSError:  # the stop file could not be made: the parts are killed below without a checkpoint
            pass
        finally:  # also after a second Ctrl-C during the wait
            if executor is not None:
                executor.shutdown(wait=True, kill_workers=True)  # no part keeps training after an interruption
        raise
    finally:
        if manager is not None:
            manager.shutdown()
        shutil.rmtree(stop_dir, ignore_errors=True)
    n = len(cells)
    merged: dict[str, Any] = {"steps_train": np.empty(n, dtype=np.int64), "steps_val": np.empty(n, dtype=np.int64),
                              "steps_run": np.empty(n, dtype=np.int64), "last": np.empty((n, 3)),
                              "diverged": np.empty(n, dtype=bool)}
    for idx, run in zip(parts, runs):
        for key, arr in merged.items():
            arr[idx] = run[key]
    merged.update(seconds=max(r["seconds"] for r in runs), cell_steps=sum(r["cell_steps"] for r in runs),
                  compiled=all(r["compiled"] for r in runs), threads=threads)
    return merged
