"""Ours (fitting's defaults) vs PySINDy on systems the benchmark does not have.

Nine cases a new user might try: a damped oscillator, a 3-D linear system
with a lightly damped rotation and a constant, a 3-species food chain, SIR,
2-species systems at amplitudes 1e-3 and 1e3, irregular sample times, one
short run. Each at 0, 1 and 5 % Gaussian noise (of each column's RMS), a
clean held-out run for the derivative error and the simulated trajectory.
Needs PySINDy (``pip install '.[bench]'``).

    python docs/examples/fitting_probe.py SYSTEM [SEED] [--out DIR]
    python docs/examples/fitting_probe.py all 0 --out docs/figures/fitting/probe

Writes DIR/results_SYSTEM_sSEED.json and prints a line per noise level.
"""
import json
import sys
import time
from pathlib import Path
import warnings

import numpy as np
from scipy.integrate import solve_ivp
from sklearn.metrics import r2_score

from fitting import LinearODE, LotkaVolterra, PolynomialLibrary
from fitting.ode import BlowUpError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_fitting import coef_from_terms  # noqa: E402  (the benchmark's systems are defined the same way)


def coef_and_names(K, degree, terms):
    names = PolynomialLibrary(degree).feature_names([f"x{i + 1}" for i in range(K)])
    return coef_from_terms(K, degree, terms), names


class Sys:
    def __init__(self, name, K, degree, terms, x0, t_end, dt, n_runs=4, irregular=False, scale=1.0):
        self.name, self.K, self.degree = name, K, degree
        self.coef, self.names = coef_and_names(K, degree, terms)
        self.lib = PolynomialLibrary(degree)
        self.x0, self.t_end, self.dt, self.n_runs = x0, t_end, dt, n_runs
        self.irregular, self.scale = irregular, scale

    def f(self, x):
        return self.lib.transform(np.atleast_2d(x)) @ self.coef.T

    def times(self, rng):
        n = int(round(self.t_end / self.dt)) + 1
        if not self.irregular:
            return np.linspace(0, self.t_end, n)
        t = np.sort(rng.uniform(0, self.t_end, n - 2))
        return np.concatenate([[0.0], t, [self.t_end]])

    def run(self, x0, t):
        sol = solve_ivp(lambda _t, y: self.f(y)[0], (t[0], t[-1]), x0, t_eval=t, method="DOP853",
                        rtol=1e-11, atol=1e-12 * self.scale)
        assert sol.success, sol.message
        return sol.y.T


def damped_osc():  # x'' + 0.4 x' + 4 x = 0
    return Sys("damped-osc2", 2, 1, [{"x2": 1.0}, {"x1": -4.0, "x2": -0.4}],
               lambda g: g.uniform(-2, 2, 2), 15.0, 0.01)


def lin3_complex():  # eigenvalues -0.15 +- 2i, -0.6; affine term
    return Sys("lin3-complex", 3, 1,
               [{"x1": -0.15, "x2": 2.0}, {"x1": -2.0, "x2": -0.15, "1": 1.0}, {"x1": 0.5, "x3": -0.6}],
               lambda g: g.uniform(-2, 2, 3), 12.0, 0.01)


def food_chain():  # prey x1 (logistic), predator x2, top predator x3
    return Sys("lv3-foodchain", 3, 2,
               [{"x1": 1.0, "x1^2": -0.5, "x1 x2": -1.0},
                {"x2": -0.5, "x1 x2": 1.0, "x2 x3": -1.0},
                {"x3": -0.3, "x2 x3": 0.6}],
               lambda g: g.uniform([0.5, 0.3, 0.3], [1.5, 1.0, 1.0]), 40.0, 0.02)


def sir():  # beta = 1.5, gamma = 0.3, N = 1
    def x0(g):
        i0, r0 = g.uniform(0.005, 0.05), g.uniform(0.0, 0.2)
        return np.array([1 - i0 - r0, i0, r0])
    return Sys("sir", 3, 2, [{"x1 x2": -1.5}, {"x1 x2": 1.5, "x2": -0.3}, {"x2": 0.3}], x0, 30.0, 0.05)


