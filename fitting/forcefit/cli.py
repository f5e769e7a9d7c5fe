"""``embdyn force-fit``: which force law explains a recorded run's
embedding gradient (docs/force_fit.md)."""

from __future__ import annotations

import argparse

import numpy as np

from particles.core.cli import ProgressBar, add_quiet, word_or_ints
from particles.core.figures import save_figure
from particles.core.io import json_safe, write_json
from particles.core.validation import check_output_folder

__all__ = ["register_force_fit"]


# ----------------------------------------------------------- force-fit
def _cmd_force_fit(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from particles.trajectory import Trajectory

    from particles.core.limits import check_budget

    from .memory import force_fit_bytes
    from .estimator import ForceLawFit
    from .figures import plot_force_shares
    from .verdict import MARGIN_ABSOLUTE, MARGIN_RELATIVE, against_null, shares_sentence

    normalize = None if args.normalize == "none" else args.normalize
    gauge = {"auto": "auto", "none": None}.get(args.gauge, args.gauge)
    fit = ForceLawFit(args.law, terms=args.terms, target=args.target, horizon=args.horizon, normalize=normalize,
                      n_bootstrap=args.bootstrap, windows=_windows(args.windows), tie_alignment=args.tie_alignment,
                      seed=args.seed, path=args.path, gauge=gauge, null=args.null)
    fit.check_params()  # every setting refused before any work (the law, the terms)
    window = None if args.window is None else tuple(args.window)  # checked by fit, in the library's words
    pairs_labels = None
    if args.train is not None:  # the training set of runs whose file does not hold one
        from particles.datasets import read_training_set

        pairs_labels = read_training_set(args.train, name="--train")
    runs = [Trajectory.load(path) for path in args.trajectory]  # a missing or damaged file: one line, exit 2
    if pairs_labels is not None:
        for i, (path, run) in enumerate(zip(args.trajectory, runs)):
            if run.train is None:  # checked against each run before any work
                runs[i] = run.with_train(pairs_labels, name="--train")
            elif not (np.array_equal(run.train.pairs, np.asarray(pairs_labels[0]).astype(np.int64))
                      and np.array_equal(run.train.labels, np.asarray(pairs_labels[1]).astype(np.int64))):
                raise ValueError(f"--train: {path} holds its own training set ({len(run.train)} pairs), which "
                                 f"differs from {args.train}; leave --train out to use the file's")
    for path, run in zip(args.trajectory, runs):
        if args.target != "displacement" and run.gradients is None and run.updates is None:
            raise ValueError(f"{path} has no gradients: record the run with gradients (EmbeddingRecorder(..., "
                             "gradients=True) or embdyn train ... --gradients), or fit --target displacement")
    check_budget(sum(run.nbytes for run in runs) + force_fit_bytes(runs),
               f"embdyn force-fit of {sum(len(run.snapshot_steps) for run in runs)} snapshots",
               "fit a window of the run (--window) or a run with fewer snapshots")
    out = check_output_folder(args.out, "--out")
    bar = None if args.quiet else FitBar("force fit")
    fit.fit(runs if len(runs) > 1 else runs[0], window=window, callback=bar)
    unit = ("per unit RMS force (each run's forces divided by their RMS)" if normalize == "rms"
            else "in the units of the recorded forces")
    report = {"trajectories": list(args.trajectory), "law": str(args.law), "target": args.target,
              "horizon": args.horizon, "normalize": normalize, "strength_units": unit, "window": window, "gauge": fit.gauge_,
              "r2": fit.r2_, "null_r2": fit.null_r2_, "null_r2_interval": fit.null_r2_interval_,
              "verdict": fit.verdict_, "verdict_sentence": fit.verdict_sentence(),
              "chance_margin": {"absolute": MARGIN_ABSOLUTE, "relative_to_null": MARGIN_RELATIVE},
              "ranges": fit.identified_ranges(), "range_status": fit.range_status_, "shares": fit.shares_,
              "whole_run": fit.whole_run_, "table": fit.table(), "windows": fit.windows_,
              "summary": fit.summary(), "fit_info": fit.fit_info_}
    write_json(out / "force_fit.json", json_safe(report), indent=2, allow_nan=False)
    save_figure(plot_force_shares(fit), out / "force_shares.png")
    null = "" if fit.null_r2_ is None else (f" (null on relabelled tokens {fit.null_r2_:.4f}, 95 % "
                                            f"[{fit.null_r2_interval_[0]:.4f}, {fit.null_r2_interval_[1]:.4f}])")
    print(f"force-law fit of {len(runs)} run(s), {fit.fit_info_['snapshots']} snapshots, target {args.target}, "
          f"gauge {fit.gauge_}: R^2 of the force field {fit.r2_:.4f}{null}, one strength per term for the whole run")
    if args.bootstrap:
        print(f"strengths {unit}; intervals: 95 % bootstrap over {'runs' if fit.n_runs_ > 1 else 'snapshots'}")
    else:
        print(f"strengths {unit}; no intervals (--bootstrap 0)")
    print(f"  {'parameter':<16} {'value':>11}  {'95 % interval':<25} {'RMS force':>9}  share")
    for row in fit.table():
        if not row["identified"]:  # a range at a bound of its box, or whose terms are 0: no value to read
            print(f"  {row['name']:<16} {'-':>11}  {row['note']}")
            continue
        lo, hi = row["interval"]
        interval = "-" if lo is None or hi is None else f"[{lo:.4g}, {hi:.4g}]"
        share = "" if row["share"] is None else f"{row['share']:.3f}"
        rms = "" if row["rms_force"] is None else f"{row['rms_force']:.3g}"
        print(f"  {row['name']:<16} {row['value']:>11.4g}  {interval:<25} {rms:>9}  {share}")
    print("over training, strengths fitted per window of steps (R^2 against the null; share of the force; "
          "each term's share of the explained force):")
    for w in fit.windows_:
        name = "" if w.get("name") is None else f" {w['name']}"
        if not w["defined"]:
            print(f"  [{w['start']}, {w['stop']}){name}: R^2 undefined ({w.get('why_undefined', '')})")
            continue
        shares = ", ".join(f"{k} {v:.2f}" for k, v in w["shares"].items())
        print(f"  [{w['start']}, {w['stop']}){name}: {against_null(w['r2'], w['null_r2'], w['null_r2_interval'])}; "
              f"{w['force_share']:.0%} of the force; {shares}" + (f" ({w['note']})" if w.get("note") else ""))
    print(shares_sentence(fit.shares_))  # the shares of the table's column, in a sentence
    print(fit.verdict_sentence())
    print(f"wrote {out / 'force_fit.json'}, {out / 'force_shares.png'}")
    return 0


class FitBar(ProgressBar):
    """The fit's progress bar on stderr (:class:`particles.core.cli.ProgressBar`),
    a ``callback(done, total)`` counting snapshot evaluations (each snapshot
    is evaluated once for every law the search, the null and the bootstrap
    try). Until the first evaluation its label says the fit is starting and
    that a first run compiles its kernels (on a fresh install the longest
    wait)."""

    STARTING = "starting (a first run compiles its kernels)"

    def __init__(self, label: str, stream=None):
        super().__init__(label, stream, unit=" snapshot evaluations", starting=self.STARTING)


def _windows(text: str):
    """--windows: a count, comma-separated step edges or ``stages`` (checked by the fit, naming windows)."""
    values = word_or_ints(text, "--windows", "stages", "a count or comma-separated integer step edges")
    return values if isinstance(values, str) or len(values) > 1 else values[0]


#: the null's default (fitting.forcefit.estimator.DEFAULT_NULL; written here so that `embdyn --help` does not
#: import the estimator; a test checks they agree)
DEFAULT_NULL = 10


def register_force_fit(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("force-fit", help="which force law explains a training run's embedding gradient",
                              description="Fit a pair-force law's terms to the loss gradient (or the updates) "
                                          "recorded on a run's embedding (embdyn train --gradients), or to "
                                          "its displacement over --horizon steps; print "
                                          "strengths, ranges, intervals and each term's share over training; "
                                          "write force_fit.json and force_shares.png.")
    p.add_argument("trajectory", nargs="+", help="trajectory .npz file(s) with gradients (any with --target displacement); several = "
                        "several runs")
    p.add_argument("--train", default=None, metavar="FILE",
                   help="the training set, for runs whose file does not hold one: an .npz with arrays pairs (M, 2) "
                        "and labels (M,), or a CSV with columns a,b,label")
    p.add_argument("--law", default="builtin",
                   help="'builtin' (clustering + alignment + decay), 'effective' (the effective loss) or a "
                        "particle preset name, whose ranges start the search (default builtin)")
    p.add_argument("--terms", nargs="+", default=None, help="fit only these terms (default all of the law's)")
    p.add_argument("--window", type=int, nargs=2, metavar=("START", "STOP"), default=None,
                   help="fit the snapshots with START <= step < STOP")
    p.add_argument("--target", choices=("gradient", "update", "displacement"), default="gradient",
                   help="minus the loss gradient (default), the optimiser's update, or the displacement per step "
                        "over --horizon steps (needs no recorded gradients)")
    p.add_argument("--horizon", type=int, default=None, metavar="STEPS",
                   help="the displacement's time scale in steps (--target displacement; default: to the next "
                        "snapshot)")
    p.add_argument("--normalize", choices=("rms", "none"), default="none",
                   help="the strengths' units: those of the recorded forces (none, the default, as ForceLawFit), or "
                        "per unit RMS force (rms: each run's forces divided by their RMS, so strengths compare "
                        "between runs; with several runs it also weighs them equally). R^2, ranges and the verdict "
                        "of one run do not depend on it")
    p.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates for the intervals (default 200)")
    p.add_argument("--windows", default="5",
                   help="windows of training steps, each with strengths of its own and its own verdict: a count "
                        "of equal spans (default 5) or comma-separated step edges within the run's steps, such as "
                        "0,100,1000,3001 for a run recorded to step 3000, or 'stages' (the run's stages: embdyn stages)")
    p.add_argument("--gauge", choices=("auto", "none", "translation", "similarity"), default="auto",
                   help="project off motions the law cannot make: the common drift (translation), and the scale "
                        "too (similarity); auto (default) takes what every fitted term admits")
    p.add_argument("--null", type=int, default=DEFAULT_NULL,
                   help=f"relabellings of the tokens for the null R^2 beside every R^2, which gives the verdict "
                        f"(default {DEFAULT_NULL}, as ForceLawFit; 0: none, no verdict)")
    p.add_argument("--tie-alignment", action="store_true", help="one strength for both alignment halves")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--path", choices=("auto", "direct", "gram"), default="auto",
                   help="the pair kernels: 'gram' reads inner products from the token Gram matrix (cost independent "
                        "of d), 'direct' sweeps every coordinate; 'auto' (default) takes gram from d = 6 on")
    p.add_argument("--out", default="embdyn-force-fit", help="output folder (default ./embdyn-force-fit)")
    add_quiet(p)
    p.set_defaults(func=_cmd_force_fit)
