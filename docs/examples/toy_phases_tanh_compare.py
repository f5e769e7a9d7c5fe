"""The toy's regression phase grid (seed 0) with the fast and the exact tanh, cell by cell.

    python docs/examples/toy_phases_tanh_compare.py 5000 --out docs/figures/training/tanh_compare
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fitting.training import toy_phase_setting, train_grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("steps", type=int, help="step budget of both grids")
    parser.add_argument("--out", type=Path, default=Path("embdyn-tanh-compare"))
    args = parser.parse_args()
    cfg, grid = toy_phase_setting("regression")
    res = {tanh: train_grid(cfg, grid, steps=args.steps, tanh=tanh, out=args.out / f"reg_{args.steps}_{tanh}.json")
           for tanh in ("fast", "exact")}
    for tanh, r in res.items():
        print(tanh, r.phase_counts(), f"{r.meta['seconds']:.0f} s")
    pairs = list(zip(res["fast"].records, res["exact"].records))
    diff = [(a["decoder_lr"], a["decoder_weight_decay"], a["phase"], b["phase"]) for a, b in pairs
            if a["phase"] != b["phase"]]
    same = sum((a["steps_train"], a["steps_val"]) == (b["steps_train"], b["steps_val"]) for a, b in pairs)
    print(f"cells with another phase (lr, wd, fast, exact): {len(diff)} {diff}")
    print(f"cells with the same first-reach steps: {same} of {len(pairs)}")


if __name__ == "__main__":
    main()
