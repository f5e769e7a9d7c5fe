"""The dimension axis of bench_particles.py and bench_force_fit.py (``--dims``):
forces, term forces, simulate steps and whole force fits at d = 2 to 256, the
direct pair loop and the Gram path, against what a user would write in NumPy
(the pair-sum Gram matrix and a weight matrix, ten lines), in one run.

Every time is the best of a few rounds (benchmarks/timing.py); ratios are
taken within the run."""

from __future__ import annotations

import time
import warnings

import numpy as np

import particles as P
from fitting import ForceLawFit
from timing import best_time, busy_neighbour

#: the dimensions and token counts of the axis
DIMS = (2, 8, 32, 64, 128, 256)
SIZES = (41, 59, 113)
#: the training fraction of the issue's measurements (0.4 of the unordered pairs: 344 pairs at p = 41)
FRACTION = 0.4
#: clustering and decay only: the law the NumPy version below writes out (alignment off)
CLUSTERING = P.ForceParams(k_a=1.3, sig_a=1.7, k_r=0.8, sig_r=1.2, lam=0.0, wd=0.05)
FULL = P.ForceParams(k_a=1.3, sig_a=1.7, k_r=0.8, sig_r=1.2, lam=0.7, sig_t=0.4, wd=0.05)


def training_set(p: int, seed: int = 0):
    return P.modular_addition(p).split(FRACTION, seed=np.random.default_rng(seed))[0]


def numpy_forces(x: np.ndarray, train, law=CLUSTERING) -> np.ndarray:
    """What a user writes: Gaussian clustering and decay with matrix products."""
    a, b = train.pairs[:, 0], train.pairs[:, 1]
    s = x[a] + x[b]
    gram = s @ s.T
    norms = np.diag(gram)
    r2 = np.maximum(norms[:, None] + norms[None, :] - 2.0 * gram, 0.0)
    same = train.labels[:, None] == train.labels[None, :]
    W = np.where(same, -law.k_a / law.sig_a ** 2 * np.exp(-r2 / (2 * law.sig_a ** 2)),
                 law.k_r / law.sig_r ** 2 * np.exp(-r2 / (2 * law.sig_r ** 2)))
    np.fill_diagonal(W, 0.0)
    f = W.sum(axis=1)[:, None] * s - W @ s
    force = -law.wd * x
    np.add.at(force, a, f)
    np.add.at(force, b, f)
    return force


def force_rows(sizes=SIZES, dims=DIMS, repeats: int = 3) -> list[dict]:
    """Per-call times of ``forces`` (both paths, auto, one thread and the
    public default), ``force_terms`` and the NumPy version."""
    rows = []
    for p in sizes:
        train = training_set(p)
        for d in dims:
            x = np.random.default_rng(d).normal(size=(p, d))
            row = {"p": p, "d": d, "pairs": len(train)}
            err = np.max(np.abs(P.forces(x, train, CLUSTERING, path="gram") - numpy_forces(x, train)))
            row["max_diff_vs_numpy"] = float(err / np.max(np.abs(numpy_forces(x, train))))
            for path in ("direct", "gram", "auto"):
                P.forces(x, train, FULL, path=path, parallel=False)
                row[f"forces_{path}_s"] = best_time(lambda: P.forces(x, train, FULL, path=path, parallel=False),
                                                    repeats, 0.1)
            row["forces_public_s"] = best_time(lambda: P.forces(x, train, FULL), repeats, 0.1)
            row["clustering_auto_s"] = best_time(lambda: P.forces(x, train, CLUSTERING, parallel=False), repeats, 0.1)
            P.forces(x, train, CLUSTERING)  # the call the issue timed: public defaults (the chooser's kernel)
            row["clustering_public_s"] = best_time(lambda: P.forces(x, train, CLUSTERING), repeats, 0.1)
            row["numpy_clustering_s"] = best_time(lambda: numpy_forces(x, train), repeats, 0.1)
            for path in ("direct", "auto"):
                P.force_terms(FULL, x, train, path=path)
                row[f"terms_{path}_s"] = best_time(lambda: P.force_terms(FULL, x, train, path=path), repeats, 0.1)
            rows.append(row)
    return rows


def print_force_rows(rows: list[dict]) -> None:
    print("forces per call (clustering + alignment + decay; one thread unless 'public'), ms; "
          "numpy: the matrix-product version (clustering + decay) against ours on the same law, one thread "
          "(np/ours) and the public defaults (np/pub)")
    print(f"{'p':>4} {'d':>4} {'pairs':>6} {'direct':>8} {'gram':>8} {'auto':>8} {'public':>8} {'terms':>8} "
          f"{'terms/d':>8} {'numpy':>8} {'np/ours':>8} {'np/pub':>8} {'auto/d=2':>9} {'terms/d=2':>9}")
    base = {}
    for r in rows:
        if r["d"] == min(x["d"] for x in rows if x["p"] == r["p"]):
            base[r["p"]] = r
        b = base[r["p"]]
        ms = lambda t: f"{t * 1e3:>8.2f}"  # noqa: E731
        print(f"{r['p']:>4} {r['d']:>4} {r['pairs']:>6} {ms(r['forces_direct_s'])} {ms(r['forces_gram_s'])} "
              f"{ms(r['forces_auto_s'])} {ms(r['forces_public_s'])} {ms(r['terms_auto_s'])} "
              f"{ms(r['terms_direct_s'])} {ms(r['numpy_clustering_s'])} "
              f"{r['numpy_clustering_s'] / r['clustering_auto_s']:>7.1f}x "
              f"{r['numpy_clustering_s'] / r['clustering_public_s']:>7.1f}x "
              f"{r['forces_auto_s'] / b['forces_auto_s']:>8.2f}x {r['terms_auto_s'] / b['terms_auto_s']:>8.2f}x")
    print("  (auto/d=2 and terms/d=2: the time at this d over the time at the smallest d of the same p, "
          "both on path='auto'; terms/d: force_terms on the direct path)")


