"""The explorer's Network tab at its largest controls, and the server's memory
after the sessions close (issue 69, item 8).

``embdyn explore`` runs in a subprocess on a free loopback port. Each round
opens N live Network sessions at once (default 7), each set to one of the
heaviest controls the bound on a training step allows (p = 97 and the widest
hidden layer there, or the widest layer and the largest p there; 1000 steps a
frame), plays them for some seconds while this process acknowledges every
frame as a page does, changes two controls of each session (the weight decay
halfway, the seed, which builds the network again, at three quarters) and
times them until a frame carries them, then closes them all. The server's resident memory
(VmRSS of /proc/PID/status) is read before each round and a few seconds after
its sessions have closed; a warm-up round before the first (torch imported,
kernels and metrics compiled) is shown but not counted. Three servers are
measured: as ``embdyn explore`` runs it (MALLOC_ARENA_MAX=2, set by the
command, and glibc's malloc_trim after sessions close); with MALLOC_ARENA_MAX=2
alone; and as before issue 69 (glibc's default arenas, no trim). The last two
run with EMBDYN_EXPLORE_IN_PROCESS=1, which leaves the allocator to the
environment.

    python benchmarks/bench_explore_sessions.py --out docs/figures/explore/bench_explore_sessions.json
    python benchmarks/bench_explore_sessions.py --quick     # 3 sessions, 2 rounds, the command's setting only

Targets (issue 69): a frame's steps end before a step that would pass FRAME_BUDGET (0.25 s; one step
at least, and a step at the bound takes at most about 30 ms of one core, less than a Live tab's chunk of
50 ms), so frames come a few tenths of a second apart with 7 sessions on 2 cores and never more than 1 s
apart; a control change in force within about 1 s; RSS after the last round within 20 % of the RSS before
the first (warmed up). The machine's load average is recorded before and after: the cores may be shared
with other work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import write_json  # noqa: E402

#: the heaviest Network controls a step's bound (fitting.training.live.MAX_STEP_WORK) allows, cycled over the
#: sessions: the survival MLP at p = 97 and its widest layer there, the constant-attention network at its widest
#: layer (the slowest step a multiply-add measured) and at p = 97
HEAVIEST = (("survival-mlp", {"p": 97, "hidden": 73}),
            ("constant-attention", {"p": 61, "hidden": 1024}),
            ("constant-attention", {"p": 97, "hidden": 260}))
STEPS_PER_FRAME = 1000  # the control's largest value: every frame is cut by the time budget
#: the control changes each session makes, at these shares of its seconds: one acting on the running optimiser,
#: one starting the run again (a new network built)
CHANGES = ((0.5, {"weight_decay": 0.4}), (0.75, {"seed": 1}))


def start_server(env: dict) -> tuple[subprocess.Popen, str]:
    """``embdyn explore --port 0`` in its own process, and its address once it listens."""
    log = tempfile.TemporaryFile(mode="w+")  # the server's stderr: a file, so a full pipe never blocks it
    proc = subprocess.Popen([sys.executable, "-c", "from particles.core.cli import main; raise SystemExit(main())",
                             "explore", "--no-browser", "--host", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    line = proc.stdout.readline()  # the server prints its address once listening, or exits
    if "serving on" not in line:
        proc.wait(30)
        log.seek(0)
        raise RuntimeError(f"the server did not start: {line} {log.read()}")
    return proc, line.split("serving on ")[1].split()[0]


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=120).read())


def rss_mib(pid: int) -> float:
    """The process's resident memory now (MiB), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status")


def arena_setting(pid: int) -> str | None:
    """MALLOC_ARENA_MAX as the server process started with it (its /proc environ: what glibc read)."""
    for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if item.startswith(b"MALLOC_ARENA_MAX="):
            return item.split(b"=", 1)[1].decode()
    return None


