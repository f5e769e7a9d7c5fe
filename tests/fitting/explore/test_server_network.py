"""The Network tab's endpoints, in-process: a network session over the Live
tab's WebSocket protocol (frames, controls, actions, refusals), and the page's
answer without torch."""

import os

import numpy as np
import pytest
from starlette.testclient import TestClient

from fitting.explore import make_app
from particles.presets import preset
from fitting.explore import server as server_module

from .test_server import frames

WS = "ws://127.0.0.1:8050/api/live?kind=network"


@pytest.fixture(scope="module")
def client():
    with TestClient(make_app([], []), base_url="http://127.0.0.1:8050") as c:
        yield c


def test_without_torch_the_tab_says_how_to_install_it(client, monkeypatch):
    def missing(name="constant-attention"):
        raise RuntimeError("the Network tab trains the network with torch, which is not installed: "
                           "pip install 'embedding-dynamics[torch]'")

    monkeypatch.setattr(server_module, "live_network_class", missing)
    body = client.get("/api/network/controls").json()
    assert body["available"] is False and "embedding-dynamics[torch]" in body["error"]
    with client.websocket_connect(WS) as ws:
        msg = ws.receive_json()
        assert msg["type"] == "error" and "pip install" in msg["error"]
    # the particle tab still works
    with client.websocket_connect("ws://127.0.0.1:8050/api/live") as ws:
        assert ws.receive_json()["type"] == "hello"


def test_a_bad_kind_is_refused_by_name(client):
    with client.websocket_connect("ws://127.0.0.1:8050/api/live?kind=rocket") as ws:
        msg = ws.receive_json()
        assert msg["type"] == "error" and "kind" in msg["error"] and "rocket" in msg["error"]
    # a long non-ASCII kind: the close reason is cut to the protocol's 123 bytes, not a server error
    with client.websocket_connect("ws://127.0.0.1:8050/api/live?kind=" + "\u00fc" * 100) as ws:
        assert ws.receive_json()["type"] == "error"


def test_no_registered_network_is_said_not_raised(client, monkeypatch):
    def unregistered(name="constant-attention"):
        raise ValueError("network must be one of [], got 'constant-attention' (is the package installed?)")

    monkeypatch.setattr(server_module, "live_network_class", unregistered)
    r = client.get("/api/network/controls")
    assert r.status_code == 200 and r.json()["available"] is False and "installed" in r.json()["error"]


def test_network_session_trains_and_takes_controls(client):
    if os.environ.get("EMBDYN_REQUIRE_TORCH"):
        import torch  # noqa: F401
    else:
        pytest.importorskip("torch")
    spec = client.get("/api/network/controls").json()
    assert spec["available"] and spec["controls"]["decay_on"]["choices"] == ["all", "embedding", "classifier"]
    with client.websocket_connect(WS) as ws:
        hello = ws.receive_json()
        sid = hello["session"]
        assert hello["type"] == "hello" and hello["meta"]["kind"] == "network" and hello["meta"]["p"] == 17
        (header, arrays), = frames(ws, 1)
        assert header["step"] == 0 and arrays["positions"].shape == (17, 2)
        assert np.all(arrays["force"] == 0)  # no step yet: no gradient
        assert client.post(f"/api/live/{sid}/action", json={"action": "play"}).status_code == 200
        got = frames(ws, 6)
        steps = [h["step"] for h, _ in got]
        assert steps == sorted(steps) and steps[-1] >= 60
        assert all(0.0 <= h["train_acc"] <= 1.0 and h["structure"] for h, _ in got[1:])
        r = client.post(f"/api/live/{sid}/controls", json={"weight_decay": 1.0, "decay_on": "embedding",
                                                           "steps_per_frame": 5})
        assert r.status_code == 200 and not r.json()["restart"] and r.json()["values"]["decay_on"] == "embedding"
        version = r.json()["version"]
        later = frames(ws, 4)
        assert later[-1][0]["version"] == version and later[-1][0]["step"] - later[-2][0]["step"] == 5
        for body, name in [({"lr": 0}, "lr"), ({"decay_on": "bias"}, "decay_on"), ({"p": 2}, "p"), ({"wd": 1}, "wd")]:
            bad = client.post(f"/api/live/{sid}/controls", json=body)
            assert bad.status_code == 422 and bad.json()["parameter"] == name, bad.json()
        client.post(f"/api/live/{sid}/action", json={"action": "pause"})
        r = client.post(f"/api/live/{sid}/controls", json={"p": 11})
        assert r.json()["restart"] and r.json()["meta"]["p"] == 11
        for _ in range(4):
            (header, arrays), = frames(ws, 1)
            if header["p"] == 11:
                break
        assert header["p"] == 11 and header["step"] == 0


