"""Time the torch backend (needs the [torch] extra); every rate is measured in
this run, next to its baseline, and printed as a ratio.

1. Grid trainer (``train_grid``) on the paper's toy regression grid
   (16 x 11 cells, float32): cell-steps per second of the stacked grid
   against a sequential loop of single-cell runs over cells of the same grid,
   (a) with ``train`` (the per-run recorder) and (b) a bare loop (forward,
   backward, two AdamW steps, accuracies; nothing else). Target >= 10x.
   The grid runs at its default (``tanh="fast"``, one process), with
   ``tanh="exact"`` and with ``n_jobs=2`` (two warm worker processes of one
   thread); the five contenders run in turn, then in reverse order, and so
   on for ``--rounds`` rounds, every one timed from call to return (setup
   included). Rates are the best of the rounds; ratios are also paired
   within each round (a grid and the loop it is compared with, minutes
   apart at most) and summarised over rounds: median, geometric mean with a
   95 % t-interval, range, rounds at or above 10x.
2. Survival MLP (p = 59, d = 128, full batch): B seeds one after another
   against the same B seeds in ``train_batched`` (one stack, compiled, two
   processes of one thread), float64 and float32; ratios to the sequential
   loop of the same dtype and to the float64 one. Target >= 2x at B = 32.
3. Steps per second of each model at its defaults (recording included).

    python benchmarks/bench_training.py [--quick] [--busy] [--json FILE]

``--busy`` keeps one other process spinning on a core during the run (a
shared machine).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np
import torch

from fitting.training import MODEL_CONFIGS, config_for, toy_phase_setting, train, train_batched, train_grid
from fitting.training.models import make_task

from timing import write_json


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ratio_summary(ratios: np.ndarray) -> dict:
    """Median, range, rounds at or above 10x, and the geometric mean with a
    95 % t-interval on the log ratios (rounds as independent repeats)."""
    from scipy import stats

    logs = np.log(ratios)
    if len(logs) > 1:
        half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    else:
        half = None
    ci95 = [None, None] if half is None else [float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))]
    return {"ratios": ratios.tolist(), "median": float(np.median(ratios)), "geomean": float(np.exp(logs.mean())),
            "ci95": ci95,
            "min": float(ratios.min()), "max": float(ratios.max()), "at_least_10x": int((ratios >= 10).sum())}


def _spin(stop) -> None:  # pragma: no cover - a busy neighbour
    x = 0
    while not stop.is_set():
        x += 1


def bare_loop(cfg, seed: int, steps: int) -> None:
    """One toy cell trained with nothing but what the phase needs."""
    task = make_task(cfg, seed)
    for _ in range(steps):
        task.step()
        task.evaluate()
        task.apply_update()


def grid_section(args, out: dict) -> None:
    cfg, grid = toy_phase_setting("regression")
    steps = 20 if args.quick else args.grid_steps
    if args.quick:
        grid = {k: v[::4] for k, v in grid.items()}
    cells = [(lr, wd) for lr in grid["decoder_lr"] for wd in grid["decoder_weight_decay"]]
    rng = np.random.default_rng(0)
    sample = [cells[i] for i in rng.choice(len(cells), size=min(len(cells), args.sample), replace=False)]
    seq_steps = 10 if args.quick else args.sequential_steps
    runs = {
        # wall time of the whole call (building the stack included), as the sequential runs include theirs
        "fast": lambda: timed(lambda: train_grid(cfg, grid, steps=steps, stop_when="never", tanh="fast")),
        "exact": lambda: timed(lambda: train_grid(cfg, grid, steps=steps, stop_when="never", tanh="exact")),
        # the cells dealt over two worker processes of one thread each (reusable workers, started below)
        "jobs2": lambda: timed(lambda: train_grid(cfg, grid, steps=steps, stop_when="never", tanh="fast", n_jobs=2)),
        "train": lambda: timed(lambda: [train(cfg.replace(decoder_lr=lr, decoder_weight_decay=wd, steps=seq_steps), 0)
                                        for lr, wd in sample]),
        "bare": lambda: timed(lambda: [bare_loop(cfg.replace(decoder_lr=lr, decoder_weight_decay=wd), 0, seq_steps)
                                       for lr, wd in sample]),
    }
    for tanh in ("fast", "exact"):
        train_grid(cfg, grid, steps=2, tanh=tanh)  # compile the fused kernels once
    train_grid(cfg, grid, steps=2, n_jobs=2)  # start the two workers and compile there
    train(cfg.replace(steps=2), 0)
    best = dict.fromkeys(runs, np.inf)
    rounds = []  # every contender's time in each round: ratios paired within a round see the same machine
    for r in range(args.rounds):  # alternated order (forward, reverse, ...): a shared machine drifts
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        times = {key: runs[key]() for key in order}
        rounds.append(times)
        for key, t in times.items():
            best[key] = min(best[key], t)
    rate_grid, rate_exact = len(cells) * steps / best["fast"], len(cells) * steps / best["exact"]
    rate_jobs2 = len(cells) * steps / best["jobs2"]
    rate_train, rate_bare = len(sample) * seq_steps / best["train"], len(sample) * seq_steps / best["bare"]
    print(f"grid trainer, toy regression (p = 10, hidden 200, float32), {len(cells)} cells x {steps} steps")
    print(f"  stacked grid (default):    {rate_grid:9.0f} cell-steps/s ({1e3 * best['fast'] / steps:.1f} ms a grid "
          f"step)")
    print(f"  stacked grid, tanh=exact:  {rate_exact:9.0f} cell-steps/s ({1e3 * best['exact'] / steps:.1f} ms a grid "
          f"step)")
    print(f"  stacked grid, n_jobs=2:    {rate_jobs2:9.0f} cell-steps/s (two processes of one thread, "
          f"{rate_jobs2 / rate_grid:.2f}x one process)")
    print(f"  sequential train():        {rate_train:9.0f} cell-steps/s   ratio {rate_grid / rate_train:6.1f}x "
          f"(exact tanh {rate_exact / rate_train:.1f}x, n_jobs=2 {rate_jobs2 / rate_train:.1f}x)   (target >= 10x)")
    print(f"  sequential bare loop:      {rate_bare:9.0f} cell-steps/s   ratio {rate_grid / rate_bare:6.1f}x "
          f"(exact tanh {rate_exact / rate_bare:.1f}x, n_jobs=2 {rate_jobs2 / rate_bare:.1f}x)   (target >= 10x)")
    paired = {}
    for grid_key, label in (("fast", "default"), ("exact", "tanh=exact"), ("jobs2", "n_jobs=2")):
        for base in ("train", "bare"):
            ratios = np.array([(len(cells) * steps / t[grid_key]) / (len(sample) * seq_steps / t[base]) for t in rounds])
            paired[f"{grid_key}_vs_{base}"] = ratio_summary(ratios)
    print(f"  ratios paired within each of {args.rounds} rounds (median; geometric mean with its 95 % t-interval; "
          f"range; rounds >= 10x):")
    for key, summary in paired.items():
        low, high = summary["ci95"]
        interval = "[-]" if low is None else f"[{low:.1f}, {high:.1f}]"
        print(f"    {key:16s} {summary['median']:5.1f}x; {summary['geomean']:5.1f}x "
              f"{interval}; {summary['min']:.1f}-{summary['max']:.1f}x; "
              f"{summary['at_least_10x']}/{len(rounds)}")
    out["grid_rounds"] = {"times": rounds, "paired_ratios": paired, "sequential_cells": len(sample),
                          "sequential_steps": seq_steps}
    out["grid"] = {"cells": len(cells), "steps": steps, "rate_grid": rate_grid, "rate_grid_exact_tanh": rate_exact,
                   "rate_train": rate_train, "rate_bare": rate_bare, "ratio_train": rate_grid / rate_train,
                   "ratio_bare": rate_grid / rate_bare, "ratio_train_exact_tanh": rate_exact / rate_train,
                   "ratio_bare_exact_tanh": rate_exact / rate_bare, "rate_grid_jobs2": rate_jobs2,
                   "ratio_train_jobs2": rate_jobs2 / rate_train, "ratio_bare_jobs2": rate_jobs2 / rate_bare,
                   "ratio_jobs2_to_one_process": rate_jobs2 / rate_grid}


def survival_section(args, out: dict) -> None:
    B = 4 if args.quick else args.seeds
    steps = 5 if args.quick else args.steps
    out["survival"] = {}
    seq_default = None  # the sequential loop at the config's default dtype (float64, the paper's setting)
    for dtype in ("float64", "float32"):
        cfg = config_for("survival-mlp", steps=steps, dtype=dtype)
        train(cfg.replace(steps=2), 0)
        t_seq = timed(lambda: [train(cfg, s) for s in range(B)])
        seq_rate = B * steps / t_seq
        seq_default = seq_rate if seq_default is None else seq_default
        print(f"survival MLP p = 59, d = 128, {dtype}, {B} seeds x {steps} steps")
        print(f"  sequential:          {seq_rate:8.1f} seed-steps/s")
        row = {"seeds": B, "steps": steps, "rate_sequential": seq_rate}
        for compile_, jobs in (("never", 1), ("auto", 1), ("never", 2), ("auto", 2)):
            # warm up outside the timing with the same seeds (the same stack shapes, so nothing
            # recompiles) and start joblib's reusable worker processes
            train_batched(cfg.replace(steps=2), list(range(B)), compile=compile_, n_jobs=jobs)
            t_bat = timed(lambda: train_batched(cfg, list(range(B)), compile=compile_, n_jobs=jobs))
            bat_rate = B * steps / t_bat
            label = {("never", 1): "batched", ("auto", 1): "batched, compiled",
                     ("never", 2): "2 processes x 1 thread, batched",
                     ("auto", 2): "2 processes x 1 thread, compiled"}[compile_, jobs]
            key = f"{compile_}_jobs{jobs}" if jobs > 1 else compile_
            print(f"  {label + ':':34s} {bat_rate:8.1f} seed-steps/s   ratio {bat_rate / seq_rate:.2f}x "
                  f"(vs sequential float64: {bat_rate / seq_default:.2f}x; target >= 2x)")
            row[f"rate_batched_{key}"] = bat_rate
            row[f"ratio_{key}"] = bat_rate / seq_rate
            row[f"ratio_{key}_vs_sequential_float64"] = bat_rate / seq_default
        out["survival"][dtype] = row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few steps (CI smoke run)")
    parser.add_argument("--seeds", type=int, default=32, help="survival seeds (default 32)")
    parser.add_argument("--steps", type=int, default=100, help="survival steps (default 100)")
    parser.add_argument("--grid-steps", type=int, default=300, help="grid steps (default 300)")
    parser.add_argument("--sequential-steps", type=int, default=300, help="steps of each sequential cell")
    parser.add_argument("--sample", type=int, default=12, help="cells timed sequentially (default 12)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="grid section: rounds of all contenders, order alternated (default 6; 2 with --quick)")
    parser.add_argument("--busy", action="store_true", help="keep one other process spinning meanwhile")
    parser.add_argument("--only", choices=["grid", "survival", "models"], default=None)
    parser.add_argument("--json", default=None, help="write the rates to this file")
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = 2 if args.quick else 6
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    stop = mp.Event()
    neighbour = None
    if args.busy:
        neighbour = mp.Process(target=_spin, args=(stop,), daemon=True)
        neighbour.start()
    out: dict = {"torch": torch.__version__, "threads": torch.get_num_threads(), "busy_neighbour": args.busy}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads"
          + (", one busy neighbour process" if args.busy else ""))
    try:
        if args.only in (None, "grid"):
            grid_section(args, out)
        if args.only in (None, "survival"):
            survival_section(args, out)
        if args.only in (None, "models"):
            print("steps per second at each model's defaults (recording included):")
            out["models"] = {}
            for model in MODEL_CONFIGS:
                n = 5 if args.quick else 100
                mcfg = config_for(model, steps=n)
                t = timed(lambda: train(mcfg, 0))
                out["models"][model] = n / t
                print(f"  {model:20s} {n / t:8.1f} steps/s")
    finally:
        stop.set()
        if neighbour is not None:
            neighbour.join(timeout=5)
    if args.json:
        write_json(args.json, out)


if __name__ == "__main__":
    main()
