"""device= of the trainers, the live network and the recorder
(fitting.training.devices): names checked before any work, the default from
EMBDYN_DEVICE, the CPU bit for bit as without the option, and (on a machine
with a CUDA device only) CUDA against the CPU. Skipped without torch; CI's
torch step runs it with EMBDYN_REQUIRE_TORCH=1."""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")

from fitting.training import (ConstantAttentionConfig, EmbeddingRecorder, ToyConfig, available_devices,  # noqa: E402
                              check_device, config_for, train, train_batched, train_grid, train_network_sweep)
from fitting.training.devices import DEVICE_ENV, device_arg  # noqa: E402
from fitting.training.live import LiveNetwork  # noqa: E402

TOY = ToyConfig(p=6, d=2, hidden=16, task="regression", group="permutation", target_dim=4, embedding_lr=1e-2,
                n_train=20, steps=25, snapshot_every=1000)
GRID = {"decoder_lr": [1e-2, 3e-2], "decoder_weight_decay": [0.0, 3.0]}
SURVIVAL = config_for("survival-mlp", p=13, d=8, hidden=16, steps=20, snapshot_every=5)
NETWORK = ConstantAttentionConfig(p=7, hidden=16, steps=60)
SMALL = {  # one tiny run of each model, a few steps
    "survival-mlp": SURVIVAL,
    "toy": config_for("toy", steps=30, snapshot_every=10, embedding_lr=1e-2, decoder_lr=1e-2),
    "constant-attention": config_for("constant-attention", steps=30, snapshot_every=10),
    "sparse-modular": config_for("sparse-modular", steps=30, snapshot_every=10, n_train=128, n_val=32, n_probe=8),
}
ABSENT = [d for d in ("cuda:3", "cuda:7", "mps") if d not in available_devices()]


@pytest.fixture(autouse=True)
def no_device_env(monkeypatch):
    """Every test starts without EMBDYN_DEVICE (the CPU default), whatever the machine sets."""
    monkeypatch.delenv(DEVICE_ENV, raising=False)


def assert_same_trajectory(a, b):
    """Two trajectories equal bit for bit (arrays) and in their records."""
    assert np.array_equal(a.embeddings, b.embeddings) and np.array_equal(a.snapshot_steps, b.snapshot_steps)
    assert np.array_equal(a.signals, b.signals)
    assert a.scalars.keys() == b.scalars.keys()
    for name in a.scalars:
        assert np.array_equal(a.scalars[name], b.scalars[name]), name
    assert a.snapshot_arrays.keys() == b.snapshot_arrays.keys()
    for name in a.snapshot_arrays:
        assert np.array_equal(a.snapshot_arrays[name], b.snapshot_arrays[name]), name
    assert (a.gradients is None) == (b.gradients is None)
    if a.gradients is not None:
        assert np.array_equal(a.gradients, b.gradients) and np.array_equal(a.updates, b.updates)


# ------------------------------------------------------------ check_device
@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), None, "cpu:0"])
def test_the_cpu_is_accepted(device):
    assert check_device(device) == torch.device("cpu")
    assert "cpu" in available_devices() and available_devices()[0] == "cpu"


@pytest.mark.parametrize("device", ABSENT)
def test_a_device_that_is_not_there_is_refused_naming_the_devices_there(device):
    with pytest.raises(ValueError, match="device") as info:
        check_device(device)
    message = str(info.value)
    assert repr(device) in message and "'cpu'" in message and "this machine has" in message
    with pytest.raises(ValueError, match="gpu_device"):
        check_device(device, name="gpu_device")


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "", "CUDA", " cpu", "meta", "xla"])
def test_a_name_that_is_not_a_device_is_refused(device):
    with pytest.raises(ValueError, match="device") as info:
        check_device(device)
    assert repr(device) in str(info.value) and "'cpu'" in str(info.value)


