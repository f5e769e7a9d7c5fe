"""Memory estimates against measured peaks (issue 69): the explorer's summary, frame, stages and fit and
the command line's fit and force fit, each on runs of ten shapes (none of them a shape the estimates'
factors were measured on), each request in a fresh process.

The measured peak is the process's resident memory at its highest (sampled every millisecond) above
its state before the run was read (modules imported and their compiled code warmed up on a tiny run):
the run's arrays plus the work. The estimate is what the server reserves (the run's arrays, already
held, plus :meth:`fitting.explore.runs.Run.work_bytes`) or what the command line checks
(:func:`fitting.signals.memory.total_bytes`). The target: estimate / peak in [1, 1.5] for every request.

    python benchmarks/memory_estimates.py --out docs/figures/explore/memory_estimates.json
    python benchmarks/memory_estimates.py --quick      # CI: three shapes, the explorer's requests
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

#: (snapshots, p, d, signal steps or None (signals from the snapshots), structured frequencies)
SHAPES = [(30, 53, 96, 150_000, 4), (40, 71, 64, 60_000, 2), (15, 113, 32, 250_000, 8), (1200, 61, 96, None, 3),
          (600, 127, 128, None, 5), (3000, 43, 48, None, 2), (120, 53, 96, 120, 4), (250, 61, 64, 250, 3),
          (80, 89, 128, 80, 6), (300, 37, 128, 300, 2)]
#: the memory budget the requests run under here (the force fits of the largest shapes need about 9 GiB,
#: over a quarter of a 24 GiB machine)
BENCH_BUDGET = "16GiB"
OPS = ["summary", "frame", "stages", "fit", "cli-fit", "cli-force-fit"]


def make_run(path: Path, S: int, p: int, d: int, N: int | None, n_freq: int, seed: int = 0) -> None:
    """A run whose embedding turns from noise into circles of ``n_freq`` frequencies, with gradients,
    updates and a training set (40 % of the pairs of (a + b) mod p); per-step signals when ``N``."""
    from particles.trajectory import Trajectory

    from fitting.signals.fourier import fourier_signals

    rng = np.random.default_rng(seed)
    steps = np.arange(N if N is not None else S) * 10
    snap = steps[np.unique(np.linspace(0, len(steps) - 1, S).round().astype(int))]
    a = np.arange(p)
    circles = sum((1 + 0.2 * i) * np.stack([np.cos(2 * np.pi * k * a / p), np.sin(2 * np.pi * k * a / p)], 1)
                  @ rng.normal(size=(2, d)) for i, k in enumerate(range(1, n_freq + 1)))
    g = (snap / snap[-1])[:, None, None]
    E = (1 - g) * 0.3 * rng.normal(size=(len(snap), p, d)) + g * circles
    extra = {}
    if N is not None:
        at = fourier_signals(E)
        sig = np.stack([np.interp(steps, snap, at[:, j]) for j in range(at.shape[1])], 1)
        extra = {"steps": steps, "signals": sig * (1 + 0.01 * rng.normal(size=sig.shape))}
    pairs = np.array([(i, j) for i in range(p) for j in range(i, p)])
    pairs = pairs[rng.random(len(pairs)) < 0.4]
    G = 0.01 * rng.normal(size=(len(snap) - 1, p, d))
    Trajectory(embeddings=E, snapshot_steps=snap, gradients=G, updates=-0.003 * G, train_pairs=pairs,
               train_labels=(pairs[:, 0] + pairs[:, 1]) % p, meta={"p": p, "d": d, "source": "synthetic",
                                                                   "task": "modular_addition",
                                                                   "n_train": int(len(pairs))},
               **extra).save(path)


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(op: str, path: str, tiny: str) -> dict:
    """One request in this process: warm up on ``tiny``, then the peak above the state before reading."""
    warnings.simplefilter("ignore")
    from particles.core.cli import main as cli
    from particles.trajectory import Trajectory

    from fitting.explore.runs import Run
    from fitting.signals import memory

    quiet = contextlib.redirect_stdout(io.StringIO())
    small = Run("tiny", Trajectory.load(tiny))
    small.summary(), small.stages(), small.frame(0)
    steps = small.signals()[0]
    small.fit(int(steps[0]), int(steps[-1]))
    with quiet:
        if op == "cli-fit":
            cli(["fit", tiny, "--out", tempfile.mkdtemp(), "--quiet"])
        if op == "cli-force-fit":
            cli(["force-fit", tiny, "--out", tempfile.mkdtemp(), "--quiet"])
    import gc

    cli_estimate = None
    if op.startswith("cli-"):  # the command reads the run itself; the estimate is made in the parent
        cli_estimate, shape, held, n_steps = 0, None, 0, 0
    gc.collect()
    base = _rss()
    peak, stop = [base], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.001)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    began = time.perf_counter()
    if cli_estimate is not None:
        with quiet:
            code = cli(["fit" if op == "cli-fit" else "force-fit", path, "--out", tempfile.mkdtemp(), "--quiet"])
        if code != 0:
            raise RuntimeError(f"embdyn {op[4:]} exited with {code}")
        estimate = cli_estimate
    else:
        traj = Trajectory.load(path)
        run = Run("run", traj)
        held = traj.nbytes
        shape, n_steps = list(traj.embeddings.shape), len(traj.steps)
    if cli_estimate is not None:
        pass
    elif op == "summary":
        estimate = memory.total_bytes(traj, run.work_bytes("summary"))
        run.summary()
    elif op == "frame":
        estimate = memory.total_bytes(traj, run.work_bytes("frame"))
        run.frame(int(traj.snapshot_steps[len(traj.snapshot_steps) // 2]))
    elif op == "stages":
        estimate = memory.total_bytes(traj, run.work_bytes("stages"))
        run.stages()
    elif op == "fit":  # as the page asks: its summary first, then a fit of the whole run
        first = run.work_bytes("summary")
        run.summary()
        steps = run.signals()[0]
        start, stop_step = int(steps[0]), int(steps[-1])
        estimate = memory.total_bytes(traj, first + run.work_bytes("fit", start=start, stop=stop_step))
        run.fit(start, stop_step)
    else:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    seconds = time.perf_counter() - began
    stop.set()
    watcher.join()
    measured = peak[0] - base
    return {"op": op, "shape": shape, "signal_steps": int(n_steps),
            "run_mib": held / 2**20, "peak_mib": measured / 2**20, "estimate_mib": estimate / 2**20,
            "ratio": estimate / measured if estimate else None, "seconds": seconds}


def cli_estimate(op: str, path: Path) -> dict:
    """The estimate the command checks, from its own inputs (made here: a process that has read the run
    and freed it would reuse that memory when the command reads it again)."""
    warnings.simplefilter("ignore")
    from particles.trajectory import Trajectory

    from fitting.forcefit.memory import force_fit_bytes
    from fitting.ode.memory import fit_bytes
    from fitting.signals import memory, select_frequencies, trajectory_signals

    traj = Trajectory.load(path)
    if op == "cli-fit":
        steps, _ = trajectory_signals(traj)
        columns = select_frequencies(traj).columns
        estimate = memory.total_bytes(traj, memory.signals_bytes(traj) + fit_bytes(
            len(steps), len(columns), form="weak", figures=True))
    else:
        estimate = traj.nbytes + force_fit_bytes(traj)
    return {"shape": list(traj.embeddings.shape), "signal_steps": int(len(traj.steps)),
            "run_mib": traj.nbytes / 2**20, "estimate_mib": estimate / 2**20}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSON file of every measurement and the summary")
    ap.add_argument("--quick", action="store_true", help="three shapes, the explorer's requests")
    ap.add_argument("--one", nargs=3, metavar=("OP", "RUN", "TINY"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(*args.one)))
        return 0
    shapes = SHAPES[:1] + SHAPES[3:4] + SHAPES[6:7] if args.quick else SHAPES
    ops = ["summary", "frame", "stages", "fit"] if args.quick else OPS
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tiny = Path(folder) / "tiny.npz"
        make_run(tiny, 12, 11, 8, 40, 1)
        for i, (S, p, d, N, n_freq) in enumerate(shapes):
            path = Path(folder) / f"run{i}.npz"
            make_run(path, S, p, d, N, n_freq, seed=i)
            for op in ops:
                env = dict(os.environ, EMBDYN_MEMORY_BUDGET=BENCH_BUDGET)
                proc = subprocess.run([sys.executable, __file__, "--one", op, str(path), str(tiny)],
                                      capture_output=True, text=True, check=True, env=env)
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                if op.startswith("cli-"):
                    row.update(cli_estimate(op, path))
                    row["ratio"] = row["estimate_mib"] / row["peak_mib"]
                rows.append(row)
                print(f"{op:>14} {str(tuple(row['shape'])):>17} N={row['signal_steps']:>7}  run {row['run_mib']:7.1f} "
                      f"MiB  peak {row['peak_mib']:7.1f} MiB  estimate {row['estimate_mib']:7.1f} MiB  "
                      f"ratio {row['ratio']:.2f}  {row['seconds']:.1f} s", flush=True)
    ratios = np.array([r["ratio"] for r in rows])
    summary = {"requests": len(rows), "ratio_min": float(ratios.min()), "ratio_max": float(ratios.max()),
               "within_1_to_1.5": int(np.sum((ratios >= 1.0) & (ratios <= 1.5))),
               "under_estimated": int(np.sum(ratios < 1.0)),
               "by_op": {op: [float(min(r["ratio"] for r in rows if r["op"] == op)),
                              float(max(r["ratio"] for r in rows if r["op"] == op))] for op in ops}}
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"command": "python benchmarks/memory_estimates.py" +
                                              (" --quick" if args.quick else "") + f" --out {args.out}",
                                              "summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
