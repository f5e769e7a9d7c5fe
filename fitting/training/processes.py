"""Work split over processes, the one way every trainer does it (the grid's
parts, the batched trainer's groups of seeds): each part runs in one of
joblib's reusable loky workers with its share of the torch threads, reports
its step to the caller, and stops between two steps, like an interrupted run
(its checkpoint at the last whole step, if it keeps one), when asked to.

On an exception in the caller (an interruption, or an error raised by
``callback``) or in one part, the other parts are asked to stop and get a
grace period to write their checkpoints before their workers are killed.
The stop signal is a file, not the manager's: a Ctrl-C during a read of the
progress queue can leave the manager's connection unusable, and creating a
file does not depend on it.
"""

from __future__ import annotations

import math
import os
import queue as queue_lib
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from particles.core.workers import exit_with_parent, finishing

from .threads import threads_per_job, worker_sigint

__all__ = ["run_parts", "part_entry"]

#: seconds a part's progress reports are apart at least; the stop file is checked every STOP_CHECK seconds
REPORT_EVERY, STOP_CHECK = 0.5, 0.2
#: seconds the parts get to write their checkpoints once asked to stop
GRACE = 60


def part_entry(threads: int, queue: Any, stop: str, part: int, total: int, work: Callable, args: tuple,
               kwargs: dict) -> Any:
    """Run ``work(*args, callback=report, **kwargs)`` as part ``part`` in a
    worker: ``report(done, total)`` puts ``(part, done)`` on ``queue`` (at
    most every ``REPORT_EVERY`` s, and at its end) and raises
    KeyboardInterrupt once the file ``stop`` exists or the caller is gone.

    A Ctrl-C in a terminal reaches the whole process group; the worker
    ignores it from now on (the caller receives it and creates ``stop``), so
    a part always stops between two steps, where its checkpoint is
    consistent. It stays ignored after the part, while the worker idles: a
    Ctrl-C there would end the worker, and loky then kills the whole pool,
    parts still checkpointing included."""
    torch.set_num_threads(threads)
    caller = os.getppid()
    exit_with_parent(caller)  # an idle worker ends with its caller too (a SIGKILLed caller leaves none) ...
    sent, checked = [-math.inf], [time.monotonic()]

    def report(done: int, steps: int) -> None:
        now = time.monotonic()
        if done >= steps or now - sent[0] >= REPORT_EVERY:
            sent[0] = now
            queue.put((part, done))
        if now - checked[0] >= STOP_CHECK:
            checked[0] = now
            if os.path.exists(stop) or os.getppid() != caller:
                raise KeyboardInterrupt("the work was interrupted")

    worker_sigint(ignore=True)
    with finishing():  # ... a busy one stops itself at its next report, after its checkpoint
        result = work(*args, callback=report, **kwargs)
    queue.put((part, total))  # also when the part had finished before a resume
    return result


def run_parts(work: Callable, parts: Sequence[tuple[tuple, dict]], total: int, *,
              callback: Callable[[int, int], None] | None = None) -> list[Any]:
    """``work(*args, callback=..., **kwargs)`` for every ``(args, kwargs)``
    of ``parts``, each in its own worker process with ``threads_per_job``
    torch threads; the results in the order of ``parts``. ``callback(done,
    total)`` gets the slowest part's step (``total``: the steps of a part)."""
    import shutil
    import tempfile
    from concurrent.futures import wait

    from joblib.executor import get_memmapping_executor
    from joblib.externals.loky.backend.context import get_context

    n_jobs = len(parts)
    threads = threads_per_job(n_jobs)
    manager, futures, executor = None, [], None
    stop_dir = tempfile.mkdtemp(prefix="embdyn-parts-")
    stop = os.path.join(stop_dir, "stop")  # created to ask every part to stop
    try:
        manager = get_context("loky").Manager()  # loky's context: no re-run of the caller's __main__
        progress = manager.Queue()
        # joblib's own reusable executor (the one joblib.Parallel(backend="loky") uses and may take over);
        # idle workers stay 5 minutes, as joblib's
        executor = get_memmapping_executor(n_jobs, timeout=300)
        futures = [executor.submit(part_entry, threads, progress, stop, k, total, work, args, kwargs)
                   for k, (args, kwargs) in enumerate(parts)]
        _follow(futures, progress, total, callback)
        for f in futures:  # a part's error, without waiting for the other parts to finish
            if f.done() and f.exception() is not None:
                raise f.exception()
        return [f.result() for f in futures]
    except BaseException:
        try:
            if futures:
                Path(stop).touch()
                wait(futures, timeout=GRACE)  # the parts write their checkpoints at their last whole step
        except OSError:  # the stop file could not be made: the parts are killed below without a checkpoint
            pass
        finally:  # also after a second Ctrl-C during the wait
            if executor is not None:
                executor.shutdown(wait=True, kill_workers=True)  # no part keeps working after an interruption
        raise
    finally:
        if manager is not None:
            manager.shutdown()
        shutil.rmtree(stop_dir, ignore_errors=True)


def _follow(futures: list, progress: Any, total: int, callback: Callable[[int, int], None] | None) -> None:
    """Read the parts' progress until all are done or one failed; report the slowest part's step."""
    done, reported = [0] * len(futures), 0
    while True:
        try:
            k, step = progress.get(timeout=STOP_CHECK)
            done[k] = max(done[k], step)
        except queue_lib.Empty:
            if all(f.done() for f in futures) or any(f.done() and f.exception() is not None for f in futures):
                break
            continue
        if callback is not None and min(done) > reported:
            reported = min(done)
            callback(reported, total)
    if callback is not None and reported < total and all(f.done() and f.exception() is None for f in futures):
        callback(total, total)
