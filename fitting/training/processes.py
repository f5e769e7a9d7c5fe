"""Work split over processes, the one way every trainer does it (the grid's
parts, the batched trainer's groups of seeds): each part runs in one of
joblib's reusable loky workers (``joblib.Parallel``, its public API) with
its share of the torch threads, reports its step to the caller, and stops
between two steps, like an interrupted run (its checkpoint at the last
whole step, if it keeps one), when asked to.

The pool runs in a thread of the caller, whose own thread follows the
parts: a Ctrl-C (or an error raised by ``callback``) reaches that thread,
never joblib's wait for results, which would kill the workers at once.
On such an exception, or on an error in one part, the other parts are
asked to stop and get a grace period to write their checkpoints before
their workers are killed. A part's own error comes back as a value, so
that joblib does not cancel the other parts before their checkpoints.

Parts and caller talk through files in a temporary folder: a part writes
its process id and its step to ``part<k>`` (at most every ``REPORT_EVERY``
s), and the caller creates ``stop`` to ask every part to stop. Creating a
file does not depend on a connection a Ctrl-C may have left unusable, and
no manager process is needed.
"""

from __future__ import annotations

import math
import os
import pickle
import queue as queue_lib
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from particles.core.workers import exit_with_parent, finishing

from .threads import threads_per_job, torch_threads, worker_sigint

__all__ = ["run_parts", "part_entry", "travelling_error"]

#: seconds a part's progress reports are apart at least; the stop file is checked every STOP_CHECK seconds
REPORT_EVERY, STOP_CHECK = 0.5, 0.2
#: seconds the parts get to write their checkpoints once asked to stop
GRACE = 60
#: seconds the pool's thread gets to end once every part has returned, or once the workers of unfinished parts are killed
KILLED_JOIN = 30


