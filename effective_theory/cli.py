"""``embdyn theory``: the effective theory's curves from the command line.

Each curve checks ``--out`` before any work, prints a table, and writes a
figure and a JSON file with the numbers behind it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from particles.core.cli import add_quiet
from particles.core.figures import save_figure
from particles.core.io import write_json
from particles.core.validation import check_output_folder

__all__ = ["register_theory"]

#: what the theory's symbols mean, for the help texts
N0_TEXT = ("n0 is the number of free dimensions left by the training set's parallelogram constraints; "
           "n0 = 2 means the constraints fix the representation up to a rotation and scale "
           "(a unique structure)")
L3_TEXT = ("l3 is the third-smallest eigenvalue of H0, the Hessian of the effective loss at the "
           "initialisation: the rate at which the representation reaches its structure (0 when n0 > 2)")


def _out(args: argparse.Namespace) -> Path:
    """The output folder, created and checked before any work (ValueError naming --out)."""
    return check_output_folder(args.out, "--out")


def _bar(args: argparse.Namespace, what: str):
    """A progress bar on stderr, or None with --quiet."""
    if args.quiet:
        return None
    from particles.core.cli import ProgressBar

    return ProgressBar(f"theory {args.theory_command}: {what}")


def _critical_fraction(args: argparse.Namespace) -> int:
    from .montecarlo import unique_structure_probability
    from .figures import plot_structure_probability

    out = _out(args)
    result = unique_structure_probability(args.p, samples=args.samples, seed=args.seed, callback=_bar(args, "sets"))
    lo, hi = result.critical_fraction_interval
    print(f"addition p = {args.p}, {args.samples} random training sets a size; "
          "P(n0=2): share of sets whose constraints fix the structure")
    print("size  fraction  P(n0=2)  95% interval")
    for s, f, pr, a, b in zip(result.sizes, result.fractions, result.probability, result.low, result.high):
        print(f"{s:4d}  {f:8.3f}  {pr:7.4f}  [{a:.4f}, {b:.4f}]")
    print(f"critical fraction {result.critical_fraction:.4f} (bootstrap 95% [{lo:.4f}, {hi:.4f}], "
          f"std {result.critical_fraction_std:.4f})")
    save_figure(plot_structure_probability(result), out / "critical_fraction.png", dpi=120)
    write_json(out / "critical_fraction.json", {
        "p": args.p, "samples": args.samples, "seed": args.seed, "sizes": result.sizes.tolist(),
        "fractions": result.fractions.tolist(),
        "probability": result.probability.tolist(), "low": result.low.tolist(), "high": result.high.tolist(),
        "critical_fraction": result.critical_fraction, "interval": [lo, hi]}, indent=1)
    print(f"wrote {out / 'critical_fraction.png'} and {out / 'critical_fraction.json'}")
    return 0


def _grokking_rate(args: argparse.Namespace) -> int:
    import numpy as np

    from .montecarlo import grokking_rate_curve
    from .figures import plot_grokking_rate_curve

    out = _out(args)
    fractions = np.round(np.linspace(0.2, 1.0, 17), 3)
    curve = grokking_rate_curve(args.p, fractions, samples=args.samples, seed=args.seed,
                                callback=_bar(args, "sets"))
    print(f"addition p = {args.p}, {args.samples} random training sets a fraction; l3: third-smallest eigenvalue "
          "of the effective loss's Hessian H0 (0 when n0 > 2, the structure not unique)")
    print("fraction  mean l3   q10      q90      share n0=2")
    q10, q90 = curve.quantiles(0.1), curve.quantiles(0.9)
    for f, m, a, b, u in zip(fractions, curve.mean, q10, q90, curve.unique_share):
        print(f"{f:8.3f}  {m:7.4f}  {a:7.4f}  {b:7.4f}  {u:6.2f}")
    save_figure(plot_grokking_rate_curve(curve), out / "grokking_rate.png", dpi=120)
    write_json(out / "grokking_rate.json", {
        "p": args.p, "samples": args.samples, "seed": args.seed, "fractions": fractions.tolist(),
        "mean_l3": curve.mean.tolist(), "q10_l3": q10.tolist(), "q90_l3": q90.tolist(),
        "share_n0_2": curve.unique_share.tolist()}, indent=1)
    print(f"wrote {out / 'grokking_rate.png'} and {out / 'grokking_rate.json'}")
    return 0


def _steps(args: argparse.Namespace) -> int:
    import numpy as np

    from .experiments import compare_steps
    from .figures import plot_steps_comparison

    out = _out(args)
    result = compare_steps(args.p, sets=args.sets, eta=args.eta, seed=args.seed, callback=_bar(args, "sets"))
    r = result.ratio
    print(f"{len(r)} training sets with n0 = 2: measured / predicted steps to RQI > 0.95: median {np.median(r):.2f}, "
          f"10-90 % [{np.quantile(r, 0.1):.2f}, {np.quantile(r, 0.9):.2f}], range [{r.min():.2f}, {r.max():.2f}]")
    save_figure(plot_steps_comparison(result.predicted, result.measured), out / "steps_predicted_vs_measured.png",
                dpi=120)
    write_json(out / "steps_predicted_vs_measured.json", {
        "p": args.p, "sets": args.sets, "eta": args.eta, "seed": args.seed,
        "fractions": result.fractions.tolist(), "predicted_steps": result.predicted.tolist(),
        "measured_steps": result.measured.tolist(), "median_ratio": float(np.median(r))}, indent=1)
    print(f"wrote {out / 'steps_predicted_vs_measured.png'} and {out / 'steps_predicted_vs_measured.json'}")
    return 0


def _digits(args: argparse.Namespace) -> int:
    from .experiments import digits_collapse
    from .figures import plot_digits_collapse

    out = _out(args)
    result = digits_collapse(steps=args.steps, seed=args.seed)
    z = result.trajectory.scalars["Z"]
    print(f"digits (1797 samples) classification flow: within-class share {result.within_share[0]:.3f} -> "
          f"{result.within_share[-1]:.2e}; Z relative change {abs(z[-1] / z[0] - 1):.1e}")
    save_figure(plot_digits_collapse(result), out / "digits_collapse.png", dpi=120)
    write_json(out / "digits_collapse.json", {
        "steps": args.steps, "seed": args.seed, "snapshot_steps": result.trajectory.snapshot_steps.tolist(),
        "within_class_share": result.within_share.tolist(), "Z": z.tolist()}, indent=1)
    print(f"wrote {out / 'digits_collapse.png'} and {out / 'digits_collapse.json'}")
    return 0


def register_theory(subparsers: argparse._SubParsersAction) -> None:
    theory = subparsers.add_parser(
        "theory", help="effective theory: critical fraction, grokking rates, ...",
        description="Curves of the effective theory of representation learning on addition mod p. "
                    f"{N0_TEXT}. {L3_TEXT}. Each curve writes a PNG and a JSON file to --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = theory.add_subparsers(dest="theory_command", metavar="CURVE", required=True)

    def add(name, help, description):
        return sub.add_parser(name, help=help, description=description,
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)

    def common(p, samples=None):
        p.add_argument("--p", type=int, default=10, help="tokens of addition mod p")
        if samples is not None:
            p.add_argument("--samples", type=int, default=samples, help="random training sets per point")
        p.add_argument("--seed", type=int, default=0, help="random seed")
        p.add_argument("--out", default="embdyn-theory", help="output folder")
        add_quiet(p)

    c = add("critical-fraction", "P(n0 = 2), the chance that a random training set fixes the structure, "
                                 "against training fraction",
            f"Monte Carlo P(n0 = 2) over random training sets of every size. {N0_TEXT}. The critical "
            "fraction is where P(n0 = 2) crosses 1/2.")
    common(c, 10_000)
    c.set_defaults(func=_critical_fraction)
    g = add("grokking-rate", "l3, the rate of structure formation, against training fraction",
            f"{L3_TEXT}. Mean and 10-90 % quantiles of l3 over random training sets of each fraction.")
    common(g, 200)
    g.set_defaults(func=_grokking_rate)
    s = add("steps", "measured steps to RQI > 0.95 against the prediction 1/(l3 eta)",
            "Run the effective-loss flow on random training sets with n0 = 2 and compare the first step at "
            "which the representation quality index (RQI) exceeds 0.95 with 1/(l3 eta). " + L3_TEXT + ".")
    common(s)
    s.add_argument("--sets", type=int, default=10, help="training sets per fraction")
    s.add_argument("--eta", type=float, default=0.5, help="learning rate eta of the flow")
    s.set_defaults(func=_steps)
    d = add("digits", "classification variant on scikit-learn's digits",
            "The classification variant of the effective-loss flow on scikit-learn's digits (1797 samples, "
            "mapped to 2-D): the within-class share of the spread over the flow's steps.")
    d.add_argument("--steps", type=int, default=200, help="Euler steps of the flow")
    d.add_argument("--seed", type=int, default=0, help="random seed of the 2-D map")
    d.add_argument("--out", default="embdyn-theory", help="output folder")
    add_quiet(d)
    d.set_defaults(func=_digits)
