"""Progress and notes on stderr, shared by every ``embdyn`` command: the
one meaning of ``--quiet``, a tqdm bar usable as a library callback, and the
note shown while kernels compile."""

from __future__ import annotations

import argparse
import sys

__all__ = ["QUIET_HELP", "add_quiet", "ProgressBar", "CompileNote"]

#: The one meaning of ``--quiet`` in every ``embdyn`` command.
QUIET_HELP = "no progress bars, notes or warnings on stderr (results still print on stdout)"


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """Add ``--quiet`` with its one meaning (:data:`QUIET_HELP`)."""
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)


class ProgressBar:
    """A tqdm progress bar on stderr, usable as a library ``callback(done,
    total)``: created at the first call (starting from that call's ``done``,
    so a resumed sweep's rate counts new work only), closed when ``done``
    reaches ``total``. On a terminal it redraws in place; elsewhere it
    updates at most every 10 s."""

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            from tqdm import tqdm

            tty = hasattr(self.stream, "isatty") and self.stream.isatty()
            self._bar = tqdm(total=total, initial=done, desc=self.label, file=self.stream,
                             mininterval=0.1 if tty else 10.0, ascii=not tty, dynamic_ncols=tty, leave=True)
        if total != self._bar.total:
            self._bar.total = total
        self._bar.update(max(0, done - self._bar.n))
        if done >= total:
            self._bar.close()


class CompileNote:
    """A context manager around a compilation: if it is still running after
    ``delay`` seconds (Numba compiling, not loading its cache), a note
    ``"<label>compiling kernels (first run only)..."`` goes to ``stream``
    (default stderr), then ``"ready in X s"`` when it ends; a quick load from
    the cache prints nothing. ``quiet=True`` never prints."""

    def __init__(self, label: str = "", *, quiet: bool = False, delay: float = 1.0, stream=None):
        self.label, self.quiet, self.delay = label, quiet, delay
        self.stream = stream
        self.shown = False

    def _show(self) -> None:
        with self._lock:
            if not self._done:
                print(f"{self.label}compiling kernels (first run only)...", file=self._stream, end=" ", flush=True)
                self.shown = True

    def __enter__(self) -> "CompileNote":
        import threading
        import time

        self._stream = self.stream if self.stream is not None else sys.stderr
        self._lock = threading.Lock()
        self._done = False
        self._start = time.perf_counter()
        self._timer = None
        if not self.quiet:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        import time

        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._done = True
            if self.shown:
                ending = "stopped" if kind is not None else f"ready in {time.perf_counter() - self._start:.1f} s"
                print(ending, file=self._stream, flush=True)
