"""The Live tab's simulation: controls checked before they act, frames true to the state."""

import numpy as np
import pytest

import particles as pt
from fitting.explore.frames import decode_frame, encode_frame
from fitting.explore.live import CONTROLS, LiveSimulation


def test_frames_follow_simulate():
    sim = LiveSimulation(p=13, seed=4, steps_per_frame=7)
    x0 = sim.x.copy()
    sim.advance()
    config = pt.preset("clustering-alignment").replace(p=13)
    x, train, _ = config.sample(4)
    np.testing.assert_array_equal(x0, x)
    ref = pt.simulate(x, train, config.params, steps=7, dt=config.dt, record_every=7)
    np.testing.assert_array_equal(sim.x, ref.final)
    header, arrays = sim.frame()
    assert header["step"] == 7 and header["energy"] == pytest.approx(ref.energy[-1], rel=1e-12)
    m = pt.structure_metrics(ref.final, train)
    assert header["structure"] == m["structure"] and header["circularity"] == pytest.approx(m["circularity"])
    np.testing.assert_allclose(arrays["positions"], ref.final, atol=0)
    sums = ref.final[train.pairs[:, 0]] + ref.final[train.pairs[:, 1]]
    np.testing.assert_allclose(arrays["pair_sums"], sums)
    back, out = decode_frame(encode_frame(header, arrays))
    assert back["step"] == 7 and out["positions"].shape == (13, 2)


@pytest.mark.parametrize("changes, match", [
    ({"lam": -1}, "lam"), ({"lam": 101}, "lam"), ({"dt": 0}, "dt"), ({"dt": "fast"}, "dt"),
    ({"p": 2}, "p"), ({"p": 3.5}, "p"), ({"preset": "spiral"}, "preset"), ({"wd_target": "both"}, "wd_target"),
    ({"sig_a": 0}, "sig_a"), ({"steps_per_frame": 0}, "steps_per_frame"), ({"eps": float("nan")}, "eps"),
    ({"colour": 1}, "unknown control"), ({"k_a": True}, "k_a"), ({"seed": -1}, "seed")])
def test_bad_controls_change_nothing(changes, match):
    sim = LiveSimulation(p=11)
    sim.advance()
    before = (dict(sim.values), sim.x.copy(), sim.step, sim.version)
    with pytest.raises((ValueError, TypeError), match=match):
        sim.update({"lam": 2.0, **changes})  # a good change beside the bad one is not applied either
    assert sim.values == before[0] and sim.step == before[2] and sim.version == before[3]
    np.testing.assert_array_equal(sim.x, before[1])


def test_every_control_has_a_stated_range():
    for name, control in CONTROLS.items():
        text = control.describe()
        assert ("one of" in text) if control.kind == "choice" else ("[" in text or "(" in text), name


def test_law_changes_keep_the_state_and_restarts_start_again():
    sim = LiveSimulation(p=11, seed=2)
    sim.advance(30)
    x = sim.x.copy()
    sim.update({"lam": 0.5, "k_r": 2.0})
    np.testing.assert_array_equal(sim.x, x)
    assert sim.step == 30 and sim.law.lam == 0.5 and sim.law.k_r == 2.0
    sim.update({"seed": 3})
    assert sim.step == 0 and not np.array_equal(sim.x, x)
    sim.update({"preset": "circles"})
    assert sim.values["lam"] == pt.preset("circles").params.lam and sim.values["dt"] == pt.preset("circles").dt


def test_pca_for_d_above_two():
    sim = LiveSimulation(p=11, d=4)
    sim.advance()
    header, arrays = sim.frame()
    assert 0 < header["explained"] <= 1 and arrays["positions"].shape == (11, 2)
    centred = sim.x - sim.x.mean(0)
    assert np.sum(arrays["positions"] ** 2) == pytest.approx(header["explained"] * np.sum(centred ** 2), rel=1e-9)


def test_a_run_that_blows_up_keeps_its_last_good_state(monkeypatch):
    import sys

    simulate_module = sys.modules["particles.simulate"]

    sim = LiveSimulation(p=11)
    sim.advance()
    x, step = sim.x.copy(), sim.step

    def boom(*args, **kwargs):
        raise simulate_module.NonFiniteStateError(5, None, "simulate")

    monkeypatch.setattr(simulate_module, "simulate", boom)
    sim.advance()
    assert sim.error and "stopped" in sim.error and sim.step == step
    np.testing.assert_array_equal(sim.x, x)
    header, _ = sim.frame()
    assert header["error"] == sim.error


def test_a_frame_past_its_budget_is_cut_and_says_so():
    """Issue 54: a frame runs in chunks and ends after the chunk that passes its time budget (here 0 s: the
    first chunk), or when the page has gone; the steps taken are the simulation's, bit for bit."""
    sim = LiveSimulation(p=13, seed=4, steps_per_frame=1000)
    x, train = sim.x.copy(), sim.train
    done = sim.advance(budget=0.0)
    assert 1 <= done < 1000 and sim.cut == {"done": done, "asked": 1000} and sim.step == done
    config = pt.preset("clustering-alignment").replace(p=13)
    ref = pt.simulate(x, train, config.params, steps=done, dt=config.dt, record_every=done)
    np.testing.assert_array_equal(sim.x, ref.final)
    assert sim.frame()[0]["cut"] == sim.cut
    assert sim.advance(stop=lambda: True) < 1000  # the page went: the frame stops after a chunk
    sim.update({"steps_per_frame": 5})
    assert sim.advance() == 5 and sim.cut is None  # within budget: whole


def test_a_control_change_goes_before_the_rest_of_a_long_frame():
    """Issue 54: a control change does not wait for a frame (10^6 steps here): it is in force from the
    frame's next chunk."""
    import threading

    sim = LiveSimulation(p=11, seed=1)
    gone = threading.Event()
    worker = threading.Thread(target=sim.advance, args=(10**6,), kwargs={"stop": gone.is_set})
    worker.start()
    try:
        while sim.step == 0:  # the frame is under way
            pass
        values = sim.update({"lam": 0.25})  # staged: it returns at once and is in force from the next chunk
        assert values["lam"] == 0.25
        while sim.law.lam != 0.25:
            pass
        assert worker.is_alive() and sim.step < 10**6 and sim.version == sim.staged_version
    finally:
        gone.set()
        worker.join()
    assert sim.cut is not None and sim.cut["done"] == sim.step


def test_a_reset_during_a_frame_ends_it(interrupted_frame):
    sim = LiveSimulation(p=13, seed=1)
    assert interrupted_frame(sim, 10_000_000, sim.reset) < 10_000_000
    assert sim.step == 0
