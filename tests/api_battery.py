"""Bad-input battery over the exported functions of particles,
effective_theory and fitting (a measurement, not yet a test).

    python tests/api_battery.py [--json OUT]

Every exported function must have a good call in GOOD (a new export without
one is reported). For each parameter of each good call the battery swaps in
bad values of the parameter's kind (NaN/inf/complex/object/empty/wrong-shape
arrays, negative/zero/huge/float/string ints, NaN/inf/string floats, unknown
strings, None, wrong objects) and classifies the outcome:

* named: ValueError/TypeError whose message names the parameter;
* unnamed: ValueError/TypeError that does not name it;
* other: any other exception (IndexError, ZeroDivisionError, ...);
* finite: returned, with only finite numbers (accepted as valid input);
* nonfinite: returned NaN or inf (a silent failure);
* slow: still running after --timeout seconds (e.g. ``steps=10**12``: valid, just long).
"""

from __future__ import annotations

import argparse
import inspect
import json
import signal
import sys
import warnings
from collections import Counter
from typing import Any, Callable

import numpy as np

import effective_theory as et
import fitting as ft
import particles as pt

RNG = np.random.default_rng(0)
E7 = RNG.normal(size=(7, 2))
D7 = pt.modular_addition(7)
A7 = pt.constraint_matrix(pt.addition(5))
SIG = np.abs(RNG.normal(size=(40, 3))) + 1.0
TRAJ = None