@pytest.mark.parametrize("device", [3, 0, True, 1.5, ["cpu"]])
def test_a_device_of_another_type_is_a_type_error(device):
    with pytest.raises(TypeError, match="device"):
        check_device(device)


def test_the_default_is_embdyn_device(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert check_device(None) == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "")  # set but empty: unset
    assert check_device(None) == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "cuda:9")
    with pytest.raises(ValueError, match=f"device.*'cuda:9'.*{DEVICE_ENV}"):
        check_device(None)
    assert check_device("cpu") == torch.device("cpu")  # an explicit device wins over the variable
    with pytest.raises(ValueError, match="device"):  # a trainer's default reads it, before any work
        train(SMALL["toy"], 0)
    monkeypatch.setenv(DEVICE_ENV, "gpu")
    with pytest.raises(ValueError, match=f"'gpu'.*{DEVICE_ENV}"):
        check_device(None)


def test_device_arg_passes_none_on_for_the_workers_to_decide():
    assert device_arg(None) is None
    assert device_arg(torch.device("cpu")) == "cpu"
    assert device_arg("cuda:5", here=False) == "cuda:5"  # a cluster's workers check that they have it
    with pytest.raises(ValueError, match="device"):
        device_arg("cuda:x", here=False)
    with pytest.raises(ValueError, match="device"):
        device_arg("meta", here=False)


# ------------------------------------------------------------ on the CPU: the bits of before
@pytest.mark.parametrize("model", list(SMALL))
def test_train_on_the_cpu_is_bit_identical(model):
    cfg = SMALL[model]
    default = train(cfg, 0)
    on_cpu = train(cfg, 0, device="cpu")
    assert_same_trajectory(default, on_cpu)
    assert_same_trajectory(default, train(cfg, 0, device=torch.device("cpu")))
    assert on_cpu.meta["device"] == "cpu"


def test_train_with_gradients_on_the_cpu_is_bit_identical():
    assert_same_trajectory(train(SURVIVAL, 1, gradients=True), train(SURVIVAL, 1, gradients=True, device="cpu"))


def test_resume_on_the_cpu_is_bit_identical(tmp_path):
    cfg = SMALL["toy"]
    whole = train(cfg, 2)
    stop = {}

    def interrupt(done, total):
        if done == 12 and not stop:
            stop["at"] = done
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, 2, tmp_path / "run.npz", checkpoint_every=5, callback=interrupt, device="cpu")
    resumed = train(cfg, 2, tmp_path / "run.npz", checkpoint_every=5, resume=True, device="cpu")
    assert_same_trajectory(whole, resumed)


def test_train_grid_on_the_cpu_is_bit_identical():
    args = dict(seeds=[0, 1], stop_when="never", compile="never")
    default = train_grid(TOY, GRID, **args)
    on_cpu = train_grid(TOY, GRID, device="cpu", **args)
    keys = ["steps_train", "steps_val", "steps_run", "train_acc", "val_acc", "train_loss", "diverged"]
    for a, b in zip(default.records, on_cpu.records):
        assert [a[k] for k in keys] == [b[k] for k in keys]


def test_train_batched_on_the_cpu_is_bit_identical():
    default = train_batched(SURVIVAL, [0, 3])
    on_cpu = train_batched(SURVIVAL, [0, 3], device="cpu")
    for a, b in zip(default, on_cpu):
        assert_same_trajectory(a, b)
        assert b.meta["device"] == "cpu"


def test_train_network_sweep_on_the_cpu_is_bit_identical():
    args = dict(weight_decays=[0.0, 1.0], seeds=[0, 2], max_steps=60, check_every=20, window=10_000)
    default = train_network_sweep(NETWORK, **args)
    on_cpu = train_network_sweep(NETWORK, device="cpu", **args)
    assert np.array_equal(default.embeddings(), on_cpu.embeddings())
    for a, b in zip(default.records, on_cpu.records):
        assert a == b
    assert on_cpu.meta["device"] == "cpu"


