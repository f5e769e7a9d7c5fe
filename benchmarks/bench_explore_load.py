"""The explorer under load (issue 54): heavy live sessions (p = 113, d = 8,
1000 steps a frame, playing) beside a light one; how long the light page
waits for a frame, a control change (on a light and on a heavy session) and
a run's frame take, and how long Ctrl-C takes to stop the server. Then the
server's memory (RSS, now and peak) through compact files that unpack
large, accepted uploads and two concurrent large uploads.

    python benchmarks/bench_explore_load.py --out docs/figures/explore/bench_explore_load.json
    python benchmarks/bench_explore_load.py --quick          # CI: 2 heavy sessions, 5 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_explore import post, start_server  # noqa: E402
from timing import write_json  # noqa: E402

HEAVY = {"p": 113, "d": 8, "steps_per_frame": 1000}


async def heavy_session(url: str, stop: asyncio.Event, frames: list) -> None:
    import websockets

    from fitting.explore.frames import decode_frame

    async with websockets.connect(url.replace("http", "ws") + "api/live", max_size=None) as ws:
        sid = json.loads(await ws.recv())["session"]
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/controls", HEAVY)
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/action", {"action": "play"})
        counted = False
        while not stop.is_set():
            try:
                message = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except asyncio.TimeoutError:
                continue
            if isinstance(message, bytes):
                await ws.send('{"type":"ack"}')
                # counted once its frames run at the heavy settings (a cold cache compiles their kernels first)
                if not counted and decode_frame(message)[0]["p"] == HEAVY["p"]:
                    frames.append(sid)
                    counted = True


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


async def light_session(url: str, seconds: float) -> dict:
    import websockets

    from fitting.explore.frames import decode_frame

    async with websockets.connect(url.replace("http", "ws") + "api/live", max_size=None) as ws:
        sid = json.loads(await ws.recv())["session"]
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/action", {"action": "play"})
        while not isinstance(await ws.recv(), bytes):  # the first frame (after any compilation) starts the clock
            pass
        await ws.send('{"type":"ack"}')
        gaps, changes, last, start = [], [], None, time.perf_counter()
        while time.perf_counter() - start < seconds:
            message = await ws.recv()
            if not isinstance(message, bytes):
                continue
            await ws.send('{"type":"ack"}')
            decode_frame(message)
            now = time.perf_counter()
            if last is not None:
                gaps.append(now - last)
            last = now
            if len(gaps) % 20 == 5:
                changes.append(await loop.run_in_executor(None, timed, post, f"{url}api/live/{sid}/controls",
                                                          {"lam": 1.0 + 0.01 * len(changes)}))
        return {"frame_gap_s": spread(gaps), "control_change_s": spread(changes)}


def spread(values: list) -> dict:
    """Median, max and count (None for no values: nothing arrived in the time measured)."""
    if not values:
        return {"median": None, "max": None, "n": 0}
    return {"median": float(np.median(values)), "max": float(np.max(values)), "n": len(values)}


def get(url: str) -> None:
    urllib.request.urlopen(url, timeout=120).read()


async def measure(url: str, heavy: int, seconds: float, proc) -> dict:
    stop, sids = asyncio.Event(), []
    tasks = [asyncio.create_task(heavy_session(url, stop, sids)) for _ in range(heavy)]
    while len(sids) < heavy:
        await asyncio.sleep(0.1)
    await asyncio.sleep(2.0)  # every heavy session is computing frames
    loop = asyncio.get_running_loop()
    light = await light_session(url, seconds)
    heavy_change = [await loop.run_in_executor(None, timed, post, f"{url}api/live/{sids[0]}/controls",
                                               {"lam": 2.0 + 0.1 * i}) for i in range(5)]
    run_frame = [await loop.run_in_executor(None, timed, get, f"{url}api/runs/0/frame?step=0") for _ in range(5)]
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)  # Ctrl-C while the heavy sessions play
    while proc.poll() is None and time.perf_counter() - t0 < 60:
        await asyncio.sleep(0.01)
    ctrl_c = time.perf_counter() - t0
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"ctrl_c_s": ctrl_c, "heavy_sessions": heavy, "heavy_controls": HEAVY, **light,
            "heavy_control_change_s": spread(heavy_change), "run_frame_s": spread(run_frame)}


def rss_mib(pid: int) -> dict:
    """The process's resident memory now and at its peak (MiB), from /proc."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"rss": int(fields["VmRSS"].split()[0]) / 1024, "peak": int(fields["VmHWM"].split()[0]) / 1024}


