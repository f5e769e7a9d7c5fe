"""ODE fitting on the polynomial chaotic systems of the ``dysts`` library,
ours against PySINDy, in one run.

Each system is a flow of ``dysts.flows`` with 3 or 4 states whose right-hand
side is a polynomial of degree <= 3. Its true coefficients are read off
dysts' own ``rhs``: least squares of ``rhs`` on 400 random states over our
polynomial library of the lowest exact degree (relative residual < 1e-10,
else the system is not polynomial and is skipped), coefficients below 1e-9
of the largest set to zero. The data: ``make_trajectory(2000,
pts_per_period=100, resample=True)`` from dysts' initial condition; the
first 80 % are fitted, with Gaussian measurement noise of standard deviation
``level`` times each column's RMS (seeded), the last 20 % (clean) are the
test states.

Measured on each (system, noise, seed), for ours (``ODEModel(library=
degree)``, the defaults) and PySINDy 2.1 as a user would call it:

* ``fd``: ``SINDy(PolynomialLibrary(degree))`` (STLSQ 0.1, finite differences),
  PySINDy's default;
* ``sfd``: the same with ``SmoothedFiniteDifference()``;
* ``weak``: ``WeakPDELibrary(PolynomialLibrary(degree), K=100)`` on the
  sample times (STLSQ 0.1).

derivative error ||f_fit(x) - f(x)|| / ||f(x)|| over the clean test states;
coefficient error ||xi - xi*|| / ||xi*||; support F1 against the true terms;
short-horizon simulation R^2 (one period, 100 samples, from the first test
state; -10 for a blow-up); fit time (one thread, best of ``--repeats``).

    pip install '.[bench]'
    python benchmarks/bench_fitting.py --dysts [--systems Lorenz Rossler ...] [--noise 0 0.01 0.05] [--seeds 3]

Trajectories are cached in ``benchmarks/.cache/`` (dysts integrates each in
about 10 s; the cache is a pure function of the system's name).
"""

from __future__ import annotations

import json
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import r2_score

from effective_theory.montecarlo import wilson_interval
from fitting import ODEModel, PolynomialLibrary
from fitting.ode import BlowUpError

CACHE = Path(__file__).resolve().parent / ".cache"
SAMPLES, FIT_SHARE, PTS_PER_PERIOD = 2000, 0.8, 100
NOISE = (0.0, 0.01, 0.05)


