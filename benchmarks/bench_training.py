"""Time the torch backend (needs the [torch] extra).

1. Survival MLP (p = 59, d = 128, float64, full batch): B seeds one after
   another against the same B seeds as one batched computation; seed-steps
   per second of each and their ratio (target >= 4x at B = 32).
2. Steps per second of each model at its default configuration, with the
   per-step recording (signals, gradient norms, validation) included.

    python benchmarks/bench_training.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import torch

from fitting.backend import MODEL_CONFIGS, config_for, train, train_batched


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="B = 4, few steps (CI smoke run)")
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    B = 4 if args.quick else args.seeds
    steps = 5 if args.quick else args.steps
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    cfg = config_for("survival-mlp", steps=steps)
    train(cfg.replace(steps=2), 0)  # warm up allocator and kernels
    t_seq = timed(lambda: [train(cfg, s) for s in range(B)])
    t_bat = timed(lambda: train_batched(cfg, list(range(B))))
    seq_rate, bat_rate = B * steps / t_seq, B * steps / t_bat
    print(f"survival MLP p = 59, d = 128, float64, {B} seeds x {steps} steps")
    print(f"  sequential: {seq_rate:8.1f} seed-steps/s")
    print(f"  batched:    {bat_rate:8.1f} seed-steps/s")
    print(f"  ratio batched / sequential: {bat_rate / seq_rate:.2f}x (target 4x at B = 32)")
    for B_small in ((2,) if args.quick else (2, 8)):
        t = timed(lambda: train_batched(cfg, list(range(B_small))))
        print(f"  batched at B = {B_small}: {B_small * steps / t:8.1f} seed-steps/s")
    print("steps per second at each model's defaults (recording included):")
    for model in MODEL_CONFIGS:
        n = 5 if args.quick else 100
        mcfg = config_for(model, steps=n)
        t = timed(lambda: train(mcfg, 0))
        print(f"  {model:20s} {n / t:8.1f} steps/s")


if __name__ == "__main__":
    main()
