"""float32 against float64 survival-MLP runs of the same seeds (same initial values): survivor sets at
checkpoints along the run and the largest relative signal difference.

    python docs/examples/training_experiments.py survival --steps 30000 --jobs 2 --out F64DIR
    python docs/examples/training_experiments.py survival --steps 30000 --jobs 2 --batched --dtype float32 \\
        --out F32DIR
    python docs/examples/survival_dtype_compare.py F64DIR/survival_runs F32DIR/survival_runs --seeds 0 1 2 3 4 5 6 7 \\
        --out docs/figures/training/survival_30k_float32_vs_float64.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from fitting import surviving_frequencies
from particles.core.io import atomic_write_text
from particles.trajectory import Trajectory

CHECKS = (500, 1000, 2000, 5000, 10000, 20000)


def frequencies(mask: np.ndarray) -> list[int]:
    return (np.flatnonzero(mask) + 1).tolist()


def compare(a: Trajectory, b: Trajectory) -> dict:
    n = min(len(a.steps), len(b.steps))
    checks = {}
    for i in (i for i in CHECKS if i < n):
        sa = surviving_frequencies(a.signals[i], dc=a.scalars["signal_dc"][i])
        sb = surviving_frequencies(b.signals[i], dc=b.scalars["signal_dc"][i])
        checks[int(a.steps[i])] = {"same": bool(np.array_equal(sa, sb)), "float64": frequencies(sa),
                                   "float32": frequencies(sb)}
    rel = np.abs(a.signals[:n] - b.signals[:n]).max(axis=1) / np.abs(a.signals[:n]).max(axis=1)
    fa, fb = surviving_frequencies(a), surviving_frequencies(b)
    return {"final_same": bool(np.array_equal(fa, fb)), "final_float64": frequencies(fa),
            "final_float32": frequencies(fb), "max_rel_signal_diff_first_2000": float(rel[:2001].max()),
            "max_rel_signal_diff_all": float(rel.max()), "step_of_max": int(a.steps[int(rel.argmax())]),
            "checks": checks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("float64_dir", type=Path)
    parser.add_argument("float32_dir", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = {}
    for s in args.seeds:
        try:
            a = Trajectory.load(args.float64_dir / f"survival-mlp_seed{s}.npz")
            b = Trajectory.load(args.float32_dir / f"survival-mlp_seed{s}.npz")
        except (OSError, ValueError) as exc:
            raise SystemExit(f"survival_dtype_compare: {exc}") from None
        if a.meta["config"]["dtype"] != "float64" or b.meta["config"]["dtype"] != "float32":
            raise SystemExit(f"seed {s}: expected a float64 and a float32 run")
        out[s] = compare(a, b)
        print(f"seed {s}: final sets {out[s]['final_float64']} (float64) {out[s]['final_float32']} (float32); "
              f"same at steps {[k for k, v in out[s]['checks'].items() if v['same']]}")
    if args.out:
        atomic_write_text(args.out, json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
