"""The explorer server's memory budget, shared by its uploads and the work its requests do (issue 69).

One :class:`MemoryLedger` per server. The uploaded runs it keeps count against it for as long as they are
kept, and every request that computes from a run (its summary, stages, structure metrics, a fit, a frame,
an upload being read) reserves its estimate (:meth:`.runs.Run.work_bytes`) before it starts and returns it when
it ends. A request whose estimate does not fit in what is left waits for nothing: it is refused at once,
413 when it could not fit even in an idle server, 503 (try again) when it would fit once others finish.

The budget is :func:`particles.core.limits.memory_budget` (``EMBDYN_MEMORY_BUDGET``, else a quarter of
the machine's memory) unless the server is built with another.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from particles.core.limits import MEMORY_BUDGET_ENV, format_bytes, memory_budget

__all__ = ["MemoryLedger", "OverBudget"]


class OverBudget(Exception):
    """A request whose memory estimate does not fit in the server's budget: ``status`` 413 (larger than the
    whole budget less what the kept runs hold) or 503 (it fits once the requests in progress end)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class MemoryLedger:
    """What the server's memory budget holds: the kept runs (``held``, a callable giving their bytes) and
    the reservations of requests in progress.

    Parameters
    ----------
    budget : int, optional
        Bytes. Default :func:`particles.core.limits.memory_budget`.
    held : callable returning int, optional
        Bytes the kept runs hold now (the server's run store); default 0.
    """

    def __init__(self, budget: int | None = None, held: Callable[[], int] | None = None):
        if budget is None:
            budget, self.source = memory_budget()
        else:
            self.source = "set for this server"
        self.budget = int(budget)
        self._held = held or (lambda: 0)
        self._lock = threading.Lock()
        self._reserved = 0

    @property
    def reserved(self) -> int:
        """Bytes reserved by the requests in progress."""
        with self._lock:
            return self._reserved

    def state(self) -> dict[str, Any]:
        """The budget, what the kept runs hold and what requests in progress reserved (bytes)."""
        with self._lock:
            return {"budget": self.budget, "held": int(self._held()), "reserved": self._reserved,
                    "source": self.source}

    def hold(self, need: int, what: str) -> Callable[[], None]:
        """:meth:`reserve` for work that outlives the call (a background thread): reserves now
        (:class:`OverBudget` when it does not fit) and returns the function that gives the bytes back
        (calling it again does nothing)."""
        cm = self.reserve(need, what)
        cm.__enter__()
        done = threading.Event()

        def release() -> None:
            if not done.is_set():
                done.set()
                cm.__exit__(None, None, None)

        return release

    @contextmanager
    def reserve(self, need: int, what: str) -> Iterator[None]:
        """Hold ``need`` bytes for the work of ``what`` while the block runs; :class:`OverBudget` before it
        starts when they do not fit."""
        need = int(need)
        with self._lock:
            held = int(self._held())
            if held + need > self.budget:
                raise OverBudget(413, f"{what} would hold about {format_bytes(need)} in memory; this server's "
                                      f"budget is {format_bytes(self.budget)} ({self.source}), of which the "
                                      f"runs it keeps hold {format_bytes(held)}: use a smaller run, or start "
                                      f"the server with a larger {MEMORY_BUDGET_ENV}")
            if held + self._reserved + need > self.budget:
                raise OverBudget(503, f"{what} would hold about {format_bytes(need)} in memory, more than is "
                                      f"left of this server's budget of {format_bytes(self.budget)} while other "
                                      f"requests run ({format_bytes(self._reserved)} reserved): try again in a "
                                      f"moment")
            self._reserved += need
        try:
            yield
        finally:
            with self._lock:
                self._reserved -= need