def step_rows(p: int = 59, dims=DIMS, steps: int = 200, repeats: int = 3) -> list[dict]:
    """Time per Euler step of ``simulate`` at each d (auto path)."""
    train = training_set(p)
    rows = []
    for d in dims:
        x0 = np.random.default_rng(d).normal(size=(p, d))
        P.simulate(x0, train, FULL, steps=5, dt=0.001)
        t = best_time(lambda: P.simulate(x0, train, FULL, steps=steps, dt=0.001, record_every=steps), repeats, 0.2)
        rows.append({"p": p, "d": d, "step_s": t / steps})
    return rows


def print_step_rows(rows: list[dict]) -> None:
    base = rows[0]["step_s"]
    print(f"simulate at p = {rows[0]['p']}: time per Euler step (path='auto')")
    for r in rows:
        print(f"  d = {r['d']:>4}: {r['step_s'] * 1e3:8.3f} ms  ({r['step_s'] / base:.2f}x d = {rows[0]['d']})")


def synthetic_fit_data(p: int, d: int, snapshots: int, seed: int = 1):
    """Snapshots spread over a growing scale and the FULL law's forces with 5 % noise."""
    rng = np.random.default_rng(seed)
    train = training_set(p, seed)
    X = rng.normal(size=(snapshots, p, d)) * np.linspace(1.0, 2.0, snapshots)[:, None, None]
    G = np.stack([P.forces(x, train, FULL) for x in X])
    G = G + 0.05 * np.sqrt(np.mean(G ** 2)) * rng.normal(size=G.shape)
    return X, G, train


def time_fit(X, G=None, *, train=None, path: str = "auto", busy: bool = False, repeats: int = 1) -> dict:
    """A ForceLawFit (range search, 200 bootstrap replicates) timed, median over ``repeats``."""
    times = []
    with warnings.catch_warnings(), busy_neighbour(busy):
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            start = time.perf_counter()
            fit = ForceLawFit("builtin", normalize="rms", n_bootstrap=200, path=path).fit(X, G, train=train)
            times.append(time.perf_counter() - start)
    return {"median_s": float(np.median(times)), "times_s": times, "r2": fit.r2_, "ranges": fit.ranges_,
            "term_evaluations": fit.fit_info_["term_evaluations"],
            "snapshot_evaluations": fit.fit_info_["snapshot_evaluations"], "path": path, "busy_neighbour": busy}


def fit_rows(cases, repeats: int = 1, direct: bool = True) -> list[dict]:
    """Whole fits of synthetic data at (p, d, snapshots): the default path
    idle and busy, and the direct path idle (the ratio in one run)."""
    rows = []
    for p, d, snapshots in cases:
        X, G, train = synthetic_fit_data(p, d, snapshots)
        time_fit(X[:3], G[:3], train=train)  # compiled before timing
        row = {"case": f"synthetic p = {p}, d = {d}, {snapshots} snapshots", "p": p, "d": d,
               "snapshots": snapshots, "pairs": len(train)}
        row["idle"] = time_fit(X, G, train=train, repeats=repeats)
        row["busy"] = time_fit(X, G, train=train, busy=True, repeats=repeats)
        if direct:
            row["direct_idle"] = time_fit(X, G, train=train, path="direct")
        rows.append(row)
    return rows


def run_fit_row(path, repeats: int = 1, direct: bool = True) -> dict:
    """The whole fit of a recorded run (its gradients and training set)."""
    traj = P.Trajectory.load(path)
    time_fit(traj.embeddings[:3], -traj.gradients[:3], train=traj.train)
    row = {"case": f"run {path}", "p": traj.p, "d": traj.d, "snapshots": int(len(traj.gradients)),
           "pairs": len(traj.train), "meta": {k: traj.meta.get(k) for k in ("model", "arch", "seed", "val_acc")}}
    row["idle"] = time_fit(traj, repeats=repeats)
    row["busy"] = time_fit(traj, busy=True, repeats=repeats)
    if direct:
        row["direct_idle"] = time_fit(traj, path="direct")
    return row


def print_fit_rows(rows: list[dict]) -> None:
    print("whole force fits (range search + 200 bootstrap replicates, normalize='rms'), seconds")
    print(f"  {'case':<58} {'idle':>7} {'busy':>7} {'busy/idle':>9} {'direct':>8} {'direct/ours':>11} "
          f"{'snapshot evals':>14} {'R^2':>7}")
    for r in rows:
        direct = r.get("direct_idle")
        d_s = f"{direct['median_s']:>8.1f}" if direct else f"{'-':>8}"
        ratio = f"{direct['median_s'] / r['idle']['median_s']:>10.1f}x" if direct else f"{'-':>11}"
        print(f"  {r['case'][:58]:<58} {r['idle']['median_s']:>7.1f} {r['busy']['median_s']:>7.1f} "
              f"{r['busy']['median_s'] / r['idle']['median_s']:>8.2f}x {d_s} {ratio} "
              f"{r['idle']['snapshot_evaluations']:>14} {r['idle']['r2']:>7.3f}")
