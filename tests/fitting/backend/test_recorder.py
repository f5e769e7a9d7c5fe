"""Bring your own run (fitting.backend.recorder): the recorder and the
checkpoint loader round trip against the embedding they saw. Skipped without
torch; CI installs the [torch] extra and runs them (never skipped there)."""
import os

import numpy as np
import pytest

from fitting import fourier_signals
from particles import Trajectory

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")

from fitting.backend import EmbeddingRecorder, load_checkpoints  # noqa: E402


def _train(steps, recorder=None, every_save=None, folder=None):
    torch.manual_seed(0)
    p, d = 11, 6
    emb = torch.nn.Embedding(p + 1, d)
    head = torch.nn.Linear(d, p)
    opt = torch.optim.AdamW(list(emb.parameters()) + list(head.parameters()), lr=1e-2)
    if recorder is not None:
        recorder = recorder(emb.weight)
        recorder.attach(opt)
    a = torch.arange(p).repeat_interleave(p)
    b = torch.arange(p).repeat(p)
    states = [emb.weight.detach()[:p].double().numpy().copy()]  # states[n]: after n updates
    paths = []
    for step in range(steps):
        loss = torch.nn.functional.cross_entropy(head(emb(a) + emb(b)), (a + b) % p)
        opt.zero_grad()
        loss.backward()
        opt.step()
        states.append(emb.weight.detach()[:p].double().numpy().copy())
        if folder is not None and step % every_save == 0:
            paths.append(folder / f"ckpt{step}.pt")
            torch.save({"model": {"embed.weight": emb.weight.detach().clone(), "head.weight": head.weight}},
                       paths[-1])
    return recorder, np.stack(states), paths


def test_recorder_round_trips_the_embedding(tmp_path):
    rec, states, _ = _train(25, lambda w: EmbeddingRecorder(w, p=11, every=2, snapshot_every=10))
    traj = rec.trajectory(meta={"run": "test"})
    # attach() records the initial state as step 0; step n is the state after n updates
    assert traj.steps.tolist() == list(range(0, 26, 2))
    np.testing.assert_allclose(traj.signals, fourier_signals(states[::2]), rtol=1e-6)  # float32 weights
    assert traj.snapshot_steps.tolist() == [0, 10, 20, 25]  # the last state is always kept
    np.testing.assert_allclose(traj.embeddings, states[[0, 10, 20, 25]], rtol=1e-6)
    path = traj.save(tmp_path / "run.npz")
    back = Trajectory.load(path)
    assert back.meta["run"] == "test" and back.meta["signal_power"] == 1
    np.testing.assert_array_equal(back.signals, traj.signals)


def test_checkpoint_series_loads_as_a_trajectory(tmp_path):
    _, states, paths = _train(12, every_save=3, folder=tmp_path)
    traj = load_checkpoints(paths, "embed.weight", steps=[0, 3, 6, 9], p=11)
    np.testing.assert_allclose(traj.embeddings, states[[1, 4, 7, 10]], rtol=1e-6)  # saved after each update
    np.testing.assert_allclose(traj.signals, fourier_signals(traj.embeddings))
    with pytest.raises(KeyError, match="no entry 'W_E'"):
        load_checkpoints(paths, "W_E")
    with pytest.raises(ValueError, match="steps must increase"):
        load_checkpoints(paths, "embed.weight", steps=[0, 3, 3, 9])
    same = load_checkpoints(paths, lambda obj: obj["model"]["embed.weight"][:11])
    np.testing.assert_array_equal(same.embeddings, traj.embeddings)


def test_checkpoints_refuse_more_tokens_than_rows(tmp_path):
    # a p larger than the embedding's rows was silently cut to the rows (p = 32 for p = 100)
    _, _, paths = _train(6, every_save=3, folder=tmp_path)
    rows = torch.load(paths[0], weights_only=True)["model"]["embed.weight"].shape[0]
    with pytest.raises(ValueError, match=rf"p = {rows + 1} is more than the {rows} rows"):
        load_checkpoints(paths, "embed.weight", p=rows + 1)
    with pytest.raises(ValueError, match="p must be an int >= 3"):
        load_checkpoints(paths, "embed.weight", p=2)
    assert load_checkpoints(paths, "embed.weight", p=rows).meta["p"] == rows


def test_recorder_bad_input():
    w = torch.zeros(5, 3)
    with pytest.raises(TypeError, match="embedding must be"):
        EmbeddingRecorder("weights")
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        EmbeddingRecorder(w, every=0)
    with pytest.raises(ValueError, match="p = 9 is more than"):
        EmbeddingRecorder(w, p=9)
    rec = EmbeddingRecorder(w)
    with pytest.raises(ValueError, match="nothing recorded"):
        rec.trajectory()
    rec.record(5)
    with pytest.raises(ValueError, match="step must increase"):
        rec.record(5)


def test_recorder_records_gradients_and_updates():
    torch.manual_seed(0)
    E = torch.nn.Parameter(torch.randn(7, 2, dtype=torch.float64))
    opt = torch.optim.SGD([E], lr=0.1)
    rec = EmbeddingRecorder(E, snapshot_every=2, gradients=True)
    rec.attach(opt)
    for _ in range(5):
        opt.zero_grad()
        (E ** 2).sum().backward()
        opt.step()
    traj = rec.trajectory()
    assert list(traj.snapshot_steps) == [0, 2, 4]  # the final state (step 5) was not followed by a step
    assert np.allclose(traj.gradients, 2 * traj.embeddings)  # d/dE sum E^2 at each snapshot
    assert np.allclose(traj.updates, -0.1 * traj.gradients)
    with pytest.raises(ValueError, match="gradient="):
        EmbeddingRecorder(lambda: E, gradients=True)
