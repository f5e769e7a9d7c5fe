"""``embdyn explore`` on the command line: bad input in one line with exit 2, a clean stop on Ctrl-C."""

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import particles as pt
from fitting.explore import cli

EMBDYN = [sys.executable, "-c", "from particles.core.cli import main; raise SystemExit(main())"]


def run(*args, timeout=60):
    return subprocess.run(EMBDYN + ["explore", "--no-browser", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "run.npz"
    pt.preset("circles").replace(p=7, steps=100, record_every=10).run(seed=0).save(path)
    return path


def one_line_exit_2(result, *words):
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_port_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        one_line_exit_2(run("--port", str(port)), f"port {port}", "in use", "--port")


@pytest.mark.slow
def test_bad_files_and_values(tmp_path, run_file):
    one_line_exit_2(run(str(tmp_path / "none.npz")), "no file")
    (tmp_path / "notes.txt").write_text("hi")
    one_line_exit_2(run(str(tmp_path / "notes.txt")), "FILE must be")
    one_line_exit_2(run(str(tmp_path)), "folder")
    (tmp_path / "broken.npz").write_bytes(run_file.read_bytes()[:200])
    one_line_exit_2(run(str(tmp_path / "broken.npz")), "trajectory field")
    (tmp_path / "foreign.csv").write_text("a,b\n1,2\n")
    one_line_exit_2(run(str(tmp_path / "foreign.csv")), "sweep table")
    one_line_exit_2(run("--port", "70000"), "--port", "[0, 65535]")
    one_line_exit_2(run("--host", "256.1.1.1", "--port", "0"), "--host")


def first_line(proc, timeout=60.0):
    """The first line of the server's stdout, or "" after ``timeout`` seconds (never hangs)."""
    import threading

    box = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


def raw_get(url, path):
    """A GET with the path exactly as written (clients normalise "..")."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return data.decode("latin-1")


def test_serves_and_stops_on_ctrl_c(run_file):
    proc = subprocess.Popen(EMBDYN + ["explore", "--no-browser", "--port", "0", str(run_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = first_line(proc)
        assert "serving on http://127.0.0.1:" in line, line
        url = line.split("serving on ")[1].split()[0]
        for path in ("/static/../../pyproject.toml", "/static/../server.py", "/static/..%2f..%2fpyproject.toml",
                     "/static//etc/passwd", "/../../etc/passwd", "/api/runs/../../../etc/passwd"):
            answer = raw_get(url, path)
            status = answer.split(" ", 2)[1]
            assert status in ("400", "403", "404"), (path, answer[:200])
            assert "[project]" not in answer and "root:" not in answer and "Starlette" not in answer, path
        runs = json.loads(urllib.request.urlopen(url + "api/runs", timeout=10).read())["runs"]
        assert runs[0]["name"].endswith("run.npz")
        if cli.server_environment(os.environ) is not None and glibc() and "EMBDYN_EXPLORE_IN_PROCESS" not in os.environ:
            # the server process (the same pid, started again once) runs with two malloc arenas
            assert b"MALLOC_ARENA_MAX=2" in Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        assert b"explorer" in urllib.request.urlopen(url, timeout=10).read()
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
        err = proc.stderr.read()
        assert code == 0 and "stopped" in err and "Traceback" not in err, (code, err)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()


def glibc():
    return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_the_server_environment_sets_two_arenas_unless_the_user_set_them():
    user = {"PATH": "/usr/bin", "HOME": "/home/someone"}
    env = cli.server_environment(user)
    assert env["MALLOC_ARENA_MAX"] == cli.SERVER_ARENA_MAX == "2" and env["PATH"] == "/usr/bin"
    assert "MALLOC_ARENA_MAX" not in user  # the caller's mapping is not changed
    # the user's own setting is kept: no new environment
    assert cli.server_environment({**user, "MALLOC_ARENA_MAX": "8"}) is None
    assert cli.server_environment({**user, "MALLOC_ARENA_MAX": ""}) is None
    assert cli.server_environment({**user, "GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}) is None
    # the re-executed server does not start again: no loop
    assert cli.server_environment(env) is None
    # and takes the setting out of its environment (glibc read it at start): the processes it starts get the user's
    cli.restore_environment(env)
    assert env == user
    mine = {**user, "MALLOC_ARENA_MAX": "8"}
    cli.restore_environment(mine)
    assert mine["MALLOC_ARENA_MAX"] == "8"


@pytest.fixture
def execs(monkeypatch):
    """The server's start again, recorded instead of made, on a command line of ``embdyn explore``."""
    calls = []
    monkeypatch.setattr(os, "execve", lambda *a: calls.append(a))
    monkeypatch.setattr(sys, "argv", ["embdyn", "explore", "--port", "0"])
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "/venv/bin/embdyn", "explore", "--port", "0"])
    for name in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "EMBDYN_EXPLORE_IN_PROCESS", "EMBDYN_EXPLORE_SET_ARENA_MAX"):
        monkeypatch.delenv(name, raising=False)
    return calls


@pytest.mark.skipif(not glibc(), reason="the arenas are glibc's")
def test_the_command_starts_itself_again_once_with_the_setting(execs, monkeypatch):
    cli.reexec_with_arena_max()
    (path, argv, env), = execs
    assert path == sys.executable and argv == sys.orig_argv and env["MALLOC_ARENA_MAX"] == "2"
    assert "MALLOC_ARENA_MAX" not in os.environ  # this process's environment is not changed
    monkeypatch.setattr(os, "environ", env)  # the started server: it does not start again
    cli.reexec_with_arena_max()
    assert len(execs) == 1


@pytest.mark.parametrize("name, value", [("MALLOC_ARENA_MAX", "8"), ("EMBDYN_EXPLORE_IN_PROCESS", "1"),
                                         ("GLIBC_TUNABLES", "glibc.malloc.arena_max=3")])
def test_a_users_setting_or_a_server_in_a_callers_process_is_left_alone(execs, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    cli.reexec_with_arena_max()
    assert execs == []


def test_a_server_in_a_thread_is_left_alone(execs):
    thread = threading.Thread(target=cli.reexec_with_arena_max)
    thread.start()
    thread.join(10)
    assert execs == []


def test_memory_is_handed_back_after_a_session_closes():
    sessions, trims, stop = {"a": 1, "b": 2}, [], threading.Event()
    looker = threading.Thread(target=cli.return_freed_memory, args=(sessions, stop, trims.append, 0.005))
    looker.start()
    try:
        deadline = time.monotonic() + 30
        time.sleep(0.05)
        assert trims == []  # nothing closed: nothing to hand back
        del sessions["a"]
        while len(trims) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        assert trims == [0, 0]  # at the look after the close and the next, then no more
    finally:
        stop.set()
        looker.join(10)
    assert not looker.is_alive()