async def session(url: str, index: int, seconds: float, out: list, posts) -> None:
    """One Network page: its model at the heaviest controls, playing for ``seconds``; a weight-decay change
    halfway. Appends what it measured to ``out``; ``posts``: the executor of its HTTP requests (a thread each
    session, so that the client never queues them)."""
    import websockets

    from fitting.explore.frames import decode_frame

    model, controls = HEAVIEST[index % len(HEAVIEST)]
    loop = asyncio.get_running_loop()
    async with websockets.connect(f"{url.replace('http', 'ws')}api/live?kind=network&model={model}",
                                  max_size=None) as ws:
        sid = json.loads(await ws.recv())["session"]
        await loop.run_in_executor(posts, post, f"{url}api/live/{sid}/controls",
                                   {**controls, "steps_per_frame": STEPS_PER_FRAME})
        await loop.run_in_executor(posts, post, f"{url}api/live/{sid}/action", {"action": "play"})
        arrivals, computes, steps_s, stepped, changes = [], [], [], [], []
        plan = list(CHANGES)  # (share of the seconds, change) still to make
        start = time.perf_counter()
        pending = None  # a change's request, while it is on its way
        while time.perf_counter() - start < seconds:
            message = await ws.recv()
            if not isinstance(message, bytes):
                continue
            now = time.perf_counter()
            await ws.send('{"type":"ack"}')
            header = decode_frame(message)[0]
            if header["p"] != controls["p"] or not header.get("playing"):
                continue  # a frame of the default run, before the controls took effect
            arrivals.append(now)
            computes.append(header["compute_ms"] / 1e3)
            steps_s.append(header["steps_ms"] / 1e3)
            if header.get("cut"):
                stepped.append(header["cut"]["done"])
            if plan and pending is None and now - start > plan[0][0] * seconds:
                body = plan.pop(0)[1]
                pending = (time.perf_counter(), body,
                           loop.run_in_executor(posts, post, f"{url}api/live/{sid}/controls", body))
            if pending is not None and pending[2].done():
                reply = pending[2].result()
                changes.append({"change": pending[1], "sent": pending[0], "in_frame_s": None,
                                "answered_s": time.perf_counter() - pending[0], "version": reply["version"]})
                pending = None
            for change in changes:
                if change["in_frame_s"] is None and header["version"] >= change["version"]:
                    change["in_frame_s"] = now - change["sent"]
        out.append({"model": model, "controls": controls, "arrivals": arrivals, "computes": computes,
                    "steps_s": steps_s, "steps_per_frame": stepped, "changes": changes})


def spread(values) -> dict:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return {"p50": None, "p95": None, "max": None, "n": 0}
    return {"p50": float(np.median(values)), "p95": float(np.percentile(values, 95)), "max": float(values.max()),
            "n": int(values.size)}


async def one_round(url: str, sessions: int, seconds: float) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    out: list = []
    with ThreadPoolExecutor(max_workers=sessions) as posts:
        await asyncio.gather(*(session(url, i, seconds, out, posts) for i in range(sessions)))
    gaps = np.concatenate([np.diff(s["arrivals"][1:]) for s in out if len(s["arrivals"]) > 2] or [[]])
    computes = np.concatenate([s["computes"][1:] for s in out] or [[]])
    steps_s = np.concatenate([s["steps_s"][1:] for s in out] or [[]])
    changes = [c for s in out for c in s["changes"]]
    return {"frame_interval_s": spread(gaps), "frame_steps_s": spread(steps_s),
            "frame_compute_s": spread(computes),
            "steps_a_frame": spread(np.concatenate([s["steps_per_frame"] for s in out] or [[]])),
            "control_answered_s": spread([c["answered_s"] for c in changes]),
            "control_in_frame_s": spread([c["in_frame_s"] for c in changes if c["in_frame_s"] is not None]),
            "control_in_frame_s_by_control": {name: spread([c["in_frame_s"] for c in changes
                                                            if name in c["change"] and c["in_frame_s"] is not None])
                                              for _, change in CHANGES for name in change},
            "changes": [{"control": ", ".join(c["change"]), "answered_s": c["answered_s"], "in_frame_s": c["in_frame_s"]}
                        for c in changes],
            "changes_never_shown": sum(c["in_frame_s"] is None for c in changes)}


#: the servers measured: the environment each runs in, beside this process's without the allocator's settings
SERVERS = {"embdyn explore": {},
           "MALLOC_ARENA_MAX=2 alone": {"MALLOC_ARENA_MAX": "2", "EMBDYN_EXPLORE_IN_PROCESS": "1"},
           "before (glibc defaults)": {"EMBDYN_EXPLORE_IN_PROCESS": "1"}}


