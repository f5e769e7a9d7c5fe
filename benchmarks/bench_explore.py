"""Benchmark of ``embdyn explore``: frames a second delivered by the Live tab, how soon a
control change shows, and how fast the Run tab opens and scrubs a long trajectory.

The server runs as its own process (``embdyn explore --port 0``); the client is this
process, speaking the page's protocol (a WebSocket that acknowledges every frame, the
same HTTP requests), and with ``--browser`` also Debian's chromium, headless, reading
the page's own counters. Each rate is measured idle and beside a busy neighbour (a
process spinning on one of the two cores).

    embdyn train survival-mlp --steps 30000 --first-seed 7 --out runs      # the 30 000-step run
    python benchmarks/bench_explore.py --trajectory runs/survival-mlp_seed7.npz --browser \\
        --out docs/figures/explore/bench_explore.json

Targets (issue 41): Live at p = 17 >= 30 frames/s, at p = 59 >= 10 (20 steps a frame, 2 cores);
a change takes effect within one frame; a 30 000-step survival run paints within 2 s and
scrubs within 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from timing import busy_neighbour, write_json  # noqa: E402


def start_server(files):
    import tempfile

    log = tempfile.TemporaryFile(mode="w+")  # the server's stderr: a file, so a full pipe never blocks it
    proc = subprocess.Popen([sys.executable, "-c", "from particles.core.cli import main; raise SystemExit(main())",
                             "explore", "--no-browser", "--port", "0", *map(str, files)],
                            stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()  # the server prints its address once listening, or exits
    if "serving on" not in line:
        proc.wait(30)
        log.seek(0)
        raise RuntimeError(f"the server did not start: {line} {log.read()}")
    return proc, line.split("serving on ")[1].split()[0]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())


async def particle_panel(url, network_sid, ready):
    """The Network tab's particle panel, playing beside the network: a particle session handed the network's
    embedding (the preset's law, each term's force in the frames), its frames taken and acknowledged as a page
    does, until cancelled."""
    import websockets

    loop = asyncio.get_running_loop()
    async with websockets.connect(url.replace("http", "ws") + "api/live", max_size=None) as ws:
        sid = json.loads(await ws.recv())["session"]
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/handover", {"from": network_sid, "law": "preset"})
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/controls", {"force_terms": "on"})
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/action", {"action": "play"})
        ready.set()
        while True:
            if isinstance(await ws.recv(), bytes):
                await ws.send('{"type":"ack"}')


async def live_rate(url, p, seconds, steps_per_frame=20, changes=0, kind="particles", beside=False):
    """Frames a second a page-like client receives; with ``changes``, how many frames still
    carry the old control values after a change was accepted. ``kind="network"``: the Network
    tab's session (the constant-attention network training), the change a weight decay;
    ``beside``: with the tab's particle panel playing beside it."""
    import websockets

    from fitting.explore.frames import decode_frame

    query = "" if kind == "particles" else f"?kind={kind}"
    async with websockets.connect(url.replace("http", "ws") + "api/live" + query, max_size=None) as ws:
        sid = json.loads(await ws.recv())["session"]
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/controls",
                                   {"p": p, "steps_per_frame": steps_per_frame})
        panel = None
        if beside:
            ready = asyncio.Event()
            panel = asyncio.create_task(particle_panel(url, sid, ready))
            await ready.wait()
        await loop.run_in_executor(None, post, f"{url}api/live/{sid}/action", {"action": "play"})

        async def frame():
            while True:
                message = await ws.recv()
                if isinstance(message, bytes):
                    await ws.send('{"type":"ack"}')
                    return decode_frame(message)[0]

        header = await frame()
        while header["p"] != p:
            header = await frame()
        warm = time.perf_counter()
        while time.perf_counter() - warm < 1.0:
            await frame()
        start, n, first_step = time.perf_counter(), 0, None
        while time.perf_counter() - start < seconds:
            header = await frame()
            first_step = header["step"] if first_step is None else first_step
            n += 1
        elapsed = time.perf_counter() - start
        out = {"kind": kind, "p": p, "steps_per_frame": steps_per_frame, "frames_per_s": n / elapsed,
               "steps_per_s": (header["step"] - first_step) / elapsed}
        stale = []
        for i in range(changes):
            # the change is sent while frames flow; count frames that arrive after it was accepted and
            # still carry the old version
            change = {"lam": 1.0 + 0.01 * i} if kind == "particles" else {"weight_decay": 0.3 + 0.01 * i}
            task = loop.run_in_executor(None, post, f"{url}api/live/{sid}/controls", change)
            while not task.done():
                await frame()
            version = (await task)["version"]
            old = 0
            while (await frame())["version"] < version:
                old += 1
            stale.append(old)
        if stale:
            out["old_frames_after_change"] = {"max": max(stale), "mean": float(np.mean(stale)), "n": len(stale)}
        if panel is not None:
            out["particle_panel_beside"] = True
            panel.cancel()
        return out