def test_the_live_network_on_the_cpu_is_bit_identical():
    a, b = LiveNetwork(p=7, seed=1, hidden=8), LiveNetwork(p=7, seed=1, hidden=8, device="cpu")
    a.advance(15)
    b.advance(15)
    assert np.array_equal(a.embedding(), b.embedding())
    assert "device" not in a.values and "device" not in LiveNetwork.controls  # not a control a page sends


# ------------------------------------------------------------ refused before any work
def _refused_before_work(call, tmp_path):
    with pytest.raises(ValueError, match="device"):
        call()
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("device", ["cuda:99", "gpu"])
def test_every_trainer_refuses_a_missing_device_before_any_work(device, tmp_path, monkeypatch):
    assert device not in available_devices()
    import fitting.training.grid_stack as grid_stack
    import fitting.training.models as models

    def no_work(*args, **kwargs):
        raise AssertionError("work began before the device was checked")

    monkeypatch.setattr(models, "survival_initial_parameters", no_work)
    monkeypatch.setattr(models.ToyTask, "__init__", no_work)
    monkeypatch.setattr(models.ConstantAttentionTask, "__init__", no_work)
    monkeypatch.setattr(grid_stack, "ToyTask", no_work)
    _refused_before_work(lambda: train(SMALL["toy"], 0, tmp_path / "run.npz", device=device), tmp_path)
    _refused_before_work(lambda: train_grid(TOY, GRID, out=tmp_path / "grid.json", device=device), tmp_path)
    _refused_before_work(lambda: train_batched(SURVIVAL, [0, 1], tmp_path, device=device), tmp_path)
    _refused_before_work(lambda: train_batched(SURVIVAL, [0, 1], tmp_path, n_jobs=2, device=device), tmp_path)
    _refused_before_work(lambda: train_network_sweep(NETWORK, [0.0], [0], max_steps=5, check_every=5,
                                                     window=5, device=device), tmp_path)
    with pytest.raises(ValueError, match="device"):
        LiveNetwork(p=7, hidden=8, device=device)


def test_a_device_of_another_type_is_refused_by_the_trainers():
    with pytest.raises(TypeError, match="device"):
        train(SMALL["toy"], 0, device=3)
    with pytest.raises(TypeError, match="device"):
        train_grid(TOY, GRID, device=0)


# ------------------------------------------------------------ the recorder reads any device
def test_the_recorder_copies_only_the_token_rows_off_the_tensors_device():
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(8, 3))  # 7 tokens and an '=' row
    rec = EmbeddingRecorder(weight, tokens=range(7), every=1, snapshot_every=1, gradients=True)
    opt = torch.optim.SGD([weight], lr=0.1)
    rec.attach(opt)
    for _ in range(3):
        opt.zero_grad()
        weight.pow(2).sum().backward()
        opt.step()
    traj = rec.trajectory()
    assert traj.embeddings.shape == (4, 7, 3) and traj.embeddings.dtype == np.float64
    assert np.array_equal(traj.embeddings[-1], weight.detach()[:7].to(torch.float64).numpy())
    rows = EmbeddingRecorder(weight, tokens=[6, 0, 2])  # rows picked by an index tensor on the weight's device
    rows.record()
    assert np.array_equal(rows.trajectory().embeddings[0], weight.detach()[[6, 0, 2]].double().numpy())


