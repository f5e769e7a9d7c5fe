"""A lock whose waiting callers go first: :class:`FirstLock`.

A live session steps its model in a loop that holds the lock for each chunk
of work and takes it again at once; a call from the page (a control change,
a reset) that waits for the lock would otherwise wait for the whole frame.
With :class:`FirstLock` such a call announces itself (:meth:`FirstLock.first`)
and the stepping loop, between chunks, lets it through
(:meth:`FirstLock.let_waiting_through`).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

__all__ = ["FirstLock"]


class FirstLock:
    """A ``threading.Lock`` (``with``, ``acquire``, ``release``) with a count
    of callers waiting to go before its holder's next turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting = 0
        self._count = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> "FirstLock":
        self._lock.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()

    @contextmanager
    def first(self):
        """The lock, for a call that goes before the holder's next turn."""
        with self._count:
            self._waiting += 1
        try:
            with self._lock:
                yield
        finally:
            with self._count:
                self._waiting -= 1

    def let_waiting_through(self, pause: float = 0.0005) -> None:
        """Between the holder's turns (the lock released): wait while a
        :meth:`first` caller waits, so that it gets the lock."""
        while self._waiting:
            time.sleep(pause)
