"""The toy regression grid (16 x 11 = 176 cells) on a Dask LocalCluster of
2 one-thread workers against local processes (``n_jobs=2``), in one run on
this machine (needs the [torch] and [cluster] extras).

1. **Time.** Local ``n_jobs=2`` and ``scheduler="local:2"`` alternate for
   ``--rounds`` rounds, each in a fresh process that calls ``train_grid``
   twice: cold (workers start, import torch, compile; the cluster's start
   included) and warm (the same workers again). Target: cluster <= 1.2x local.
2. **Bits.** Every cluster table is compared with the local one, record by record.
3. **Kills.** The grid split into ``--units`` units on a LocalCluster of 2
   workers, checkpointed: one worker is SIGKILLed twice while units run,
   then the client itself (a subprocess) is SIGKILLed once and started again
   with ``resume=True``. The final table is compared with the local one and
   the journal is read: each unit ``done`` exactly once, no unit started after
   its ``done``, none missing.

    python benchmarks/cluster_grid.py [--steps N] [--rounds R] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from timing import write_json  # noqa: E402

CHILD = """
import sys
from fitting.training import toy_phase_setting, train_grid
if __name__ == "__main__":
    steps, units, out, every, resume = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
    cfg, grid = toy_phase_setting("regression", steps=steps)
    train_grid(cfg, grid, scheduler="local:2", n_jobs=units, out=out, checkpoint_every=every, resume=resume)
"""


def records_text(result) -> str:
    return json.dumps(result.records, sort_keys=True)


def journal_events(out: Path) -> list[dict]:
    path = out.with_name(out.stem + ".units") / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


TIMED = """
import hashlib, json, sys, time
from fitting.training import toy_phase_setting, train_grid
from fitting.training.cluster import cluster_client
if __name__ == "__main__":
    mode, steps = sys.argv[1], int(sys.argv[2])
    cfg, grid = toy_phase_setting("regression", steps=steps)
    report = {}
    t = time.perf_counter()
    with cluster_client("local:2" if mode == "cluster" else None) as client:
        report["startup"] = time.perf_counter() - t
        for call in ("cold", "warm"):
            t = time.perf_counter()
            result = train_grid(cfg, grid, n_jobs=2 if mode == "local" else None, scheduler=client)
            report[call] = time.perf_counter() - t
            report[call + "_records"] = hashlib.sha256(json.dumps(result.records, sort_keys=True).encode()).hexdigest()
    print(json.dumps(report))
"""


def timing(steps: int, rounds: int, folder: Path) -> dict:
    """Each round, a fresh process per contender (local ``n_jobs=2``; a
    ``scheduler="local:2"`` cluster), one after the other: the first call
    (cold: workers start, import torch and compile) and a second call on the
    same workers (warm). The cluster's start is in its cold time."""
    script = folder / "timed.py"
    script.write_text(TIMED)
    runs: dict[str, list[dict]] = {"local": [], "cluster": []}
    for _ in range(rounds):
        for mode in runs:
            out = subprocess.run([sys.executable, str(script), mode, str(steps)], capture_output=True, text=True,
                                 check=True).stdout
            runs[mode].append(json.loads(out.strip().splitlines()[-1]))
    report: dict = {"rounds": runs}
    for call in ("cold", "warm"):
        local = np.array([r[call] + (r["startup"] if call == "cold" else 0) for r in runs["local"]])
        cluster = np.array([r[call] + (r["startup"] if call == "cold" else 0) for r in runs["cluster"]])
        report[call] = {"local_seconds": local.tolist(), "cluster_seconds": cluster.tolist(),
                        "ratio_per_round": (cluster / local).tolist(), "ratio_median": float(np.median(cluster / local))}
    reference = runs["local"][0]["cold_records"]
    report["bit_identical"] = all(r[c + "_records"] == reference for m in runs.values() for r in m for c in ("cold", "warm"))
    report["target"] = "cluster <= 1.2x local (n_jobs=2)"
    return report


