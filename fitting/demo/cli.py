"""``embdyn demo``: the tour of the whole package (docs/getting_started.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from particles.core.cli import add_quiet

__all__ = ["register_demo"]


def _cmd_demo(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from particles.core.cli import ProgressBar

    bars: dict[str, ProgressBar] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if args.quiet:
            return
        bar = bars.setdefault(stage, ProgressBar(f"demo: {stage}"))
        bar(done, total)

    from particles.core.cli import CompileNote
    from particles.core.validation import check_output_folder

    from .run import DemoError, compile_kernels, run_demo

    check_output_folder(Path(args.out), "--out")  # a bad --out: one line, exit 2, before compiling

    with CompileNote("embdyn demo: ", quiet=args.quiet):
        compile_kernels()
    try:
        summary = run_demo(args.out, quick=args.quick, progress=progress)
    except DemoError as exc:
        print(f"embdyn demo: {exc}", file=sys.stderr)
        return 1
    st = summary["stages"]
    print(f"demo finished in {summary['seconds']:.0f} s; wrote {Path(args.out) / 'summary.md'} and summary.html")
    print(f"  particles: circles {st['particles']['circles']}, grids {st['particles']['grids']}")
    print(f"  theory: critical fraction {st['theory']['critical_fraction']:.3f}")
    print(f"  fitting: survivors {st['fitting']['survivors']}, derivative R^2 Lasso {st['fitting']['lasso_r2']:.3f}, "
          f"least squares {st['fitting']['ols_r2']:.4f}")
    return 0


def register_demo(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="run every package on built-in defaults; figures and a summary",
                              description="Particle presets, effective-theory curves and an ODE fit of a shipped "
                                          "training run; writes figures, summary.md and summary.html.")
    p.add_argument("--out", default="embdyn-demo", help="output folder (default ./embdyn-demo)")
    p.add_argument("--quick", action="store_true", help="fewer seeds and samples in the particle and theory stages")
    add_quiet(p)
    p.set_defaults(func=_cmd_demo)
