"""Serial or parallel force kernel, chosen from measured time.

The two kernels give bit-identical results (see :mod:`particles.kernels.forces`),
so the choice only affects speed. On a shared machine the parallel kernel can
be much slower than one core (a thread waiting for a core held by another
process stalls every step), so with ``parallel=None`` the package times both
on the system at hand and uses the faster, trying the other one now and then
in case the load has changed. Small systems (one row block) always run
serially.
"""

from __future__ import annotations

import threading

import numba

from .kernels.forces import blocks_for

__all__ = ["KernelChoice", "kernel_choice", "usable_threads", "dynamic_schedule"]


def dynamic_schedule():
    """Context in which parallel loops hand out one iteration (one block of
    rows) at a time, so a thread slowed by other work takes fewer."""
    return numba.parallel_chunksize(1)


def usable_threads() -> int:
    """Threads the parallel kernel would use (numba's current setting)."""
    return numba.get_num_threads()


class KernelChoice:
    """Recent timings of the serial and parallel kernel per system size.

    ``choose(n_pairs, parallel)`` returns True for the parallel kernel;
    ``report(n_pairs, parallel, seconds, evaluations)`` feeds a timing back.
    Until both have been timed the untimed one is tried; afterwards the one
    with the smaller mean of its last ``window`` timings is used, and the
    other is re-timed every ``retry_every`` calls (the load on the machine
    changes). Means, not medians: on a shared machine the parallel kernel is
    usually fast and now and then very slow (a thread waiting for a core),
    and it is the average that a long run pays.
    """

    def __init__(self, retry_every: int = 32, window: int = 5):
        self.retry_every = retry_every
        self.window = window
        self._lock = threading.Lock()
        self._stats: dict[int, dict] = {}

    def reset(self) -> None:
        with self._lock:
            self._stats.clear()

    def _entry(self, n_pairs: int) -> dict:
        return self._stats.setdefault(n_pairs, {False: [], True: [], "calls": 0})

    @staticmethod
    def _mean(values: list[float]) -> float:
        return sum(values) / len(values)

    def choose(self, n_pairs: int, parallel: bool | None) -> bool:
        if parallel is not None:
            return bool(parallel) and blocks_for(n_pairs) > 1
        if blocks_for(n_pairs) == 1 or usable_threads() < 2:
            return False
        with self._lock:
            st = self._entry(n_pairs)
            st["calls"] += 1
            if not st[False]:
                return False
            if not st[True]:
                return True
            faster = self._mean(st[True]) < self._mean(st[False])
            if st["calls"] % self.retry_every == 0:
                return not faster
            return faster

    def report(self, n_pairs: int, parallel: bool, seconds: float, evaluations: int = 1) -> None:
        if evaluations < 1:
            return
        with self._lock:
            times = self._entry(n_pairs)[bool(parallel)]
            times.append(seconds / evaluations)
            del times[:-self.window]

    def timings(self, n_pairs: int) -> dict:
        """Mean seconds per force evaluation over the recent timings (None:
        not yet timed)."""
        with self._lock:
            st = self._stats.get(n_pairs, {False: [], True: []})
            return {"serial": self._mean(st[False]) if st[False] else None,
                    "parallel": self._mean(st[True]) if st[True] else None}


#: the package-wide chooser used with ``parallel=None``
kernel_choice = KernelChoice()
