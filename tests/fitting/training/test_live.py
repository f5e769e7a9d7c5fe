"""The live network of the explorer's Network tab (fitting.training.live): the
trainer's trajectory, control changes, reset, refusals. Skipped without torch;
CI's torch step runs it with EMBDYN_REQUIRE_TORCH=1."""

import os

import numpy as np
import pytest

from particles.core.controls import ControlError

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")
from fitting.training import ConstantAttentionConfig, SurvivalMLPConfig, train  # noqa: E402
from fitting.training.live import NETWORK_CONTROLS, LiveNetwork, LiveSurvivalMLP, network_control_spec  # noqa: E402


@pytest.mark.parametrize("decay_on, wd", [("all", 0.3), ("embedding", 1.0)])
def test_it_follows_the_trainer_step_for_step(decay_on, wd):
    steps = 120
    live = LiveNetwork(p=11, seed=4, hidden=16, lr=0.02, weight_decay=wd, decay_on=decay_on, train_fraction=0.7)
    assert live.advance(steps) == steps
    extra = {} if decay_on == "all" else {"weight_decay": 0.0, "embedding_weight_decay": wd}
    cfg = ConstantAttentionConfig(p=11, hidden=16, lr=0.02, train_fraction=0.7, steps=steps,
                                  **({"weight_decay": wd} | extra))
    traj = train(cfg, seed=4)
    np.testing.assert_allclose(live.embedding(), traj.embeddings[-1], rtol=1e-6, atol=1e-7)
    header, arrays = live.frame()
    assert header["step"] == steps
    # the last step's training loss and accuracy (taken before its update, as the trainer records them)
    assert header["train_acc"] == pytest.approx(float(traj.scalars["train_acc"][-1]), abs=1e-9)
    assert header["train_loss"] == pytest.approx(float(traj.scalars["train_loss"][-1]), rel=1e-6)
    assert arrays["positions"].shape == (11, 2)
    assert arrays["pair_sums"].shape == (len(traj.train), 2)
    assert np.any(arrays["force"] != 0)


def test_a_control_change_acts_from_the_next_step_and_reset_goes_back():
    live = LiveNetwork(p=7, seed=1, hidden=8)
    start = live.embedding()
    live.advance(5)
    same = LiveNetwork(p=7, seed=1, hidden=8)
    same.advance(5)
    np.testing.assert_array_equal(live.embedding(), same.embedding())
    live.update({"lr": 0.05, "weight_decay": 2.0, "decay_on": "embedding"})
    same.advance(5)
    live.advance(5)
    assert not np.allclose(live.embedding(), same.embedding())
    groups = live.task.optimizers[0].param_groups
    assert [g["weight_decay"] for g in groups] == [2.0, 0.0] and all(g["lr"] == 0.05 for g in groups)
    live.update({"decay_on": "classifier"})
    assert [g["weight_decay"] for g in live.task.optimizers[0].param_groups] == [0.0, 2.0]
    assert live.version == 2
    live.reset()
    assert live.step == 0
    # the controls stay; the state is the seed's initial one
    np.testing.assert_array_equal(live.embedding(), start)
    live.update({"p": 9})  # a restart control: a new run
    assert live.embedding().shape == (9, 2) and live.restarts == 2


def test_refused_controls_name_themselves_and_change_nothing():
    live = LiveNetwork(p=7, hidden=8)
    before = dict(live.values)
    for changes, name in [({"lr": 0.0}, "lr"), ({"p": 2}, "p"), ({"decay_on": "bias"}, "decay_on"),
                          ({"weight_decay": -1}, "weight_decay"), ({"speed": 3}, "speed"),
                          ({"lr": 0.1, "hidden": 0}, "hidden")]:
        with pytest.raises(ControlError, match=name) as info:
            live.update(changes)
        assert info.value.parameter == name
    assert live.values == before and live.version == 0
    with pytest.raises(ControlError, match="hidden"):
        LiveNetwork(hidden=2048)


def test_a_budget_cuts_a_frame_and_says_so():
    live = LiveNetwork(p=7, hidden=8)
    done = live.advance(10_000, budget=0.0)
    assert done == 1 and live.cut == {"done": 1, "asked": 10_000}
    assert live.advance(3) == 3 and live.cut is None


