"""Issue 69 (items 3, 7): request bodies and WebSocket messages capped, slow clients timed out, connections
bounded, an abandoned upload one log line; on a real Uvicorn server (small timeouts) over raw sockets."""

import json
import logging
import socket
import threading
import time

import pytest
from starlette.testclient import TestClient

import particles as pt
from fitting.explore import make_app
from fitting.explore.limits import server_config

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("limits")
    pt.preset("circles").replace(p=11, steps=100, record_every=20).run(seed=1).save(folder / "circles.npz")
    return folder / "circles.npz"


def start(app, **limits):
    import uvicorn

    srv = uvicorn.Server(server_config(app, "127.0.0.1", 0, log_config=None, **limits))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started:
        assert time.time() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    return srv, thread, srv.servers[0].sockets[0].getsockname()[1]


@pytest.fixture(scope="module")
def server(run_file):
    app = make_app([run_file], [], body_timeout=BODY_TIMEOUT)
    srv, thread, port = start(app, header_timeout=HEADER_TIMEOUT, max_connections=20)
    yield port
    srv.should_exit = True
    thread.join(10)


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def read_response(sock, timeout=10.0):
    """Everything the server sends until it closes (or ``timeout``), and the seconds it took."""
    sock.settimeout(timeout)
    began, data = time.perf_counter(), b""
    try:
        while True:
            part = sock.recv(65536)
            if not part:
                break
            data += part
            if b"\r\n\r\n" in data:
                head, _, rest = data.partition(b"\r\n\r\n")
                length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if
                          line.lower().startswith(b"content-length:")]
                if length and len(rest) >= length[0]:
                    break
    except (socket.timeout, ConnectionResetError):
        pass
    return data, time.perf_counter() - began


def status(data):
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None


def get_time(port, path="/api/controls"):
    sock = connect(port)
    began = time.perf_counter()
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    data, _ = read_response(sock)
    sock.close()
    assert status(data) == 200, data[:200]
    return time.perf_counter() - began


def post_head(path, length=None, chunked=False, content_type="application/json"):
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
    head += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {length}\r\n"
    return (head + "\r\n").encode()


def test_a_json_body_over_the_cap_is_refused_from_its_length_unread(server):
    sock = connect(server)
    sock.sendall(post_head("/api/runs/0/fit", 200 << 20))  # 200 MiB announced, none of it sent
    data, took = read_response(sock, 5)
    sock.close()
    assert status(data) == 413 and took < 1.0, (data[:300], took)
    message = json.loads(data.partition(b"\r\n\r\n")[2])["error"]
    assert "209715200 bytes" in message and str(64 << 10) in message and "/" not in message


def test_a_chunked_json_body_is_refused_as_it_passes_the_cap(server):
    sock = connect(server)
    sock.sendall(post_head("/api/runs/0/fit", chunked=True))
    chunk = b" " * (40 << 10)
    for _ in range(2):  # 80 KiB, over the 64 KiB cap; the body never ends
        sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    data, took = read_response(sock, 5)
    sock.close()
    assert status(data) == 413 and took < BODY_TIMEOUT, (data[:300], took)  # not the stall's 408


def test_an_upload_over_its_cap_is_refused_from_its_length(server):
    sock = connect(server)
    sock.sendall(post_head("/api/runs?name=big.npz", 600 << 20, content_type="application/octet-stream"))
    data, took = read_response(sock, 5)
    sock.close()
    assert status(data) == 413 and took < 1.0 and b"the file has 629145600 bytes" in data


def test_an_oversized_websocket_message_closes_with_1009(server):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect as ws_connect

    with ws_connect(f"ws://127.0.0.1:{server}/api/live", max_size=None) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "hello"
        ws.send("x" * (15 << 20))  # the probe's 15 MiB message
        with pytest.raises(ConnectionClosed) as closed:
            for _ in range(100):
                ws.recv(timeout=10)
                ws.send('{"type":"ack"}')
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    assert get_time(server) < 1.0


def test_the_app_closes_an_oversized_message_with_1009_on_any_server():
    from starlette.websockets import WebSocketDisconnect

    with TestClient(make_app([], [], max_ws_message=100), base_url="http://127.0.0.1:8050") as client:
        with client.websocket_connect("ws://127.0.0.1:8050/api/live") as ws:
            assert ws.receive_json()["type"] == "hello"
            ws.send_text("y" * 101)
            with pytest.raises(WebSocketDisconnect) as closed:
                for _ in range(100):
                    ws.receive_bytes()  # frames until the close, which raises
                    ws.send_text('{"type":"ack"}')
            assert closed.value.code == 1009


