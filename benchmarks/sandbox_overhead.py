"""What recording every layer costs a training run (issue 71): the sparse-modular transformer at the
paper's size (p = 2, T = 12, k = 5, batch 32) and its default snapshot spacing (every 50 steps), trained
with and without ``layers=True``, alternating, the same seed; the ratio of the two times per pair and
their median. With ``--busy`` a neighbour process spins on one core the whole time (the ratio should
hold: both arms see it).

    python benchmarks/sandbox_overhead.py --steps 3000 --pairs 5 --out docs/figures/sandbox/overhead.json
    python benchmarks/sandbox_overhead.py --quick
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import time
from pathlib import Path


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        x += 1


def _time(config, seed: int, layers: bool) -> float:
    from fitting.training import train

    start = time.perf_counter()
    train(config, seed, layers=layers)
    return time.perf_counter() - start


def run(steps: int, pairs: int, busy: bool) -> dict:
    from fitting.training import config_for

    config = config_for("sparse-modular", steps=steps)
    _time(config_for("sparse-modular", steps=20), 0, True)  # imports and first calls outside the timing
    stop = mp.Event()
    neighbour = mp.Process(target=_spin, args=(stop,), daemon=True) if busy else None
    if neighbour is not None:
        neighbour.start()
    rows = []
    try:
        for i in range(pairs):
            order = (False, True) if i % 2 == 0 else (True, False)  # alternate which arm goes first
            t = {layers: _time(config, 0, layers) for layers in order}
            rows.append({"plain_s": t[False], "layers_s": t[True], "ratio": t[True] / t[False]})
    finally:
        stop.set()
        if neighbour is not None:
            neighbour.join()
    ratios = [r["ratio"] for r in rows]
    return {"steps": steps, "snapshot_every": 50, "pairs": rows, "median_ratio": statistics.median(ratios),
            "max_ratio": max(ratios), "busy_neighbour": busy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="300 steps, 2 pairs, idle and busy")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    steps, pairs = (300, 2) if args.quick else (args.steps, args.pairs)
    result = {"idle": run(steps, pairs, False), "busy": run(steps, pairs, True),
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
              "command": "python benchmarks/sandbox_overhead.py " + ("--quick" if args.quick else
                                                                     f"--steps {steps} --pairs {pairs}"),
              "target": "layers=True adds at most 25 % to a run's time (median ratio <= 1.25)"}
    for arm in ("idle", "busy"):
        r = result[arm]
        print(f"{arm}: layers / plain median {r['median_ratio']:.3f} (max {r['max_ratio']:.3f}) over "
              f"{len(r['pairs'])} pairs of {steps} steps")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
