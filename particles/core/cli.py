"""The root of the ``embdyn`` command: its parser, the one error boundary
every subcommand runs inside, the parsing of ``NAME=VALUE`` options, and what
every command shows on stderr (the one meaning of ``--quiet``, the progress
bar, the compile note). Library code never prints: it takes a
``callback(done, total)``, which the commands fill with a :class:`ProgressBar`.

Subcommands are registered through the ``embdyn.commands`` entry-point
group (``pyproject.toml``): each package adds its own with a
``register_<name>(subparsers)`` function, so this module names none of them.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Any, Sequence

__all__ = ["main", "build_parser", "OneLineParser", "StdoutClosed", "parse_value", "key_values", "key_lists",
           "word_or_ints",
           "QUIET_HELP", "add_quiet", "ProgressBar", "CompileNote",
           "COMMANDS_GROUP", "GuardedStdout", "one_line_warning", "run_command"]

#: the entry-point group of ``embdyn``'s subcommands
COMMANDS_GROUP = "embdyn.commands"


# ---------------------------------------------------------------- progress and notes on stderr
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
    updates at most every 10 s. ``unit`` names what is counted;
    ``starting``, when given, is shown after the label (and drawn at once)
    until the first unit is done (a first run's compilation, say)."""

    def __init__(self, label: str, stream=None, *, unit: str = "it", starting: str | None = None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.unit = unit
        self.starting = starting
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            from tqdm import tqdm

            tty = hasattr(self.stream, "isatty") and self.stream.isatty()
            desc = self.label if self.starting is None else f"{self.label}: {self.starting}"
            self._bar = tqdm(total=total, initial=done, desc=desc, file=self.stream, unit=self.unit,
                             mininterval=0.1 if tty else 10.0, ascii=not tty, dynamic_ncols=tty, leave=True)
            if self.starting is not None:
                self._bar.refresh()
        elif self.starting is not None and done > 0 and self._bar.n == 0:
            self._bar.set_description(self.label, refresh=False)
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


def parse_value(text: str) -> Any:
    """``"3"`` -> 3, ``"0.5"`` -> 0.5, ``"true"`` -> True, anything else stays a string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def key_values(items: Sequence[str], option: str) -> dict[str, Any]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"{option} takes NAME=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value)
    return out


def key_lists(items: Sequence[str], option: str) -> dict[str, list[Any]]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"{option} takes NAME=V1,V2,..., got {item!r}")
        key, values = item.split("=", 1)
        out[key.strip()] = [parse_value(v) for v in values.split(",") if v.strip()]
    return out


def word_or_ints(text: str, option: str, word: str, what: str = "comma-separated integers") -> str | list[int]:
    """An option that is ``word`` or comma-separated integers (``--windows stages`` or ``0,100,1000``):
    the word itself or the list; else a ValueError naming ``option`` and both forms."""
    if text == word:
        return word
    try:
        return [int(v) for v in str(text).split(",")]
    except ValueError:
        raise ValueError(f"{option} must be '{word}' or {what}, got {text!r}") from None


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as one line on stderr and exit code 2 (subcommands inherit it)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from .version import package_version

    parser = OneLineParser(prog="embdyn", description="Embedding dynamics: simulate, sweep, analyse.")
    parser.add_argument("--version", action="version", version=f"embdyn (embedding-dynamics) {package_version()}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one line")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    registered = set()
    for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        if ep.name in registered:
            continue
        ep.load()(subparsers)
        registered.add(ep.name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``embdyn``. Bad values (a ``ValueError``/``TypeError`` from the
    library) end as one line on stderr and exit code 2, an interruption as
    one line and 130; ``--debug`` shows the traceback instead."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    import warnings

    with warnings.catch_warnings():
        if getattr(args, "quiet", False):
            warnings.simplefilter("ignore")
        elif not args.debug:
            warnings.showwarning = one_line_warning(args.command)
        return run_command(args)


def one_line_warning(command: str):
    """``warnings.showwarning`` for the CLI: one line, ``embdyn CMD: warning:
    ...``, without the source line (``--debug`` keeps Python's format with
    it; ``--quiet`` silences warnings)."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"embdyn {command}: warning: {text}", file=sys.stderr if file is None else file)

    return show


class StdoutClosed(Exception):
    """stdout's reader went away (``embdyn ... | head``)."""


class GuardedStdout:
    """sys.stdout for a command: a broken pipe on it becomes
    :class:`StdoutClosed`, so it is told apart from one elsewhere."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise StdoutClosed() from None

    def flush(self):
        try:
            return self._stream.flush()
        except BrokenPipeError:
            raise StdoutClosed() from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def run_command(args: argparse.Namespace) -> int:
    """Run the chosen command inside the one error boundary of ``embdyn``."""
    real = sys.stdout
    sys.stdout = GuardedStdout(real)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except StdoutClosed:
        # the reader of stdout went away (``embdyn ... | head``): not an error of ours. stdout goes to
        # devnull so the interpreter's final flush is quiet; exit 141 as a process killed by SIGPIPE does
        import os

        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, real.fileno())
        except (OSError, ValueError, AttributeError):  # no file descriptor (a captured stream)
            pass
        return 141
    except (ValueError, TypeError, OSError, FloatingPointError) as exc:
        # bad values, files that cannot be read or written, runs that diverged
        # (NonFiniteStateError and BlowUpError are FloatingPointErrors)
        if args.debug:
            raise
        message = " ".join(str(exc).split())
        print(f"embdyn {args.command}: {message} (embdyn --debug {args.command} ... shows where)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"embdyn {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        if isinstance(sys.stdout, GuardedStdout):
            sys.stdout = real


if __name__ == "__main__":
    raise SystemExit(main())
