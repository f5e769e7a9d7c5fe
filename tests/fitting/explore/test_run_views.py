"""The Run tab in the network's terms (issue 68): the Fourier plane of a key frequency against a direct NumPy
computation, the plane selector's frames, the network's own curves, the stages endpoint against
``fitting.stages(traj).to_dict()`` and ``embdyn stages``, and when the pair-sum accuracy is shown."""

import argparse
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

import fitting
import particles as pt
from fitting.explore import make_app
from fitting.explore.frames import decode_frame
from fitting.explore.projection import fourier_plane, plane_share, principal_plane, project
from fitting.explore.runs import ACCURACY_LABEL, accuracy_shown
from particles.core.io import json_safe
from particles.trajectory import Trajectory


def direct_fourier_plane(E, k):
    """The definition, term by term: c = sum_t cos(2 pi k t / p) E_t, s = sum_t sin(...) E_t, Gram-Schmidt."""
    p, d = E.shape
    c, s = np.zeros(d), np.zeros(d)
    for t in range(p):
        c += np.cos(2 * np.pi * k * t / p) * E[t]
        s += np.sin(2 * np.pi * k * t / p) * E[t]
    u = c / np.sqrt(c @ c)
    v = s - (s @ u) * u
    v /= np.sqrt(v @ v)
    centred = E - E.mean(axis=0)
    share = (np.sum((centred @ u) ** 2) + np.sum((centred @ v) ** 2)) / np.sum(centred ** 2)
    return np.column_stack([u, v]), share


