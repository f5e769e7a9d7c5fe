"""BLAS threads sized to the regression.

ODE fits solve many small linear systems (tens to hundreds of unknowns, a
few thousand rows). A multi-threaded BLAS gains nothing on those and, on a
shared machine, loses badly: its threads spin waiting for a core another
process holds (one fit took 18.6 s instead of 0.19 s beside a busy
neighbour). So a fit whose regression is at most ``ONE_THREAD_SIZE``
numbers runs its BLAS on one thread (threadpoolctl), which also makes its
result independent of the machine's thread count; larger fits keep the
library's setting.
"""

from __future__ import annotations

import contextlib

__all__ = ["ONE_THREAD_SIZE", "blas_threads_for"]

#: largest regression (samples x library columns) run with one BLAS thread
ONE_THREAD_SIZE = 20_000_000

_CONTROLLER = None


def _controller():
    """One threadpoolctl controller, made at the first fit (limiting through
    it costs about 10 microseconds; ``threadpool_limits`` rescans the loaded
    libraries each time, about 0.3 ms)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def blas_threads_for(size: int):
    """A context that runs BLAS on one thread when ``size`` (numbers in the
    regression) is at most ``ONE_THREAD_SIZE``, and changes nothing
    otherwise."""
    if size > ONE_THREAD_SIZE:
        return contextlib.nullcontext()
    return _controller().limit(limits=1, user_api="blas")