class RemoteTraceback(Exception):
    """The traceback of a part's error in its worker (the ``__cause__`` of
    the error :func:`run_parts` raises, as concurrent.futures does)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


def travelling_error(exc: BaseException) -> tuple[BaseException, str]:
    """``(error, its traceback's text)`` of the error being handled, for a
    worker to return to its caller: an error that cannot be pickled becomes a
    RuntimeError naming it (its text travels); the traceback goes apart, as
    pickle leaves an exception's ``__cause__`` out."""
    text = traceback.format_exc()
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - an error that cannot travel: its text does
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc, text


def _write_progress(folder: str, part: int, done: int) -> None:
    """``"<pid> <done>"`` into ``folder/part<part>``, replaced whole (the caller never reads half a line)."""
    path = os.path.join(folder, f"part{part}")
    try:
        with open(path + ".tmp", "w") as fh:
            fh.write(f"{os.getpid()} {done}")
        os.replace(path + ".tmp", path)
    except OSError:  # the folder is gone: the caller has ended (the part stops at its next check)
        pass


def _read_progress(folder: str, part: int) -> tuple[int, int] | None:
    """``(pid, done)`` of ``part``, or None before its first report."""
    try:
        with open(os.path.join(folder, f"part{part}")) as fh:
            pid, done = fh.read().split()
        return int(pid), int(done)
    except (OSError, ValueError):
        return None


def part_entry(threads: int, folder: str, caller: int, part: int, total: int, work: Callable, args: tuple,
               kwargs: dict) -> tuple[int, bool, Any]:
    """Run ``work(*args, callback=report, **kwargs)`` as part ``part`` in a
    worker; ``(part, True, result)``, or ``(part, False, (error, its
    traceback's text))`` when it raised. ``report(done, total)`` writes the step to ``folder/part<part>``
    (at most every ``REPORT_EVERY`` s, and at its end) and raises
    KeyboardInterrupt once ``folder/stop`` exists, ``folder`` is gone or the
    caller (process ``caller``) is.

    A Ctrl-C in a terminal reaches the whole process group; the worker
    ignores it from now on (the caller receives it and creates the stop
    file), so a part always stops between two steps, where its checkpoint
    is consistent. It stays ignored after the part, while the worker idles:
    a Ctrl-C there would end the worker, and loky then kills the whole
    pool, parts still checkpointing included."""
    child = os.getppid() == caller  # False where joblib ran the part in the caller itself
    stop = os.path.join(folder, "stop")
    sent, checked = [-math.inf], [time.monotonic()]

    def stopped() -> bool:
        return os.path.exists(stop) or not os.path.isdir(folder) or (child and os.getppid() != caller)

    def report(done: int, steps: int) -> None:
        now = time.monotonic()
        if done >= steps or now - sent[0] >= REPORT_EVERY:
            sent[0] = now
            _write_progress(folder, part, done)
        if now - checked[0] >= STOP_CHECK:
            checked[0] = now
            if stopped():
                raise KeyboardInterrupt("the work was interrupted")

    _write_progress(folder, part, 0)  # the caller knows this worker's process from now on
    exit_with_parent(caller)  # an idle worker ends with its caller too (a SIGKILLed caller leaves none) ...
    worker_sigint(ignore=True)
    try:
        if stopped():  # asked to stop before it started: nothing to checkpoint
            raise KeyboardInterrupt("the work was interrupted")
        # ... a busy one stops itself at its next report, after its checkpoint
        with finishing(), torch_threads(threads):
            result = work(*args, callback=report, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - returned, so that joblib leaves the other parts their grace
        return part, False, travelling_error(exc)
    _write_progress(folder, part, total)  # also when the part had finished before a resume
    return part, True, result


def run_parts(work: Callable, parts: Sequence[tuple[tuple, dict]], total: int, *,
              callback: Callable[[int, int], None] | None = None) -> list[Any]:
    """``work(*args, callback=..., **kwargs)`` for every ``(args, kwargs)``
    of ``parts``, each in its own worker process with ``threads_per_job``
    torch threads; the results in the order of ``parts``. ``callback(done,
    total)`` gets the slowest part's step (``total``: the steps of a part)."""
    import shutil
    import tempfile

    n_jobs = len(parts)
    threads = threads_per_job(n_jobs)
    folder = tempfile.mkdtemp(prefix="embdyn-parts-")
    outcomes: queue_lib.Queue = queue_lib.Queue()
    tasks = [(threads, folder, os.getpid(), k, total, work, args, kwargs) for k, (args, kwargs) in enumerate(parts)]
    pool = threading.Thread(target=_pool, args=(tasks, outcomes), name="embdyn-parts", daemon=True)
    results: dict[int, Any] = {}
    try:
        pool.start()
        _follow(n_jobs, folder, outcomes, results, total, callback)
        pool.join(timeout=KILLED_JOIN)  # joblib winds the call up (every result is in)
        return [results[k] for k in range(n_jobs)]
    except BaseException:
        try:
            if pool.is_alive():
                Path(folder, "stop").touch()
                pool.join(timeout=GRACE)  # the parts write their checkpoints at their last whole step
        except OSError:  # the stop file could not be made: the parts are killed below without a checkpoint
            pass
        finally:  # also after a second Ctrl-C during the wait
            if pool.is_alive():  # no part keeps working after an interruption
                _kill_unfinished(folder, n_jobs, results, outcomes)
                pool.join(timeout=KILLED_JOIN)
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pool(tasks: list[tuple], outcomes: queue_lib.Queue) -> None:
    """Run the parts in joblib's loky workers, one per part, putting each
    ``(part, ok, value)`` on ``outcomes`` as it ends; a failure of the pool
    itself (a worker killed, a task that cannot be sent) as ``(None, False, (error, None))``."""
    from joblib import Parallel, delayed

    try:
        runner = Parallel(n_jobs=len(tasks), backend="loky", return_as="generator_unordered", batch_size=1,
                          pre_dispatch="all")
        for outcome in runner(delayed(part_entry)(*task) for task in tasks):
            outcomes.put(outcome)
    except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which raises it
        outcomes.put((None, False, (exc, None)))


def _follow(n_jobs: int, folder: str, outcomes: queue_lib.Queue, results: dict, total: int,
            callback: Callable[[int, int], None] | None) -> None:
    """Follow the parts until all are done (their results into ``results``)
    or one failed (its error raised); report the slowest part's step."""
    done, reported = [0] * n_jobs, 0
    while len(results) < n_jobs:
        try:
            part, ok, value = outcomes.get(timeout=STOP_CHECK)
        except queue_lib.Empty:
            pass
        else:
            if not ok:  # a part's error, without waiting for the other parts to finish
                error, text = value
                if text is not None:
                    raise error from RemoteTraceback(text)
                raise error
            results[part] = value
            done[part] = total
        for k in range(n_jobs):
            if k not in results:
                seen = _read_progress(folder, k)
                if seen is not None:
                    done[k] = max(done[k], seen[1])
        if callback is not None and min(done) > reported:
            reported = min(done)
            callback(reported, total)


def _kill_unfinished(folder: str, n_jobs: int, results: dict, outcomes: queue_lib.Queue) -> None:
    """SIGKILL the workers of the parts that have not returned (joblib then
    ends the pool; its generator raises in the pool's thread)."""
    ended = set(results)
    while True:
        try:
            part, _, _ = outcomes.get_nowait()
        except queue_lib.Empty:
            break
        ended.add(part)
    for k in range(n_jobs):
        seen = _read_progress(folder, k) if k not in ended else None
        if seen is not None and seen[0] != os.getpid():
            try:
                os.kill(seen[0], signal.SIGKILL)
            except OSError:  # already gone
                pass