def run_tab(url, run_id, scrubs, rng):
    """Opening (summary and the first frame, as the page does) and scrubbing (one frame each)."""
    t0 = time.perf_counter()
    summary = urllib.request.urlopen(f"{url}api/runs/{run_id}", timeout=60).read()
    from fitting.explore.frames import decode_frame

    header, _ = decode_frame(summary)
    urllib.request.urlopen(f"{url}api/runs/{run_id}/frame?step={header['last_step']}", timeout=60).read()
    first_paint = time.perf_counter() - t0
    latencies = []
    for step in rng.integers(header["first_step"], header["last_step"] + 1, scrubs):
        t = time.perf_counter()
        urllib.request.urlopen(f"{url}api/runs/{run_id}/frame?step={int(step)}", timeout=60).read()
        latencies.append(time.perf_counter() - t)
    lat = np.array(latencies or [np.nan]) * 1e3
    return {"first_paint_s": first_paint, "summary_bytes": len(summary), "scrub_ms_median": float(np.median(lat)),
            "scrub_ms_p95": float(np.percentile(lat, 95)), "scrub_ms_max": float(lat.max()), "scrubs": scrubs,
            "steps": header["last_step"], "snapshots": header["snapshots"], "p": header["p"], "d": header["d"]}


def upload_open(url, path):
    """The page's "open a file": upload, then the first paint."""
    t0 = time.perf_counter()
    req = urllib.request.Request(f"{url}api/runs?name={Path(path).name}", data=Path(path).read_bytes(), method="POST")
    run_id = json.loads(urllib.request.urlopen(req, timeout=120).read())["id"]
    upload = time.perf_counter() - t0
    result = run_tab(url, run_id, 0, np.random.default_rng(0))
    return {"upload_s": upload, "upload_and_first_paint_s": upload + result["first_paint_s"]}


