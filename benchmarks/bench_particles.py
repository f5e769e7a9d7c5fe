"""Time the particle force kernels and whole simulations.

Compares, in one run, the compiled parallel force kernel, the compiled serial
kernel and the NumPy reference for N = 17, 59, 113 tokens (training fraction
0.8, d = 2, clustering and alignment both on), then whole 10 000-step N = 17
simulations of every preset. Prints pair-pair interactions per second
(n(n-1)/2 interactions of n training pair sums per force evaluation) and the
ratios.

    python benchmarks/bench_particles.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from _timing import best_time

from particles import ForceParams, forces_reference, modular_addition, preset, warmup
from particles import _kernels
from particles.energy import same_class_partners


def bench_kernels(sizes, repeats: int) -> list[dict]:
    params = ForceParams(lam=1.0)
    prm = params.as_array()
    threads = numba.get_num_threads()
    rows = []
    for p in sizes:
        train = modular_addition(p).split(0.8, seed=0)[0]
        n = len(train)
        x = np.random.default_rng(0).standard_normal((p, 2))
        force = np.empty_like(x)
        pairs, labels = train.pairs, train.labels
        ptr, idx = same_class_partners(labels)
        t_par = best_time(lambda: _kernels.forces_parallel(x, pairs, ptr, idx, prm, force, threads), repeats)
        t_ser = best_time(lambda: _kernels.forces_serial(x, pairs, ptr, idx, prm, force), repeats)
        t_ref = best_time(lambda: forces_reference(x, pairs, labels, params), max(1, repeats // 2), min_time=0.0)
        interactions = n * (n - 1) / 2
        rows.append(dict(p=p, pairs=n, t_par=t_par, t_ser=t_ser, t_ref=t_ref, rate_par=interactions / t_par,
                         rate_ser=interactions / t_ser, rate_ref=interactions / t_ref))
    return rows


def bench_simulations(steps: int, repeats: int) -> list[dict]:
    rows = []
    for name in ("circles", "grids", "clustering-alignment"):
        config = preset(name).replace(steps=steps, record_every=100)
        for parallel in (False, True):
            best = np.inf
            for _ in range(repeats):
                start = time.perf_counter()
                config.run(seed=0, parallel=parallel)
                best = min(best, time.perf_counter() - start)
            rows.append(dict(preset=name, parallel=parallel, steps=steps, seconds=best, pairs=122))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (CI smoke run)")
    args = parser.parse_args()
    sizes = (17, 59) if args.quick else (17, 59, 113)
    repeats = 1 if args.quick else 3
    compile_s = warmup()
    print(f"numba {numba.__version__}, {numba.get_num_threads()} threads; warm-up {compile_s:.2f} s")
    print()
    print("force kernel (one evaluation, clustering + alignment, d = 2)")
    print(f"{'N':>4} {'pairs':>6} {'parallel':>11} {'serial':>11} {'numpy':>11} "
          f"{'par/numpy':>10} {'ser/numpy':>10} {'par/ser':>8} {'interactions/s (par)':>21}")
    for r in bench_kernels(sizes, repeats):
        print(f"{r['p']:>4} {r['pairs']:>6} {r['t_par'] * 1e3:>9.3f}ms {r['t_ser'] * 1e3:>9.3f}ms "
              f"{r['t_ref'] * 1e3:>9.3f}ms {r['t_ref'] / r['t_par']:>9.1f}x {r['t_ref'] / r['t_ser']:>9.1f}x "
              f"{r['t_ser'] / r['t_par']:>7.2f}x {r['rate_par']:>21.3e}")
    print()
    steps = 2000 if args.quick else 10_000
    print(f"whole simulations, N = 17, {steps} steps, snapshot every 100 (after warm-up)")
    for r in bench_simulations(steps, repeats):
        kernel = "parallel" if r["parallel"] else "serial"
        rate = r["steps"] * r["pairs"] * (r["pairs"] - 1) / 2 / r["seconds"]
        print(f"  {r['preset']:<20} {kernel:<9} {r['seconds']:.3f} s  ({r['steps'] / r['seconds']:,.0f} steps/s, "
              f"{rate:.3e} interactions/s)")


if __name__ == "__main__":
    main()
