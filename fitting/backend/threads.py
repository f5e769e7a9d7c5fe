"""Set-up of the worker processes when a trainer splits its work over
``n_jobs`` processes (the grid trainer's parts, the batched seeds' groups):
torch threads each, and what a Ctrl-C does there."""

from __future__ import annotations

import signal
import threading

import torch

__all__ = ["threads_per_job", "worker_sigint"]


def threads_per_job(n_jobs: int) -> int:
    """This process's torch threads shared out over ``n_jobs`` workers (at least 1 each)."""
    return max(1, torch.get_num_threads() // n_jobs)


def worker_sigint(ignore: bool) -> None:
    """In a worker's main thread, ignore SIGINT (``True``: the caller stops
    the work) or turn it into ``KeyboardInterrupt`` (``False``, Python's
    default). joblib reuses its workers across jobs, and a worker keeps what
    an earlier job set, so every job sets what it relies on. No-op outside
    the main thread (``signal`` works only there)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignore else signal.default_int_handler)