def test_the_spec_lists_every_control_with_its_range():
    spec = network_control_spec()
    assert set(spec) == set(NETWORK_CONTROLS)
    assert spec["decay_on"]["choices"] == ["all", "embedding", "classifier"]
    assert spec["lr"]["accepted"] == "a number in (0, 1]"


def test_a_restart_the_split_refuses_changes_nothing():
    live = LiveNetwork(p=3, hidden=4)
    before, version = dict(live.values), live.version
    with pytest.raises(ControlError, match="no network"):
        live.update({"train_fraction": 0.05})  # no training pair at p = 3
    assert live.values == before and live.version == version
    live.reset()  # still works
    assert live.update({"seed": 2})["seed"] == 2


def test_a_runaway_network_stops_with_its_reason_and_still_frames():
    live = LiveNetwork(p=5, hidden=4, lr=1.0, weight_decay=100.0)
    done = live.advance(500)
    assert done < 500 and live.error is not None and ("ran away" in live.error or "loss" in live.error)
    header, arrays = live.frame()  # no exception: the page is told, the session lives
    assert header["error"] == live.error
    live.reset()
    assert live.error is None and live.step == 0


def test_the_last_steps_are_recorded_for_a_fitted_law():
    from fitting.training.live import RECORDED

    net = LiveNetwork(p=7, seed=2, steps_per_frame=1)
    empty = net.recorded()
    assert empty["X"].shape == (0, 7, 2) and empty["steps"].size == 0
    E0 = net.embedding()
    net.advance(25)
    rec = net.recorded()
    assert rec["steps"].tolist() == list(range(25)) and rec["step"] == 25
    np.testing.assert_array_equal(rec["X"][0], E0)  # the state each gradient was taken at: before the step
    header, arrays = net.frame()
    np.testing.assert_array_equal(rec["G"][-1], arrays["force"])  # minus the last step's loss gradient
    np.testing.assert_array_equal(rec["now"], net.embedding())
    assert not np.array_equal(rec["X"][-1], rec["now"])  # the last step moved it
    net.advance(RECORDED)
    rec = net.recorded()
    assert len(rec["steps"]) == RECORDED and rec["steps"][0] == 25 and rec["steps"][-1] == RECORDED + 24
    net.reset()
    assert net.recorded()["steps"].size == 0


def test_the_survival_mlp_follows_its_trainer_at_d_2():
    steps = 60
    live = LiveSurvivalMLP(p=11, seed=4, hidden=24, lr=0.02, weight_decay=0.4, train_fraction=0.7)
    assert live.advance(steps) == steps
    traj = train(SurvivalMLPConfig(p=11, d=2, hidden=24, lr=0.02, weight_decay=0.4, train_fraction=0.7, steps=steps),
                 seed=4)
    np.testing.assert_allclose(live.embedding(), traj.embeddings[-1], rtol=1e-12, atol=1e-12)  # float64
    header, arrays = live.frame()
    assert header["model"] == "survival-mlp" and live.meta()["model"] == "survival-mlp"
    assert header["train_loss"] == pytest.approx(float(traj.scalars["train_loss"][-1]), rel=1e-9)
    assert arrays["pair_sums"].shape == (len(traj.train), 2)  # ordered pairs


def test_the_survival_mlp_decay_on_the_embedding_only():
    """decay_on = "embedding": the layers undecayed from the first step; a step equals an AdamW step with the
    decay on the embedding's group only."""
    net = LiveSurvivalMLP(p=7, seed=1, hidden=8, weight_decay=2.0, decay_on="embedding")
    embedding, layers = net.task.optimizers[0].param_groups
    assert embedding["weight_decay"] == 2.0 and layers["weight_decay"] == 0.0
    assert embedding["params"][0] is net.task.model.embedding
    net.update({"decay_on": "all"})
    assert [g["weight_decay"] for g in net.task.optimizers[0].param_groups] == [2.0, 2.0]


def test_a_restart_during_a_frame_ends_it(interrupted_frame):
    """The rest of a frame's steps belong to the old run: after a restart sent mid-frame the new run is at
    step 0 (a paused page would otherwise see it a few steps in)."""
    net = LiveNetwork(p=13, seed=1)
    assert interrupted_frame(net, 100_000, lambda: net.update({"p": 11})) < 100_000
    assert net.step == 0 and net.values["p"] == 11 and net.embedding().shape == (11, 2)