def small2():  # 2-species competitive LV, carrying capacity ~1e-3
    k = 1e-3
    return Sys("small2-1e-3", 2, 2, [{"x1": 1.0, "x1^2": -1 / k, "x1 x2": -0.5 / k},
                                    {"x2": 0.8, "x1 x2": -0.3 / k, "x2^2": -1 / k}],
               lambda g: g.uniform(0.05e-3, 1.5e-3, 2), 15.0, 0.01, scale=1e-3)


def large2():  # predator-prey with logistic prey (damped spiral), states ~1e3
    s = 1e3
    return Sys("large2-1e3", 2, 2, [{"x1": 1.0, "x1^2": -0.1 / s, "x1 x2": -0.5 / s},
                                   {"x2": -0.5, "x1 x2": 0.25 / s}],
               lambda g: s * g.uniform([1, 0.5], [4, 3]), 40.0, 0.02, scale=1e3)


def irregular():  # food chain, irregular sample times
    s = food_chain()
    s.name, s.irregular = "lv3-foodchain-irreg", True
    return s


def irregular_lin():
    s = damped_osc()
    s.name, s.irregular = "damped-osc2-irreg", True
    return s


def short_single():  # food chain, ONE short run (t in [0, 8], 200 samples)
    s = food_chain()
    s.name, s.n_runs, s.t_end, s.dt = "lv3-foodchain-1short", 1, 8.0, 0.04
    return s


SYSTEMS = {f().name: f for f in [damped_osc, lin3_complex, food_chain, sir, small2, large2, irregular,
                                  irregular_lin, short_single]}


# ------------------------------------------------------------------ fitters
def ours_model(s):
    return LinearODE() if s.degree == 1 else LotkaVolterra()


def pysindy_model(s):
    import pysindy as ps
    return ps.SINDy(feature_library=ps.PolynomialLibrary(degree=s.degree), optimizer=ps.STLSQ(threshold=0.05),
                    differentiation_method=ps.SmoothedFiniteDifference())


def pysindy_coef(model, s):
    names = model.get_feature_names()
    # pysindy: '1', 'x0', 'x0^2', 'x0 x1' -> ours: '1', 'x1', 'x1^2', 'x1 x2'
    import re
    mapped = [re.sub(r"x(\d+)", lambda m: f"x{int(m.group(1)) + 1}", n) for n in names]
    C = model.coefficients()
    out = np.zeros_like(s.coef)
    for j, n in enumerate(mapped):
        out[:, s.names.index(n)] = C[:, j]
    return out


def metrics(s, pred_fn, sim_fn, coef, test_t, test_x):
    idx = np.linspace(0, len(test_x) - 1, 500).astype(int)
    ft = s.f(test_x[idx])
    pred = pred_fn(test_x[idx])
    err = float(np.linalg.norm(pred - ft) / np.linalg.norm(ft))
    note = ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sim = np.asarray(sim_fn(test_x[0], test_t))
        if sim.shape != test_x.shape or not np.all(np.isfinite(sim)):
            note = f"sim shape {sim.shape} / nonfinite"
            r2 = float("-inf")
        else:
            r2 = float(r2_score(test_x, sim, multioutput="variance_weighted"))
    except BlowUpError:
        r2, note = float("-inf"), "BlowUpError"
    except Exception as e:  # noqa
        r2, note = float("-inf"), f"{type(e).__name__}: {e}"[:120]
    true = s.coef != 0
    found = coef != 0
    tp = int(np.sum(true & found))
    prec = tp / max(int(found.sum()), 1)
    rec = tp / int(true.sum())
    return dict(err=err, r2=r2, prec=prec, rec=rec, nnz=int(found.sum()), note=note)


