"""The Layers tab's endpoints, in-process (Starlette's TestClient): a recorded run's layer meta and
frames, the refusals (a step not recorded, with the nearest recorded steps; a run without layer
states, with how to record them), and the live sparse-modular session over the Live tab's protocol
(its controls in ``hello``, frames with every layer's state, a bad control named, pacing)."""

import os
import time

import numpy as np
import pytest
from starlette.testclient import TestClient

import particles as pt
from fitting.explore import make_app
from fitting.explore.frames import decode_frame
from fitting.sandbox.data import HOW_TO_RECORD, load_layers
from particles.trajectory import Trajectory

from .test_server import frames

BASE = "http://127.0.0.1:8050"
WS = "ws://127.0.0.1:8050/api/live?kind=network&model=sparse-modular"


def require_torch():
    if os.environ.get("EMBDYN_REQUIRE_TORCH"):
        import torch  # noqa: F401
    else:
        pytest.importorskip("torch")


def synthetic_layers_run(steps=(0, 50, 100, 150, 200), p=3, T=4, B=10, G=8, curve_steps=201):
    """A run file with layer states as the trainers write them, made without torch: every array of
    fitting.training.layers at each recorded step, a probe set, per-step curves."""
    rng = np.random.default_rng(0)
    S = len(steps)
    shapes = {"token_embedding": (p, 2), "position": (T, 2), "query": (2,), "value_map": (2, 3),
              "inputs": (p, T, 2), "normed_inputs": (p, T, 2), "values": (p, T, 2), "attention": (B, T),
              "sequence": (B, 2), "normed_sequence": (B, 2), "mlp": (B, 2), "residual": (B, 2), "logits": (B, p),
              "extent_sequence": (4,), "extent_residual": (4,)}
    arrays = {f"layer_{k}": rng.normal(size=(S,) + s) for k, s in shapes.items()}
    for plane in ("sequence", "residual"):
        arrays[f"layer_regions_{plane}"] = rng.integers(0, p, size=(S, G, G)).astype(float)
    tokens = rng.integers(0, p, size=(B, T))
    info = {"version": 1, "p": p, "grid": G, "probe_tokens": tokens.tolist(),
            "probe_labels": (tokens[:, :2].sum(1) % p).tolist(), "probe_split": ["train"] * 5 + ["val"] * 5,
            "states": sorted(k[6:] for k in arrays)}
    x = np.arange(curve_steps)
    scalars = {"train_loss": np.exp(-x / 50.0), "val_acc": np.linspace(0.3, 1, curve_steps),
               "grad_norm_embedding": 1 / (1 + x)}
    return Trajectory(arrays["layer_token_embedding"], np.asarray(steps), steps=x, scalars=scalars,
                      snapshot_arrays=arrays, meta={"layers": info, "model": "sparse-modular", "p": p, "d": 2,
                                                    "config": {"k": 2, "seq_len": T, "p": p}})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layers")
    synthetic_layers_run().save(folder / "layers.npz")
    synthetic_layers_run(curve_steps=5000).save(folder / "long.npz")
    pt.preset("circles").replace(p=7, steps=100, record_every=20).run(seed=1).save(folder / "circles.npz")
    return folder


@pytest.fixture(scope="module")
def client(files):
    runs = [files / "layers.npz", files / "circles.npz", files / "long.npz"]
    with TestClient(make_app(runs, []), base_url=BASE) as c:
        yield c


def test_the_run_list_says_which_runs_have_layer_states(client):
    listing = client.get("/api/runs").json()["runs"]
    assert [r["layers"] for r in listing] == [True, False, True]


