"""Held-out prediction of survival-MLP signal trajectories by fitted linear ODEs.

Each run is fitted on steps 0-1000 (as the survival paper does) and
simulated from its observed state at step 1000 over steps 1000-2000. The
relative error ||x_sim - x_obs|| / ||x_obs|| over those steps is compared
with the persistence baseline (hold the step-1000 state) for: the stable
linear fit (``LinearODE(stable=True)``, from the fitted flow map, the weak
form and forward differences),
the default ``LinearODE()``, each signal as its own logistic curve
(``LotkaVolterra(form="logistic")``), and the paper's reference fit (Lasso 0.01 on
raw arrays, forward differences). A fit that blows up scores inf.

    embdyn train survival-mlp --seeds 8 --first-seed 200 --steps 2000 --out runs
    embdyn train survival-mlp --seeds 4 --first-seed 300 --steps 2000 --out runs
    python docs/examples/survival_stable_fit.py runs/*.npz --out docs/figures/fitting
    python docs/examples/survival_stable_fit.py --quick --out /tmp/x   # the shipped run only

Other run sets (the command that made them goes into the results):

    embdyn train survival-mlp --seeds 16 --first-seed 600 --steps 2000 --batched --out runs600
    python docs/examples/survival_stable_fit.py runs600/*.npz --out docs/figures/fitting \
        --name survival_stable_fit_seeds600.json \
        --runs-made-by "embdyn train survival-mlp --seeds 16 --first-seed 600 --steps 2000 --batched --out runs600"
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from fitting import Lasso, LinearODE, LotkaVolterra, example_trajectory, trajectory_signals
from fitting.ode import BlowUpError
from particles.trajectory import Trajectory

RUNS_MADE_BY = ("embdyn train survival-mlp --seeds 8 --first-seed 200 --steps 2000 --out runs; "
                "embdyn train survival-mlp --seeds 4 --first-seed 300 --steps 2000 --out runs")
MODELS = {
    "default LinearODE(stable=True) (the flow map)": lambda w: LinearODE(stable=True, window=w),
    "stable (flow map)": lambda w: LinearODE(stable=True, derivative="flowmap", window=w),
    "stable (weak form)": lambda w: LinearODE(stable=True, derivative="weak", window=w),
    "stable (forward differences)": lambda w: LinearODE(stable=True, derivative="forward", window=w),
    "default LinearODE()": lambda w: LinearODE(window=w),
    "LotkaVolterra(form='logistic')": lambda w: LotkaVolterra(form="logistic", window=w),
    "reference Lasso 0.01, forward": lambda w: LinearODE(Lasso(0.01, standardize=False), derivative="forward",
                                                         window=w),
}


FIT_STEPS, HELD_STEPS = 1000, 1000


def held_out_rows(steps: np.ndarray, fit_steps: int = FIT_STEPS, held_steps: int = HELD_STEPS) -> tuple[int, int]:
    """Rows [i0, i1) of the held-out steps; ValueError when the run is too short."""
    t = steps.astype(float)
    i0, i1 = int(np.searchsorted(t, fit_steps)), int(np.searchsorted(t, fit_steps + held_steps))
    if i1 - i0 < 2:
        raise ValueError(f"the run ends at step {int(t[-1])}; it needs steps up to {fit_steps + held_steps}")
    return i0, i1


def evaluate(steps: np.ndarray, x: np.ndarray, fit_steps: int = FIT_STEPS, held_steps: int = HELD_STEPS) -> dict:
    t = steps.astype(float)
    i0, i1 = held_out_rows(steps, fit_steps, held_steps)
    obs = x[i0:i1]
    out = {"persistence": float(np.linalg.norm(obs - x[i0]) / np.linalg.norm(obs))}
    for name, make in MODELS.items():
        model = make((0, fit_steps)).fit(x, t)
        try:
            sim = model.simulate(x[i0], t[i0:i1])
            err = float(np.linalg.norm(sim - obs) / np.linalg.norm(obs))
        except BlowUpError:
            err = float("inf")
        # linear fits say whether they are stable; a Lotka-Volterra fit has no single answer (None)
        stable = bool(model.is_stable_) if hasattr(type(model), "is_stable_") else None
        out[name] = {"relative_error": err, "stable": stable}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", help="trajectory files of survival-MLP runs (>= 2000 steps)")
    parser.add_argument("--quick", action="store_true", help="the shipped example run only")
    parser.add_argument("--out", default=".", help="folder for survival_stable_fit.json")
    parser.add_argument("--name", default="survival_stable_fit.json", help="file name of the results")
    parser.add_argument("--runs-made-by", default=RUNS_MADE_BY,
                        help="the command that made the runs, stored in the results (default: this page's)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    try:  # a missing or bad file, or a run too short: one line and exit code 2, before any fit
        trajectories = [("example_trajectory()", example_trajectory())] if args.quick or not args.runs else \
            [(Path(p).name, Trajectory.load(p)) for p in args.runs]
        signals = [(name, *trajectory_signals(traj)) for name, traj in trajectories]
        for _, steps, _ in signals:
            held_out_rows(steps)
    except (OSError, ValueError, TypeError) as exc:
        parser.exit(2, f"survival_stable_fit.py: {exc}\n")
    results = {}
    for name, steps, x in signals:
        results[name] = evaluate(steps, x)
        r = results[name]
        print(f"{name}: persistence {r['persistence']:.4f}; " + "; ".join(
            f"{k} {v['relative_error']:.4f}" for k, v in r.items() if k != "persistence"))
    wins = {k: sum(r[k]["relative_error"] < r["persistence"] for r in results.values()) for k in MODELS}
    summary = {"runs": results, "beats_persistence": wins, "n_runs": len(results),
               "command": ("" if args.quick or not args.runs else f"{args.runs_made_by}; ")
                          + shlex.join(["python", "docs/examples/survival_stable_fit.py", *sys.argv[1:]])}
    for k, v in wins.items():
        print(f"{k}: beats persistence on {v} of {len(results)} runs")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(summary, fh, indent=1)
    os.replace(tmp, out / args.name)


if __name__ == "__main__":
    main()