def kill_worker_when_running(client, out: Path, kills: int, log: list) -> None:
    """SIGKILL the worker running a unit that has reported progress, ``kills`` times, a unit apart."""
    from fitting.training.cluster import EVENTS_TOPIC

    killed_units: set = set()
    deadline = time.monotonic() + 600
    while len(log) < kills and time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            events = [m for _, m in client.get_events(EVENTS_TOPIC) if isinstance(m, dict)]
        except Exception:  # noqa: BLE001 - the cluster is restarting a worker
            continue
        starts = {}
        for m in events:
            if m.get("event") == "start":
                starts[m["unit"]] = m["worker"]
        for m in events:
            unit = m.get("unit")
            if m.get("event") == "progress" and m.get("done", 0) >= 2 and unit not in killed_units \
                    and unit in starts:
                try:
                    pids = client.run(os.getpid, workers=[starts[unit]])
                except Exception:  # noqa: BLE001 - that worker is gone already
                    continue
                for address, pid in pids.items():
                    os.kill(pid, signal.SIGKILL)
                    log.append({"unit": unit, "worker": address, "time": time.time()})
                killed_units.add(unit)
                break


def kills(cfg, grid, steps: int, units: int, every: int, local_text: str, folder: Path) -> dict:
    import dask
    import dask.distributed as dd

    from fitting.training import train_grid
    from fitting.training.cluster import LOCAL_WORKER_CONFIG

    out = folder / "grid.json"
    child = folder / "child.py"
    child.write_text(CHILD)
    # 1. the client in a subprocess, killed once after its first finished unit
    proc = subprocess.Popen([sys.executable, str(child), str(steps), str(units), str(out), str(every), "0"],
                            stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    client_kill = None
    while proc.poll() is None:
        time.sleep(0.2)
        done = [e for e in journal_events(out) if e.get("event") == "done"]
        if done:
            os.kill(proc.pid, signal.SIGKILL)
            client_kill = {"time": time.time(), "units_done_before": sorted(e["unit"] for e in done)}
            break
    proc.wait()
    time.sleep(2)  # the killed client's workers lose their scheduler and end
    # 2. resumed on a fresh LocalCluster, whose workers are killed twice while units run
    worker_kills: list = []
    with dask.config.set(LOCAL_WORKER_CONFIG):
        cluster = dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    with cluster, dd.Client(cluster) as client:
        killer = threading.Thread(target=kill_worker_when_running, args=(client, out, 2, worker_kills), daemon=True)
        killer.start()
        result = train_grid(cfg, grid, scheduler=client, n_jobs=units, out=out, checkpoint_every=every, resume=True)
        killer.join(timeout=5)
    events = journal_events(out)
    done_counts = {k: sum(1 for e in events if e.get("event") == "done" and e["unit"] == k) for k in range(units)}
    starts = {k: [e for e in events if e.get("event") == "start" and e["unit"] == k] for k in range(units)}
    return {"units": units, "steps": steps, "checkpoint_every": every, "client_kill": client_kill,
            "worker_kills": worker_kills, "identical_to_local": records_text(result) == local_text,
            "done_per_unit": done_counts, "starts_per_unit": {k: len(v) for k, v in starts.items()},
            "resumed_starts": sum(1 for v in starts.values() for e in v if e.get("resumed")),
            "every_unit_done_once": all(c == 1 for c in done_counts.values()),
            "sessions": sum(1 for e in events if e.get("event") == "session")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--units", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="a short budget and one round (CI)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from fitting.training import toy_phase_setting, train_grid

    steps, rounds = (200, 1) if args.quick else (args.steps, args.rounds)
    cfg, grid = toy_phase_setting("regression", steps=steps)
    report = {"command": " ".join(["python", "benchmarks/cluster_grid.py"] + sys.argv[1:]), "cells": 176,
              "steps": steps, "cpus": len(os.sched_getaffinity(0))}
    with tempfile.TemporaryDirectory() as tmp:
        report["timing"] = timing(steps, rounds, Path(tmp))
        local_text = records_text(train_grid(cfg, grid, n_jobs=2))
        report["kills"] = kills(cfg, grid, steps, args.units, max(1, steps // 20), local_text, Path(tmp))
    print(json.dumps(report, indent=1))
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