def browser_rates(url, seconds, p_values):
    os.environ.setdefault("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1000"):
        options.add_argument(arg)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    out = {}
    try:
        d.get(url + "#live")  # the page opens on the Run tab when runs are given; the Live tab is measured first
        deadline = time.time() + 30
        while d.find_element("tag name", "body").get_attribute("data-ready") != "1":
            assert time.time() < deadline
            time.sleep(0.05)
        for p in p_values:
            d.execute_script(f"sendControl('p', {p}); sendControl('steps_per_frame', 20);")
            d.find_element("id", "btn-play").click()
            deadline = time.time() + 60
            while d.execute_script("return state.meta && state.meta.p") != p or \
                    int(d.find_element("id", "live-step").text or 0) < 100:
                assert time.time() < deadline
                time.sleep(0.05)
            time.sleep(1.0)
            f0, s0, t0 = d.execute_script("return [state.frames, Number(document.getElementById('live-step')"
                                          ".textContent), performance.now()]")
            time.sleep(seconds)
            f1, s1, t1 = d.execute_script("return [state.frames, Number(document.getElementById('live-step')"
                                          ".textContent), performance.now()]")
            out[f"p{p}"] = {"compute_ms": d.execute_script("return state.computeMs"),
                            "page_ms": d.execute_script("return state.drawMs"), "frames_per_s": (f1 - f0) / ((t1 - t0) / 1e3), "steps_per_s": (s1 - s0) / ((t1 - t0) / 1e3)}
            d.find_element("id", "btn-pause").click()
        # the Run tab: first paint of the first run (as the page measures it: summary, decode, draw, first frame)
        # and scrubbing (slider input to the embedding drawn), 30 random steps
        d.find_element("id", "tab-button-run").click()
        deadline = time.time() + 60
        while not d.find_element("tag name", "body").get_attribute("data-run-paint"):
            assert time.time() < deadline
            time.sleep(0.02)
        out["run_first_paint_ms"] = float(d.find_element("tag name", "body").get_attribute("data-run-paint"))
        rng = np.random.default_rng(1)
        lo, hi = (int(d.find_element("id", "run-step").get_attribute(a)) for a in ("min", "max"))
        scrubs = []
        for step in rng.integers(lo, hi + 1, 30):
            d.execute_script("document.body.dataset.scrubMs = ''; const s = document.getElementById('run-step');"
                             f"s.value = {int(step)}; s.dispatchEvent(new Event('input'));")
            deadline = time.time() + 10
            while not d.find_element("tag name", "body").get_attribute("data-scrub-ms"):
                assert time.time() < deadline
                time.sleep(0.005)
            scrubs.append(float(d.find_element("tag name", "body").get_attribute("data-scrub-ms")))
        out["run_scrub_ms"] = {"median": float(np.median(scrubs)), "p95": float(np.percentile(scrubs, 95)),
                               "max": float(np.max(scrubs)), "n": len(scrubs)}
    finally:
        d.quit()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trajectory", help="a long trajectory for the Run tab (default: a synthetic one of the shape of "
                                         "a 30 000-step survival run)")
    ap.add_argument("--browser", action="store_true", help="also measure in headless chromium")
    ap.add_argument("--quick", action="store_true", help="short measurements (CI smoke run)")
    ap.add_argument("--out", default=None, help="JSON results")
    args = ap.parse_args(argv)
    seconds = 1.5 if args.quick else 5.0
    rng = np.random.default_rng(0)
    import tempfile

    tmp = tempfile.TemporaryDirectory()
    path = args.trajectory
    if path is None:
        import particles as pt

        # the shape of `embdyn train survival-mlp --steps 30000`: signals every step, 301 snapshots of 59 x 128
        steps = 30_000 if not args.quick else 3_000
        snaps = np.arange(0, steps + 1, 100)
        emb = rng.standard_normal((len(snaps), 59, 128))
        sig = np.abs(rng.standard_normal((steps, 29))).cumsum(0) / np.sqrt(np.arange(1, steps + 1))[:, None]
        path = Path(tmp.name) / "synthetic_survival.npz"
        pt.Trajectory(emb, snaps, steps=np.arange(steps), signals=sig, meta={"synthetic": True}).save(path)
    results = {"trajectory": str(path), "python": sys.version.split()[0], "cpus": os.cpu_count(), "cases": []}
    for busy in (False, True):
        with busy_neighbour(busy):
            t0 = time.perf_counter()
            proc, url = start_server([path])
            start_s = time.perf_counter() - t0
            try:
                case = {"busy_neighbour": busy, "server_start_s": start_s}
                case["live"] = [asyncio.run(live_rate(url, p, seconds, changes=0 if args.quick else 20))
                                for p in (17, 59)]
                if importlib.util.find_spec("torch") is not None:  # the Network tab trains with torch
                    case["network"] = [asyncio.run(live_rate(url, 17, seconds, steps_per_frame=spf, kind="network",
                                                             changes=0 if args.quick else 20, beside=beside))
                                       for beside in (False, True) for spf in (10, 20)]
                case["run_tab"] = run_tab(url, 0, 20 if args.quick else 200, rng)
                case["open_by_upload"] = upload_open(url, path)
                if args.browser:
                    case["browser"] = browser_rates(url, seconds, (17, 59))
            finally:
                proc.terminate()
                proc.wait(30)
        results["cases"].append(case)
        live = ", ".join(f"p = {r['p']}: {r['frames_per_s']:.1f} frames/s"
                         + (f" (old frames after a change: max {r['old_frames_after_change']['max']})"
                            if "old_frames_after_change" in r else "") for r in case["live"])
        if "network" in case:
            live += "; network p = 17: " + ", ".join(
                f"{r['frames_per_s']:.1f} frames/s at {r['steps_per_frame']} steps a frame"
                + (" with the particle panel" if r.get("particle_panel_beside") else "")
                + (f" (old frames after a change: max {r['old_frames_after_change']['max']})"
                   if "old_frames_after_change" in r else "") for r in case["network"])
        rt = case["run_tab"]
        print(f"{'busy neighbour' if busy else 'idle'}: live {live}; run tab first paint {rt['first_paint_s']:.2f} s "
              f"(upload + paint {case['open_by_upload']['upload_and_first_paint_s']:.2f} s), scrub median "
              f"{rt['scrub_ms_median']:.1f} ms, p95 {rt['scrub_ms_p95']:.1f} ms, max {rt['scrub_ms_max']:.1f} ms")
        if "browser" in case:
            b = case["browser"]
            print(f"  in chromium: p = 17: {b['p17']['frames_per_s']:.1f} frames/s, p = 59: "
                  f"{b['p59']['frames_per_s']:.1f} frames/s; run tab first paint {b['run_first_paint_ms']:.0f} ms, "
                  f"scrub median {b['run_scrub_ms']['median']:.1f} ms, p95 {b['run_scrub_ms']['p95']:.1f} ms, "
                  f"max {b['run_scrub_ms']['max']:.1f} ms")
    if args.out:
        write_json(args.out, results)
        print(f"-> {args.out}")


if __name__ == "__main__":
    main()
