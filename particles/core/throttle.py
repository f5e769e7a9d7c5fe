"""A value recomputed at most every so many seconds while the state it
describes moves on: a live frame's structure metrics, which cost more than
the frame's steps at small p, are measured a few times a second, not at every
frame, and at once when the state is replaced (a restart, a reset, a
hand-over). The frame says at which step they were measured."""

from __future__ import annotations

import time
from typing import Any, Callable, Hashable

__all__ = ["Throttled", "METRICS_EVERY"]

#: seconds between two measurements of a live run's structure metrics
METRICS_EVERY = 0.2


class Throttled:
    """The last value of ``compute()`` and the step it was taken at.

    Parameters
    ----------
    seconds : float >= 0
        Least time between two computations while only the step changes (0: at every new step).
    """

    def __init__(self, seconds: float = METRICS_EVERY):
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds >= 0:
            raise ValueError(f"seconds must be a number >= 0, got {seconds!r}")
        self.seconds = float(seconds)
        self._epoch: Hashable = None
        self._step: Any = None
        self._value: Any = None
        self._at = -float("inf")

    def get(self, epoch: Hashable, step: Any, compute: Callable[[], Any]) -> tuple[Any, Any]:
        """``(value, step measured at)``: ``compute()`` again when ``epoch``
        changed (the state was replaced), or when ``step`` changed and
        ``seconds`` have passed since the last computation; else the last value."""
        now = time.perf_counter()
        stale = step != self._step and now - self._at >= self.seconds
        if epoch != self._epoch or self._value is None or stale:
            self._value, self._epoch, self._step, self._at = compute(), epoch, step, now
        return self._value, self._step
