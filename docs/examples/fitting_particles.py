"""Worked example of the `fitting` package on particle-model trajectories.

1. A known four-species competitive Lotka-Volterra system, sampled with 1 %
   noise: the classic LV fit with Savitzky-Golay derivatives recovers it.
2. One `circles` run (seed 0) recorded every 10 steps: Fourier signals, the
   surviving frequency, a Lasso linear ODE and a classic Lotka-Volterra fit
   of the transient (steps 0-300), scored on derivatives and on the
   simulated trajectory, and whether the simulation ends on the survivor.
3. Fitness over seeds: which frequency survives in each of N runs, the
   correlation of survival with the initial signal and gradient, and a linear
   SVM predicting survival from them on held-out frequencies.

    python docs/examples/fitting_particles.py --out docs/figures/fitting [--quick]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from scipy.integrate import solve_ivp  # noqa: E402

from fitting import (BlowUpError, Lasso, LinearODE, SavitzkyGolay, LotkaVolterra, fitness_correlation, fourier_signals, initial_gradient,  # noqa: E402
                     survival_classifier, surviving_frequencies)
from fitting.ode.figures import plot_coefficients, plot_fit  # noqa: E402
from fitting.signals.figures import plot_signals  # noqa: E402
from particles.core.figures import save_figure  # noqa: E402
from particles.core.io import atomic_write_text  # noqa: E402
from particles import preset  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="embdyn-fitting-example")
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="5 seeds, shorter runs (CI)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = 5 if args.quick else args.seeds
    config = preset("circles").replace(record_every=10, steps=2000 if args.quick else 5000)
    results: dict = {"preset": "circles", "record_every": 10, "steps": config.steps}

    # 1. a known system ---------------------------------------------------
    r = np.array([1.0, 0.72, 1.53, 1.27])
    a = np.array([[1.0, 1.09, 1.52, 0.0], [0.0, 1.0, 0.44, 1.36], [2.33, 0.0, 1.0, 0.47], [1.21, 0.51, 0.35, 1.0]])
    rng = np.random.default_rng(0)
    t = np.arange(0, 40, 0.05)
    runs = []
    for _ in range(4):
        sol = solve_ivp(lambda _t, x: r * x * (1 - a @ x), (0, 40), rng.uniform(0.05, 0.6, 4), t_eval=t,
                        rtol=1e-10, atol=1e-12)
        runs.append(sol.y.T * (1 + 0.01 * rng.standard_normal(sol.y.T.shape)))
    known = LotkaVolterra("classic", "ols", derivative=SavitzkyGolay(15, 3)).fit(runs[:3], 0.05)
    truth = -r[:, None] * a
    results["known_system"] = {
        "growth_rates_true": r.tolist(), "growth_rates_fit": known.growth_rates_.tolist(),
        "max_relative_error_interactions": float(np.max(np.abs(known.interactions_ - truth)[truth != 0]
                                                        / np.abs(truth[truth != 0]))),
        "trajectory_r2_training_runs": known.trajectory_score(runs[:3], 0.05),
        "trajectory_r2_held_out_run": known.trajectory_score(runs[3:], 0.05),
    }
    species = ["x1", "x2", "x3", "x4"]
    save_figure(plot_fit(known, runs[3], 0.05, columns=[0, 1, 2, 3], names=species), out / "known_lv_fit.png", dpi=110)

    # 2. one particle run --------------------------------------------------
    traj = config.run(0)
    steps = traj.snapshot_steps.astype(float)
    S = fourier_signals(traj)
    alive = surviving_frequencies(traj)
    names = [f"S{k}" for k in range(1, S.shape[1] + 1)]
    window = (0.0, 300.0)
    linear = LinearODE(Lasso(0.01, standardize=False), derivative="central", window=window).fit(S, steps)
    lv = LotkaVolterra("classic", Lasso(1e-3, standardize=False), derivative="central", window=window).fit(S, steps)
    single = {"survivors": [int(k) for k in np.flatnonzero(alive) + 1]}
    for label, model in (("linear_lasso", linear), ("lv_classic_lasso", lv)):
        entry = {"derivative_r2_fit_window": model.score(S, steps, window=window),
                 "nonzero": int(np.count_nonzero(model.coef_)), "sparsity": model.sparsity_}
        try:
            entry["trajectory_r2_fit_window"] = model.trajectory_score(S, steps, window=window)
            end = model.simulate(S[0], steps[steps < window[1]])[-1]
            entry["simulated_survivor_at_300"] = int(np.argmax(end)) + 1
        except BlowUpError as exc:
            entry["trajectory_r2_fit_window"] = str(exc)
        single[label] = entry
    single["linear_max_real_eigenvalue"] = float(linear.eigenvalues_.real.max())
    single["lv_equations"] = lv.equations(names, threshold=1e-6)
    results["seed0"] = single
    save_figure(plot_signals(S, steps, alive, title="circles preset, seed 0"), out / "signals.png", dpi=110)
    save_figure(plot_fit(lv, S, steps, window=window, names=names), out / "fit_lv_classic.png", dpi=110)
    save_figure(plot_coefficients(lv, names), out / "coefficients_lv_classic.png", dpi=110)
    save_figure(plot_coefficients(linear, names), out / "coefficients_linear.png", dpi=110)

    # 3. fitness over seeds ----------------------------------------------
    survived, s0, grad = [], [], []
    for seed in range(seeds):
        run = config.run(seed)
        signals = fourier_signals(run)
        survived.append(surviving_frequencies(run))
        s0.append(signals[0])
        grad.append(initial_gradient(signals, step=4))
    survived = np.array(survived)
    s0 = np.array(s0)
    grad = np.array(grad)
    r_signal, p_signal = fitness_correlation(survived.astype(float), s0)
    r_grad, p_grad = fitness_correlation(survived.astype(float), grad)
    fitness = {"seeds": seeds, "survivors_per_run": survived.sum(axis=1).tolist(),
               "pearson_survived_vs_initial_signal": [r_signal, p_signal],
               "pearson_survived_vs_initial_gradient": [r_grad, p_grad]}
    try:
        svm = survival_classifier(np.column_stack([s0.ravel(), grad.ravel()]), survived.ravel(), rng=0)
        fitness["svm_test_accuracy"] = svm.test_accuracy
        fitness["svm_majority_baseline"] = svm.majority_baseline
        fitness["svm_n_test"] = svm.n_test
    except ValueError as exc:
        fitness["svm"] = str(exc)
    results["fitness"] = fitness
    text = json.dumps(results, indent=2)
    atomic_write_text(out / "fitting_example.json", text)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
