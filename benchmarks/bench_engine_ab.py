"""The particle engine of this tree against another checkout of the project,
in one run: whole Euler runs of the built-in ``grids`` law with the
alignment on (lam = 1) at p = 17, 59 and 113 (training fraction 0.8, d = 2), each tree timed in its own fresh
process, the two alternating (A B A B ...) so that drifts of the machine's
speed hit both; ratio = other / this per pair (> 1: this tree is faster).

    python benchmarks/bench_engine_ab.py --other /path/to/other/checkout [--pairs 5] [--json out.json]

Each process loads the kernels from Numba's cache (warmed by a first
untimed pair) and reports the best of 3 runs per size, in seconds per step,
with the serial kernel and with the default choice (parallel=None).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SIZES = {17: 20_000, 59: 2_000, 113: 400}  # p: steps (0.1-0.5 s a run on the machine it was written on)
#: --quick: fewer steps (on 2026-11-27 the full sizes took about 8 min a process on a shared 2-core machine)
QUICK_SIZES = {17: 4_000, 59: 400, 113: 60}

CHILD = r"""
import json, sys, time
import numpy as np
from particles import modular_addition, preset, simulate, warmup
try:  # every kernel the runs call, in trees whose warmup() compiles only what a run of its own size needs
    warmup(parts=("simulate", "minimize", "effective"), pairs=10**6)
except TypeError:  # trees before warmup(pairs=)
    warmup()
out = {}
for p, steps in json.loads(sys.argv[1]).items():
    p = int(p)
    cfg = preset("grids").replace(p=p, steps=steps)
    x0, train, _ = cfg.sample(0)
    params = cfg.params.replace(lam=1.0)  # clustering and alignment both on
    for mode, parallel in (("serial", False), ("auto", None)):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            simulate(x0, train, params, steps=steps, dt=cfg.dt, record_every=steps, parallel=parallel)
            best = min(best, time.perf_counter() - t0)
        out[f"p{p}_{mode}"] = best / steps
print(json.dumps(out))
"""


def run(tree: Path, sizes: dict[int, int] = SIZES) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(sizes)], capture_output=True, text=True,
                          env=env, cwd=tree, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other", required=True, help="another checkout of the project (the baseline)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--json", default=None)
    parser.add_argument("--quick", action="store_true", help=f"fewer steps per size: {QUICK_SIZES}")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    here = Path(__file__).resolve().parents[1]
    other = Path(args.other).resolve()
    run(here, sizes), run(other, sizes)  # warm both caches
    rows = []
    for k in range(args.pairs):
        if k % 2 == 0:  # A B, then B A: a drift of the machine's speed hits both trees
            a = run(here, sizes)
            b = run(other, sizes)
        else:
            b = run(other, sizes)
            a = run(here, sizes)
        rows.append({"this": a, "other": b})
        print(f"pair {k}: " + ", ".join(f"{key} {b[key] / a[key]:.3f}" for key in a), flush=True)
    keys = list(rows[0]["this"])
    summary = {}
    for key in keys:
        ratios = np.array([r["other"][key] / r["this"][key] for r in rows])
        summary[key] = {"median_ratio": float(np.median(ratios)), "min": float(ratios.min()), "max": float(ratios.max()),
                        "this_us_per_step": 1e6 * float(np.median([r["this"][key] for r in rows])),
                        "other_us_per_step": 1e6 * float(np.median([r["other"][key] for r in rows]))}
        print(f"{key:12s} other/this median {summary[key]['median_ratio']:.3f} [{ratios.min():.3f}, {ratios.max():.3f}]"
              f"  this {summary[key]['this_us_per_step']:.1f} us/step, other {summary[key]['other_us_per_step']:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"sizes": sizes, "pairs": rows, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
