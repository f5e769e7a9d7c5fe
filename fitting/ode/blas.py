"""BLAS threads sized to the regression.

ODE fits solve many small linear systems (tens to hundreds of unknowns, a
few thousand rows). A multi-threaded BLAS gains nothing on those and, on a
shared machine, loses badly: its threads spin waiting for a core another
process holds (one fit took 18.6 s instead of 0.19 s beside a busy
neighbour). So a fit whose regression is at most ``ONE_THREAD_SIZE``
numbers runs its BLAS on one thread (threadpoolctl), which also makes its
result independent of the machine's thread count; larger fits keep the
library's setting.

The limit is process-wide (BLAS has one thread setting per process), so
fits that overlap in several Python threads share it: the first to start
sets it, the last to finish restores what was there before.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["ONE_THREAD_SIZE", "blas_threads_for"]

#: largest regression (samples x library columns) run with one BLAS thread
ONE_THREAD_SIZE = 20_000_000

_LOCK = threading.Lock()
_STATE = {"controller": None, "depth": 0, "limit": None}


@contextlib.contextmanager
def _one_thread():
    with _LOCK:
        if _STATE["depth"] == 0:
            if _STATE["controller"] is None:  # made once: limiting through it costs ~10 microseconds
                from threadpoolctl import ThreadpoolController

                _STATE["controller"] = ThreadpoolController()
            _STATE["limit"] = _STATE["controller"].limit(limits=1, user_api="blas")
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0:
                _STATE["limit"].restore_original_limits()
                _STATE["limit"] = None


def blas_threads_for(size: int):
    """A context that runs BLAS on one thread when ``size`` (numbers in the
    regression) is at most ``ONE_THREAD_SIZE``, and changes nothing
    otherwise. Safe when fits overlap in several threads."""
    if size > ONE_THREAD_SIZE:
        return contextlib.nullcontext()
    return _one_thread()
