"""``embdyn fit``: ODE regression onto the signals of a trajectory file
(docs/fitting.md)."""

from __future__ import annotations

import argparse

import numpy as np

from particles.core.cli import add_quiet, word_or_ints
from particles.core.validation import check_output_folder

__all__ = ["register_fit"]


def _build_model(args: argparse.Namespace, window):
    from . import Lasso, LinearODE, LotkaVolterra, ODEModel

    if args.reference:  # the survival paper's setting: Lasso(0.01) on the raw arrays, forward differences
        common = dict(regressor=Lasso(0.01, standardize=False), derivative="forward", window=window,
                      debias=args.debias)
    else:
        common = dict(regressor=args.regressor, alpha=args.alpha, derivative=args.derivative, window=window,
                      debias=args.debias)
    if args.library is not None and args.model != "poly":
        raise ValueError(f"--library exists for --model poly only (got --model {args.model})")
    if args.model == "linear":
        return LinearODE(stable=args.stable, **common)
    if args.stable:
        raise ValueError("--stable exists for --model linear only")
    if args.model == "poly":
        return ODEModel(library=_library(args.library), **common)
    return LotkaVolterra(form=args.model.removeprefix("lv-"), **common)


def _library(text: str | None):
    """--library: 'auto' (the degree chosen by the fit, fitting.ode.degree) or a polynomial degree 1..5."""
    from .degree import MAX_AUTO_DEGREE

    if text is None or text == "auto":
        return "auto"
    try:
        degree = int(text)
    except ValueError:
        degree = 0
    if not 1 <= degree <= MAX_AUTO_DEGREE or str(degree) != text.strip():
        raise ValueError(f"--library must be 'auto' or a polynomial degree 1..{MAX_AUTO_DEGREE}, got {text!r}")
    return degree


