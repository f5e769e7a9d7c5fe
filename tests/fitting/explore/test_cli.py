"""``embdyn explore`` on the command line: bad input in one line with exit 2, a clean stop on Ctrl-C."""

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

import particles as pt

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
