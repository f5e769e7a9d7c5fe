"""Speed of the force-law fit (docs/force_fit.md, "Speed").

1. Term forces: one snapshot's four pair terms (``particles.unit_term_forces``)
   against ``particles.forces`` (the whole law, serial kernel) and against
   the NumPy reference of the terms, per snapshot, in the same run.
2. The whole fit, range search and 200 bootstrap replicates included, on
   200 snapshots of a p = 59 particle run (1416 training pairs, 5 % noise on
   the forces): idle and beside a busy neighbour (a second process spinning
   on one core), and against what a user would write by hand: SciPy's
   ``least_squares`` over strengths and log-ranges together, with the NumPy
   reference forces (timed on fewer snapshots, it is slow; both tools are
   timed on the same snapshots for the ratio).

    python benchmarks/bench_force_fit.py            # writes docs/figures/force_fit/bench_force_fit.json
    python benchmarks/bench_force_fit.py --quick    # CI smoke run (p = 23)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best_time, busy_neighbour, write_json  # noqa: E402

import particles as P  # noqa: E402
from fitting import ForceLawFit  # noqa: E402
from particles import law_terms  # noqa: E402
from particles.law_terms import unit_term_forces  # noqa: E402
from particles.kernels.pair_sums import pair_sums_reference  # noqa: E402
from particles.kernels.terms import pair_term_reference  # noqa: E402

TRUE = P.ForceParams(k_a=2.0, sig_a=2.5, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)
START = P.ForceParams(lam=1.0)


def data(p: int, snapshots: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    train = P.modular_addition(p).split(0.8, seed=rng)[0]
    run = P.simulate(rng.normal(size=(p, 2)), train, TRUE, steps=10 * snapshots, dt=0.002, record_every=10)
    X = run.embeddings[:snapshots]
    G = np.stack([P.forces(x, train, TRUE) for x in X])
    G = G + 0.05 * np.sqrt(np.mean(G ** 2)) * rng.normal(size=G.shape)
    return X, G, train


def numpy_terms(law, X, train):
    """The five unit term forces of every snapshot by the NumPy reference (T, 5, p, d)."""
    prm = law.kernel_params()._replace(k_a=1.0, k_r=1.0, lam=1.0, wd=0.0)
    out = np.empty((len(X), 5) + X.shape[1:])
    for t, x in enumerate(X):
        S = pair_sums_reference(x, train.pairs, prm.eps)[0]
        pair = pair_term_reference(S, train.labels, prm)  # (4, d, n)
        for k in range(4):
            f = np.zeros_like(x)
            np.add.at(f, train.pairs[:, 0], pair[k].T)
            np.add.at(f, train.pairs[:, 1], pair[k].T)
            out[t, k] = f
        out[t, 4] = -x
    return out


def by_hand(X, G, train):
    """What a user would write: least_squares over (c, log theta), NumPy forces."""
    names = ("sig_a", "sig_r", "sig_t", "eps")

    def residual(z):
        law = START.replace(**dict(zip(names, np.exp(z[5:]))))
        return (np.einsum("k,tkpd->tpd", z[:5], numpy_terms(law, X, train)) - G).ravel()

    z0 = np.concatenate([np.ones(5), np.log([START.sig_a, START.sig_r, START.sig_t, START.eps])])
    lo = np.concatenate([np.zeros(5), z0[5:] - np.log(10)])
    hi = np.concatenate([np.full(5, np.inf), z0[5:] + np.log(10)])
    return optimize.least_squares(residual, z0, bounds=(lo, hi), max_nfev=200)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--terms-only", action="store_true", help="time the term forces only (writes nothing)")
    ap.add_argument("--out", type=Path, default=Path("docs/figures/force_fit/bench_force_fit.json"))
    ap.add_argument("--dims", action="store_true",
                    help="the dimension axis only: term forces at d = 2-256 and whole fits at d = 64 and 128, "
                         "synthetic and recorded runs (benchmarks/dimension_axis.py)")
    ap.add_argument("--run", action="append", default=[], metavar="RUN.npz",
                    help="with --dims: also fit this recorded run (gradients and training set in the file)")
    ap.add_argument("--direct-run", action="append", default=[], metavar="RUN.npz",
                    help="with --dims: as --run, and timed on the direct path too (minutes at d = 64)")
    args = ap.parse_args(argv)
    if args.dims:
        return dimension_axis_main(args)
    p, T, T_hand, repeats = (23, 40, 5, 1) if args.quick else (59, 200, 10, 3)
    X, G, train = data(p, T)
    out = {"p": p, "pairs": len(train), "snapshots": T, "command": "python benchmarks/bench_force_fit.py"
           + (" --quick" if args.quick else "")}

    # 1. term forces per snapshot
    x = X[T // 2]
    P.forces(x, train, TRUE, parallel=False)
    unit_term_forces(START, X[:2], train)
    t_forces = best_time(lambda: P.forces(x, train, TRUE, parallel=False), 3)
    t_terms = best_time(lambda: unit_term_forces(START, X[:20], train), 3) / 20
    t_numpy = best_time(lambda: numpy_terms(START, X[:1], train), 2)
    default_work = law_terms.PARALLEL_WORK
    law_terms.PARALLEL_WORK = 10 ** 30  # one thread
    try:
        t_serial = best_time(lambda: unit_term_forces(START, X[:20], train), 3) / 20
    finally:
        law_terms.PARALLEL_WORK = default_work
    out["term_forces"] = {"forces_serial_s": t_forces, "four_terms_per_snapshot_s": t_terms,
                          "per_term_over_forces": t_terms / 4 / t_forces,
                          "four_terms_one_thread_s": t_serial, "per_term_one_thread_over_forces": t_serial / 4 / t_forces,
                          "numpy_reference_per_snapshot_s": t_numpy, "numpy_over_ours": t_numpy / t_terms}
    print(f"term forces, p = {p} ({len(train)} pairs): particles.forces {t_forces * 1e3:.2f} ms (one thread); four "
          f"terms {t_terms * 1e3:.2f} ms per snapshot (threads over snapshots; {t_terms / 4 / t_forces:.2f}x forces "
          f"per term), {t_serial * 1e3:.2f} ms on one thread ({t_serial / 4 / t_forces:.2f}x per term); NumPy "
          f"reference {t_numpy * 1e3:.0f} ms ({t_numpy / t_terms:.0f}x ours)")
    if args.terms_only:
        return 0

    # 2. the whole fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = {}
        for busy in (False, True):
            times = []
            with busy_neighbour(busy):
                for _ in range(repeats):
                    start = time.perf_counter()
                    fit = ForceLawFit(START).fit(X, G, train=train)
                    times.append(time.perf_counter() - start)
            key = "busy neighbour" if busy else "idle"
            rows[key] = {"median_s": float(np.median(times)), "times_s": times, "r2": fit.r2_,
                         "ranges": fit.ranges_, "evaluations": fit.fit_info_["evaluations"]}
            print(f"fit of {T} snapshots ({key}): median {np.median(times):.2f} s over {repeats} "
                  f"({T / np.median(times):.0f} snapshots/s), R^2 {fit.r2_:.4f}")
        rows["busy_over_idle"] = rows["busy neighbour"]["median_s"] / rows["idle"]["median_s"]
        print(f"busy / idle = {rows['busy_over_idle']:.2f}")
        out["fit"] = rows

        # 3. by hand on fewer snapshots, ours on the same ones
        Xs, Gs = X[:: T // T_hand][:T_hand], G[:: T // T_hand][:T_hand]
        start = time.perf_counter()
        hand = by_hand(Xs, Gs, train)
        t_hand = time.perf_counter() - start
        start = time.perf_counter()
        ours = ForceLawFit(START).fit(Xs, Gs, train=train)
        t_ours = time.perf_counter() - start
        hand_r2 = 1 - float(hand.fun @ hand.fun) / float(np.sum((Gs - Gs.reshape(-1, 2).mean(0)) ** 2))
        out["by_hand"] = {"snapshots": T_hand, "scipy_numpy_s": t_hand, "ours_s": t_ours, "ratio": t_hand / t_ours,
                          "scipy_r2": hand_r2, "ours_r2": ours.r2_, "scipy_evaluations": int(hand.nfev),
                          "scipy_ranges": dict(zip(("sig_a", "sig_r", "sig_t", "eps"), np.exp(hand.x[5:]).tolist())),
                          "ours_ranges": ours.ranges_, "note": "ours includes 200 bootstrap replicates"}
        print(f"by hand (SciPy least_squares + NumPy forces) on {T_hand} snapshots: {t_hand:.1f} s, R^2 {hand_r2:.4f}; "
              f"ours {t_ours:.2f} s, R^2 {ours.r2_:.4f}: {t_hand / t_ours:.0f}x")
    if not args.quick:
        write_json(args.out, out)
        print(f"wrote {args.out}")
    return 0


def dimension_axis_main(args) -> int:
    import dimension_axis as axis

    quick = args.quick
    rows = axis.force_rows(sizes=(41,) if quick else axis.SIZES, dims=(2, 64) if quick else axis.DIMS,
                           repeats=1 if quick else 3)
    axis.print_force_rows(rows)
    cases = [(23, 64, 20)] if quick else [(41, 64, 160), (59, 128, 200)]
    fits = axis.fit_rows(cases, direct=not quick)
    fits += [axis.run_fit_row(path, direct=True) for path in args.direct_run]
    fits += [axis.run_fit_row(path, direct=False) for path in args.run]
    axis.print_fit_rows(fits)
    if not quick:
        out = args.out.with_name("bench_force_fit_dims.json")
        write_json(out, {"forces": rows, "fits": fits, "load_average": __import__("os").getloadavg()[0],
                         "command": "python benchmarks/bench_force_fit.py --dims"
                         + "".join(f" --direct-run {r}" for r in args.direct_run)
                         + "".join(f" --run {r}" for r in args.run)})
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
