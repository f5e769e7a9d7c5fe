"""Fit time on an idle machine and beside a busy neighbour, with the fit's
BLAS on one thread (the default) and on the library's own thread count.

A busy neighbour is a second process (spawned, BLAS set to one thread per
core with threadpoolctl, timing starts once it multiplies) multiplying
1500 x 1500 matrices in a loop on every core. Each figure is the
median of ``--repeats`` fits of Lorenz (dysts' trajectory, 1 % noise, 1600
samples, quadratic library), timed in this process; PySINDy's default fit
(``SINDy()``: finite differences, STLSQ 0.1) on the same data beside it.

    python benchmarks/bench_fit_threads.py [--repeats 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _neighbour(stop, ready) -> None:
    """Multiply 1500 x 1500 matrices with BLAS on every core until ``stop``
    (a fresh process: a forked one may inherit a BLAS pool in any state and
    run on fewer threads, which made earlier runs of this benchmark vary)."""
    import os

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=os.cpu_count(), user_api="blas"):
        a = np.random.default_rng(0).standard_normal((1500, 1500))
        a = a @ a
        ready.set()
        while not stop.is_set():
            a = a @ a
            a /= np.abs(a).max()


def _median_time(fn, repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time of this thread over ``repeats`` calls."""
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.thread_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - start_cpu)
    return float(np.median(times)), float(np.median(cpu))


def measure(repeats: int) -> dict:
    import pysindy as ps

    from bench_dysts import polynomial_systems
    from fitting import ODEModel
    from fitting.ode import blas

    system = polynomial_systems(["Lorenz"])[0]
    t, x = system.data()
    n = 1600
    rms = np.sqrt(np.mean(x[:n] ** 2, axis=0))
    data = x[:n] + 0.01 * rms * np.random.default_rng(0).standard_normal((n, 3))
    default_size = blas.ONE_THREAD_SIZE

    def ours_one_thread():
        blas.ONE_THREAD_SIZE = default_size
        ODEModel(library=2).fit(data, t[:n])

    def ours_all_threads():
        blas.ONE_THREAD_SIZE = 0  # every fit counts as large: BLAS keeps its own thread count
        try:
            ODEModel(library=2).fit(data, t[:n])
        finally:
            blas.ONE_THREAD_SIZE = default_size

    def pysindy_default():
        ps.SINDy().fit(data, t=t[:n])

    fits = {"ours (BLAS on one thread, default)": ours_one_thread,
            "ours (BLAS on all threads)": ours_all_threads, "PySINDy SINDy()": pysindy_default}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in fits.values():
            fn()  # warm-up
        for name, fn in fits.items():
            out[f"{name}, idle"], out[f"{name}, idle, CPU of the calling thread"] = \
                _median_time(fn, repeats)
        ctx = mp.get_context("spawn")
        stop, ready = ctx.Event(), ctx.Event()
        neighbour = ctx.Process(target=_neighbour, args=(stop, ready), daemon=True)
        neighbour.start()
        if not ready.wait(60):
            raise RuntimeError("the busy neighbour did not start within 60 s")
        time.sleep(0.5)
        try:
            for name, fn in fits.items():
                out[f"{name}, busy neighbour"], out[f"{name}, busy neighbour, CPU of the calling thread"] = \
                    _median_time(fn, repeats)
        finally:
            stop.set()
            neighbour.join(10)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    times = measure(args.repeats)
    for name, seconds in times.items():
        print(f"{name:80s} {seconds * 1e3:9.1f} ms")
    for name in ("ours (BLAS on one thread, default)", "ours (BLAS on all threads)", "PySINDy SINDy()"):
        cpu = "CPU of the calling thread"
        print(f"{name}: busy / idle = {times[name + ', busy neighbour'] / times[name + ', idle']:.2f} "
              f"(its thread's CPU time: {times[f'{name}, busy neighbour, {cpu}'] / times[f'{name}, idle, {cpu}']:.2f})")
    print(f"ours (default) / PySINDy, idle: {times['ours (BLAS on one thread, default), idle'] / times['PySINDy SINDy(), idle']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(times, indent=1))


if __name__ == "__main__":
    main()