# name -> (function, good keyword arguments)
GOOD: dict[str, tuple[Callable, dict[str, Any]]] = {
    "particles.addition": (pt.addition, {"p": 5}),
    "particles.best_circularity": (pt.best_circularity, {"E": E7}),
    "particles.circularity": (pt.circularity, {"E": E7, "frequency": 2}),
    "particles.classify_structure": (pt.classify_structure, {"E": E7, "dataset": D7}),
    "particles.energy": (pt.energy, {"x": E7, "train": D7, "params": pt.ForceParams()}),
    "particles.energy_and_forces": (pt.energy_and_forces, {"x": E7, "train": D7, "params": pt.ForceParams()}),
    "particles.energy_reference": (pt.energy_reference, {"x": E7, "pairs": D7.pairs, "labels": D7.labels,
                                                          "params": pt.ForceParams()}),
    "particles.forces": (pt.forces, {"x": E7, "train": D7, "params": pt.ForceParams()}),
    "particles.forces_reference": (pt.forces_reference, {"x": E7, "pairs": D7.pairs, "labels": D7.labels,
                                                          "params": pt.ForceParams()}),
    "particles.grid_defects": (pt.grid_defects, {"E": E7, "dataset": D7}),
    "particles.line_ratio": (pt.line_ratio, {"E": E7}),
    "particles.make_rng": (pt.make_rng, {"seed": 3}),
    "particles.minimize": (pt.minimize, {"x0": E7, "train": D7, "params": pt.ForceParams(), "max_steps": 20,
                                         "gtol": 1e-6, "step": 0.01}),
    "particles.modular_addition": (pt.modular_addition, {"p": 5, "ordered": False}),
    "particles.pair_sum_accuracy": (pt.pair_sum_accuracy, {"E": E7, "dataset": D7, "metric": "euclidean"}),
    "particles.permutation_group": (pt.permutation_group, {"n": 3}),
    "particles.preset": (pt.preset, {"name": "circles"}),
    "particles.simulate": (pt.simulate, {"x0": E7, "train": D7, "params": pt.ForceParams(), "steps": 5, "dt": 0.01}),
    "particles.structure_metrics": (pt.structure_metrics, {"E": E7, "dataset": D7}),
    "particles.centroid_sum": (pt.centroid_sum, {"E": E7}),
    "particles.effective_loss": (pt.effective_loss, {"E": E7[:5], "system": pt.addition(5), "normalization": "centred"}),
    "particles.effective_loss_gradient": (pt.effective_loss_gradient, {"E": E7[:5], "system": pt.addition(5),
                                                                        "normalization": "centred"}),
    "particles.effective_loss_reference": (pt.effective_loss_reference, {"E": E7[:5], "A": A7,
                                                                          "normalization": "centred"}),
    "particles.simulate_effective": (pt.simulate_effective, {"E0": E7[:5], "train": pt.addition(5), "steps": 5,
                                                             "dt": 0.01}),
    "particles.spread": (pt.spread, {"E": E7, "normalization": "centred"}),
    "particles.constraint_matrix": (pt.constraint_matrix, {"data": pt.addition(5)}),
    "particles.label_constraints": (pt.label_constraints, {"labels": np.array([0, 1, 0, 1])}),
    "particles.parallelograms": (pt.parallelograms, {"data": pt.addition(5)}),
    "particles.fast_exp": (pt.fast_exp, {"x": np.array([-1.0, 0.5])}),
    "particles.gaussian_clustering": (pt.gaussian_clustering, {"k_a": 3.0, "sig_a": 3.0, "k_r": 1.0, "sig_r": 1.0,
                                                               "wd": 0.1}),
    "particles.cosine_alignment": (pt.cosine_alignment, {"lam": 1.0, "sig_t": 0.2, "eps": 1.0}),
    "effective_theory.degeneracy": (et.degeneracy, {"data": pt.addition(5)}),
    "effective_theory.grokking_rate": (et.grokking_rate, {"data": pt.addition(5), "Z": 1.0}),
    "effective_theory.grokking_rate_curve": (et.grokking_rate_curve, {"p": 5, "fractions": np.array([0.5, 1.0]),
                                                                      "samples": 3, "seed": 0}),
    "effective_theory.hessian_spectrum": (et.hessian_spectrum, {"data": pt.addition(5), "k": 3}),
    "effective_theory.laplacian_spectrum": (et.laplacian_spectrum, {"data": pt.addition(5), "k": 3}),
    "effective_theory.nullity": (et.nullity, {"A": A7}),
    "effective_theory.predicted_steps": (et.predicted_steps, {"data": pt.addition(5), "eta": 0.5, "Z": 1.0}),
    "effective_theory.rank": (et.rank, {"A": A7}),
    "effective_theory.unique_structure_probability": (et.unique_structure_probability,
                                                      {"p": 5, "samples": 5, "seed": 0, "bootstrap": 5}),
    "effective_theory.wilson_interval": (et.wilson_interval, {"successes": np.array([1, 3]), "n": 5,
                                                              "confidence": 0.95}),
    "effective_theory.classify_phase": (et.classify_phase, {"t_train": 100.0, "t_val": 5000.0, "budget": 1e5,
                                                            "gap": 1e3}),
    "effective_theory.normalized_embedding": (et.normalized_embedding, {"E": E7}),
    "effective_theory.predicted_accuracy": (et.predicted_accuracy, {"E": E7[:5], "train": pt.addition(5),
                                                                    "dataset": pt.addition(5), "delta2": 0.01}),
    "effective_theory.realised_parallelograms": (et.realised_parallelograms, {"E": E7[:5], "dataset": pt.addition(5),
                                                                              "delta2": 0.01}),
    "effective_theory.rqi": (et.rqi, {"E": E7[:5], "dataset": pt.addition(5), "delta2": 0.01}),
    "effective_theory.rqi_series": (et.rqi_series, {"embeddings": np.stack([E7[:5], E7[:5]]),
                                                    "dataset": pt.addition(5), "delta2": 0.01}),
    "fitting.differentiate": (ft.differentiate, {"x": SIG, "t": 1.0, "method": "forward"}),
    "fitting.fitness_correlation": (ft.fitness_correlation, {"rate": np.array([0.1, 0.5, 0.9, 0.2]),
                                                             "signal": np.array([1.0, 2.0, 4.0, 1.5])}),
    "fitting.fourier_signals": (ft.fourier_signals, {"E": E7, "power": 1}),
    "fitting.frequency_circularity": (ft.frequency_circularity, {"E": E7}),
    "fitting.initial_gradient": (ft.initial_gradient, {"signals": SIG, "step": 4}),
    "fitting.initial_signal": (ft.initial_signal, {"signals": SIG}),
    "fitting.linear_solution": (ft.linear_solution, {"A": -np.eye(2), "b": np.zeros(2), "x0": np.ones(2),
                                                     "t": np.array([0.0, 1.0])}),
    "fitting.n_frequencies": (ft.n_frequencies, {"p": 7}),
    "fitting.survival_rate": (ft.survival_rate, {"survived": np.array([[True, False], [True, True]])}),
    "fitting.surviving_frequencies": (ft.surviving_frequencies, {"signals": SIG, "factor": 2.0, "dc": 0.0}),
    "fitting.survival_ode_analysis": (ft.survival_ode_analysis, {"signals": SIG, "n_steps": 20, "alpha": 0.01}),
}
SKIP = {"particles.preset_names", "particles.warmup", "particles.sweep", "effective_theory.warmup",
        "fitting.example_trajectory", "fitting.survival_classifier", "fitting.survival_table",
        "fitting.trajectory_signals", "effective_theory.constraint_matrix", "effective_theory.parallelograms"}