def require_torch():
    if os.environ.get("EMBDYN_REQUIRE_TORCH"):
        import torch  # noqa: F401
    else:
        pytest.importorskip("torch")


def test_a_particle_session_takes_over_the_network_embedding(client):
    """The hand-over endpoint: the particle session starts from the network's embedding (to float32 rounding,
    the frames' precision) under the preset's law and then the fitted one, draws each term's force when asked,
    and refuses what it cannot do by field name, with nothing changed."""
    require_torch()
    with client.websocket_connect(WS) as net_ws, client.websocket_connect("ws://127.0.0.1:8050/api/live") as ws:
        net_sid = net_ws.receive_json()["session"]
        sid = ws.receive_json()["session"]
        frames(net_ws, 1)
        frames(ws, 1)
        url = f"/api/live/{sid}/handover"
        too_early = client.post(url, json={"from": net_sid, "law": "fitted"})  # no training step recorded yet
        assert too_early.status_code == 422 and too_early.json()["parameter"] == "law"
        assert "at least 20" in too_early.json()["error"]
        client.post(f"/api/live/{net_sid}/controls", json={"steps_per_frame": 40})
        client.post(f"/api/live/{net_sid}/action", json={"action": "step"})
        for _ in range(4):  # the control change's own frame may come first
            (net_header, net_arrays), = frames(net_ws, 1)
            if net_header["step"]:
                break
        assert net_header["step"] == 40
        r = client.post(url, json={"from": net_sid, "law": "preset", "preset": "grids"})
        assert r.status_code == 200, r.json()
        body = r.json()
        grids = preset("grids")
        assert body["fit"] is None and body["law"] == grids.params.to_dict()
        assert body["values"]["preset"] == "grids" and body["values"]["dt"] == grids.dt
        assert body["origin"] == "constant-attention step 40, preset law"
        client.post(f"/api/live/{sid}/controls", json={"force_terms": "on"})
        for _ in range(6):
            (header, arrays), = frames(ws, 1)
            if header["origin"] and "terms" in header:
                break
        assert header["origin"] == body["origin"] and header["step"] == 0
        np.testing.assert_array_equal(arrays["positions"], net_arrays["positions"])
        assert header["terms"][0] == "attraction"
        total = sum(arrays[f"term:{name}"].astype(float) for name in header["terms"])
        assert np.abs(total).max() > 0
        fitted = client.post(url, json={"from": net_sid, "law": "fitted"}).json()
        assert fitted["fit"]["snapshots"] == 40 and fitted["fit"]["steps"] == [0, 39]
        assert 0.0 <= fitted["fit"]["r2"] <= 1.0 and fitted["fit"]["null_r2"] is not None
        assert fitted["values"]["k_a"] == fitted["law"]["k_a"]
        for body, name in [({"from": "nobody", "law": "preset"}, "from"), ({"from": net_sid, "law": "oracle"}, "law"),
                           ({"from": net_sid, "preset": "spirals"}, "preset"), ({"from": sid}, "from")]:
            bad = client.post(url, json=body)
            assert bad.status_code == 422 and bad.json()["parameter"] == name, bad.json()
        # a network session cannot be handed to
        wrong = client.post(f"/api/live/{net_sid}/handover", json={"from": net_sid})
        assert wrong.status_code == 422 and "particle session" in wrong.json()["error"]
        assert client.post("/api/live/nosuch/handover", json={"from": net_sid}).status_code == 404
        # nothing changed by the refusals
        again = client.post(f"/api/live/{sid}/controls", json={"dt": 0.02}).json()
        assert again["values"]["k_a"] == fitted["law"]["k_a"]


def test_the_network_tab_offers_each_registered_model(client):
    require_torch()
    body = client.get("/api/network/controls").json()
    names = [m["name"] for m in body["models"]]
    assert names == ["constant-attention", "survival-mlp"] and all(m["description"] for m in body["models"])
    with client.websocket_connect(WS + "&model=survival-mlp") as ws:
        hello = ws.receive_json()
        assert hello["meta"]["model"] == "survival-mlp" and hello["meta"]["values"]["hidden"] == 100
        sid = hello["session"]
        client.post(f"/api/live/{sid}/controls", json={"steps_per_frame": 3, "hidden": 16})
        client.post(f"/api/live/{sid}/action", json={"action": "play"})
        got = frames(ws, 4)
        assert got[-1][0]["model"] == "survival-mlp" and got[-1][0]["step"] > 0
        # ordered pairs: each unordered one twice, so more training pairs than the constant-attention network's
        assert len(hello["meta"]["pairs"]) > 140
    with client.websocket_connect(WS + "&model=rocket") as ws:
        msg = ws.receive_json()
        assert msg["type"] == "error" and "survival-mlp" in msg["error"] and "rocket" in msg["error"]