def test_slow_headers_are_dropped(server):
    sock = connect(server)
    sock.sendall(b"GET /api/controls HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
    data, took = read_response(sock, 10)
    sock.close()
    assert took < HEADER_TIMEOUT + 1.5 and status(data) in (None, 400), (data[:200], took)


@pytest.mark.parametrize("path, kind", [("/api/runs/0/fit", "application/json"),
                                        ("/api/runs?name=slow.npz", "application/octet-stream")])
def test_a_stalled_body_is_dropped(server, path, kind, caplog):
    sock = connect(server)
    with caplog.at_level(logging.WARNING, logger="fitting.explore"):
        sock.sendall(post_head(path, 1000, content_type=kind) + b"{")  # 1 of 1000 bytes, then nothing
        data, took = read_response(sock, 10)
    sock.close()
    assert status(data) == 408 and took < BODY_TIMEOUT + 1.5, (data[:200], took)
    assert b"stalled" in data and sum("stalled" in r.getMessage() for r in caplog.records) == 1


def test_a_trickling_body_is_dropped(server):
    sock = connect(server)
    sock.sendall(post_head("/api/runs?name=trickle.npz", 10000, content_type="application/octet-stream"))
    began, data = time.perf_counter(), b""
    sock.settimeout(0.3)
    while time.perf_counter() - began < 10:  # a byte every 0.3 s: never a stall, far below the rate
        try:
            sock.sendall(b"x")
            data = sock.recv(65536)
            if data:
                break
        except socket.timeout:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
    took = time.perf_counter() - began
    end = time.perf_counter() + 2  # the answer's body may come in a packet of its own
    while b"\r\n\r\n" in data and len(data.split(b"\r\n\r\n", 1)[1]) == 0 and time.perf_counter() < end:
        try:
            more = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            continue
        if not more:
            break
        data += more
    sock.close()
    assert status(data) == 408 and b"too slowly" in data and took < BODY_TIMEOUT + 2, (data[:200], took)


def test_an_abandoned_upload_is_one_log_line(server, caplog):
    caplog.set_level(logging.DEBUG)
    for _ in range(3):
        sock = connect(server)
        sock.sendall(post_head("/api/runs?name=gone.npz", 1 << 20, content_type="application/octet-stream")
                     + b"\0" * 4096)
        time.sleep(0.1)
        sock.close()  # mid-body
    deadline = time.time() + 5
    while time.time() < deadline and sum("abandoned" in r.getMessage() for r in caplog.records) < 3:
        time.sleep(0.05)
    assert sum("abandoned" in r.getMessage() for r in caplog.records) == 3
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert get_time(server, "/api/runs") < 1.0


def test_connections_beyond_the_cap_are_refused(run_file):
    srv, thread, port = start(make_app([run_file], []), header_timeout=5, max_connections=3)
    try:
        held = [connect(port) for _ in range(3)]
        time.sleep(0.2)
        extra = connect(port)
        data, took = read_response(extra, 5)
        extra.close()
        assert status(data) == 503 and took < 1.0
        for sock in held:
            sock.close()
        time.sleep(0.2)
        assert get_time(port) < 1.0  # served again once they are gone
    finally:
        srv.should_exit = True
        thread.join(10)


def test_an_upload_with_a_huge_meta_is_refused_before_parsing(tmp_path, run_file):
    from particles.trajectory import Trajectory

    traj = Trajectory.load(run_file)
    traj.meta["note"] = "m" * 5000
    traj.save(tmp_path / "meta.npz")
    with TestClient(make_app([], [], max_meta_chars=1000), base_url="http://127.0.0.1:8050") as client:
        response = client.post("/api/runs?name=meta.npz", content=(tmp_path / "meta.npz").read_bytes())
        assert response.status_code == 422
        assert "meta" in response.json()["error"] and "at most 1000" in response.json()["error"]
        assert "/" not in response.json()["error"]
        ok = client.post("/api/runs?name=circles.npz", content=run_file.read_bytes())
        assert ok.status_code == 200


def test_the_page_s_largest_body_is_far_under_the_cap():
    from fitting.explore.limits import MAX_JSON_BYTES, MAX_WS_MESSAGE
    from fitting.explore.live import CONTROLS

    everything = {name: "x" * 40 for name in CONTROLS}  # every control at once, each value long
    assert len(json.dumps(everything).encode()) * 8 < MAX_JSON_BYTES
    assert len(b'{"type":"ack"}') * 100 < MAX_WS_MESSAGE


@pytest.mark.slow
def test_a_get_answers_while_big_bodies_are_refused_and_parsed(run_file):
    # a raised cap: a 48 MiB body is read and parsed (depth checked in a thread)
    srv, thread, port = start(make_app([run_file], [], max_json_bytes=64 << 20), header_timeout=30)
    body = json.dumps({"start": 0, "stop": 10, "pad": "[" * 10 + "p" * (48 << 20)}).encode()
    try:
        def send(payload, length):
            sock = connect(port)
            sock.sendall(post_head("/api/runs/0/fit", length))
            try:
                sock.sendall(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass
            read_response(sock, 60)
            sock.close()

        workers = [threading.Thread(target=send, args=(body, len(body))) for _ in range(2)]
        workers += [threading.Thread(target=send, args=(b"", 200 << 20)) for _ in range(2)]
        for w in workers:
            w.start()
        latencies = []
        while any(w.is_alive() for w in workers):
            latencies.append(get_time(port))
            time.sleep(0.05)
        for w in workers:
            w.join()
        print(f"GET during big bodies: {len(latencies)} requests, max {max(latencies):.3f} s")
        assert len(latencies) >= 3 and max(latencies) < 1.0, latencies
    finally:
        srv.should_exit = True
        thread.join(10)
