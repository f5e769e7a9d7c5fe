"""Time the effective-theory computations.

1. One gradient of l_eff for addition with p = 113 on the full dataset: the
   compiled kernel through the precomputed Laplacian L = A^T A against the
   reference formulation A^T (A E) with the sparse A (both float64, d = 2).
2. The critical-fraction curve for p = 10: all 55 sizes x 10 000 random
   training sets (exact rank), wall time on this machine's cores.

    python benchmarks/bench_effective.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import effective_theory as et
from timing import best_time
from particles import addition
from particles.effective import EffectiveLoss, loss_and_grad, effective_loss_reference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and samples (CI smoke run)")
    args = parser.parse_args()
    p = 113
    data = addition(p)
    start = time.perf_counter()
    loss = EffectiveLoss.from_pairs(data)
    setup = time.perf_counter() - start
    E = np.random.default_rng(0).standard_normal((p, 2))
    grad = np.empty_like(E)
    m = float(loss.n_constraints)
    loss_and_grad(E, loss.laplacian, m, True, grad)  # compile or load
    t_kernel = best_time(lambda: loss_and_grad(E, loss.laplacian, m, True, grad), 2 if args.quick else 5)
    A_float = loss.A.astype(np.float64)
    t_ref = best_time(lambda: effective_loss_reference(E, A_float), 2 if args.quick else 5)
    print(f"numba {numba.__version__}, {numba.get_num_threads()} threads")
    print(f"gradient of l_eff, addition p = {p}, full dataset: |D0| = {len(data)}, |P0| = {loss.n_constraints}, "
          f"d = 2 (A and L built once in {setup:.2f} s)")
    print(f"  compiled, via L (p x p):        {t_kernel * 1e6:10.1f} us")
    print(f"  reference, A^T (A E), sparse A: {t_ref * 1e6:10.1f} us")
    print(f"  ratio reference / compiled:     {t_ref / t_kernel:10.1f}x")
    samples = 1000 if args.quick else 10_000
    et.unique_structure_probability(10, samples=10, seed=0, bootstrap=0)  # compile or load
    start = time.perf_counter()
    result = et.unique_structure_probability(10, samples=samples, seed=0)
    elapsed = time.perf_counter() - start
    print(f"critical-fraction curve, addition p = 10: 55 sizes x {samples} random sets in {elapsed:.2f} s "
          f"({55 * samples / elapsed:,.0f} sets/s, with a 200-resample bootstrap); critical fraction "
          f"{result.critical_fraction:.4f}")


if __name__ == "__main__":
    main()