# ------------------------------------------------------------ on a GPU
@pytest.mark.cuda  # deselected by default; .ci/run runs them where a CUDA device is, and says so where none is
class TestOnCuda:
    """float64 runs on "cuda" agree with the CPU's to 1e-5 (other kernels, other rounding: not bit for bit)."""

    def test_train_matches_the_cpu(self):
        for model in ("toy", "survival-mlp", "constant-attention", "sparse-modular"):
            cfg = SMALL[model]
            assert cfg.dtype == "float64"
            cpu, gpu = train(cfg, 0, device="cpu"), train(cfg, 0, device="cuda")
            assert gpu.meta["device"] == "cuda"
            np.testing.assert_allclose(gpu.embeddings, cpu.embeddings, rtol=0, atol=1e-5)
            np.testing.assert_allclose(gpu.signals, cpu.signals, rtol=0, atol=1e-5)
            for name in ("train_loss", "val_loss"):
                np.testing.assert_allclose(gpu.scalars[name], cpu.scalars[name], rtol=1e-5, atol=1e-5)

    def test_toy_grid_matches_the_cpu(self):
        args = dict(seeds=[0, 1], stop_when="never", compile="never", tanh="exact")
        cpu = train_grid(TOY, GRID, device="cpu", **args)
        gpu = train_grid(TOY, GRID, device="cuda", **args)
        for a, b in zip(cpu.records, gpu.records):
            assert (a["seed"], a["decoder_lr"], a["decoder_weight_decay"]) == \
                (b["seed"], b["decoder_lr"], b["decoder_weight_decay"])
            assert a["steps_run"] == b["steps_run"] and a["diverged"] == b["diverged"]
            assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5, abs=1e-5)
            assert b["train_acc"] == pytest.approx(a["train_acc"], abs=1e-5)
            assert b["val_acc"] == pytest.approx(a["val_acc"], abs=1e-5)

    def test_seed_batch_matches_the_cpu(self, tmp_path):
        cpu = train_batched(SURVIVAL, [0, 3], device="cpu")
        gpu = train_batched(SURVIVAL, [0, 3], tmp_path, device="cuda", gradients=True)
        again = train_batched(SURVIVAL, [0, 3], device="cpu", gradients=True)
        for a, b, c in zip(cpu, gpu, again):
            np.testing.assert_allclose(b.embeddings, c.embeddings, rtol=0, atol=1e-5)
            np.testing.assert_allclose(b.gradients, c.gradients, rtol=0, atol=1e-5)
            np.testing.assert_allclose(b.signals, a.signals, rtol=0, atol=1e-5)
            for name in ("train_loss", "val_loss"):
                np.testing.assert_allclose(b.scalars[name], a.scalars[name], rtol=1e-5, atol=1e-5)

    def test_network_sweep_matches_the_cpu(self):
        args = dict(weight_decays=[0.0, 1.0], seeds=[0], max_steps=60, check_every=20, window=10_000)
        cpu = train_network_sweep(NETWORK, device="cpu", **args)
        gpu = train_network_sweep(NETWORK, device="cuda", **args)
        np.testing.assert_allclose(gpu.embeddings(), cpu.embeddings(), rtol=0, atol=1e-5)

    def test_a_gpu_checkpoint_resumes_on_the_cpu(self, tmp_path):
        cfg = SMALL["toy"]
        whole = train(cfg, 2, device="cpu")

        def interrupt(done, total):
            if done == 12:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            train(cfg, 2, tmp_path / "run.npz", checkpoint_every=5, callback=interrupt, device="cuda")
        resumed = train(cfg, 2, tmp_path / "run.npz", checkpoint_every=5, resume=True, device="cpu")
        np.testing.assert_allclose(resumed.embeddings, whole.embeddings, rtol=0, atol=1e-5)

    def test_the_recorder_reads_a_cuda_embedding(self):
        weight = torch.nn.Parameter(torch.randn(8, 3, device="cuda"))
        rec = EmbeddingRecorder(weight, tokens=[6, 0, 2], every=1, snapshot_every=1)
        rec.record()
        assert np.array_equal(rec.trajectory().embeddings[0], weight.detach()[[6, 0, 2]].double().cpu().numpy())

    def test_the_live_network_trains_there(self):
        live = LiveNetwork(p=7, seed=1, hidden=8, device="cuda")
        live.advance(5)
        header, arrays = live.frame()
        assert header["step"] == 5 and arrays["positions"].shape == (7, 2)