def upload(url: str, name: str, data: bytes) -> int:
    req = urllib.request.Request(f"{url}api/runs?name={name}", data=data, method="POST",
                                 headers={"Content-Type": "application/octet-stream"})
    try:
        return urllib.request.urlopen(req, timeout=600).status
    except urllib.error.HTTPError as exc:
        return exc.code


def memory_budget(folder: Path, quick: bool) -> dict:
    """RSS of a fresh server before and after 3 compact files that unpack large (refused at their header),
    3 that are accepted (each 96 MiB once read), then 2 concurrent large uploads (streamed, refused)."""
    import io
    from concurrent.futures import ThreadPoolExecutor

    import particles as pt

    small = folder / "small.npz"
    pt.preset("circles").replace(p=7, steps=50).run(0).save(small)
    proc, url = start_server([small])
    try:
        out = {"start": rss_mib(proc.pid)}
        buf = io.BytesIO()  # float16 zeros: about 1 MB sent, 1 GiB once converted to float64
        np.savez_compressed(buf, schema_version=np.array(1), snapshot_steps=np.arange(64),
                            embeddings=np.zeros((64, 2048, 1024), np.float16), meta=np.array("{}"))
        out["compact_unpacking_large"] = [upload(url, f"bomb{i}.npz", buf.getvalue()) for i in range(3)]
        out["after_compact"] = rss_mib(proc.pid)
        buf = io.BytesIO()  # accepted: 96 MiB of float64 once read
        np.savez_compressed(buf, schema_version=np.array(1), snapshot_steps=np.arange(12),
                            embeddings=np.zeros((12, 1024, 1024)), meta=np.array("{}"))
        out["accepted"] = [upload(url, f"ok{i}.npz", buf.getvalue()) for i in range(3)]
        out["after_accepted"] = rss_mib(proc.pid)
        size = (50 if quick else 500) << 20
        junk = np.random.default_rng(0).bytes(size)
        with ThreadPoolExecutor(2) as pool:
            out["concurrent_large"] = list(pool.map(lambda i: upload(url, f"big{i}.npz", junk), range(2)))
        out["large_upload_mib"] = size >> 20
        out["after_concurrent"] = rss_mib(proc.pid)
        return out
    finally:
        proc.kill()
        proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heavy", type=int, default=6, help="heavy live sessions (default 6; the cap is 8)")
    ap.add_argument("--seconds", type=float, default=15.0, help="seconds the light page is measured")
    ap.add_argument("--quick", action="store_true", help="2 heavy sessions, 5 s")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    heavy, seconds = (2, 5.0) if args.quick else (args.heavy, args.seconds)
    import particles as pt

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.npz"
        pt.preset("circles").replace(p=17, steps=400).run(0).save(path)
        proc, url = start_server([path])
        try:
            result = asyncio.run(measure(url, heavy, seconds, proc))
        finally:
            if proc.poll() is None:
                proc.kill()
    with tempfile.TemporaryDirectory() as folder:
        result["memory_mib"] = memory_budget(Path(folder), args.quick)
    worst = [result[k]["max"] for k in ("frame_gap_s", "control_change_s", "heavy_control_change_s")]
    result["targets"] = {"light frame and control change within 1 s": None not in worst and max(worst) <= 1.0,
                         "Ctrl-C within 1 s": result["ctrl_c_s"] <= 1.0}
    print(json.dumps(result, indent=1))
    if args.out is not None:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
