"""Worker processes end with their caller (particles.core.workers, issue 54):
a SIGKILLed `embdyn sweep --jobs 2` leaves no worker behind (loky's idle
workers used to wait 5 minutes)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from particles.core.workers import POLL, exit_with_parent


def children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_watch_runs_only_in_a_child_of_the_caller():
    assert exit_with_parent(os.getpid()) is False  # the caller itself (n_jobs=1 runs in process)
    assert exit_with_parent(os.getppid() + 10**7) is False  # a process that is not its parent (a cluster)


@pytest.mark.slow
def test_a_killed_sweep_leaves_no_worker(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "particles.cli", "sweep", "--preset", "circles", "--grid",
                             "lam=0,1,2,3", "--seeds", "20", "--set", "steps=20000", "--jobs", "2", "--quiet",
                             "--out", str(tmp_path / "sweep")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        busy: set[int] = set()
        while time.monotonic() < deadline and len(busy) < 2:  # two workers in their first runs
            busy = {c for c in children(proc.pid) if "popen_loky" in cmdline(c) and cpu_seconds(c) > 5.0}
            time.sleep(0.2)
        assert proc.poll() is None and len(busy) == 2, "the sweep did not start two workers"
        workers = children(proc.pid)  # the workers and the resource trackers
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        gone_by = time.monotonic() + 10 * POLL + 5
        while time.monotonic() < gone_by and any(alive(w) for w in workers):
            time.sleep(0.1)
        assert not any(alive(w) for w in workers), f"workers {[w for w in workers if alive(w)]} outlived the sweep"
    finally:
        if proc.poll() is None:
            proc.kill()
