"""Torch threads sized to the work: one for small models, and a share each
when a trainer splits its work over ``n_jobs`` processes (the grid
trainer's parts, the batched seeds' groups); what a Ctrl-C does there."""

from __future__ import annotations

import signal
import threading

import torch

__all__ = ["threads_per_job", "worker_sigint", "ONE_THREAD_WORK", "threads_for_work", "torch_threads"]

#: multiply-adds per training step (parameters x rows of the batch) below
#: which a run trains on one torch thread: a small model gains nothing from
#: more, and beside a busy neighbour its threads wait for each other (the
#: toy model, 1e5 multiply-adds a step, ran 40x slower on 2 threads than on
#: one while another process used the second core)
ONE_THREAD_WORK = 10_000_000


def threads_for_work(work: int) -> int:
    """Torch threads for a step of ``work`` multiply-adds: 1 below
    :data:`ONE_THREAD_WORK`, else torch's current setting."""
    return 1 if work < ONE_THREAD_WORK else torch.get_num_threads()


class torch_threads:
    """Context that runs torch on ``n`` intra-op threads and restores the setting after."""

    def __init__(self, n: int):
        self.n = max(1, int(n))

    def __enter__(self):
        self.old = torch.get_num_threads()
        torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self.old)


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