def measure(extra: dict, rounds: int, sessions: int, seconds: float, settle: float, warmup: int) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_ARENA_MAX", "EMBDYN_EXPLORE_SET_ARENA_MAX", "EMBDYN_EXPLORE_IN_PROCESS")}
    proc, url = start_server({**env, **extra})
    try:
        out = {"environment": extra, "server_malloc_arena_max": arena_setting(proc.pid), "rounds": []}
        time.sleep(settle)  # the server's warm-up compilation
        for r in range(-warmup, rounds):  # rounds before 1: torch imported, its kernels and the metrics compiled
            before = rss_mib(proc.pid)
            t0 = time.perf_counter()
            result = asyncio.run(one_round(url, sessions, seconds))
            time.sleep(settle)  # the closed sessions' last frames end
            result.update({"round": r + 1, "rss_before_mib": before, "rss_after_mib": rss_mib(proc.pid),
                           "round_s": time.perf_counter() - t0})
            out["rounds"].append(result)
        out["warm_up_rounds"] = out["rounds"][:warmup]
        out["rounds"] = out["rounds"][warmup:]
        first, last = out["rounds"][0]["rss_before_mib"], out["rounds"][-1]["rss_after_mib"]
        out["rss_growth"] = last / first - 1
        return out
    finally:
        proc.kill()
        proc.wait()


def table(name: str, result: dict) -> str:
    lines = [f"{name} (the server's MALLOC_ARENA_MAX: {result['server_malloc_arena_max']}; environment given: "
             f"{result['environment'] or 'none'})",
             "round  interval p50/p95/max s  steps p95/max s  compute max s  change max s  RSS before -> after MiB"]
    for r in result["warm_up_rounds"] + result["rounds"]:
        i, st, c = r["frame_interval_s"], r["frame_steps_s"], r["frame_compute_s"]
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        name = r["round"] if r["round"] > 0 else "warm"
        lines.append(f"{name:>5}  {fmt(i['p50']):>9}/{fmt(i['p95'])}/{fmt(i['max'])}"
                     f"  {fmt(st['p95']):>10}/{fmt(st['max'])}  {fmt(c['max']):>13}  "
                     f"{fmt(r['control_in_frame_s']['max']):>12}  {r['rss_before_mib']:11.0f} -> "
                     f"{r['rss_after_mib']:6.0f}")
    lines.append(f"RSS after round {len(result['rounds'])} / before round 1: {1 + result['rss_growth']:.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=7, help="Network sessions a round (default 7; the cap is 8)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of sessions opened and closed (default 5)")
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds each round's sessions play (default 6)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after a round before RSS is read (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="rounds before the first measured one (default 1): the "
                                                          "server imports torch and compiles what the frames need")
    ap.add_argument("--no-compare", action="store_true", help="measure only the server as embdyn explore runs it")
    ap.add_argument("--quick", action="store_true", help="3 sessions, 2 rounds of 3 s, no comparison")
    ap.add_argument("--out", type=Path, default=None, help="JSON results")
    args = ap.parse_args(argv)
    if args.quick:
        args.sessions, args.rounds, args.seconds, args.no_compare = 3, 2, 3.0, True
    from fitting.explore.server import FRAME_BUDGET
    from fitting.training.live import MAX_STEP_WORK

    result = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "load_average_before": os.getloadavg(),
              "sessions": args.sessions,
              "rounds": args.rounds, "seconds_a_round": args.seconds, "frame_budget_s": FRAME_BUDGET,
              "max_step_work": MAX_STEP_WORK, "steps_per_frame": STEPS_PER_FRAME,
              "controls": [{"model": m, **c} for m, c in HEAVIEST]}
    servers = {"embdyn explore": {}} if args.no_compare else SERVERS
    for name, extra in servers.items():
        result[name] = measure(extra, args.rounds, args.sessions, args.seconds, args.settle, args.warmup)
        print(table(name, result[name]), flush=True)
    result["load_average_after"] = os.getloadavg()
    rounds = result["embdyn explore"]["rounds"]
    result["targets"] = {
        "frames at most 1 s apart": all((r["frame_interval_s"]["max"] or 0) <= 1.0 for r in rounds),
        "control change in force within 1 s": all((r["control_in_frame_s"]["max"] or 0) <= 1.0
                                                  and r["changes_never_shown"] == 0 for r in rounds),
        "RSS after within 20 % of before": result["embdyn explore"]["rss_growth"] <= 0.2}
    print(json.dumps(result["targets"]))
    if args.out is not None:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
