"""The weak form's window on noisy data: a quarter, half or whole dominant
period, on the polynomial dysts systems (``bench_dysts``'s systems, data
and noise), each case's derivative error on the clean test states.

This is the measurement behind ``fitting.ode.weak.MODERATE`` and
``MODERATE_NOISE`` (docs/fitting.md, "Half-period windows at moderate
noise"); the scans of 2026-11-26 were

    python benchmarks/weak_window_scan.py 0.01 0 --start 0 --every 2
    python benchmarks/weak_window_scan.py 0.05 0 --start 0 --every 2
    python benchmarks/weak_window_scan.py 0.01 7 --start 1 --every 2
    python benchmarks/weak_window_scan.py 0.05 7 --start 1 --every 2
    python benchmarks/weak_window_scan.py 0.02 3
    python benchmarks/weak_window_scan.py 0.1 11 --start 0 --every 2
    python benchmarks/weak_window_scan.py 0.005 12 --start 1 --every 2

each with ``--json`` (merged in docs/figures/fitting/weak_window_scan.json).
Noise-free runs too short for the exact setting (the warning's error
figure, ``weak_window_short.json``, 2026-11-27):

    python benchmarks/weak_window_scan.py 0 0 --every 2 --length 250
    python benchmarks/weak_window_scan.py 0 0 --every 2 --length 400

Needs dysts (``pip install '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

FRACTIONS = (0.25, 0.5, 1.0)


def scan(noise: float, seeds: list[int], start: int = 0, every: int = 1, length: int | None = None) -> list[dict]:
    """One row per system and seed: each period fraction's derivative error
    on the held-out states, fitted on the first ``length`` samples (None:
    ``FIT_SHARE`` of the trajectory)."""
    from bench_dysts import FIT_SHARE, polynomial_systems
    from fitting import ODEModel
    from fitting.ode import WeakForm
    from fitting.ode.noise import noise_share

    rows = []
    for system in polynomial_systems()[start::every]:
        t, x = system.data()
        n = int(FIT_SHARE * len(t)) if length is None else int(length)
        if n > int(FIT_SHARE * len(t)):
            raise ValueError(f"length must be at most the fitted share of the trajectory, "
                             f"{int(FIT_SHARE * len(t))} samples, got {n} (it would overlap the test states)")
        test = x[int(FIT_SHARE * len(t)):]
        truth = system.f(test)
        for seed in seeds:
            rng = np.random.default_rng(seed)
            fit = x[:n] + noise * np.sqrt(np.mean(x[:n] ** 2, axis=0)) * rng.standard_normal((n, system.K))
            row = {"system": system.name, "noise": noise, "seed": seed, "samples": n,
                   "noise_share_max": noise_share([fit])}
            for fraction in FRACTIONS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = ODEModel(library=system.degree, derivative=WeakForm(period_fraction=fraction)).fit(
                        fit, t[:n])
                row[str(fraction)] = float(np.linalg.norm(model.predict(test) - truth) / np.linalg.norm(truth))
            rows.append(row)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("noise", type=float)
    parser.add_argument("seeds", help="comma-separated noise seeds")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--length", type=int, default=None,
                        help="fit the first LENGTH samples (default: the benchmark's 80 %%)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.length is not None and args.length < 20:
        parser.error(f"--length must be at least 20 samples, got {args.length}")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"seeds must be comma-separated integers, got {args.seeds!r}")
    if args.noise < 0:
        parser.error(f"noise must be >= 0, got {args.noise}")
    try:
        rows = scan(args.noise, seeds, args.start, args.every, args.length)
    except ValueError as exc:  # --length past the fitted share: one line, exit code 2
        parser.error(str(exc))
    r = np.array([[row[str(f)] for f in FRACTIONS] for row in rows])
    for k, fraction in enumerate(FRACTIONS[1:], start=1):
        ratio = r[:, k] / r[:, 0]
        print(f"noise {args.noise:g}, {len(rows)} cases: period fraction {fraction:g} / 0.25: geometric-mean error "
              f"{np.exp(np.mean(np.log(ratio))):.3f}, better in {int(np.sum(ratio < 1))}, worse by > 10 % in "
              f"{int(np.sum(ratio > 1.1))}")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": "python " + " ".join(sys.argv), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