def bad_values(good: Any) -> list[tuple[str, Any]]:
    """Bad values of the same kind as ``good``."""
    common = [("None", None), ("object", object()), ("string", "bad")]
    if isinstance(good, (bool, np.bool_)):
        return [("int 2", 2), ("string", "yes"), ("None", None)]
    if isinstance(good, (int, np.integer)):
        return common + [("negative", -1), ("zero", 0), ("huge", 10**12), ("float", 2.5), ("nan", float("nan")),
                         ("numeric string", "5")]
    if isinstance(good, (float, np.floating)):
        return common + [("nan", float("nan")), ("inf", float("inf")), ("-inf", -float("inf")), ("negative", -1.0),
                         ("complex", 1 + 1j)]
    if isinstance(good, str):
        return [("unknown", "no-such-choice"), ("int", 5), ("None", None)]
    if isinstance(good, np.ndarray):
        out = common[:2] + [("empty", np.array([])), ("scalar", np.float64(1.0)), ("extra dim", good[None]),
                            ("strings", good.astype(str)), ("objects", good.astype(object))]
        if good.dtype.kind in "fc":
            nan = good.copy()
            nan.flat[0] = np.nan
            inf = good.copy()
            inf.flat[-1] = np.inf
            out += [("nan", nan), ("inf", inf), ("complex", good + 1j)]
        elif good.dtype.kind in "iu":
            out += [("negative", good - 100), ("float", good + 0.5), ("complex", good + 1j)]
        return out
    return common + [("int", 5)]


def non_finite(value: Any, depth: int = 0) -> bool:
    if depth > 3:
        return False
    if isinstance(value, (float, np.floating)):
        return not np.isfinite(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return not np.all(np.isfinite(value))
    if isinstance(value, dict):
        return any(non_finite(v, depth + 1) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(non_finite(v, depth + 1) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return any(non_finite(getattr(value, f), depth + 1) for f in value.__dataclass_fields__)
    return False


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow()


def run(timeout: float = 10.0, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    signal.signal(signal.SIGALRM, _alarm)
    exported = {f"{m.__name__}.{n}" for m in (pt, et, ft) for n in m.__all__
                if inspect.isfunction(getattr(m, n))}
    missing = sorted(exported - set(GOOD) - SKIP)
    outcomes: Counter = Counter()
    problems: list[dict[str, Any]] = []
    for name, (fn, kwargs) in GOOD.items():
        fn(**kwargs)  # the good call works
        for param, good in kwargs.items():
            for label, bad in bad_values(good):
                if label in skip:
                    continue
                args = dict(kwargs)
                args[param] = bad
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    signal.setitimer(signal.ITIMER_REAL, timeout)
                    try:
                        result = fn(**args)
                    except _Slow:
                        kind, detail = "slow", f"still running after {timeout:g} s"
                    except (ValueError, TypeError) as exc:
                        kind = "named" if param in str(exc) else "unnamed"
                        detail = f"{type(exc).__name__}: {str(exc)[:120]}"
                    except Exception as exc:  # noqa: BLE001 - classifying every failure is the point
                        kind, detail = "other", f"{type(exc).__name__}: {str(exc)[:120]}"
                    else:
                        kind = "nonfinite" if non_finite(result) else "finite"
                        detail = ""
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                outcomes[kind] += 1
                if kind in ("unnamed", "other", "nonfinite", "slow"):
                    problems.append({"call": name, "parameter": param, "bad": label, "outcome": kind,
                                     "detail": detail})
    errors = outcomes["named"] + outcomes["unnamed"] + outcomes["other"]
    return {"functions": len(GOOD), "calls": sum(outcomes.values()), "outcomes": dict(outcomes),
            "named_share_of_errors": outcomes["named"] / errors if errors else None,
            "missing_good_calls": missing, "problems": problems}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=None, help="write the full report here")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a call counts as slow")
    parser.add_argument("--skip", nargs="*", default=(), help="bad-value labels to leave out, e.g. huge")
    args = parser.parse_args()
    report = run(args.timeout, tuple(args.skip))
    print(json.dumps({k: v for k, v in report.items() if k != "problems"}, indent=1))
    for p in report["problems"]:
        print(f"{p['outcome']:9s} {p['call']}({p['parameter']}={p['bad']}) {p['detail']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    sys.exit(0)


if __name__ == "__main__":
    main()