def test_layers_meta_of_a_recorded_run(client, files):
    states = load_layers(files / "layers.npz")
    r = client.get("/api/runs/0/layers/meta")
    assert r.status_code == 200
    meta = r.json()
    assert meta["steps"] == [0, 50, 100, 150, 200] and meta["p"] == 3 and meta["T"] == 4 and meta["k"] == 2
    assert meta["B"] == 10 and meta["probe_labels"] == states.probe_labels.tolist()
    assert meta["probe_split"] == ["train"] * 5 + ["val"] * 5 and meta["probe_tokens"] == states.probe_tokens.tolist()
    assert sorted(meta["states"]) == sorted(states.states) and meta["grad_norm_groups"] == ["embedding"]
    np.testing.assert_allclose(meta["curves"]["train_loss"]["y"], np.exp(-np.arange(201) / 50.0))
    # a long curve is thinned to at most 2000 points, its first and last kept
    long = client.get("/api/runs/2/layers/meta").json()["curves"]["val_acc"]
    assert len(long["x"]) <= 2000 and long["x"][0] == 0 and long["x"][-1] == 4999


def test_a_layer_frame_holds_every_state_of_its_step(client, files):
    states = load_layers(files / "layers.npz")
    for step in (0, 100, 200):
        r = client.get(f"/api/runs/0/layers?step={step}")
        assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
        header, arrays = decode_frame(r.content)
        i = states.index(step)
        assert header["step"] == step and header["index"] == i and header["p"] == 3
        assert header["values"]["train_loss"] == pytest.approx(np.exp(-step / 50.0))
        assert sorted(arrays) == sorted(states.states)
        for name, arr in states.states.items():
            np.testing.assert_allclose(arrays[name], arr[i].astype(np.float32), err_msg=name)


def test_the_layer_view_is_read_once_and_counted_in_the_budget(client):
    explorer = client.app.state.explorer
    client.get("/api/runs/0/layers/meta")
    run = explorer.runs.get(0)
    view = run.cache["layers"]
    before = explorer.ledger.state()["held"]
    for step in (0, 50, 150):
        assert client.get(f"/api/runs/0/layers?step={step}").status_code == 200
    assert run.cache["layers"] is view  # kept, not read again
    assert view.held_bytes() > 0 and explorer.ledger.state()["held"] == before
    assert explorer.ledger.reserved == 0  # every frame's reservation given back


def test_a_step_not_recorded_is_named_with_the_nearest_recorded_steps(client):
    r = client.get("/api/runs/0/layers?step=120")
    assert r.status_code == 422
    body = r.json()
    assert body["parameter"] == "step"
    assert "step 120 was not recorded" in body["error"] and "100, 150" in body["error"]
    for bad in ("abc", "", "1.5"):
        r = client.get(f"/api/runs/0/layers?step={bad}")
        assert r.status_code == 422 and r.json()["parameter"] == "step"
    r = client.get("/api/runs/0/layers")
    assert r.status_code == 422 and "?step=N" in r.json()["error"]
    r = client.get("/api/runs/0/layers?step=-50")
    assert r.status_code == 422 and r.json()["parameter"] == "step"


def test_a_run_without_layer_states_says_how_to_record_them(client):
    for path in ("/api/runs/1/layers/meta", "/api/runs/1/layers?step=0"):
        r = client.get(path)
        assert r.status_code == 422, path
        body = r.json()
        assert body["parameter"] == "run" and "circles.npz" in body["error"]
        assert "has no layer states" in body["error"] and " ".join(HOW_TO_RECORD.split()) in body["error"]
    assert client.get("/api/runs/9/layers/meta").status_code == 404


def test_a_layer_frame_is_quick_on_the_server(client):
    client.get("/api/runs/0/layers?step=0")
    took = []
    for step in (0, 50, 100, 150, 200) * 4:
        t0 = time.perf_counter()
        assert client.get(f"/api/runs/0/layers?step={step}").status_code == 200
        took.append(time.perf_counter() - t0)
    assert np.median(took) < 0.05, took


