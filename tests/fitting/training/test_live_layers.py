"""The live sparse-modular network of the explorer's Layers tab (fitting.training.live_layers): its frames
hold the layer states of its task's state, it follows the trainer step for step, control ranges and
refusals, reset. Skipped without torch; CI's torch step runs it with EMBDYN_REQUIRE_TORCH=1."""

import os

import numpy as np
import pytest

from particles.core.controls import ControlError

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")
from fitting.training import config_for, train  # noqa: E402
from fitting.training.layers import LAYER_PREFIX  # noqa: E402
from fitting.training.live_layers import (CURRICULUM_STEPS, LAYER_CONTROLS, STEPS_PER_FRAME,  # noqa: E402
                                          LiveSparseModular, layer_control_spec)


@pytest.fixture(scope="module")
def live():
    return LiveSparseModular()


def test_a_frame_holds_the_layers_of_its_state(live):
    live.reset()
    live.advance(7)
    header, arrays = live.frame()
    read = live.task.layers.read()
    assert sorted(arrays) == sorted(k[len(LAYER_PREFIX):] for k in read)
    for name, value in read.items():
        np.testing.assert_array_equal(arrays[name[len(LAYER_PREFIX):]], value, err_msg=name)
    assert header["step"] == 7 and header["kind"] == "layers" and (header["p"], header["T"], header["k"]) == (2, 12, 5)
    assert sorted(header["grad_norms"]) == sorted(live.task.layer_groups)
    assert all(v > 0 for v in header["grad_norms"].values())
    # the losses and accuracies of the state shown, on the whole training and validation sets
    with torch.no_grad():
        logits = live.task.model(live.task.val_tokens)
        acc = float((logits.argmax(1) == live.task.val_labels).double().mean())
    assert header["val_acc"] == pytest.approx(acc) and 0 <= header["train_acc"] <= 1
    assert np.isfinite(header["batch_loss"]) and header["train_loss"] > 0
    meta = live.meta()
    assert meta["probe_labels"] == live.task.layers.labels.tolist() and len(meta["probe_split"]) == 256
    assert sorted(meta["controls"]) == sorted(LAYER_CONTROLS) and meta["values"]["steps_per_frame"] == STEPS_PER_FRAME


@pytest.mark.parametrize("changes", [{}, {"p": 3, "seq_len": 6, "k": 3, "seed": 2, "init_scale": 0.5,
                                          "batch_size": 16, "lr": 0.01}])
def test_it_follows_the_trainer_step_for_step(changes):
    steps = 40
    net = LiveSparseModular(**changes)
    assert net.advance(steps) == steps
    fields = {k: v for k, v in changes.items() if k != "seed"}
    traj = train(config_for("sparse-modular", steps=steps, **fields), seed=changes.get("seed", 0))
    np.testing.assert_allclose(net.embedding(), traj.embeddings[-1], rtol=1e-9, atol=1e-12)
    assert net.frame()[0]["step"] == steps


def test_the_curriculum_is_the_trainers():
    net = LiveSparseModular(curriculum="on", seed=1)
    task = net.task  # the trainer's task of the same configuration: its first labels sum the first token only
    assert net.config == config_for("sparse-modular", curriculum=CURRICULUM_STEPS, steps=net.config.steps)
    assert torch.equal(task.batch_labels(0), task.train_tokens[:, 0] % 2)
    net.advance(30)
    ref = LiveSparseModular(seed=1)
    ref.advance(30)
    assert not np.allclose(net.embedding(), ref.embedding())  # other labels, another run
    assert net.config.curriculum == CURRICULUM_STEPS and net.meta()["curriculum_steps"] == CURRICULUM_STEPS


def test_control_ranges_and_refusals_name_the_control(live):
    spec = layer_control_spec()
    assert spec["p"]["accepted"] == "an int in [2, 3]" and spec["curriculum"]["choices"] == ["off", "on"]
    assert spec["lr"]["accepted"] == "a number in (0, 1]" and spec["seq_len"]["restart"]
    assert not spec["lr"]["restart"] and not spec["batch_size"]["restart"]
    before, version = dict(live.values), live.version
    for changes, name in [({"p": 4}, "p"), ({"p": 1}, "p"), ({"seq_len": 0}, "seq_len"), ({"k": 13}, "k"),
                          ({"seq_len": 3}, "seq_len"), ({"lr": 0}, "lr"), ({"lr": "fast"}, "lr"),
                          ({"batch_size": 0}, "batch_size"), ({"init_scale": 0}, "init_scale"),
                          ({"curriculum": "yes"}, "curriculum"), ({"steps_per_frame": 0}, "steps_per_frame"),
                          ({"seed": -1}, "seed"), ({"hidden": 8}, "hidden"), ({"lr": 0.01, "p": 7}, "p")]:
        with pytest.raises(ControlError, match=name) as info:
            live.update(changes)
        assert info.value.parameter == name
    assert live.values == before and live.version == version
    # k = 1 has no curriculum to sum over
    with pytest.raises(ControlError) as info:
        LiveSparseModular(k=1, curriculum="on")
    assert info.value.parameter == "curriculum"
    with pytest.raises(ControlError, match="k"):
        LiveSparseModular(k=13)


def test_lr_and_batch_size_act_from_the_next_step_and_reset_goes_back(live):
    live.reset()
    start = live.embedding()
    live.update({"lr": 0.02, "batch_size": 8})
    assert live.step == 0 and live.task.config.batch_size == 8
    assert all(g["lr"] == 0.02 for g in live.task.optimizers[0].param_groups)
    live.advance(3)
    assert live.step == 3 and not np.allclose(live.embedding(), start)
    restarts = live.restarts
    live.reset()
    assert live.step == 0 and live.restarts == restarts + 1 and live.values["lr"] == 0.02
    np.testing.assert_array_equal(live.embedding(), start)  # the seed's initial network, controls kept
    values = live.update({"p": 3})  # a restart control: a new run
    assert values["p"] == 3 and live.embedding().shape == (3, 2) and live.frame()[1]["logits"].shape == (256, 3)
    live.update({"p": 2, "lr": 0.003, "batch_size": 32})


def test_a_budget_cuts_a_frame_and_says_so(live):
    done = live.advance(1000, budget=0.0)
    assert done == 1 and live.cut == {"done": 1, "asked": 1000}
    assert live.advance(2) == 2 and live.cut is None


def test_the_handover_is_refused_by_name(live):
    with pytest.raises(ControlError) as info:
        live.recorded()
    assert info.value.parameter == "from"
