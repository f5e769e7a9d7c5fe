"""Fit time on an idle machine and beside a busy neighbour, with the fit's
BLAS on one thread (the default) and on the library's own thread count.

A busy neighbour is a second process multiplying 1500 x 1500 matrices on
every core in a loop (NumPy's BLAS, all its threads). Each figure is the
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


def _neighbour(stop) -> None:
    a = np.random.default_rng(0).standard_normal((1500, 1500))
    while not stop.is_set():
        a = a @ a
        a /= np.abs(a).max()


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


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
            out[f"{name}, idle"] = _median_time(fn, repeats)
        stop = mp.Event()
        neighbour = mp.Process(target=_neighbour, args=(stop,), daemon=True)
        neighbour.start()
        time.sleep(1.0)
        try:
            for name, fn in fits.items():
                out[f"{name}, busy neighbour"] = _median_time(fn, repeats)
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
        print(f"{name:55s} {seconds * 1e3:9.1f} ms")
    for name in ("ours (BLAS on one thread, default)", "ours (BLAS on all threads)", "PySINDy SINDy()"):
        print(f"{name}: busy / idle = {times[name + ', busy neighbour'] / times[name + ', idle']:.2f}")
    print(f"ours (default) / PySINDy, idle: {times['ours (BLAS on one thread, default), idle'] / times['PySINDy SINDy(), idle']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(times, indent=1))


if __name__ == "__main__":
    main()
