"""The ``embdyn`` command.

Subcommands are registered through the ``embdyn.commands`` entry-point group,
so each package adds its own without ``particles`` importing it.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Sequence

from .validation import check_output_folder

__all__ = ["main", "ProgressBar", "CompileNote", "register_simulate", "register_sweep", "parse_value", "add_quiet", "QUIET_HELP"]

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


def _key_lists(items: Sequence[str], option: str) -> dict[str, list[Any]]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"{option} takes NAME=V1,V2,..., got {item!r}")
        key, values = item.split("=", 1)
        out[key.strip()] = [parse_value(v) for v in values.split(",") if v.strip()]
    return out


# ---------------------------------------------------------------- simulate
def _cmd_simulate(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from .metrics import structure_metrics
    from .plot import plot_energy, plot_snapshots
    from .presets import preset

    try:
        config = preset(args.preset)
        changes = key_values(args.set or [], "--set")
        if args.steps is not None:
            changes["steps"] = args.steps
        if args.dt is not None:
            changes["dt"] = args.dt
        config = config.replace(**changes)
        config.sample(args.seed)  # the dataset, the split and the seed, checked before compiling
        out = check_output_folder(args.out, "--out")
    except (ValueError, TypeError) as exc:
        print(f"embdyn simulate: {exc}", file=sys.stderr)
        return 2
    stem = f"{config.name}_seed{args.seed}"
    _compile_kernels(config, quiet=args.quiet)
    bar = None if args.quiet else ProgressBar(f"simulate {config.name} seed {args.seed}")
    try:
        traj = config.run(args.seed, callback=bar)
    except (ValueError, TypeError) as exc:  # bad steps, dt, ... (checked before the run starts)
        print(f"embdyn simulate: {exc}", file=sys.stderr)
        return 2
    dataset = config.dataset()
    metrics = structure_metrics(traj.final, dataset)
    traj_path = traj.save(out / f"{stem}.npz")
    fig = plot_snapshots(traj, dataset=dataset, title=f"preset {config.name!r}, seed {args.seed}")
    fig.savefig(out / f"{stem}.png", dpi=110)
    plot_energy(traj).savefig(out / f"{stem}_energy.png", dpi=110)
    summary = {"preset": config.name, "seed": args.seed, "steps": config.steps, **metrics,
               "final_energy": float(traj.energy[-1]), "trajectory": str(traj_path),
               "figure": str(out / f"{stem}.png")}
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=2))
    print(f"preset {config.name}, seed {args.seed}: {metrics['structure']} "
          f"(circularity {metrics['circularity']:.3f} at k={metrics['frequency']}, "
          f"pair-sum accuracy euclidean {metrics['accuracy_euclidean']:.3f}, "
          f"angular {metrics['accuracy_angular']:.3f}, grid defects {metrics['grid_defects']})")
    print(f"wrote {traj_path}, {out / f'{stem}.png'}, {out / f'{stem}_energy.png'}, {out / f'{stem}.json'}")
    return 0


def register_simulate(subparsers: argparse._SubParsersAction) -> None:
    from .presets import preset_names

    p = subparsers.add_parser("simulate", help="run a particle preset and plot it",
                              description="Run a particle-model preset from one seed; write the trajectory "
                                          "(.npz), snapshot and energy figures and a JSON summary.")
    p.add_argument("--preset", default="circles", choices=preset_names(), help="particle preset (default circles)")
    p.add_argument("--seed", type=int, default=0, help="random seed, an int >= 0 (default 0)")
    p.add_argument("--steps", type=int, default=None, help="override the preset's number of steps")
    p.add_argument("--dt", type=float, default=None, help="override the preset's time step")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a force parameter or run setting (repeatable), e.g. --set lam=2")
    p.add_argument("--out", default="embdyn-out", help="output folder (default ./embdyn-out)")
    add_quiet(p)
    p.set_defaults(func=_cmd_simulate)


# ---------------------------------------------------------------- sweep
def _write_sweep(table, out: Path, grid_axes: list | None, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from .plot import plot_phase_diagram

    table.to_csv(out / "sweep.csv")
    rates = table.rates()
    (out / "rates.json").write_text(json.dumps(
        [{**dict(zip(table.parameters, key)), **value} for key, value in rates.items()], indent=2))
    for key, value in rates.items():
        setting = ", ".join(f"{n}={v}" for n, v in zip(table.parameters, key))
        shares = ", ".join(f"{k} {v:.2f}" for k, v in value.items() if v > 0)
        print(f"{setting}: {shares}")
    if grid_axes is not None and len(grid_axes) == 2:
        (x_name, xs), (y_name, ys) = grid_axes
        fig = plot_phase_diagram(rates, xs, ys, x_name=x_name, y_name=y_name, title=title)
        fig.savefig(out / "phase_diagram.png", dpi=120, bbox_inches="tight")
        print(f"wrote {out / 'phase_diagram.png'}")
    print(f"wrote {out / 'sweep.csv'} and {out / 'rates.json'}")


def _cmd_sweep_merge(args: argparse.Namespace, journals: list[str]) -> int:
    from .sweep import merge_journals, read_journal

    try:
        if not journals:
            raise ValueError("embdyn sweep merge needs the journal files of the shards")
        for path in journals:
            if not Path(path).is_file():
                raise ValueError(f"journal {path!r} does not exist")
        out = check_output_folder(args.out, "--out")
        table = merge_journals(journals)
        header, _ = read_journal(journals[0])
    except (ValueError, TypeError, OSError) as exc:
        print(f"embdyn sweep merge: {exc}", file=sys.stderr)
        return 2
    axes: dict[str, list] = {}
    for point in header["grid"]:
        for name, value in point.items():
            axes.setdefault(name, [])
            if value not in axes[name]:
                axes[name].append(value)
    _write_sweep(table, out, list(axes.items()),
                 f"base preset {header['base'].get('name')!r}, {len(header['seeds'])} seeds a cell")
    return 0


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


def _compile_kernels(config, both: bool = False, quiet: bool = False) -> None:
    """Compile (or load from Numba's cache) the kernels a preset runs before
    it starts, so that no call stalls in the middle of a run; a note on
    stderr when that takes long (compiling, not loading the cache)."""
    from ._warmup import warmup
    from .energy import PARALLEL_MIN_PAIRS

    blocked = both or round(config.fraction * len(config.dataset())) >= PARALLEL_MIN_PAIRS
    with CompileNote(quiet=quiet):
        warmup(parallel=None if blocked else False, parts=("simulate",))


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .presets import preset
    from .sweep import JournalError, _check_seeds, parse_shard, sweep

    extra = list(args.action or [])
    if extra and extra[0] == "merge":
        return _cmd_sweep_merge(args, extra[1:])
    try:
        if extra:
            raise ValueError(f"unexpected argument {extra[0]!r} (the only action is 'merge')")
        grid = _key_lists(args.grid or [], "--grid")
        if not grid:
            raise ValueError("give at least one --grid NAME=V1,V2,...")
        base = preset(args.preset).replace(**key_values(args.set or [], "--set"))
        shard = parse_shard(args.shard)
        out = Path(args.out)
        journal = out / ("sweep.journal.jsonl" if shard is None else f"sweep.shard-{shard[0]}-of-{shard[1]}.jsonl")
        if args.restart and journal.exists():
            journal.unlink()
        elif journal.exists() and not args.quiet:
            from .sweep import read_journal

            print(f"embdyn sweep: resuming from {journal} ({len(read_journal(journal)[1])} runs done; --restart "
                  "starts afresh)", file=sys.stderr)
        _check_seeds(args.seeds)  # refused before compiling
        check_output_folder(out, "--out")
        # workers load the kernels from the cache this fills
        _compile_kernels(base, both=any(name in grid for name in ("p", "fraction")), quiet=args.quiet)
        bar = None if args.quiet else ProgressBar("sweep")
        table = sweep(grid, args.seeds, base=base, n_jobs=args.jobs, callback=bar, journal=journal, shard=shard)
    except (ValueError, TypeError, JournalError) as exc:
        print(f"embdyn sweep: {exc}", file=sys.stderr)
        return 2
    if shard is not None:
        print(f"wrote {journal} ({len(table)} runs of shard {shard[0]}/{shard[1]}); when every shard is done: "
              f"embdyn sweep merge {out}/sweep.shard-*-of-{shard[1]}.jsonl --out DIR")
        return 0
    fixed = ", ".join(args.set or [])
    _write_sweep(table, out, list(grid.items()),
                 f"base preset {args.preset!r}{' with ' + fixed if fixed else ''}, {args.seeds} seeds a cell")
    return 0


def register_sweep(subparsers: argparse._SubParsersAction) -> None:
    from .presets import preset_names

    p = subparsers.add_parser("sweep", help="sweep parameters over seeds; phase diagram for two axes",
                              description="Run a preset over a grid of parameters and seeds in parallel; write "
                                          "sweep.csv, rates.json and, for two grid axes, phase_diagram.png. Each "
                                          "finished run is appended to OUT/sweep.journal.jsonl, so the same command "
                                          "after an interruption runs only what is missing. With --shard i/n only "
                                          "every n-th run is done (one shard per machine); "
                                          "'embdyn sweep merge JOURNAL... --out DIR' puts the shards together.")
    p.add_argument("action", nargs="*", metavar="merge JOURNAL",
                   help="'merge' followed by the shards' journal files")
    p.add_argument("--preset", default="grids", choices=preset_names(), help="base preset")
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2,...", help="a swept parameter (repeatable)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="fixed override of the base preset")
    p.add_argument("--seeds", type=int, default=10, help="seeds per grid cell (default 10)")
    p.add_argument("--jobs", type=int, default=None,
                   help="worker processes (default: joblib.parallel_config's, else all cores)")
    p.add_argument("--shard", default=None, metavar="I/N", help="run only shard I of N (0 <= I < N)")
    p.add_argument("--restart", action="store_true",
                   help="discard the journal of an earlier run in --out instead of resuming it")
    p.add_argument("--out", default="embdyn-sweep", help="output folder (default ./embdyn-sweep)")
    add_quiet(p)
    p.set_defaults(func=_cmd_sweep)


# ---------------------------------------------------------------- main
_BUILTIN: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "simulate": register_simulate,
    "sweep": register_sweep,
}


# registered through entry points when installed; looked up by name when
# running from a source tree without metadata
_OPTIONAL: dict[str, tuple[str, str]] = {
    "theory": ("effective_theory.cli", "register_theory"),
    "fit": ("fitting.cli", "register_fit"),
    "train": ("fitting.backend.cli", "register_train"),
    "demo": ("fitting.cli", "register_demo"),
}


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
    for ep in sorted(entry_points(group="embdyn.commands"), key=lambda e: e.name):
        if ep.name in registered:
            continue
        ep.load()(subparsers)
        registered.add(ep.name)
    for name, register in _BUILTIN.items():  # running from a source tree without metadata
        if name not in registered:
            register(subparsers)
    from importlib import import_module

    for name, (module, function) in _OPTIONAL.items():
        if name in registered:
            continue
        try:  # particles does not depend on the packages built on it
            register = getattr(import_module(module), function)
        except ImportError:
            continue
        register(subparsers)
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
            warnings.showwarning = _one_line_warning(args.command)
        return _run(args)


def _one_line_warning(command: str):
    """``warnings.showwarning`` for the CLI: one line, ``embdyn CMD: warning:
    ...``, without the source line (``--debug`` keeps Python's format with
    it; ``--quiet`` silences warnings)."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        print(f"embdyn {command}: warning: {text}", file=sys.stderr if file is None else file)

    return show


class StdoutClosed(Exception):
    """stdout's reader went away (``embdyn ... | head``)."""


class _GuardedStdout:
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


def _run(args: argparse.Namespace) -> int:
    """Run the chosen command inside the one error boundary of ``embdyn``."""
    real = sys.stdout
    sys.stdout = _GuardedStdout(real)
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
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = real


if __name__ == "__main__":
    raise SystemExit(main())
