"""fitting.stages on generated signals and curves with known boundaries."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fitting
from fitting.signals.stages import MIN_POINTS, network_curves, stages
from particles.trajectory import Trajectory


def logistic(t, centre, width):
    return 1.0 / (1.0 + np.exp(-(t - centre) / width))


def generated_run(*, T=2001, K=20, key=(3, 7), circuit=600.0, cleanup=1400.0, grok=900.0, mem=80.0,
                  generalise=True, noise=0.0, seed=0, scale=1.0, every=25):
    """Signals whose key frequencies grow around ``circuit`` and whose other frequencies decay around
    ``cleanup``; train accuracy rising around ``mem`` and validation accuracy around ``grok``."""
    rng = np.random.default_rng(seed)
    t = np.arange(T, dtype=float)
    base = 1.0 + 0.05 * rng.random(K)
    S = np.tile(base, (T, 1))
    for k in key:
        S[:, k - 1] = base[k - 1] * (1 + 9 * logistic(t, circuit, 40.0))
    others = [j for j in range(K) if j + 1 not in key]
    S[:, others] *= (1 - 0.9 * logistic(t, cleanup, 40.0))[:, None]
    S *= np.exp(noise * rng.standard_normal(S.shape))
    curve_steps = np.arange(0, T, every)
    tc = curve_steps.astype(float)
    train_acc = 0.02 + 0.98 * logistic(tc, mem, 10.0)
    val_acc = 0.02 + (0.98 * logistic(tc, grok, 30.0) if generalise else 0.1 * logistic(tc, grok, 30.0))
    train_loss = np.exp(-5 * logistic(tc, mem, 10.0)) * 3.0
    p = 2 * K + 1
    emb = rng.standard_normal((2, p, 4))
    return Trajectory(emb, [0, T - 1], steps=t.astype(int), signals=scale * S,
                      meta={"p": p, "signal_power": 1},
                      curves={"train_acc": (curve_steps, train_acc), "val_acc": (curve_steps, val_acc),
                              "train_loss": (curve_steps, train_loss)})


def test_known_boundaries_are_found():
    run = stages(generated_run())
    assert run.key_frequencies == [3, 7]
    circuit, cleanup, gen, mem = (run["circuit formation"], run["cleanup"], run["generalisation"],
                                  run["memorisation"])
    assert all(s.found for s in (circuit, cleanup, gen, mem))
    # the circuit share (power of k = 3, 7 over all) rises with the logistic at 600 (width 40): its 10 % and
    # 90 % points lie within a few widths of the centre
    assert 450 <= circuit.start <= 560 and 640 <= circuit.stop <= 760
    # the log power outside falls as 2 log(1 - 0.9 L) to log 0.01: 10 % of its fall at L = 0.229 (step 1351),
    # 90 % at L = 0.971 (step 1540)
    assert abs(cleanup.start - 1351) <= 3 and abs(cleanup.stop - 1540) <= 3
    assert abs(gen.start - (900 - 2.2 * 30)) <= 25 and abs(gen.stop - (900 + 2.2 * 30)) <= 25
    assert mem.start == 0 and abs(mem.stop - (80 + 2.2 * 10)) <= 25
    for s in (circuit, cleanup, gen, mem):
        assert s.stop_range[0] <= s.stop <= s.stop_range[1]
    assert run.lead_time["steps"] > 0
    assert run.lead_time["low"] <= run.lead_time["steps"] <= run.lead_time["high"]
    assert run.edges[0] == 0 and run.edges[-1] == 2001
    assert run.window_names[:3] == ["memorisation", "circuit formation", "cleanup"]


def test_no_generalisation_is_not_placed():
    run = stages(generated_run(generalise=False))
    gen = run["generalisation"]
    assert not gen.found and "did not generalise" in gen.reason
    assert run.lead_time is None


def test_no_circuit_says_so():
    traj = generated_run()
    flat = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps,
                      signals=np.ones_like(traj.signals) + 0.01 * np.random.default_rng(1).random(traj.signals.shape),
                      meta=traj.meta, curves=traj.curves)
    run = stages(flat)
    assert not run["circuit formation"].found
    assert not run["cleanup"].found
    assert "circuit formation" not in run.window_names
    # a flat spectrum makes every frequency a candidate: none is reported as the circuit
    assert run.circuit_frequencies == [] and run.to_dict()["circuit_frequencies"] == []
    assert len(run.share_frequencies) >= 1 and run.to_dict()["share_frequencies"] == run.share_frequencies
    legend = [t.get_text() for t in run.figure().axes[0].get_legend().get_texts()]
    assert any("no circuit formed" in t for t in legend)
    placed = stages(traj)
    assert placed.circuit_frequencies == placed.share_frequencies and placed.circuit_frequencies


def test_without_curves_only_the_embedding_stages():
    traj = generated_run()
    bare = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps, signals=traj.signals, meta=traj.meta)
    run = stages(bare)
    assert run["circuit formation"].found and run["cleanup"].found
    assert not run["memorisation"].found and "records no training" in run["memorisation"].reason
    assert not run["generalisation"].found and "no validation accuracy" in run["generalisation"].reason


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(1e-3, 1e3), seed=st.integers(0, 10_000), noise=st.floats(0, 0.05))
def test_scale_free(scale, seed, noise):
    """Multiplying the signals by a constant changes no boundary (the rules read progress, not level)."""
    a = stages(generated_run(seed=seed, noise=noise)).to_dict()
    b = stages(generated_run(seed=seed, noise=noise, scale=scale)).to_dict()
    assert a["stages"] == b["stages"] or [s["stop"] for s in a["stages"]] == [s["stop"] for s in b["stages"]]
    assert a["lead_time"] == b["lead_time"]


def test_too_short_is_refused_before_work():
    traj = generated_run(T=MIN_POINTS - 1, every=1)
    with pytest.raises(ValueError, match=rf"at {MIN_POINTS - 1} steps .*needs at least {MIN_POINTS}"):
        stages(traj)


def test_bad_frequencies():
    traj = generated_run()
    with pytest.raises(ValueError, match="frequencies"):
        stages(traj, frequencies=[0, 3])
    with pytest.raises(ValueError, match="frequencies"):
        stages(traj, frequencies="sideways")
    with pytest.raises(TypeError, match="trajectory"):
        stages(traj.signals)


def test_curves_from_trainer_scalars():
    traj = generated_run()
    t = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps, signals=traj.signals, meta=traj.meta,
                   scalars={"val_acc": np.linspace(0, 1, len(traj.steps))})
    curves = network_curves(t)
    assert set(curves) == {"val_acc"}
    assert np.array_equal(curves["val_acc"][0], traj.steps)


def test_curves_round_trip_through_the_file(tmp_path):
    traj = generated_run()
    path = traj.save(tmp_path / "run.npz")
    back = Trajectory.load(path)
    assert set(back.curves) == set(traj.curves)
    for name, (s, v) in traj.curves.items():
        assert np.array_equal(back.curves[name][0], s) and np.array_equal(back.curves[name][1], v)
    assert stages(back).to_dict() == stages(traj).to_dict()


def test_exported():
    assert fitting.stages is stages
    assert fitting.network_curves is network_curves


def test_figure_has_labelled_axes():
    fig = stages(generated_run()).figure()
    for ax in fig.axes:
        assert ax.get_ylabel()
    assert fig.axes[-1].get_xlabel() or any(a.get_xlabel() for a in fig.axes)


def test_a_curve_that_does_not_rise_places_no_stage():
    """Training accuracy logged from a step at which it is already 1: no memorisation to place (a review found
    it placed over the whole run)."""
    traj = generated_run()
    steps = np.arange(250, 2001, 25)
    flat = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps, signals=traj.signals, meta=traj.meta,
                      curves={"train_acc": (steps, np.ones(len(steps))), "val_acc": traj.curves["val_acc"]})
    run = stages(flat)
    assert not run["memorisation"].found and "does not rise above its noise" in run["memorisation"].reason
    assert "memorisation" not in run.window_names and run.grokking is None


def test_a_zero_final_spectrum_is_a_value_error():
    traj = generated_run()
    signals = traj.signals.copy()
    signals[-1] = 0.0
    zero = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps, signals=signals, meta=traj.meta)
    with pytest.raises(ValueError, match="final Fourier spectrum is zero"):
        stages(zero)


def test_the_refusal_of_stage_windows_says_why_each_stage_gives_no_cut():
    from fitting.signals.stages import stage_windows

    traj = generated_run()
    bare = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps,
                      signals=np.ones_like(traj.signals) + 0.01 * np.random.default_rng(3).random(traj.signals.shape),
                      meta=traj.meta, curves={"val_acc": traj.curves["val_acc"]})
    with pytest.raises(ValueError) as caught:
        stage_windows(bare)
    text = str(caught.value)
    assert "memorisation: the run records no training" in text and "circuit formation: the circuit share" in text
    assert "generalisation: placed, but the windows are cut at the ends of the other stages" in text


def test_the_shipped_survival_run_is_no_grokking():
    """The survival paper's MLP learns and generalises together: the stages say "no grokking"."""
    run = stages(fitting.example_trajectory())
    assert run["memorisation"].found and run["generalisation"].found
    assert run.grokking["grokked"] is False and "no grokking" in run.table()