def _fit_windows(args: argparse.Namespace, traj) -> int:
    """``embdyn fit --windows``: one fit per window (fitting.ode.fit_windows), a table and windows.json."""
    from particles.core.io import write_json

    from particles.core.limits import check_budget

    from ..signals.memory import signals_bytes, total_bytes
    from .memory import fit_bytes, fit_form
    from ..signals import parse_frequencies, select_frequencies, trajectory_signals
    from .report import format_value
    from .windows import fit_windows, resolve_windows

    if args.power != 1:
        raise ValueError("--windows fits the signals |F_k| (--power 1)")
    if args.horizon is not None:
        raise ValueError("--horizon applies to one --window; with --windows each window's forecast runs to the "
                         "run's end")
    windows = word_or_ints(args.windows, "--windows", "stages", "comma-separated integer step edges")
    edges, names = resolve_windows(traj, windows, "--windows")  # checked before any fit (one line, exit 2)
    _, signals = trajectory_signals(traj)
    frequencies = parse_frequencies(args.frequencies, signals.shape[1], "--frequencies")
    selection = select_frequencies(traj, frequencies, factor=args.factor, name="--frequencies")
    model = _build_model(args, None)
    model.check_params()
    n = signals.shape[0]  # the windows are fitted one at a time: the whole run bounds each
    check_budget(total_bytes(traj, signals_bytes(traj) + fit_bytes(n, len(selection.columns), form=fit_form(model))),
               f"embdyn fit --windows of {len(selection.columns)} frequencies on up to {n} samples",
               "fit fewer frequencies (--frequencies)")
    out = check_output_folder(args.out, "--out")
    results = fit_windows(model, traj, windows, frequencies=selection.frequencies)
    rows = []
    print(f"trajectory: {args.trajectory}; {selection.message}")
    print(f"{'window':<22} {'steps':<16} {'rows R^2':>9} {'sim R^2':>9} {'forecast skill':>15}")
    for res in results:
        scores = {} if res["report"] is None else {k: v["value"] for k, v in res["report"]["scores"].items()}
        rows.append({"name": res["name"], "window": list(res["window"]), "error": res["error"], "scores": scores,
                     "notes": [] if res["report"] is None else res["report"]["notes"],
                     "equations": None if res["model"] is None else res["model"].equations(selection.names)})
        span = f"[{res['window'][0]}, {res['window'][1]})"
        if res["error"] is not None:
            print(f"{res['name']:<22} {span:<16} not fitted: {res['error']}")
        else:
            print(f"{res['name']:<22} {span:<16} {format_value(scores.get('rows_r2')):>9} "
                  f"{format_value(scores.get('trajectory_r2_fit_window')):>9} "
                  f"{format_value(scores.get('forecast_skill')):>15}")
    write_json(out / "windows.json", {"trajectory": str(args.trajectory), "windows": args.windows, "edges": edges,
                                      "names": names, "fitted_frequencies": selection.frequencies, "fits": rows},
               indent=2)
    print(f"wrote {out / 'windows.json'}")
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import joblib

    from particles.core.io import atomic_write, json_safe, write_json
    from particles.trajectory import Trajectory

    from particles.core.figures import save_figure

    from particles.core.limits import check_budget

    from ..signals.memory import signals_bytes, total_bytes
    from .memory import fit_bytes, fit_form
    from ..signals import parse_frequencies, select_frequencies, trajectory_signals
    from ..signals.figures import plot_signals
    from .data import check_run_horizon, check_run_window, in_window
    from .figures import plot_coefficients, plot_fit
    from .report import fit_report, model_summary

    if args.windows is not None and args.window is not None:
        raise ValueError("give --window (one fit) or --windows (one fit per window), not both")
    traj = Trajectory.load(args.trajectory)  # a missing or damaged file: one line, exit 2 (main)
    if args.windows is not None:
        return _fit_windows(args, traj)
    steps, signals = trajectory_signals(traj, power=args.power)
    t = steps.astype(float)
    # the checks (and messages) of LinearODE(window=...).fit(traj) and model.forecast(traj, horizon=...)
    window = None if args.window is None else tuple(args.window)
    check_run_window(window, [t])
    fit_end = float(t[in_window(t, window)][-1])  # where the forecast starts
    check_run_horizon(args.horizon, fit_end, [t])
    if not args.factor > 0:
        raise ValueError(f"--factor must be > 0 (the survival rule's factor), got {args.factor:g}")
    frequencies = parse_frequencies(args.frequencies, signals.shape[1], "--frequencies")
    selection = select_frequencies(traj, frequencies, factor=args.factor, power=args.power, name="--frequencies")
    model = _build_model(args, window)
    model.check_params()  # every setting refused before any work, the output folder too
    columns = selection.columns
    names = selection.names
    fitted = int(np.count_nonzero(in_window(t, window)))
    check_budget(total_bytes(traj, signals_bytes(traj) + fit_bytes(fitted, len(columns), form=fit_form(model), figures=True)),
               f"embdyn fit of {len(columns)} frequencies on {fitted} samples",
               "fit a window of the run (--window) or fewer frequencies (--frequencies)")
    out = check_output_folder(args.out, "--out")
    x = signals[:, columns]
    model.fit(x, t, names=names)
    model.frequencies_ = selection.frequencies  # model.joblib scores and forecasts a Trajectory on these
    survivors = [] if selection.survivors is None else selection.survivors
    scores = fit_report(model, x, t, window=window, horizon=args.horizon)
    report = {
        "trajectory": str(args.trajectory), "source": traj.meta.get("source"), "model": args.model,
        "fitted": model_summary(model), "regressor": repr(model.regressor_), "derivative": repr(model.formulation_),
        "window": window, "horizon": args.horizon, "samples": int(len(t)), "frequencies": int(signals.shape[1]),
        "fitted_frequencies": selection.frequencies, "frequency_rule": selection.rule,
        "frequency_selection": selection.message, "survivors": survivors, "key_frequencies": selection.key,
        **{name: score["value"] for name, score in scores["scores"].items()},
        "scores": scores["scores"], "notes": scores["notes"],
        "nonzero_coefficients": int(np.count_nonzero(model.coef_)), "sparsity": model.sparsity_,
        "fit_quality": json_safe(model.fit_quality_),
    }
    if "degree" in getattr(model, "fit_info_", {}):
        report["degree"] = json_safe(model.fit_info_["degree"])
    if args.model == "linear":
        report["max_real_eigenvalue"] = float(model.eigenvalues_.real.max())
        report["stable"] = model.is_stable_
    chosen = np.zeros(signals.shape[1], dtype=bool)
    chosen[columns] = True
    rule = {"survivors": "survivors", "key": "key frequencies"}.get(selection.rule, "fitted frequencies")
    save_figure(plot_signals(signals, steps, chosen, rule=rule), out / "signals.png")
    save_figure(plot_fit(model, x, t, window=window, names=names), out / "fit.png")
    save_figure(plot_coefficients(model, names), out / "coefficients.png")
    report["equations"] = model.equations(names)
    # the fit as numbers: coef[i][j] multiplies term j in the equation of variable i
    report["variables"] = names
    report["terms"] = model.feature_names(names)
    report["coefficients"] = model.coef_.tolist()
    report["model_file"] = "model.joblib"
    write_json(out / "fit.json", report, indent=2)
    atomic_write(out / "model.joblib", lambda fh: joblib.dump(model, fh))
    print(f"trajectory: {args.trajectory} ({traj.meta.get('source')}; {len(t)} samples, steps "
          f"{int(steps[0])}..{int(steps[-1])}, {signals.shape[1]} frequencies)")
    print(selection.message)
    _print_fit(report, scores)
    print(f"wrote {out / 'fit.json'}, {out / 'model.joblib'}, {out / 'signals.png'}, {out / 'fit.png'}, "
          f"{out / 'coefficients.png'}")
    return 0


