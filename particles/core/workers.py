"""Worker processes that do not outlive their caller.

joblib's reusable (loky) workers wait up to five minutes for more work after
their last task; when the caller is killed (SIGKILL, an out-of-memory kill)
nothing tells them, and they linger. :func:`exit_with_parent` starts, once
per process, a daemon thread that ends the worker within ``POLL`` seconds of
its parent's death (it is re-parented: ``os.getppid()`` changes). It acts
only in a direct child of the caller, so a run in the caller's own process
(``n_jobs=1``) or on a cluster (Dask) is left alone.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

__all__ = ["POLL", "exit_with_parent", "finishing"]

#: seconds between two looks at the parent
POLL = 0.5
_watching: list[int] = []
_finishing = [0]  # tasks that end themselves when the caller goes (and save first): the watch waits for them


@contextmanager
def finishing():
    """Within this block the watch does not end the worker: the task itself
    notices its caller's death and stops at a consistent point (a training
    part writes its checkpoint); the worker ends once the block is left."""
    _finishing[0] += 1
    try:
        yield
    finally:
        _finishing[0] -= 1


def exit_with_parent(caller: int) -> bool:
    """In a worker whose parent is the process ``caller`` (its pid), end the
    worker when that parent is gone; returns whether a watch runs (False in
    the caller itself or in a process that is not its child)."""
    if _watching:
        return True
    if os.getpid() == caller or os.getppid() != caller:
        return False

    def watch() -> None:
        while True:
            time.sleep(POLL)
            if os.getppid() != caller and not _finishing[0]:
                os._exit(1)  # nothing left to report to; no cleanup handlers of a half-done task

    threading.Thread(target=watch, name="embdyn-exit-with-parent", daemon=True).start()
    _watching.append(caller)
    return True