# ----------------------------------------------------------------- systems
class DystsSystem:
    """A dysts flow with its true polynomial coefficients over our library."""

    def __init__(self, name: str, model, degree: int, coef: np.ndarray):
        self.name, self.model, self.degree, self.coef = name, model, degree, coef
        self.K = coef.shape[0]
        self.lib = PolynomialLibrary(degree)

    def f(self, x: np.ndarray) -> np.ndarray:
        return self.lib.transform(np.atleast_2d(x)) @ self.coef.T

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """(t, x) of the trajectory (cached)."""
        CACHE.mkdir(exist_ok=True)
        path = CACHE / f"dysts_{self.name}_{SAMPLES}_{PTS_PER_PERIOD}.npz"
        if path.exists():
            with np.load(path) as z:
                return z["t"], z["x"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, x = self.model.make_trajectory(SAMPLES, pts_per_period=PTS_PER_PERIOD, resample=True,
                                              return_times=True)
        if x is None or not np.all(np.isfinite(x)):
            raise RuntimeError(f"dysts could not integrate {self.name}")
        np.savez(path, t=t, x=x)
        return t, x

    def check_rhs(self, x: np.ndarray) -> float:
        """Largest relative gap between our coefficients and dysts' rhs on states x."""
        ref = np.array([self.model.rhs(xi, 0.0) for xi in x])
        return float(np.max(np.abs(self.f(x) - ref)) / max(np.max(np.abs(ref)), 1e-300))


def polynomial_systems(names: list[str] | None = None, max_degree: int = 3) -> list[DystsSystem]:
    """The dysts flows with 3-4 states and a polynomial rhs of degree <= max_degree."""
    import dysts.flows as flows
    from dysts.systems import get_attractor_list

    out = []
    for name in (names or get_attractor_list()):
        try:
            model = getattr(flows, name)()
        except Exception:  # noqa: BLE001 - a flow dysts cannot build here
            continue
        ic = np.asarray(model.ic, dtype=float)
        if ic.ndim != 1 or len(ic) not in (3, 4) or getattr(model, "delay", False):
            continue
        K = len(ic)
        rng = np.random.default_rng(0)
        X = ic + rng.normal(size=(400, K)) * np.maximum(np.abs(ic), 1.0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Y = np.array([model.rhs(x, 0.0) for x in X])
        except Exception:  # noqa: BLE001
            continue
        for degree in range(1, max_degree + 1):
            T = PolynomialLibrary(degree).transform(X)
            c = np.linalg.lstsq(T, Y, rcond=None)[0].T
            if np.linalg.norm(T @ c.T - Y) <= 1e-10 * np.linalg.norm(Y):
                c[np.abs(c) < 1e-9 * np.abs(c).max()] = 0.0
                if degree >= 2:
                    out.append(DystsSystem(name, model, degree, c))
                break
    return out


# ----------------------------------------------------------------- fitters
def _powers_of(name: str, K: int) -> tuple[int, ...]:
    """Exponents of a PySINDy feature name such as 'x0^2 x1'."""
    e = [0] * K
    if name.strip() == "1":
        return tuple(e)
    for factor in name.split():
        m = re.fullmatch(r"x(\d+)(?:\^(\d+))?", factor)
        if m is None:
            raise ValueError(f"unexpected PySINDy feature {name!r}")
        e[int(m.group(1))] += int(m.group(2) or 1)
    return tuple(e)


def _our_powers(lib: PolynomialLibrary, K: int) -> list[tuple[int, ...]]:
    out = []
    for p in lib.powers(K):
        e = [0] * K
        for j in p:
            e[j] += 1
        out.append(tuple(e))
    return out


class PySINDyFit:
    """PySINDy 2.1 as a user calls it; coefficients mapped onto our library's terms."""

    def __init__(self, kind: str, degree: int, K: int, seed: int = 0):
        self.kind, self.degree, self.K, self.seed = kind, degree, K, seed

    def fit(self, x: np.ndarray, t: np.ndarray) -> "PySINDyFit":
        import pysindy as ps

        # WeakPDELibrary places its K test functions at random with numpy's global generator, when it is
        # built (and again on set_params): seeded by the case's seed so a run can be repeated (its error
        # varies from draw to draw; docs/fitting.md)
        state = np.random.get_state()
        np.random.seed(self.seed)
        try:
            lib = ps.PolynomialLibrary(degree=self.degree)
            if self.kind == "fd":
                model = ps.SINDy(feature_library=lib)
            elif self.kind == "sfd":
                model = ps.SINDy(feature_library=lib, differentiation_method=ps.SmoothedFiniteDifference())
            else:
                model = ps.SINDy(feature_library=ps.WeakPDELibrary(function_library=lib, spatiotemporal_grid=t,
                                                                   is_uniform=True, K=100))
            model.fit(x, t=t)
        finally:
            np.random.set_state(state)
        ours = PolynomialLibrary(self.degree)
        index = {p: j for j, p in enumerate(_our_powers(ours, self.K))}
        coef = np.zeros((self.K, len(index)))
        for j, name in enumerate(model.get_feature_names()):
            coef[:, index[_powers_of(name, self.K)]] += model.coefficients()[:, j]
        self.coef_, self.lib = coef, ours
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.lib.transform(x) @ self.coef_.T

    def simulate(self, x0: np.ndarray, t: np.ndarray) -> np.ndarray:
        from scipy.integrate import solve_ivp

        limit = 1e3 * (np.max(np.abs(x0)) + 1.0)

        def blow(_t, y):
            return limit - np.max(np.abs(y))

        blow.terminal = True
        sol = solve_ivp(lambda _t, y: self.predict(y[None])[0], (t[0], t[-1]), x0, t_eval=t, method="LSODA",
                        rtol=1e-8, atol=1e-10, events=blow)
        if sol.y.shape[1] != len(t):
            raise BlowUpError(float(t[sol.y.shape[1]]), limit, sol.y.T.copy())
        return sol.y.T


FITTERS = ("ours", "fd", "sfd", "weak")


def make_fitter(kind: str, system: DystsSystem, seed: int = 0):
    if kind == "ours":
        return ODEModel(library=system.degree)
    return PySINDyFit(kind, system.degree, system.K, seed)


# ----------------------------------------------------------------- metrics
def scores(model, system: DystsSystem, t_test: np.ndarray, x_test: np.ndarray) -> dict:
    f_true = system.f(x_test)
    pred = model.predict(x_test)
    err = float(np.linalg.norm(pred - f_true) / np.linalg.norm(f_true))
    coef = np.asarray(model.coef_)
    coef_err = float(np.linalg.norm(coef - system.coef) / np.linalg.norm(system.coef))
    true, found = system.coef != 0, coef != 0
    tp = int(np.sum(true & found))
    prec, rec = tp / max(int(found.sum()), 1), tp / int(true.sum())
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    h = PTS_PER_PERIOD
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sim = model.simulate(x_test[0], t_test[:h])
        sim = np.asarray(sim)
        r2 = float(r2_score(x_test[:h], sim, multioutput="variance_weighted")) if np.all(np.isfinite(sim)) \
            else -10.0
    except (BlowUpError, ValueError, FloatingPointError):
        r2 = -10.0
    return {"derivative_error": err, "coefficient_error": coef_err, "f1": f1, "precision": prec, "recall": rec,
            "nonzero": int(found.sum()), "sim_r2": max(r2, -10.0)}


def fit_time(make, x, t, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        model = make()
        start = time.perf_counter()
        model.fit(x, t)
        best = min(best, time.perf_counter() - start)
    return best


def run_case(system: DystsSystem, noise: float, seed: int, fitters=FITTERS, repeats: int = 1) -> dict:
    t, x = system.data()
    n = int(FIT_SHARE * len(t))
    rng = np.random.default_rng(seed)
    rms = np.sqrt(np.mean(x[:n] ** 2, axis=0))
    x_fit = x[:n] + noise * rms * rng.standard_normal((n, system.K))
    row = {"system": system.name, "degree": system.degree, "K": system.K, "true_terms": int(np.sum(system.coef != 0)),
           "library_terms": int(system.coef.size), "noise": noise, "seed": seed}
    for kind in fitters:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                model = make_fitter(kind, system, seed).fit(x_fit, t[:n])
                result = scores(model, system, t[n:], x[n:])
                if repeats > 1:
                    result["fit_seconds"] = fit_time(lambda: make_fitter(kind, system, seed), x_fit, t[:n], repeats)
            except Exception as exc:  # noqa: BLE001 - a comparator that fails is a result
                result = {"error": f"{type(exc).__name__}: {exc}"}
            if kind == "ours":
                result["warnings"] = sorted({type(w.message).__name__ for w in caught})
                result["status"] = getattr(model, "fit_info_", {}).get("weighting", {}).get("status") \
                    if "error" not in result else None
            if repeats <= 1 and "error" not in result:
                result["fit_seconds"] = fit_time(lambda: make_fitter(kind, system, seed), x_fit, t[:n], 1)
        row[kind] = result
    return row


def summarise(rows: list[dict]) -> str:
    lines = []
    for noise in sorted({r["noise"] for r in rows}):
        sub = [r for r in rows if r["noise"] == noise and "error" not in r["ours"]
               and any("error" not in r[k] for k in ("fd", "weak"))]  # a case both comparators failed is left out
        if not sub:
            continue
        ours = np.array([r["ours"]["derivative_error"] for r in sub])
        best = np.array([min(r[k]["derivative_error"] for k in ("fd", "weak") if "error" not in r[k]) for r in sub])
        ratio = ours / best
        f1 = np.array([r["ours"]["f1"] for r in sub])
        f1_fd = np.array([r["fd"].get("f1", 0.0) for r in sub])
        t_ours = np.array([r["ours"]["fit_seconds"] for r in sub])
        t_fd = np.array([r["fd"].get("fit_seconds", np.nan) for r in sub])
        lines.append(f"noise {noise:.0%}: {len(sub)} cases; derivative error ours median {np.median(ours):.2e} "
                     f"(<= 1e-8 in {int(np.sum(ours <= 1e-8))}); ratio to the better of PySINDy fd/weak: median "
                     f"{np.median(ratio):.3g}, <= 1 in {int(np.sum(ratio <= 1))} of {len(sub)}; support F1 ours "
                     f"{f1.mean():.3f} (PySINDy fd {f1_fd.mean():.3f}); fit time median ours {np.median(t_ours) * 1e3:.1f} ms "
                     f"vs PySINDy fd {np.nanmedian(t_fd) * 1e3:.1f} ms (ratio {np.nanmedian(t_ours / t_fd):.2f})")
    return "\n".join(lines)


def wilson(k: int, n: int) -> tuple[float, float]:
    """95 % Wilson interval of a rate k / n (effective_theory's), nan for n = 0."""
    if n == 0:
        return (float("nan"), float("nan"))
    lo, hi = wilson_interval(np.array(k), n)
    return float(lo), float(hi)


def table(rows: list[dict], systems: list[str] | None = None) -> str:
    """The Markdown table of docs/fitting.md: per noise level, over systems
    (each system's median over seeds) and over all cases."""
    out = ["| noise | systems | cases | ours <= 1e-8 (cases) | ours <= better of PySINDy fd/weak (systems) | "
           "median ratio to it | support F1 ours / fd / sfd / weak | median fit time ours / fd (ratio) |",
           "|---|---|---|---|---|---|---|---|"]
    for noise in sorted({r["noise"] for r in rows}):
        sub = [r for r in rows if r["noise"] == noise and "error" not in r["ours"]
               and (systems is None or r["system"] in systems) and any("error" not in r[k] for k in ("fd", "weak"))]
        if not sub:
            continue
        names = sorted({r["system"] for r in sub})

        def best(r):
            return min([r[k]["derivative_error"] for k in ("fd", "weak") if "error" not in r[k]] or [np.inf])

        per_system = [np.median([r["ours"]["derivative_error"] / best(r) for r in sub if r["system"] == n])
                      for n in names]
        wins = sum(v <= 1 for v in per_system)
        exact = sum(r["ours"]["derivative_error"] <= 1e-8 for r in sub)
        lo, hi = wilson(exact, len(sub))
        f1 = [np.mean([r[k].get("f1", 0.0) for r in sub]) for k in ("ours", "fd", "sfd", "weak")]
        t_ours = np.median([r["ours"]["fit_seconds"] for r in sub])
        t_fd = np.median([r["fd"]["fit_seconds"] for r in sub if "fit_seconds" in r["fd"]])
        ratio = np.median([r["ours"]["fit_seconds"] / r["fd"]["fit_seconds"] for r in sub if "fit_seconds" in r["fd"]])
        wl, wh = wilson(wins, len(names))
        out.append(f"| {noise:.0%} | {len(names)} | {len(sub)} | {exact} ({exact / len(sub):.0%}, 95 % "
                   f"[{lo:.0%}, {hi:.0%}]) | {wins} of {len(names)} ([{wl:.0%}, {wh:.0%}]) | "
                   f"{np.median(per_system):.3g} | {' / '.join(f'{v:.3f}' for v in f1)} | "
                   f"{t_ours * 1e3:.1f} / {t_fd * 1e3:.1f} ms ({ratio:.2f}) |")
    return "\n".join(out)


def plot(rows: list[dict], path: str) -> None:
    """Derivative error (ours against the better of PySINDy fd / weak),
    support F1 and fit time, one mark per case."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from particles.core.figures import save_figure

    fig = Figure(figsize=(13, 4.3), layout="constrained")
    axes = fig.subplots(1, 3)
    colors = {0.0: "tab:blue", 0.01: "tab:orange", 0.05: "tab:red"}
    for noise, c in colors.items():
        sub = [r for r in rows if r["noise"] == noise and "error" not in r["ours"]]
        if not sub:
            continue
        best = [min([r[k]["derivative_error"] for k in ("fd", "weak") if "error" not in r[k]] or [np.nan])
                for r in sub]
        ours = [r["ours"]["derivative_error"] for r in sub]
        axes[0].scatter(np.maximum(best, 1e-16), np.maximum(ours, 1e-16), s=12, color=c, alpha=0.7,
                        label=f"noise {noise:.0%}")
        jitter = np.random.default_rng(0).uniform(-0.01, 0.01, (2, len(sub)))
        axes[1].scatter(np.array([r["fd"].get("f1", 0.0) for r in sub]) + jitter[0],
                        np.array([r["ours"]["f1"] for r in sub]) + jitter[1], s=12, color=c, alpha=0.7,
                        label=f"noise {noise:.0%}")
        axes[2].scatter([r["fd"].get("fit_seconds", np.nan) * 1e3 for r in sub],
                        [r["ours"]["fit_seconds"] * 1e3 for r in sub], s=12, color=c, alpha=0.7,
                        label=f"noise {noise:.0%}")
    axes[0].plot([1e-16, 10], [1e-16, 10], "k-", lw=0.8, label="equal")
    axes[0].axhline(1e-8, color="0.5", ls=":", lw=0.8, label="1e-8 (clean-data target)")
    axes[0].set(xscale="log", yscale="log", xlabel="better of PySINDy fd / weak: derivative error",
                ylabel="ours (defaults): derivative error", title="derivative error on the clean test states")
    axes[1].plot([0, 1], [0, 1], "k-", lw=0.8, label="equal")
    axes[1].set(xlabel="PySINDy fd: support F1 (jittered)", ylabel="ours: support F1 (jittered)",
                title="which terms are found")
    lim = [1, 3000]
    axes[2].plot(lim, lim, "k-", lw=0.8, label="equal")
    axes[2].set(xscale="log", yscale="log", xlabel="PySINDy SINDy() fit time (ms)", ylabel="ours: fit time (ms)",
                title="fit time, one thread each")
    for ax in axes:
        ax.legend(fontsize="x-small", loc="upper left")
    save_figure(fig, path, dpi=110)


def print_row(r: dict) -> None:
    def cell(kind):
        v = r[kind]
        return "failed" if "error" in v else f"{v['derivative_error']:.1e}/{v['f1']:.2f}"

    o = r["ours"]
    extra = "" if "error" in o else f" sim {o['sim_r2']:.3f} nz {o['nonzero']}/{r['true_terms']} {o.get('status')} " \
                                    f"{','.join(o.get('warnings', []))} {o['fit_seconds'] * 1e3:.0f}ms"
    print(f"{r['system']:20s} {r['noise']:5.2f} {r['seed']:4d} | " + " ".join(f"{cell(k):>16s}" for k in FITTERS)
          + extra, flush=True)


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dysts", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--systems", nargs="*", default=None, help="dysts names (default: every polynomial one)")
    parser.add_argument("--every", type=int, default=1, help="take every N-th polynomial system (default 1)")
    parser.add_argument("--offset", type=int, default=0, help="start at this polynomial system (with --every)")
    parser.add_argument("--noise", type=float, nargs="*", default=list(NOISE))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="fit-time repeats (best of)")
    parser.add_argument("--quick", action="store_true", help="two systems at 1 %% noise (CI smoke run)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None, metavar="JSON",
                        help="only print the table and draw the figure of a JSON written by --json (next to it)")
    args = parser.parse_args(argv)
    if args.plot:
        rows = json.loads(Path(args.plot).read_text())
        print(table(rows))
        plot(rows, str(Path(args.plot).with_suffix(".png")))
        return
    try:
        import dysts  # noqa: F401
        import pysindy  # noqa: F401
    except ImportError:
        sys.exit("the dysts benchmark needs dysts and PySINDy: pip install '.[bench]'")
    from threadpoolctl import threadpool_limits

    systems = polynomial_systems(["Lorenz", "Rossler"] if args.quick else args.systems)
    systems = systems[args.offset::args.every]
    noises = [0.01] if args.quick else args.noise
    print(f"{len(systems)} systems: {', '.join(s.name for s in systems)}")
    print(f"{'system':20s} {'noise':>5s} {'seed':>4s} | " + " ".join(f"{k + ' err/F1':>16s}" for k in FITTERS))
    rows = []
    if args.json and Path(args.json).exists():  # a checkpoint of an interrupted run: keep its cases
        rows = json.loads(Path(args.json).read_text())
        print(f"resuming: {len(rows)} cases from {args.json}")
    done = {(r["system"], r["noise"], r["seed"]) for r in rows}
    with threadpool_limits(1):
        for system in systems:
            t, x = system.data()
            gap = system.check_rhs(x[:: 50])
            if gap > 1e-9:
                print(f"{system.name}: coefficients differ from dysts' rhs by {gap:.1e}; skipped")
                continue
            for noise in noises:
                for s in range(args.seeds):
                    if (system.name, noise, args.first_seed + s) in done:
                        continue
                    row = run_case(system, noise, args.first_seed + s, repeats=args.repeats)
                    rows.append(row)
                    print_row(row)
            if args.json:  # checkpoint after every system
                Path(args.json).write_text(json.dumps(rows, indent=1))
    print(summarise(rows))
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