@settings(deadline=None, max_examples=60)
@given(st.integers(5, 41), st.integers(3, 12), st.integers(0, 2 ** 31))
def test_fourier_plane_against_the_definition(p, d, seed):
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((p, d)) * rng.uniform(0.1, 3, d) + rng.standard_normal(d)
    k = int(rng.integers(1, (p - 1) // 2 + 1))
    center, basis, explained = fourier_plane(E, k)
    want, share = direct_fourier_plane(E, k)
    np.testing.assert_allclose(center, E.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(basis, want, atol=1e-9)
    np.testing.assert_allclose(basis.T @ basis, np.eye(2), atol=1e-10)
    assert abs(explained - share) < 1e-10
    assert abs(plane_share(E, basis) - share) < 1e-10
    # the plane is the span of Re F_k and Im F_k of NumPy's FFT over tokens (F_k = c - i s)
    F = np.fft.fft(E, axis=0)[k]
    Q = basis @ basis.T
    np.testing.assert_allclose(Q @ F.real, F.real, atol=1e-8 * np.abs(F).max())
    np.testing.assert_allclose(Q @ F.imag, F.imag, atol=1e-8 * np.abs(F).max())


def test_a_circle_lies_in_its_fourier_plane():
    p, d, k, r = 17, 6, 5, 2.5
    rng = np.random.default_rng(3)
    a, b, w = np.linalg.qr(rng.standard_normal((d, 3)))[0].T
    t = np.arange(p)
    theta = 2 * np.pi * k * t / p
    E = 4.0 + r * (np.outer(np.cos(theta), a) + np.outer(np.sin(theta), b))
    E += 0.3 * np.outer(np.cos(2 * np.pi * 2 * t / p), w)  # a weaker frequency in a direction of its own
    center, basis, explained = fourier_plane(E, k)
    Y = project(E, center, basis)
    # token t at angle 2 pi k t / p, counter-clockwise, radius r
    np.testing.assert_allclose(np.hypot(Y[:, 0], Y[:, 1]), r, atol=1e-9)
    np.testing.assert_allclose(np.exp(1j * np.arctan2(Y[:, 1], Y[:, 0])), np.exp(1j * theta), atol=1e-9)
    variance = np.sum((E - E.mean(0)) ** 2)
    assert abs(explained - p * r ** 2 / variance) < 1e-9 and explained < 1
    # the PCA plane of a circle plus a weaker one is the stronger circle's plane too: the same share
    assert abs(principal_plane(E)[2] - explained) < 1e-9


def test_fourier_plane_refuses_what_has_no_plane():
    E = np.random.default_rng(0).standard_normal((11, 4))
    for k in (0, 6, -1, 2.0, True):
        with pytest.raises(ValueError, match="1..5"):
            fourier_plane(E, k)
    with pytest.raises(ValueError, match="no power"):
        fourier_plane(np.ones((11, 4)), 3)


def network_like_run(snapshots=60, p=23, d=8, seed=0):
    """A run shaped as a network's: two circles (k = 3 stronger than k = 7) growing out of noise, the network's
    curves logged at their own steps, written as EmbeddingRecorder would (no torch needed)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(snapshots) * 50
    t = np.arange(p)
    basis = np.linalg.qr(rng.standard_normal((d, 4)))[0]
    noise = rng.standard_normal((p, d))
    grow = 1 / (1 + np.exp(-(steps - 1200) / 150))
    E = []
    for g in grow:
        circles = (3.0 * np.outer(np.cos(2 * np.pi * 3 * t / p), basis[:, 0]) + 3.0 * np.outer(np.sin(2 * np.pi * 3 * t / p), basis[:, 1])
                   + 2.0 * np.outer(np.cos(2 * np.pi * 7 * t / p), basis[:, 2]) + 2.0 * np.outer(np.sin(2 * np.pi * 7 * t / p), basis[:, 3]))
        E.append(g * circles + (1.2 - g) * noise)
    curve_steps = np.arange(0, steps[-1] + 1, 25)
    train_acc = 1 / (1 + np.exp(-(curve_steps - 300) / 60))
    val_acc = 0.05 + 0.95 / (1 + np.exp(-(curve_steps - 1600) / 120))
    curves = {"train_acc": (curve_steps, train_acc), "val_acc": (curve_steps, val_acc),
              "train_loss": (curve_steps, 3.0 * np.exp(-curve_steps / 300) + 1e-3),
              "val_loss": (curve_steps, 3.0 / (1 + np.exp((curve_steps - 1600) / 150)) + 1e-3)}
    return Trajectory(np.stack(E), steps, meta={"source": "fitting.training.EmbeddingRecorder", "p": p, "d": d},
                      curves=curves)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runviews")
    network_like_run().save(folder / "network.npz")
    network_like_run(snapshots=8).save(folder / "short.npz")
    pt.preset("circles").replace(p=11, steps=400, record_every=20).run(seed=1).save(folder / "circles.npz")
    return folder


@pytest.fixture(scope="module")
def client(files):
    app = make_app([files / "network.npz", files / "short.npz", files / "circles.npz"], [])
    with TestClient(app, base_url="http://127.0.0.1:8050") as c:
        yield c


def summary(client, rid):
    response = client.get(f"/api/runs/{rid}")
    assert response.status_code == 200
    return decode_frame(response.content)


def test_planes_default_to_the_strongest_key_frequency(client, files):
    traj = Trajectory.load(files / "network.npz")
    header, arrays = summary(client, 0)
    assert list(fitting.key_frequencies(traj)) == [3, 7]
    assert [p["id"] for p in header["planes"]] == ["3", "7", "pca"] and header["default_plane"] == "3"
    for plane in header["planes"][:2]:
        assert abs(plane["share"] - direct_fourier_plane(traj.final, plane["k"])[1]) < 1e-9
    assert abs(header["planes"][2]["share"] - principal_plane(traj.final)[2]) < 1e-9
    # the default frame is the k = 3 plane of the final snapshot; every snapshot is drawn in that one plane
    step = int(traj.snapshot_steps[30])
    for query, plane in (("", "3"), ("&plane=3", "3"), ("&plane=7", "7"), ("&plane=pca", "pca"), ("&plane=5", "5")):
        h, a = decode_frame(client.get(f"/api/runs/0/frame?step={step}{query}").content)
        center, basis, final_share = (principal_plane(traj.final) if plane == "pca"
                                      else fourier_plane(traj.final, int(plane)))
        E = traj.embeddings[30]
        assert h["plane"] == plane and h["snapshot_step"] == step
        np.testing.assert_allclose(a["positions"], project(E, center, basis), rtol=1e-5, atol=1e-5)
        assert abs(h["explained"] - plane_share(E, basis)) < 1e-9 and abs(h["final_explained"] - final_share) < 1e-9
        assert h["axes"][0].startswith("principal component" if plane == "pca" else f"cos axis of k = {plane}")
    # the circle grows into its plane: at the start the plane holds far less of the variance than at the end
    h, _ = decode_frame(client.get("/api/runs/0/frame?step=0").content)
    assert h["plane"] == "3" and h["explained"] < h["final_explained"] - 0.2


@pytest.mark.parametrize("plane", ["0", "12", "x", "-3", "pca2", "3.0"])
def test_a_bad_plane_is_refused_by_name(client, plane):
    response = client.get(f"/api/runs/0/frame?step=0&plane={plane}")
    assert response.status_code == 422
    assert response.json()["parameter"] == "plane" and "1..11" in response.json()["error"]


def test_a_two_dimensional_run_is_its_own_plane(client):
    header, _ = summary(client, 2)
    assert [p["id"] for p in header["planes"]] == ["pca"] and header["planes"][0]["share"] == 1.0
    assert header["particle_run"] is True
    h, a = decode_frame(client.get("/api/runs/2/frame?step=400").content)
    assert h["axes"] == ["x1", "x2"] and h["explained"] == 1.0
    response = client.get("/api/runs/2/frame?step=400&plane=2")
    assert response.status_code == 422 and response.json()["parameter"] == "plane"


def test_the_network_curves_are_network_curves(client, files):
    traj = Trajectory.load(files / "network.npz")
    want = fitting.network_curves(traj)
    header, arrays = summary(client, 0)
    assert sorted(header["curves"]) == sorted(want) == ["train_acc", "train_loss", "val_acc", "val_loss"]
    for name, (steps, values) in want.items():
        np.testing.assert_array_equal(arrays["curve_steps:" + name], steps.astype(np.float32))
        np.testing.assert_array_equal(arrays["curve:" + name], values.astype(np.float32))
    particle, _ = summary(client, 2)
    assert particle["curves"] == []


def stages_cli_json(path, out):
    """What ``embdyn stages RUN --out OUT`` writes to stages.json (its own subcommand, registered here)."""
    from fitting.signals.cli import register_stages

    parser = argparse.ArgumentParser()
    register_stages(parser.add_subparsers())
    args = parser.parse_args(["stages", str(path), "--out", str(out)])
    assert args.func(args) == 0
    return json.loads((out / "stages.json").read_text())


def test_the_stages_endpoint_is_fitting_stages(client, files):
    traj = Trajectory.load(files / "network.npz")
    served = client.get("/api/runs/0/stages").json()
    want = json.loads(json.dumps(json_safe(fitting.stages(traj).to_dict())))
    assert served == want
    found = [s["name"] for s in served["stages"] if s["found"]]
    assert "circuit formation" in found and "generalisation" in found, served["stages"]
    # a run too short to place stages: the message, no boundaries
    short = client.get("/api/runs/1/stages")
    assert short.status_code == 200 and short.json()["stages"] is None
    with pytest.raises(ValueError) as caught:
        fitting.stages(Trajectory.load(files / "short.npz"))
    assert short.json()["error"] == " ".join(str(caught.value).split())


def test_the_stages_endpoint_is_embdyn_stages(client, files, tmp_path):
    """The page's stages are those of the command line, each with its own defaults."""
    assert client.get("/api/runs/0/stages").json() == stages_cli_json(files / "network.npz", tmp_path / "cli")


def test_accuracy_shown_rule():
    network = network_like_run(snapshots=3)
    assert accuracy_shown(network, [0.0, 0.01, 0.0])[0] is False
    shown, note = accuracy_shown(network, [0.0, 0.05, 0.3])  # 2/p = 0.087 for p = 23
    assert shown and "0.300" in note
    assert "not shown" in accuracy_shown(network, [0.0])[1] and "0.087" in accuracy_shown(network, [0.0])[1]
    assert accuracy_shown(network, [0.0, 0.08])[0] is False and accuracy_shown(network, [0.09])[0] is True
    assert accuracy_shown(network, [])[0] is False
    particle = pt.preset("circles").replace(p=11, steps=20, record_every=10).run(seed=1)
    assert accuracy_shown(particle, [0.0, 0.0]) == (True, "shown: a particle-model run, trained on this metric")


def test_metrics_say_what_their_accuracy_is(client):
    import time

    for rid in (0, 2):
        deadline = time.monotonic() + 120  # the metrics are computed in the background: wait for them, not a count
        while True:
            m = client.get(f"/api/runs/{rid}/metrics").json()
            if m["done"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert m["done"] and m["error"] is None
        assert m["accuracy_label"].startswith(ACCURACY_LABEL)
        values = [row["accuracy"] for row in m["rows"]]
        assert m["accuracy_shown"] == (rid == 2 or max(values) >= 2 / 23)
