"""``embdyn theory``: the effective theory's curves from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from particles.cli import add_quiet

__all__ = ["register_theory"]


def _out(args: argparse.Namespace) -> Path:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _bar(args: argparse.Namespace, what: str):
    """A progress bar on stderr, or None with --quiet."""
    if args.quiet:
        return None
    from particles.cli import ProgressBar

    return ProgressBar(f"theory {args.theory_command}: {what}")


def _critical_fraction(args: argparse.Namespace) -> int:
    from .montecarlo import unique_structure_probability
    from .plot import plot_structure_probability

    result = unique_structure_probability(args.p, samples=args.samples, seed=args.seed, callback=_bar(args, "sets"))
    out = _out(args)
    lo, hi = result.critical_fraction_interval
    print(f"addition p = {args.p}, {args.samples} random training sets a size")
    print("size  fraction  P(n0=2)  95% interval")
    for s, f, pr, a, b in zip(result.sizes, result.fractions, result.probability, result.low, result.high):
        print(f"{s:4d}  {f:8.3f}  {pr:7.4f}  [{a:.4f}, {b:.4f}]")
    print(f"critical fraction {result.critical_fraction:.4f} (bootstrap 95% [{lo:.4f}, {hi:.4f}], "
          f"std {result.critical_fraction_std:.4f})")
    plot_structure_probability(result).savefig(out / "critical_fraction.png", dpi=120)
    (out / "critical_fraction.json").write_text(json.dumps({
        "p": args.p, "samples": args.samples, "seed": args.seed, "sizes": result.sizes.tolist(),
        "probability": result.probability.tolist(), "low": result.low.tolist(), "high": result.high.tolist(),
        "critical_fraction": result.critical_fraction, "interval": [lo, hi]}, indent=1))
    print(f"wrote {out / 'critical_fraction.png'} and {out / 'critical_fraction.json'}")
    return 0


def _grokking_rate(args: argparse.Namespace) -> int:
    import numpy as np

    from .montecarlo import grokking_rate_curve
    from .plot import plot_grokking_rate_curve

    fractions = np.round(np.linspace(0.2, 1.0, 17), 3)
    curve = grokking_rate_curve(args.p, fractions, samples=args.samples, seed=args.seed,
                                callback=_bar(args, "sets"))
    out = _out(args)
    print(f"addition p = {args.p}, {args.samples} random training sets a fraction; l3 of H0 (0 when n0 > 2)")
    print("fraction  mean l3   q10      q90      share n0=2")
    for f, m, a, b, u in zip(fractions, curve.mean, curve.quantiles(0.1), curve.quantiles(0.9), curve.unique_share):
        print(f"{f:8.3f}  {m:7.4f}  {a:7.4f}  {b:7.4f}  {u:6.2f}")
    plot_grokking_rate_curve(curve).savefig(out / "grokking_rate.png", dpi=120)
    print(f"wrote {out / 'grokking_rate.png'}")
    return 0


def _steps(args: argparse.Namespace) -> int:
    import numpy as np

    from .experiments import compare_steps
    from .plot import plot_steps_comparison

    result = compare_steps(args.p, sets=args.sets, eta=args.eta, seed=args.seed)
    out = _out(args)
    r = result.ratio
    print(f"{len(r)} training sets with n0 = 2: measured / predicted steps to RQI > 0.95: median {np.median(r):.2f}, "
          f"10-90 % [{np.quantile(r, 0.1):.2f}, {np.quantile(r, 0.9):.2f}], range [{r.min():.2f}, {r.max():.2f}]")
    plot_steps_comparison(result.predicted, result.measured).savefig(out / "steps_predicted_vs_measured.png",
                                                                     dpi=120)
    print(f"wrote {out / 'steps_predicted_vs_measured.png'}")
    return 0


def _digits(args: argparse.Namespace) -> int:
    from .experiments import digits_collapse
    from .plot import plot_digits_collapse

    result = digits_collapse(steps=args.steps, seed=args.seed)
    out = _out(args)
    z = result.trajectory.scalars["Z"]
    print(f"digits (1797 samples) classification flow: within-class share {result.within_share[0]:.3f} -> "
          f"{result.within_share[-1]:.2e}; Z relative change {abs(z[-1] / z[0] - 1):.1e}")
    plot_digits_collapse(result).savefig(out / "digits_collapse.png", dpi=120)
    print(f"wrote {out / 'digits_collapse.png'}")
    return 0


def register_theory(subparsers: argparse._SubParsersAction) -> None:
    theory = subparsers.add_parser("theory", help="effective theory: critical fraction, grokking rates, ...")
    sub = theory.add_subparsers(dest="theory_command", metavar="CURVE", required=True)

    def common(p, samples=None):
        p.add_argument("--p", type=int, default=10, help="tokens (addition), default 10")
        if samples is not None:
            p.add_argument("--samples", type=int, default=samples, help=f"random sets (default {samples})")
        p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        p.add_argument("--out", default="embdyn-theory", help="output folder (default ./embdyn-theory)")
        add_quiet(p)

    c = sub.add_parser("critical-fraction", help="P(n0 = 2) against training fraction")
    common(c, 10_000)
    c.set_defaults(func=_critical_fraction)
    g = sub.add_parser("grokking-rate", help="l3 against training fraction")
    common(g, 200)
    g.set_defaults(func=_grokking_rate)
    s = sub.add_parser("steps", help="measured steps to RQI > 0.95 against 1/(l3 eta)")
    common(s)
    s.add_argument("--sets", type=int, default=10, help="training sets per fraction")
    s.add_argument("--eta", type=float, default=0.5, help="learning rate eta (default 0.5)")
    s.set_defaults(func=_steps)
    d = sub.add_parser("digits", help="classification variant on scikit-learn's digits")
    d.add_argument("--steps", type=int, default=200, help="Euler steps of the flow (default 200)")
    d.add_argument("--seed", type=int, default=0, help="random seed of the 2-D map (default 0)")
    d.add_argument("--out", default="embdyn-theory", help="output folder (default ./embdyn-theory)")
    add_quiet(d)
    d.set_defaults(func=_digits)
