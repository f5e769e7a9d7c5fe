"""The torch backend: models train and export, batched = sequential, resume =
uninterrupted, clear errors (SPEC section 5). Skipped without torch; CI
installs the [torch] extra and runs them."""

import os

import numpy as np
import pytest

from ..helpers import Interrupt

from fitting.training import MODEL_CONFIGS, config_for
from particles import Trajectory
from particles.cli import main

SMALL = {
    "survival-mlp": dict(p=13, d=16, hidden=32, steps=40, snapshot_every=10),
    "toy": dict(steps=60, snapshot_every=20, embedding_lr=1e-2, decoder_lr=1e-2),
    "constant-attention": dict(steps=60, snapshot_every=20),
    "sparse-modular": dict(steps=60, snapshot_every=20, n_train=256, n_val=64, n_probe=16),
}


def small(model, **changes):
    return config_for(model, **{**SMALL[model], **changes})


# ------------------------------------------------------------ with torch
if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")
from fitting.training import TrainingDivergedError, train, train_batched  # noqa: E402


@pytest.mark.parametrize("model", list(MODEL_CONFIGS))
def test_each_model_trains_and_exports(model, tmp_path):
    cfg = small(model)
    traj = train(cfg, seed=1, out=tmp_path / "run.npz")
    loaded = Trajectory.load(tmp_path / "run.npz")
    p = cfg.p
    assert loaded.signals.shape == (cfg.steps, (p - 1) // 2)
    np.testing.assert_array_equal(loaded.steps, np.arange(cfg.steps))
    np.testing.assert_array_equal(loaded.snapshot_steps, list(range(0, cfg.steps, cfg.snapshot_every)) + [cfg.steps])
    assert loaded.embeddings.shape[1:] == (p, cfg.d)
    assert loaded.meta["completed"] and loaded.meta["model"] == model and loaded.meta["seed"] == 1
    loss = loaded.scalars["train_loss"]
    assert np.mean(loss[-5:]) < np.mean(loss[:5])  # training lowers the loss
    assert any(name.startswith("grad_norm_") for name in loaded.scalars)
    np.testing.assert_allclose(loaded.embeddings, traj.embeddings)
    if model == "sparse-modular":
        assert loaded.snapshot_arrays["sequence_embedding"].shape == (len(loaded), cfg.n_probe, cfg.d)


def test_signals_are_those_of_the_snapshots():
    from fitting import fourier_signals

    traj = train(small("constant-attention"), seed=0)
    for row, step in enumerate(traj.snapshot_steps[:-1]):
        np.testing.assert_allclose(traj.signals[step], fourier_signals(traj.embeddings[row]), rtol=1e-12)
    dc = fourier_signals(traj.embeddings[0], dc=True)[0]
    assert traj.scalars["signal_dc"][0] == pytest.approx(dc)


def test_same_seed_same_run_and_different_seed_differs():
    cfg = small("sparse-modular")
    a, b, c = train(cfg, 3), train(cfg, 3), train(cfg, 4)
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    np.testing.assert_array_equal(a.scalars["train_loss"], b.scalars["train_loss"])
    assert not np.allclose(a.embeddings, c.embeddings)


def test_fixed_embedding_seed_shares_the_initial_embedding():
    cfg = small("survival-mlp", embedding_seed=7, steps=2)
    a, b = train(cfg, 0), train(cfg, 1)
    np.testing.assert_array_equal(a.embeddings[0], b.embeddings[0])
    assert a.meta["train_indices"] != b.meta["train_indices"]


def test_float32_survival_run_starts_from_the_float64_run_rounded():
    """Same seed, either dtype: the same initial embedding, weights and split
    (float32 rounded from float64), so the two runs can be compared."""
    import torch

    from fitting.training.models import survival_initial_parameters

    cfg = config_for("survival-mlp", p=11, d=8, embedding_seed=0)
    e64, layers64, split64 = survival_initial_parameters(cfg.replace(dtype="float64"), 3)
    e32, layers32, split32 = survival_initial_parameters(cfg.replace(dtype="float32"), 3)
    assert list(split32.generate_state(4)) == list(split64.generate_state(4)) and e32.dtype == torch.float32
    assert torch.equal(e32, e64.to(torch.float32))
    for (w32, b32), (w64, b64) in zip(layers32, layers64):
        assert torch.equal(w32, w64.to(torch.float32)) and torch.equal(b32, b64.to(torch.float32))


def test_batched_training_equals_sequential_runs(tmp_path):
    cfg = small("survival-mlp")
    seeds = [0, 4, 9]
    batched = train_batched(cfg, seeds, tmp_path)
    for seed, traj in zip(seeds, batched):
        alone = train(cfg, seed)
        np.testing.assert_allclose(traj.embeddings, alone.embeddings, rtol=0, atol=1e-10)
        np.testing.assert_allclose(traj.signals, alone.signals, rtol=0, atol=1e-10)
        for name, series in alone.scalars.items():
            np.testing.assert_allclose(traj.scalars[name], series, rtol=1e-10, atol=1e-10, err_msg=name)
        assert traj.meta["train_indices"] == alone.meta["train_indices"]
        assert Trajectory.load(tmp_path / f"survival-mlp_seed{seed}.npz").meta["batched"] == 3
    with pytest.raises(ValueError, match="distinct"):
        train_batched(cfg, [1, 1])
    with pytest.raises(TypeError, match="SurvivalMLPConfig"):
        train_batched(small("toy"), [0])


def test_batched_in_two_processes_matches_one_stack():
    cfg = small("survival-mlp", steps=15)
    seeds = [0, 3, 7]
    one = train_batched(cfg, seeds)
    two = train_batched(cfg, seeds, n_jobs=2)
    for a, b in zip(one, two):
        assert a.meta["seed"] == b.meta["seed"]
        np.testing.assert_allclose(a.signals, b.signals, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="n_jobs"):
        train_batched(cfg, seeds, n_jobs=4)


def test_batched_resume_is_bit_identical(tmp_path):
    from fitting.training.batched import batched_checkpoint_path

    cfg = small("survival-mlp")
    seeds = [2, 5]
    whole = train_batched(cfg, seeds)
    with pytest.raises(KeyboardInterrupt):
        train_batched(cfg, seeds, tmp_path, checkpoint_every=10, callback=Interrupt(25))
    ckpt = batched_checkpoint_path(cfg, seeds, tmp_path)
    assert ckpt.exists()
    assert Trajectory.load(tmp_path / "survival-mlp_seed2.npz").meta["completed"] is False
    with pytest.raises(ValueError, match="another batched run"):
        train_batched(cfg, seeds, tmp_path, resume=True, compile="auto")
    resumed = train_batched(cfg, seeds, tmp_path, checkpoint_every=10, resume=True)
    assert not ckpt.exists()
    for a, b in zip(whole, resumed):
        assert np.array_equal(a.embeddings, b.embeddings) and np.array_equal(a.signals, b.signals)
        for name in a.scalars:
            assert np.array_equal(a.scalars[name], b.scalars[name]), name
    with pytest.raises(ValueError, match="out_dir"):
        train_batched(cfg, seeds, checkpoint_every=5)


@pytest.mark.parametrize("model", ["survival-mlp", "sparse-modular"])
def test_interrupted_run_leaves_a_valid_file_and_resumes_to_the_same_result(model, tmp_path):
    cfg = small(model)
    whole = train(cfg, seed=2)
    path = tmp_path / "run.npz"
    with pytest.raises(KeyboardInterrupt):
        train(cfg, seed=2, out=path, checkpoint_every=10, callback=Interrupt(at=25))
    partial = Trajectory.load(path)
    assert partial.meta["completed"] is False and partial.meta["steps_done"] == 25
    assert partial.signals.shape[0] == 25
    np.testing.assert_array_equal(partial.signals, whole.signals[:25])
    resumed = train(cfg, seed=2, out=path, checkpoint_every=10, resume=True)
    assert resumed.meta["completed"]
    np.testing.assert_array_equal(resumed.embeddings, whole.embeddings)
    np.testing.assert_array_equal(resumed.signals, whole.signals)
    for name in whole.scalars:
        np.testing.assert_array_equal(resumed.scalars[name], whole.scalars[name])
    np.testing.assert_array_equal(resumed.snapshot_steps, whole.snapshot_steps)
    assert not (tmp_path / "run.ckpt.pt").exists()  # removed once complete


def test_resume_refuses_a_checkpoint_of_another_run(tmp_path):
    cfg = small("toy")
    path = tmp_path / "run.npz"
    with pytest.raises(KeyboardInterrupt):
        train(cfg, seed=0, out=path, checkpoint_every=10, callback=Interrupt(at=15))
    with pytest.raises(ValueError, match="belongs to another run"):
        train(cfg, seed=1, out=path, checkpoint_every=10, resume=True)


def test_divergence_stops_with_a_clear_error_and_keeps_the_steps_done(tmp_path):
    cfg = small("toy", task="classification", steps=200)
    path = tmp_path / "run.npz"
    state = {"n": 0}

    def poison(done, total):  # corrupt the decoder after 5 steps
        if done == 5:
            with torch.no_grad():
                for param in state["task"].model.decoder.parameters():
                    param.fill_(float("nan"))

    import fitting.training.trainer as trainer_module

    real = trainer_module.make_task

    def spy(config, seed):
        state["task"] = real(config, seed)
        return state["task"]

    trainer_module.make_task = spy
    try:
        with pytest.raises(TrainingDivergedError, match="non-finite loss at step 5"):
            train(cfg, seed=0, out=path, callback=poison)
    finally:
        trainer_module.make_task = real
    partial = Trajectory.load(path)
    assert partial.meta["completed"] is False and partial.meta["steps_done"] == 5
    assert np.all(np.isfinite(partial.scalars["train_loss"]))


def test_training_argument_errors(tmp_path):
    cfg = small("toy")
    with pytest.raises(ValueError, match="need an output path"):
        train(cfg, checkpoint_every=5)
    with pytest.raises(ValueError, match="out must end in .npz"):
        train(cfg, out=tmp_path / "run.txt")
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        train(cfg, seed=-1)


def test_cli_train_writes_one_file_per_seed(tmp_path, capsys):
    code = main(["train", "constant-attention", "--seeds", "2", "--steps", "30", "--out", str(tmp_path), "--quiet"])
    assert code == 0
    for seed in (0, 1):
        traj = Trajectory.load(tmp_path / f"constant-attention_seed{seed}.npz")
        assert traj.signals.shape == (30, 8)
    assert "seed 1:" in capsys.readouterr().out
    code = main(["train", "survival-mlp", "--seeds", "2", "--steps", "5", "--set", "p=11", "--set", "d=8",
                 "--batched", "--out", str(tmp_path / "b"), "--quiet"])
    assert code == 0 and len(list((tmp_path / "b").glob("*.npz"))) == 2
    assert main(["train", "toy", "--batched", "--out", str(tmp_path), "--quiet"]) == 2
    assert main(["train", "toy", "--set", "d=9", "--out", str(tmp_path), "--quiet"]) == 2
    assert "d must be an int in [1, 8]" in capsys.readouterr().err


@pytest.mark.parametrize("argv,work", [
    (["train", "constant-attention", "--seeds", "1", "--steps", "5"], ["fitting.training.trainer.train"]),
    (["train", "survival-mlp", "--batched", "--seeds", "2", "--steps", "5"], ["fitting.training.batched.train_batched"]),
    (["toy-phases", "regression", "--quick", "--steps", "5"], ["fitting.training.grid.train_grid"]),
    (["compare-network", "--seeds", "1", "--max-steps", "10", "--window", "250"],
     ["fitting.training.network_sweep.train_network_sweep", "fitting.training.compare.compare_network"]),
], ids=["train", "train --batched", "toy-phases", "compare-network"])
@pytest.mark.parametrize("kind", ["existing file", "under a file"])
def test_training_commands_check_their_output_folder_first(argv, work, kind, tmp_path, monkeypatch, capsys):
    """An unusable --out is one line naming it, exit 2, before any training."""
    from importlib import import_module

    def refuse(*args, **kwargs):
        raise AssertionError("the command started its work before checking --out")

    for target in work:
        module, _, attr = target.rpartition(".")
        monkeypatch.setattr(import_module(module), attr, refuse)
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    out = blocker if kind == "existing file" else blocker / "sub"
    assert main(argv + ["--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0] and str(out) in err[0], err
    assert "Errno" not in err[0]


def test_gradients_are_recorded_without_changing_the_run(tmp_path):
    cfg = small("constant-attention", steps=40, snapshot_every=1)
    plain = train(cfg, seed=2)
    traj = train(cfg, seed=2, out=tmp_path / "g.npz", gradients=True)
    assert np.array_equal(traj.embeddings, plain.embeddings)  # the last probe step is undone
    loaded = Trajectory.load(tmp_path / "g.npz")
    assert loaded.gradients.shape == loaded.embeddings.shape == loaded.updates.shape
    # the update taken from snapshot t is the next snapshot minus this one
    assert np.allclose(loaded.updates[:-1], np.diff(loaded.embeddings, axis=0), rtol=0, atol=1e-14)
    # minus the gradient points downhill: the loss falls along it at the start
    assert np.sum(-loaded.gradients[0] * loaded.updates[0]) > 0
    from fitting.training.configs import training_set

    data = training_set(loaded.meta)
    assert len(data) == len(loaded.meta["train_indices"])


def test_trained_files_carry_their_training_set_and_older_files_are_rebuilt(tmp_path):
    """The trainers store the training set in the file; a file written before
    they did (the set stripped) gets it back through the reader the trainers
    register for the force fit, which never imports them."""
    import warnings

    from fitting import FitQualityWarning
    from fitting.forcefit import ForceLawFit
    from fitting.forcefit.data import rebuilt_training_set
    from fitting.training.configs import training_set

    cfg = small("constant-attention", steps=30, snapshot_every=5)
    traj = train(cfg, seed=4, out=tmp_path / "r.npz", gradients=True)
    loaded = Trajectory.load(tmp_path / "r.npz")
    expected = training_set(loaded.meta)
    for t in (traj, loaded):
        assert np.array_equal(t.train.pairs, expected.pairs) and np.array_equal(t.train.labels, expected.labels)
    old = Trajectory(loaded.embeddings, loaded.snapshot_steps, meta=loaded.meta, gradients=loaded.gradients)
    assert old.train is None
    rebuilt = rebuilt_training_set(old.meta)
    assert np.array_equal(rebuilt.pairs, expected.pairs) and np.array_equal(rebuilt.labels, expected.labels)
    assert rebuilt_training_set({"task": "modular_addition"}) is None  # a meta no reader knows
    assert loaded.meta["task"] == "modular_addition"  # so the stored labels are checked against the task
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitQualityWarning)
        warnings.filterwarnings("error", message=".*not checked.*", category=FitQualityWarning)  # labels checked
        fit_new = ForceLawFit("builtin", n_bootstrap=0, windows=1, ranges=()).fit(loaded)
    fit_old = ForceLawFit("builtin", n_bootstrap=0, windows=1, ranges=()).fit(old)
    assert np.array_equal(fit_new.coef_, fit_old.coef_)
    for stacked in train_batched(small("survival-mlp", steps=6, snapshot_every=3), [1, 2]):
        assert np.array_equal(stacked.train.pairs, training_set(stacked.meta).pairs)


def test_batched_trainer_records_the_same_gradients_as_one_run():
    cfg = small("survival-mlp", steps=12, snapshot_every=4)
    stacked = train_batched(cfg, [3, 4], gradients=True)
    for seed, traj in zip([3, 4], stacked):
        one = train(cfg, seed, gradients=True)
        assert np.array_equal(traj.snapshot_steps, one.snapshot_steps)
        assert np.allclose(traj.gradients, one.gradients, rtol=1e-10, atol=1e-12)
        assert np.allclose(traj.updates, one.updates, rtol=1e-8, atol=1e-12)
    plain = train_batched(cfg, [3, 4])
    assert plain[0].gradients is None
    assert np.array_equal(plain[0].embeddings, stacked[0].embeddings)  # the final probe step is undone


def test_geometric_snapshots_with_gradients(tmp_path):
    """snapshot_every="auto" (the default) with gradients is the geometric schedule: dense early, gradients
    and updates at every kept step; without gradients the model's spacing (issue 53)."""
    cfg = small("constant-attention").replace(steps=130, snapshot_every="auto")
    traj = train(cfg, seed=2, gradients=True)
    assert traj.snapshot_steps.tolist() == list(range(100)) + [100, 110, 120, 130]
    assert traj.meta["snapshot_schedule"] == "geometric" and traj.meta["config"]["snapshot_every"] == "auto"
    plain = train(cfg, seed=2)
    assert plain.snapshot_steps.tolist() == [0, 50, 100, 130] and plain.meta["snapshot_schedule"] == 50
    assert len(traj.gradients) == len(traj.snapshot_steps)
    # the update of a snapshot one step before the next is that step's displacement
    np.testing.assert_allclose(traj.updates[:99], np.diff(traj.embeddings[:100], axis=0), atol=1e-12)


def test_cli_train_with_gradients_snapshots_on_the_geometric_schedule(tmp_path, capsys):
    assert main(["train", "constant-attention", "--steps", "120", "--gradients", "--out", str(tmp_path),
                 "--quiet"]) == 0
    traj = Trajectory.load(tmp_path / "constant-attention_seed0.npz")
    assert traj.snapshot_steps.tolist() == list(range(100)) + [100, 110, 120]
    assert main(["train", "constant-attention", "--steps", "120", "--gradients", "--snapshot-every", "40",
                 "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert Trajectory.load(tmp_path / "b" / "constant-attention_seed0.npz").snapshot_steps.tolist() == [0, 40, 80, 120]
    with pytest.raises(SystemExit) as exc:  # argparse's usage line, exit 2
        main(["train", "constant-attention", "--snapshot-every", "often", "--out", str(tmp_path), "--quiet"])
    assert exc.value.code == 2 and "--snapshot-every" in capsys.readouterr().err