def main(name, seed=0):
    s = SYSTEMS[name]()
    rows = []
    for noise in (0.0, 0.01, 0.05):
        rng = np.random.default_rng(seed)
        runs, times = [], []
        for _ in range(s.n_runs):
            t = s.times(rng)
            x = s.run(s.x0(rng), t)
            rms = np.sqrt(np.mean(x**2, axis=0))
            runs.append(x + noise * rms * rng.standard_normal(x.shape))
            times.append(t)
        # held-out: a full-length run from a new initial condition (uniform times)
        test_t = np.linspace(0, max(s.t_end, 15.0) if s.n_runs > 1 else 20.0,
                             int(round((max(s.t_end, 15.0) if s.n_runs > 1 else 20.0) / s.dt)) + 1)
        test_x = s.run(s.x0(rng), test_t)
        tt = times if s.irregular else s.dt
        tp = times if s.irregular else s.dt
        row = dict(system=name, noise=noise)
        # ours
        m = ours_model(s)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                m.fit(runs if s.n_runs > 1 else runs[0], tt if s.n_runs > 1 or s.irregular is False else times[0])
                fit_ok = True
            except Exception as e:
                fit_ok, row["ours_fit_error"] = False, f"{type(e).__name__}: {e}"
            row["ours_time"] = time.perf_counter() - t0
        row["ours_warnings"] = len(w)
        if fit_ok:
            # ours fitted on explicit times needs t for simulate; simulate takes times anyway
            row.update({f"ours_{k}": v for k, v in metrics(
                s, m.predict, lambda x0, t: m.simulate(x0, t), m.coef_, test_t, test_x).items()})
            row["ours_window"] = getattr(m.formulation_, "window", None)
        # pysindy
        p = pysindy_model(s)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                p.fit(runs if s.n_runs > 1 else runs[0], t=tp if s.n_runs > 1 or not s.irregular else times[0])
                fit_ok = True
            except Exception as e:
                fit_ok, row["ps_fit_error"] = False, f"{type(e).__name__}: {e}"
            row["ps_time"] = time.perf_counter() - t0
        row["ps_warnings"] = len(w)
        row["ps_warning_kinds"] = sorted({str(x.category.__name__) + ": " + str(x.message)[:60] for x in w})[:3]
        if fit_ok:
            row.update({f"ps_{k}": v for k, v in metrics(
                s, p.predict, lambda x0, t: p.simulate(x0, t, integrator="solve_ivp",
                                                      integrator_kws={"method": "LSODA", "rtol": 1e-8,
                                                                      "atol": 1e-10 * s.scale}),
                pysindy_coef(p, s), test_t, test_x).items()})
        if "ours_err" in row and "ps_err" in row:
            row["ratio"] = row["ours_err"] / row["ps_err"]
        rows.append(row)
        print(f"{name:22s} {noise:4.2f} ours err {row.get('ours_err', np.nan):.3e} R2 {row.get('ours_r2', np.nan):8.4f} "
              f"P/R {row.get('ours_prec', np.nan):.2f}/{row.get('ours_rec', np.nan):.2f} win {row.get('ours_window')} "
              f"w{row['ours_warnings']} {row.get('ours_note', '')}{row.get('ours_fit_error', '')} | "
              f"PS err {row.get('ps_err', np.nan):.3e} R2 {row.get('ps_r2', np.nan):8.4f} "
              f"P/R {row.get('ps_prec', np.nan):.2f}/{row.get('ps_rec', np.nan):.2f} w{row['ps_warnings']} "
              f"{row.get('ps_note', '')}{row.get('ps_fit_error', '')} | ratio {row.get('ratio', np.nan):.3f}",
              flush=True)
    return rows


if __name__ == "__main__":
    import argparse

    from particles.core.io import atomic_write_text

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("system", choices=["all", *SYSTEMS])
    parser.add_argument("seed", nargs="?", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fitting-probe"))
    args = parser.parse_args()
    for name in (SYSTEMS if args.system == "all" else [args.system]):
        text = json.dumps(main(name, args.seed), indent=1, default=str)
        atomic_write_text(args.out / f"results_{name}_s{args.seed}.json", text)
