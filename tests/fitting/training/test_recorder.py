"""Bring your own run (fitting.training.recorder): the recorder and the
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

from fitting.training import EmbeddingRecorder, load_checkpoints  # noqa: E402


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
    rec, states, _ = _train(25, lambda w: EmbeddingRecorder(w, tokens=range(11), every=2, snapshot_every=10))
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
    # the final state (step 5) is kept; it was not followed by a step, so it has no gradient (issue 50)
    assert list(traj.snapshot_steps) == [0, 2, 4, 5]
    assert traj.gradients.shape == (3, 7, 2) and traj.updates.shape == (3, 7, 2)
    assert np.allclose(traj.embeddings[-1], E.detach().numpy())
    assert np.allclose(traj.gradients, 2 * traj.embeddings[:3])  # d/dE sum E^2 at each snapshot
    assert np.allclose(traj.updates, -0.1 * traj.gradients)
    with pytest.raises(ValueError, match="gradient="):
        EmbeddingRecorder(lambda: E, gradients=True)


# --- issue 50: a recorder that cannot silently miscount, and a training set that travels with the run ---------

def _pairs(p, n, seed=0):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, p, size=(n, 2))
    return pairs, (pairs[:, 0] + pairs[:, 1]) % p


def _sgd_steps(E, opt, n):
    for _ in range(n):
        opt.zero_grad()
        (E ** 2).sum().backward()
        opt.step()


def test_a_second_attach_is_refused_and_steps_are_not_doubled():
    E = torch.nn.Parameter(torch.randn(7, 2, dtype=torch.float64))
    opt = torch.optim.SGD([E], lr=0.1)
    rec = EmbeddingRecorder(E, snapshot_every=2)
    handle = rec.attach(opt)
    with pytest.raises(ValueError, match="already attached"):
        rec.attach(opt)  # the re-run notebook cell
    with pytest.raises(ValueError, match="already attached"):
        rec.attach(torch.optim.SGD([E], lr=0.1))  # another optimiser would double the count too
    _sgd_steps(E, opt, 6)
    assert rec.trajectory().steps.tolist() == list(range(7))  # 0..6, not 0..12
    handle.remove()
    assert not rec.attached
    rec.attach(opt)  # after remove() a new hook is allowed and continues the count
    _sgd_steps(E, opt, 2)
    assert rec.trajectory().steps.tolist() == list(range(9))


def test_p_below_the_rows_warns_unless_tokens_names_them():
    emb = torch.nn.Embedding(12, 4)
    with pytest.warns(UserWarning, match="tokens=range"):
        EmbeddingRecorder(emb.weight, p=11)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec = EmbeddingRecorder(emb.weight, tokens=range(11))
        assert rec.p == 11
        EmbeddingRecorder(emb.weight, p=12)  # all rows, said so: nothing to say
        EmbeddingRecorder(torch.nn.Embedding(13, 4).weight)  # 13 rows, 12 not prime: nothing to say
    # 12 rows and 11 prime, nothing said: the shape of p tokens and an '=' row (issue 68)
    with pytest.warns(UserWarning, match=r"tokens=range\(11\)"):
        EmbeddingRecorder(emb.weight)
    with pytest.raises(ValueError, match="disagrees with tokens"):
        EmbeddingRecorder(emb.weight, p=10, tokens=range(11))
    with pytest.raises(ValueError, match="tokens must name rows in 0..11"):
        EmbeddingRecorder(emb.weight, tokens=range(1, 13))


def test_tokens_not_at_the_start_are_the_rows_recorded():
    emb = torch.nn.Embedding(12, 4)
    rows = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]  # row 0 is a special token
    rec = EmbeddingRecorder(emb.weight, tokens=rows)
    traj = rec.record() or rec.trajectory()
    assert np.allclose(traj.embeddings[0], emb.weight.detach().double().numpy()[rows])
    assert traj.meta["tokens"] == rows


def test_a_module_instead_of_its_weight_names_weight():
    with pytest.raises(TypeError, match=r"\.weight"):
        EmbeddingRecorder(torch.nn.Embedding(11, 4))


def test_the_training_set_round_trips_through_the_file(tmp_path):
    E = torch.nn.Parameter(torch.randn(11, 3, dtype=torch.float64))
    opt = torch.optim.SGD([E], lr=0.1)
    pairs, labels = _pairs(11, 40)
    rec = EmbeddingRecorder(E, snapshot_every=2, gradients=True, train=(torch.as_tensor(pairs), labels))
    rec.attach(opt)
    _sgd_steps(E, opt, 3)
    path = rec.trajectory(meta={"task": "modular_addition"}).save(tmp_path / "run.npz")
    back = Trajectory.load(path)
    assert np.array_equal(back.train_pairs, pairs) and np.array_equal(back.train_labels, labels)
    assert back.meta["n_train"] == 40 and back.train.p == 11 and len(back.train) == 40
    bad = labels.copy()
    bad[3] = (bad[3] + 1) % 11
    with pytest.raises(ValueError, match="disagree with the run's task 'modular_addition'"):
        rec.trajectory(meta={"task": "modular_addition"}).with_train((pairs, bad))
    with pytest.raises(ValueError, match="pairs must hold token indices in 0..10"):
        EmbeddingRecorder(E, train=(pairs + 1, labels))


def test_load_checkpoints_stores_the_training_set(tmp_path):
    _, states, paths = _train(6, every_save=2, folder=tmp_path)
    pairs, labels = _pairs(11, 30)
    traj = load_checkpoints(paths, "embed.weight", p=11, train=(pairs, labels))
    assert np.array_equal(traj.train.pairs, pairs) and traj.meta["n_train"] == 30
    with pytest.raises(ValueError, match="0..10"):
        load_checkpoints(paths, "embed.weight", p=11, train=(pairs + 11, labels))


def test_embdyn_force_fit_runs_on_a_recorded_run_with_its_training_set(tmp_path, capsys):
    from particles.cli import main

    torch.manual_seed(1)
    p, d = 11, 4
    emb = torch.nn.Embedding(p, d)
    head = torch.nn.Linear(d, p)
    opt = torch.optim.AdamW(list(emb.parameters()) + list(head.parameters()), lr=1e-2)
    a, b = torch.arange(p).repeat_interleave(p), torch.arange(p).repeat(p)
    keep = torch.randperm(p * p)[:60]
    a, b = a[keep], b[keep]
    rec = EmbeddingRecorder(emb.weight, snapshot_every=5, gradients=True, train=(torch.stack([a, b], 1), (a + b) % p))
    rec.attach(opt)
    for _ in range(40):
        loss = torch.nn.functional.cross_entropy(head(emb(a) + emb(b)), (a + b) % p)
        opt.zero_grad()
        loss.backward()
        opt.step()
    path = rec.trajectory(meta={"task": "modular_addition"}).save(tmp_path / "run.npz")
    assert main(["force-fit", str(path), "--bootstrap", "0", "--quiet", "--out", str(tmp_path / "ff")]) == 0
    assert "force-law fit of 1 run(s), 8 snapshots" in capsys.readouterr().out  # 9 snapshots, the last without one
    assert (tmp_path / "ff" / "force_fit.json").exists()


def test_an_extra_row_recorded_as_a_token_is_named_when_the_training_set_shows_it():
    emb = torch.nn.Embedding(12, 4)  # 11 tokens and an '=' row
    pairs, labels = _pairs(11, 30)
    with pytest.warns(UserWarning, match=r"tokens=range\(11\)"):
        EmbeddingRecorder(emb.weight, train=(pairs, labels))


def test_recorder_with_gradients_keeps_the_formation_on_the_geometric_schedule():
    """gradients=True without snapshot_every: every step below 100, then every 10th (issue 53)."""
    rec, states, _ = _train(130, lambda w: EmbeddingRecorder(w, tokens=range(11), gradients=True))
    traj = rec.trajectory()
    assert rec.snapshot_every == "geometric"
    assert traj.snapshot_steps.tolist() == list(range(100)) + [100, 110, 120, 130]
    np.testing.assert_allclose(traj.embeddings, states[traj.snapshot_steps], rtol=1e-6)
    assert EmbeddingRecorder(torch.zeros(3, 2)).snapshot_every == 100  # without gradients: as before


def test_log_stores_the_networks_curves_in_the_file(tmp_path):
    rec, _, _ = _train(6, lambda w: EmbeddingRecorder(w, tokens=range(11)))
    rec.log(0, train_loss=2.5, val_acc=0.1)
    rec.log(3, train_loss=torch.tensor(1.5), val_acc=0.3)
    rec.log([4, 6], train_loss=[1.0, 0.5])
    traj = rec.trajectory()
    assert traj.curves["train_loss"][0].tolist() == [0, 3, 4, 6]
    assert traj.curves["train_loss"][1].tolist() == [2.5, 1.5, 1.0, 0.5]
    assert traj.curves["val_acc"][0].tolist() == [0, 3]
    back = Trajectory.load(traj.save(tmp_path / "run.npz"))
    for name in ("train_loss", "val_acc"):
        np.testing.assert_array_equal(back.curves[name][0], traj.curves[name][0])
        np.testing.assert_array_equal(back.curves[name][1], traj.curves[name][1])
    from fitting import network_curves

    assert set(network_curves(back)) == {"train_loss", "val_acc"}


def test_log_refuses_backwards_steps_and_mismatched_lengths():
    rec = EmbeddingRecorder(torch.nn.Embedding(11, 4).weight)
    rec.log(10, val_acc=0.5)
    with pytest.raises(ValueError, match="val_acc: step must increase, got 10 after 10"):
        rec.log(10, val_acc=0.6)
    with pytest.raises(ValueError, match="step must increase"):
        rec.log([20, 15], val_acc=[0.1, 0.2])
    with pytest.raises(ValueError, match="val_acc has 3 values for 2 steps"):
        rec.log([20, 30], val_acc=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="train_loss is not finite at step 20"):
        rec.log(20, val_acc=0.7, train_loss=float("nan"))
    with pytest.raises(ValueError, match="step"):
        rec.log(-1, val_acc=0.1)
    with pytest.raises(ValueError, match="at least one curve"):
        rec.log(40)
    rec.log(20, val_acc=0.7)  # nothing of the refused calls was stored
    rec.record(0)
    assert rec.trajectory().curves["val_acc"][0].tolist() == [10, 20]


def test_log_takes_a_zero_dimensional_tensor_as_a_step():
    rec = EmbeddingRecorder(torch.nn.Embedding(11, 4).weight)
    rec.log(torch.tensor(5), val_acc=torch.tensor(0.25))
    rec.record(0)
    assert rec.trajectory().curves["val_acc"][0].tolist() == [5]
