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
from collections import deque

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


class _Window:
    """Recent (seconds, evaluations) reports with running totals: the last
    ``window`` reports, or more while the others span less than
    ``min_seconds``."""

    def __init__(self):
        self.records: deque = deque()
        self.seconds = 0.0
        self.evaluations = 0

    def __bool__(self) -> bool:
        return bool(self.records)

    def add(self, seconds: float, evaluations: int, window: int, min_seconds: float) -> None:
        self.records.append((seconds, evaluations))
        self.seconds += seconds
        self.evaluations += evaluations
        while len(self.records) > window and self.seconds - self.records[0][0] >= min_seconds:
            old_seconds, old_evaluations = self.records.popleft()
            self.seconds -= old_seconds
            self.evaluations -= old_evaluations


class KernelChoice:
    """Recent timings of the serial and parallel kernel per system.

    ``choose(key, parallel, splittable)`` returns True for the parallel
    kernel (only when the work splits: several row blocks, or the two force
    terms of a one-block system); ``report(key, parallel, seconds,
    evaluations)`` feeds a timing back. ``key`` identifies the system (the
    engine uses (pairs, d, cut-off or not)).

    Each kernel is tried in a *trial*: at least ``trial`` consecutive calls,
    and more until the timed ones span ``min_seconds``, whose first timing is dropped
    (threads that slept must wake up first) and whose other timings replace
    that kernel's older ones. Until both have been tried, the untried one
    runs; afterwards the one with the smaller mean time per evaluation runs,
    over its recent timings (the last ``window`` reports, or more while they
    span less than ``min_seconds``), and the other is tried again after
    ``retry_every`` calls, since the load on the machine changes; each trial
    that confirms the choice doubles that interval (up to
    ``max_retry_every``), one that changes it resets it.

    Means over at least ``min_seconds``, not medians of a few calls: on a
    shared machine the parallel kernel is usually fast and now and then very
    slow (a thread waiting for a core held by another process, for a
    scheduler slice of milliseconds), and it is the average that a run pays.
    """

    def __init__(self, retry_every: int = 32, window: int = 6, trial: int = 3, max_retry_every: int = 512,
                 min_seconds: float = 0.02):
        for name, value, low in (("retry_every", retry_every, 1), ("window", window, 1), ("trial", trial, 2),
                                 ("max_retry_every", max_retry_every, retry_every)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"KernelChoice {name} must be an int >= {low}, got {value!r}")
        if not (isinstance(min_seconds, (int, float)) and min_seconds >= 0):
            raise ValueError(f"KernelChoice min_seconds must be a number >= 0, got {min_seconds!r}")
        self.retry_every = retry_every
        self.max_retry_every = max_retry_every
        self.window = window
        self.trial = trial
        self.min_seconds = float(min_seconds)
        self._lock = threading.Lock()
        self._stats: dict = {}

    def reset(self) -> None:
        with self._lock:
            self._stats.clear()

    def _entry(self, key) -> dict:
        return self._stats.setdefault(key, {False: _Window(), True: _Window(), "calls": 0, "trial_kind": False,
                                            "trial_left": 0, "trial_seconds": 0.0, "skip": False,
                                            "retry": self.retry_every, "before": None})

    @staticmethod
    def _mean(window: "_Window") -> float:
        return window.seconds / window.evaluations

    def _start_trial(self, st: dict, kind: bool) -> bool:
        st["trial_kind"], st["trial_left"], st["trial_seconds"], st["skip"] = kind, self.trial, 0.0, True
        st[kind] = _Window()  # the trial's timings replace older ones: the load may have changed
        return kind

    def choose(self, key, parallel: bool | None, splittable: bool | None = None) -> bool:
        if splittable is None:
            splittable = blocks_for(key if isinstance(key, int) else key[0]) > 1
        if parallel is not None:
            return bool(parallel) and splittable
        if not splittable or usable_threads() < 2:
            return False
        with self._lock:
            st = self._entry(key)
            if st["trial_left"] > 0:
                return st["trial_kind"]
            if not st[False]:
                return self._start_trial(st, False)
            if not st[True]:
                return self._start_trial(st, True)
            faster = self._mean(st[True]) < self._mean(st[False])
            if st["before"] is not None:  # a trial just ended
                confirmed = faster == st["before"]
                st["retry"] = min(2 * st["retry"], self.max_retry_every) if confirmed else self.retry_every
                st["before"] = None
                st["calls"] = 0
            st["calls"] += 1
            if st["calls"] >= st["retry"]:
                st["before"] = faster
                return self._start_trial(st, not faster)
            return faster

    def report(self, key, parallel: bool, seconds: float, evaluations: int = 1) -> None:
        if evaluations < 1:
            return
        parallel = bool(parallel)
        with self._lock:
            st = self._entry(key)
            if st["trial_left"] > 0 and parallel == st["trial_kind"]:
                st["trial_left"] -= 1
                if st["skip"]:  # the first call of a trial: threads were waking up
                    st["skip"] = False
                    return
                st["trial_seconds"] += seconds
                if st["trial_left"] == 0 and st["trial_seconds"] < self.min_seconds:
                    st["trial_left"] = 1  # keep trying until the trial spans min_seconds
            st[parallel].add(seconds, evaluations, self.window, self.min_seconds)

    def timings(self, key) -> dict:
        """Mean seconds per force evaluation over the recent timings (None:
        not yet timed)."""
        with self._lock:
            st = self._stats.get(key, {False: _Window(), True: _Window()})
            return {"serial": self._mean(st[False]) if st[False] else None,
                    "parallel": self._mean(st[True]) if st[True] else None}


#: the package-wide chooser used with ``parallel=None``
kernel_choice = KernelChoice()
