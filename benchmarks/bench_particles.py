"""Time the particle engine against plain NumPy, with and without a busy
neighbour on the machine.

In one run, for N = 17, 31, 59, 113 (and 211 without --quick) tokens
(training fraction 0.8, d = 2, clustering and alignment both on):

- the public ``particles.forces`` call (kernel chosen by measurement),
- the serial and the parallel compiled kernels called directly,
- NumPy: ``particles.forces_reference`` (dense n x n matrices) where it fits
  in memory, otherwise the same formulas over blocks of 512 rows,

first on the machine as it is, then with a second process spinning on one
core (a busy neighbour). Then the repulsion cut-off against the exact sums
(grids force law, spread states). Then whole runs: 10 000-step N = 17 runs of every
preset, and the cost per step of the ``grids`` force law at N = 113 and 211
(the exact path costs the same at every step, so 10 000 steps cost 10 000
times that). Then custom energies (:class:`particles.PairEnergy`) written
to equal a built-in law against that law (force evaluations at N = 17 and
113, and a whole N = 17 run), as ratios custom / built-in. Last, the cold
compile of everything ``embdyn demo`` needs, in a fresh process with an
empty Numba cache (CPU seconds).

Interactions: a force evaluation with n training pair sums has n(n-1)/2
pair-pair interactions; rates are those per second (exact path: every
interaction is evaluated).

    python benchmarks/bench_particles.py [--quick] [--json results.json] [--figure cost.png]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

from timing import best_time, busy_neighbour, write_json

from particles import (ForceParams, cosine_alignment, energy_and_forces, forces, forces_reference,
                       gaussian_clustering, modular_addition, preset, simulate, warmup)
from particles.energy import pair_system
from particles.kernels.bundle import BUILTIN_KERNELS
from particles.kernels import forces as kernels
from particles.kernels.records import ExactLaw
from particles.threads import dynamic_schedule, kernel_choice
from particles.energy import PARALLEL_MIN_PAIRS
from particles.precompile import WARMUP_PARTS

BENCH_PARAMS = ForceParams(lam=1.0)
DENSE_MAX_PAIRS = 6000  # forces_reference holds a few n x n float64 matrices


def numpy_forces_blocked(x: np.ndarray, pairs: np.ndarray, labels: np.ndarray, params: ForceParams,
                         block: int = 512) -> np.ndarray:
    """The reference formulas (gradient alignment, cosine form) over blocks of
    rows, so that memory stays O(block * n): what a NumPy user would write
    for a large system."""
    s = x[pairs[:, 0]] + x[pairs[:, 1]]
    n = len(s)
    rho = np.sqrt(np.sum(s * s, axis=1) + params.effective_eps ** 2)
    unit = s / rho[:, None]
    f = np.zeros_like(s)
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        same = labels[lo:hi, None] == labels[None, :]
        off = np.ones((hi - lo, n), dtype=bool)
        off[np.arange(hi - lo), np.arange(lo, hi)] = False
        delta = s[lo:hi, None, :] - s[None, :, :]
        r2 = np.sum(delta ** 2, axis=-1)
        att = params.k_a * np.exp(-r2 / (2 * params.sig_a ** 2))
        rep = params.k_r * np.exp(-r2 / (2 * params.sig_r ** 2))
        coef = np.where(same, -att / params.sig_a ** 2, rep / params.sig_r ** 2) * off
        f[lo:hi] = np.einsum("uv,uvk->uk", coef, delta)
        if params.effective_lam > 0:
            c = unit[lo:hi] @ unit.T
            rep_t = np.exp(-(1.0 - c) / params.sig_t ** 2)
            dh = np.where(same, -1.0, rep_t / params.sig_t ** 2) * off
            grad = (dh @ unit - np.sum(dh * c, axis=1)[:, None] * unit[lo:hi]) / rho[lo:hi, None]
            f[lo:hi] -= params.effective_lam * grad
    force = -params.effective_wd * x
    np.add.at(force, pairs[:, 0], f)
    np.add.at(force, pairs[:, 1], f)
    return force


def bench_forces(sizes, repeats: int) -> list[dict]:
    rows = []
    for p in sizes:
        train = modular_addition(p).split(0.8, seed=0)[0]
        n = len(train)
        x = np.random.default_rng(0).standard_normal((p, 2))
        system = pair_system(train)
        prm = BENCH_PARAMS.kernel_params()
        ws = kernels.make_workspace(2, system, numba.get_num_threads())
        out = np.empty_like(x)

        def parallel_kernel():
            with dynamic_schedule():
                kernels.forces_parallel(x, ExactLaw(system, prm, ws), out)

        if n <= DENSE_MAX_PAIRS:
            ref_name, ref = "dense", lambda: forces_reference(x, train.pairs, train.labels, BENCH_PARAMS)
        else:
            ref_name, ref = "blocked", lambda: numpy_forces_blocked(x, train.pairs, train.labels, BENCH_PARAMS)
        check = np.max(np.abs(forces(x, train, BENCH_PARAMS) - ref())) / np.max(np.abs(ref()))
        assert check < 1e-9, f"compiled and NumPy forces differ by {check:.2e} at p = {p}"
        short = repeats if n < 6000 else 1
        for neighbour in (False, True):
            with busy_neighbour(neighbour):
                kernel_choice.reset()  # the chooser starts afresh and settles (about 0.5 s of calls)
                settle = time.perf_counter()
                key = (n, 2, False, id(BUILTIN_KERNELS))
                while time.perf_counter() - settle < 30.0:  # until both kernels are timed, 0.5 s at least
                    forces(x, train, BENCH_PARAMS)
                    timed = all(v is not None for v in kernel_choice.timings(key).values())
                    if time.perf_counter() - settle >= 0.5 and (timed or numba.get_num_threads() < 2):
                        break
                t_pub = best_time(lambda: forces(x, train, BENCH_PARAMS), short)
                t_ser = best_time(lambda: kernels.forces_serial(x, ExactLaw(system, prm, ws), out), short)
                t_par = best_time(parallel_kernel, short)
                t_ref = best_time(ref, 1, min_time=0.0)
            rows.append(dict(p=p, pairs=n, busy_neighbour=neighbour, public=t_pub, serial=t_ser, parallel=t_par,
                             numpy=t_ref, numpy_kind=ref_name, interactions=n * (n - 1) / 2))
    return rows


CUSTOM_LAWS = {
    # name: (built-in, the same law as a PairEnergy)
    "clustering, fast_exp": (ForceParams(), gaussian_clustering()),
    "clustering, np.exp + complex step": (ForceParams(), gaussian_clustering(fast=False)),
    "clustering + alignment, fast_exp": (ForceParams(lam=1.0), gaussian_clustering() + cosine_alignment(1.0)),
    "clustering + alignment, np.exp + complex step": (
        ForceParams(lam=1.0), gaussian_clustering(fast=False) + cosine_alignment(1.0, fast=False)),
}


def bench_custom(sizes, repeats: int, steps: int) -> list[dict]:
    """A custom energy equal to a built-in law against that law: one force
    evaluation (serial kernel, N in sizes) and a whole run (N = 17)."""
    rows = []
    for name, (builtin, custom) in CUSTOM_LAWS.items():
        for p in sizes:
            train = modular_addition(p).split(0.8, seed=0)[0]
            x = np.random.default_rng(0).standard_normal((p, 2))
            f0 = energy_and_forces(x, train, builtin, parallel=False)[1]
            f1 = energy_and_forces(x, train, custom, parallel=False)[1]  # compiles the custom kernels
            diff = float(np.max(np.abs(f1 - f0)) / max(1.0, np.max(np.abs(f0))))
            t0 = best_time(lambda: energy_and_forces(x, train, builtin, parallel=False), repeats)
            t1 = best_time(lambda: energy_and_forces(x, train, custom, parallel=False), repeats)
            rows.append(dict(law=name, p=p, pairs=len(train), kind="force evaluation", builtin=t0, custom=t1,
                             ratio=t1 / t0, max_rel_force_diff=diff))
        train = modular_addition(17).split(0.8, seed=0)[0]
        x = np.random.default_rng(0).standard_normal((17, 2))
        runs = []
        for law in (builtin, custom):
            simulate(x, train, law, steps=10, dt=0.01, parallel=False)
            runs.append(best_time(lambda: simulate(x, train, law, steps=steps, dt=0.01, parallel=False), repeats,
                                  min_time=0.0))
        rows.append(dict(law=name, p=17, pairs=len(train), kind=f"{steps}-step run", builtin=runs[0], custom=runs[1],
                         ratio=runs[1] / runs[0], max_rel_force_diff=None))
    return rows


def spread_state(p: int, seed: int = 0) -> np.ndarray:
    """Positions whose pair sums spread as in a settled p = 113 ``grids`` run
    (extent about 105 on each axis; measured), scaled with sqrt(p) as a 2-D
    layout of p classes would be."""
    return np.random.default_rng(seed).standard_normal((p, 2)) * 12.0 * np.sqrt(p / 113)


def bench_cutoff(sizes, tols=(1e-16, 1e-8)) -> list[dict]:
    """The grids force law on spread states: exact against the cut-off."""
    grids = preset("grids").params
    rows = []
    for p in sizes:
        train = modular_addition(p).split(0.8, seed=0)[0]
        x = spread_state(p)
        row = dict(p=p, pairs=len(train))
        for tol in (None,) + tuple(tols):
            for par in (False, True):
                forces(x, train, grids, repulsion_tol=tol, parallel=par)
                row[f"{'parallel' if par else 'serial'} {tol or 'exact'}"] = best_time(
                    lambda: forces(x, train, grids, repulsion_tol=tol, parallel=par), 1)
        rows.append(row)
    return rows


def bench_runs(steps: int, repeats: int, large: tuple[int, ...]) -> list[dict]:
    rows = []
    for name in ("circles", "grids", "clustering-alignment"):
        config = preset(name).replace(steps=steps, record_every=100)
        config.run(seed=0)
        best = np.inf
        for _ in range(repeats):
            start = time.perf_counter()
            config.run(seed=0)
            best = min(best, time.perf_counter() - start)
        rows.append(dict(run=f"{name}, N = 17", steps=steps, seconds=best))
    grids = preset("grids").params
    for p in large:
        train = modular_addition(p).split(0.8, seed=0)[0]
        x = spread_state(p)
        for tol in (None, 1e-16):
            forces(x, train, grids, repulsion_tol=tol)
            forces(x, train, grids, repulsion_tol=tol)
            per_step = best_time(lambda: forces(x, train, grids, repulsion_tol=tol), 1)
            rows.append(dict(run=f"grids, N = {p}, {'exact' if tol is None else f'cut-off {tol:g}'}",
                             steps=10_000, seconds=per_step * 10_000, extrapolated=True))
    return rows


def plot_cost(force_rows: list[dict], cutoff_rows: list[dict], path: str) -> None:
    """Seconds per force evaluation against N (idle machine)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idle = [r for r in force_rows if not r["busy_neighbour"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ps = [r["p"] for r in idle]
    for key, label, style in (("numpy", "NumPy", "k--"), ("serial", "serial kernel", "C0-o"),
                              ("parallel", "parallel kernel (2 threads)", "C1-o"), ("public", "forces() (chosen)", "C2:s")):
        ax.plot(ps, [r[key] for r in idle], style, label=label + ", clustering + alignment")
    if cutoff_rows:
        cp = [r["p"] for r in cutoff_rows]
        ax.plot(cp, [r["parallel exact"] for r in cutoff_rows], "C4-^", label="grids law, exact, parallel")
        ax.plot(cp, [r["parallel 1e-16"] for r in cutoff_rows], "C5-v", label="grids law, cut-off 1e-16, parallel")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (tokens; 0.8 N(N+1)/2 training pair sums)")
    ax.set_ylabel("seconds per force evaluation")
    ax.set_title("Cost of one force evaluation (2-core machine, idle)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    from particles.core.figures import save_figure

    save_figure(fig, path, dpi=110)


COLD = """
import resource, time
start = time.perf_counter()
from fitting.demo import compile_kernels
compile_kernels()
u = resource.getrusage(resource.RUSAGE_SELF)
print(u.ru_utime + u.ru_stime, time.perf_counter() - start)
"""


def bench_cold_compile() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True, text=True, check=True)
    cpu, wall = map(float, out.stdout.split()[-2:])
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (CI smoke run)")
    parser.add_argument("--json", help="also write the measurements to this JSON file")
    parser.add_argument("--figure", help="also draw the cost-versus-N curve into this PNG file")
    parser.add_argument("--dims", action="store_true",
                        help="the dimension axis only: forces and steps at d = 2-256, direct and Gram path, against "
                             "NumPy (benchmarks/dimension_axis.py)")
    args = parser.parse_args()
    if args.dims:
        import dimension_axis as axis

        warmup(parts=WARMUP_PARTS, pairs=PARALLEL_MIN_PAIRS)
        quick = args.quick
        rows = axis.force_rows(sizes=(41,) if quick else axis.SIZES, dims=(2, 64) if quick else axis.DIMS,
                               repeats=1 if quick else 3)
        axis.print_force_rows(rows)
        steps = axis.step_rows(dims=(2, 64) if quick else axis.DIMS, steps=50 if quick else 200,
                               repeats=1 if quick else 3)
        axis.print_step_rows(steps)
        if args.json:
            write_json(args.json, {"numba": numba.__version__, "threads": numba.get_num_threads(),
                                   "load_average": os.getloadavg()[0], "forces": rows, "steps": steps,
                                   "command": "python benchmarks/bench_particles.py --dims"
                                   + (" --quick" if quick else "")})
        return
    sizes = (17, 31) if args.quick else (17, 31, 59, 113, 211)
    repeats = 1 if args.quick else 3
    compile_s = warmup(parts=WARMUP_PARTS, pairs=PARALLEL_MIN_PAIRS)  # every kernel the benchmarks time
    load = os.getloadavg()[0]
    print(f"numba {numba.__version__}, {numba.get_num_threads()} threads, threading layer "
          f"{numba.threading_layer()}; warm-up {compile_s:.2f} s; load average {load:.2f}")
    print()
    print("force evaluation (clustering + alignment, d = 2); ratios are NumPy time / time")
    print(f"{'N':>4} {'pairs':>6} {'neighbour':>9} {'public':>10} {'serial':>10} {'parallel':>10} {'numpy':>10} "
          f"{'pub/np':>7} {'ser/np':>7} {'par/np':>7} {'pub/ser':>7} {'public interactions/s':>22}")
    force_rows = bench_forces(sizes, repeats)
    for r in force_rows:
        ms = lambda t: f"{t * 1e3:>8.2f}ms"  # noqa: E731
        print(f"{r['p']:>4} {r['pairs']:>6} {'busy' if r['busy_neighbour'] else 'idle':>9} {ms(r['public'])} "
              f"{ms(r['serial'])} {ms(r['parallel'])} {ms(r['numpy'])} {r['numpy'] / r['public']:>6.1f}x "
              f"{r['numpy'] / r['serial']:>6.1f}x {r['numpy'] / r['parallel']:>6.1f}x "
              f"{r['serial'] / r['public']:>6.2f}x {r['interactions'] / r['public']:>22.3e}")
    print("  (numpy: dense reference up to 6000 pairs, blocked rows above; pub/ser < 1 means the public call "
          "was slower than one core)")
    print()
    cut_sizes = (59,) if args.quick else (59, 113, 211)
    print("repulsion cut-off: grids force law (clustering only) on spread states (pair sums about 105 wide at "
          "N = 113, scaled with sqrt(N)), ms per evaluation")
    cutoff_rows = bench_cutoff(cut_sizes)
    keys = [k for k in cutoff_rows[0] if k not in ("p", "pairs")]
    print(f"{'N':>4} {'pairs':>6} " + " ".join(f"{k:>17}" for k in keys))
    for r in cutoff_rows:
        print(f"{r['p']:>4} {r['pairs']:>6} " + " ".join(f"{r[k] * 1e3:>15.2f}ms" for k in keys))
    print()
    steps = 2000 if args.quick else 10_000
    print(f"whole runs ({steps} steps, snapshot every 100, after warm-up; large N extrapolated from the cost "
          "of one step)")
    run_rows = bench_runs(steps, repeats, () if args.quick else (113,))
    for r in run_rows:
        print(f"  {r['run']:<28} {r['seconds']:>8.2f} s{'  (extrapolated)' if r.get('extrapolated') else ''}")
    print()
    print("custom energies (particles.PairEnergy) written to equal a built-in law, against that law (serial "
          "kernels); the target is custom / built-in <= 1.5")
    custom_rows = bench_custom((17,) if args.quick else (17, 113), repeats, steps)
    print(f"  {'law':<46} {'N':>4} {'what':<18} {'built-in':>10} {'custom':>10} {'custom/built-in':>16} "
          f"{'max force diff':>15}")
    for r in custom_rows:
        diff = "" if r["max_rel_force_diff"] is None else f"{r['max_rel_force_diff']:.1e}"
        print(f"  {r['law']:<46} {r['p']:>4} {r['kind']:<18} {r['builtin'] * 1e3:>8.2f}ms {r['custom'] * 1e3:>8.2f}ms "
              f"{r['ratio']:>15.2f}x {diff:>15}")
    print()
    cpu, wall = bench_cold_compile()
    print(f"cold compile of the demo's kernels (empty cache, fresh process): {cpu:.1f} s CPU, {wall:.1f} s wall")
    if args.figure:
        plot_cost(force_rows, cutoff_rows, args.figure)
    if args.json:
        write_json(args.json, {"numba": numba.__version__, "threads": numba.get_num_threads(),
                               "load_average": load, "forces": force_rows, "cutoff": cutoff_rows, "runs": run_rows,
                               "custom": custom_rows, "cold_compile_cpu_s": cpu, "cold_compile_wall_s": wall,
                               "command": "python benchmarks/bench_particles.py" + (" --quick" if args.quick else "")})


if __name__ == "__main__":
    main()