# ---- live ---------------------------------------------------------------------------------------------
def test_the_network_tab_does_not_offer_the_layers_network(client):
    require_torch()
    body = client.get("/api/network/controls").json()
    assert [m["name"] for m in body["models"]] == ["constant-attention", "survival-mlp"]


def test_live_session_trains_and_sends_every_layer(client):
    require_torch()
    from fitting.training.live_layers import FRAME_RATE, LAYER_CONTROLS

    with client.websocket_connect(WS) as ws:
        hello = ws.receive_json()
        sid, meta = hello["session"], hello["meta"]
        assert hello["type"] == "hello" and meta["kind"] == "layers" and meta["model"] == "sparse-modular"
        assert (meta["p"], meta["T"], meta["k"]) == (2, 12, 5) and meta["frame_rate"] == FRAME_RATE
        assert sorted(meta["controls"]) == sorted(LAYER_CONTROLS)
        assert meta["controls"]["p"]["accepted"] == "an int in [2, 3]"
        assert meta["controls"]["curriculum"]["choices"] == ["off", "on"]
        assert len(meta["probe_labels"]) == len(meta["probe_split"]) == 256
        (header, arrays), = frames(ws, 1)
        assert header["step"] == 0 and header["kind"] == "layers"
        assert arrays["sequence"].shape == (256, 2) and arrays["attention"].shape == (256, 12)
        assert arrays["regions_sequence"].shape == (48, 48) and arrays["token_embedding"].shape == (2, 2)
        assert all(v == 0 for v in header["grad_norms"].values())
        assert client.post(f"/api/live/{sid}/action", json={"action": "play"}).status_code == 200
        t0 = time.perf_counter()
        got = frames(ws, 6)
        took = time.perf_counter() - t0
        steps = [h["step"] for h, _ in got]
        assert steps == sorted(steps) and steps[-1] >= 50
        assert took >= 4.5 / FRAME_RATE  # paced: no faster than the rate the page states
        assert any(v > 0 for v in got[-1][0]["grad_norms"].values())
        assert not np.array_equal(got[0][1]["token_embedding"], got[-1][1]["token_embedding"])
        # a refused control names itself and changes nothing
        for body, name in [({"p": 5}, "p"), ({"k": 13}, "k"), ({"seq_len": 4}, "seq_len"), ({"lr": 0}, "lr"),
                           ({"curriculum": "maybe"}, "curriculum"), ({"hidden": 3}, "hidden")]:
            bad = client.post(f"/api/live/{sid}/controls", json=body)
            assert bad.status_code == 422 and bad.json()["parameter"] == name, bad.json()
        client.post(f"/api/live/{sid}/action", json={"action": "pause"})
        r = client.post(f"/api/live/{sid}/controls", json={"p": 3, "seq_len": 6, "k": 3})
        assert r.status_code == 200 and r.json()["restart"] and r.json()["meta"]["p"] == 3
        for _ in range(6):
            (header, arrays), = frames(ws, 1)
            if header["p"] == 3:
                break
        assert header["p"] == 3 and header["step"] == 0 and arrays["logits"].shape == (256, 3)
        assert arrays["attention"].shape == (256, 6)
        # a step, then a reset back to step 0
        client.post(f"/api/live/{sid}/action", json={"action": "step"})
        for _ in range(4):
            (header, _), = frames(ws, 1)
            if header["step"]:
                break
        assert header["step"] == 10
        client.post(f"/api/live/{sid}/action", json={"action": "reset"})
        for _ in range(4):
            (header, _), = frames(ws, 1)
            if header["step"] == 0:
                break
        assert header["step"] == 0
        # the particle panel cannot take a sequence network's embedding
        with client.websocket_connect("ws://127.0.0.1:8050/api/live") as pws:
            psid = pws.receive_json()["session"]
            r = client.post(f"/api/live/{psid}/handover", json={"from": sid, "law": "preset"})
            assert r.status_code == 422 and r.json()["parameter"] == "from" and "sequences" in r.json()["error"]