def _print_fit(report: dict, scores: dict) -> None:
    """What ``embdyn fit`` prints of a fit: the model, the degree chosen, the verdict, scores, notes and equations
    (results on stdout: --quiet hides only progress, notes on stderr and warnings)."""
    from .report import format_value

    print("fitted:")
    for line in report["fitted"]:
        print("  " + line)
    if "max_real_eigenvalue" in report:
        verdict = "stable" if report["stable"] else "unstable"
        print(f"largest real part of an eigenvalue: {report['max_real_eigenvalue']:.3g} ({verdict})")
    print(f"nonzero coefficients: {report['nonzero_coefficients']} (sparsity {report['sparsity']:.3g})")
    if "degree" in report:
        print(f"degree: {report['degree']['chosen']} ({report['degree']['rule']})")
    quality = report["fit_quality"]  # the verdict on standard output too (--quiet hides the warning)
    print("verdict: " + ("trusted (simulation, boundedness, halves and conditioning pass; fit.json's fit_quality)"
                         if quality["trusted"] else
                         f"not to be trusted: {', '.join(quality['failed'])} failed (fit.json's fit_quality)"))
    print("scores:")
    for name, score in scores["scores"].items():
        print(f"  {name}: {format_value(score['value'])}  ({score['what']})")
    for note in scores["notes"]:
        print(f"note: {note}")
    print("equations:")
    for line in report["equations"]:
        print("  " + line)


def register_fit(subparsers: argparse._SubParsersAction) -> None:
    from .names import DERIVATIVE_METHODS, LV_FORMS, REGRESSORS

    models = ("linear",) + tuple(f"lv-{form}" for form in LV_FORMS) + ("poly",)

    p = subparsers.add_parser("fit", help="fit an ODE to the Fourier signals of a trajectory",
                              description="Fit a linear or Lotka-Volterra ODE to the Fourier signals of a "
                                          "trajectory file (stored signals, or computed from its snapshots); "
                                          "print scores and write fit.json and figures.")
    p.add_argument("trajectory", help="trajectory .npz (particles.Trajectory format)")
    p.add_argument("--model", choices=models, default="linear",
                   help="linear ODE, Lotka-Volterra in its general, classic or logistic form, or a polynomial ODE "
                        "(poly, see --library) (default linear)")
    p.add_argument("--library", default=None, metavar="auto|DEGREE",
                   help="--model poly: the polynomial degree 1..5, or auto (default: the lowest degree that simulates "
                        "the data as well as the best, fitting.ode.AutoDegree)")
    p.add_argument("--regressor", choices=REGRESSORS, default="stlsq",
                   help="sparse regression on standardised terms (default stlsq)")
    p.add_argument("--alpha", type=float, default=None,
                   help="STLSQ threshold or Lasso penalty on the standardised scale (default: the model's: STLSQ 0.1, "
                        "0.02 for --model linear)")
    p.add_argument("--derivative", choices=DERIVATIVE_METHODS, default=None,
                   help="how the data become regression rows: the weak form (default; no numerical derivatives), "
                        "the flow map (default with --stable: forecasts best) or a pointwise derivative estimate")
    p.add_argument("--stable", action="store_true", help="linear model: least squares over stable systems only")
    p.add_argument("--reference", action="store_true",
                   help="the survival paper's setting: Lasso alpha 0.01 on raw arrays, forward differences "
                        "(overrides --regressor, --alpha, --derivative)")
    p.add_argument("--debias", action="store_true", help="least-squares refit on the selected terms")
    p.add_argument("--window", type=float, nargs=2, metavar=("START", "STOP"), default=None,
                   help="fit on steps in [START, STOP); the rest is forecast from the observed state at the "
                        "window's end and scored against persistence")
    p.add_argument("--windows", default=None, metavar="stages|E0,E1,...",
                   help="one fit per window: the run's stages (embdyn stages) or comma-separated step edges; "
                        "writes windows.json")
    p.add_argument("--horizon", type=float, default=None, metavar="STEPS",
                   help="forecast this many steps past the window's last sample (default: to the run's end)")
    p.add_argument("--power", type=int, choices=(1, 2), default=1, help="signal |F_k| (1) or |F_k|^2 (2)")
    p.add_argument("--frequencies", default="auto", metavar="auto|survivors|key|all|K1,K2,...",
                   help="which frequencies to fit: auto (default: the survivors by the survival paper's rule if "
                        "any, else the key frequencies, else all), survivors, key, all, or a list such as 2,5,7")
    p.add_argument("--factor", type=float, default=2.0,
                   help="the survival rule's factor: a frequency survives above FACTOR x the mean of all bins "
                        "(default 2, the paper's)")
    p.add_argument("--out", default="embdyn-fit", help="output folder (default ./embdyn-fit)")
    add_quiet(p)
    p.set_defaults(func=_cmd_fit)
