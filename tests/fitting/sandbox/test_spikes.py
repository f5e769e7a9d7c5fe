"""The spike rule, its cause attribution and the stages, on curves and layer
states built by hand (no torch, no training)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitting.sandbox.data import LayerStates
from fitting.sandbox.spikes import (SPIKE_RULE, Spike, SpikeReport, Stages, find_spikes, find_stages, region_classes,
                                    report_table, trace_spikes, within_class_share)

GROUPS = ("embedding", "position", "query", "value", "mlp_in", "mlp_out")


def smooth_loss(n=2000, seed=0, noise=0.05):
    """A decaying loss with multiplicative noise (log-normal, sd ``noise``)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return t, 0.7 * np.exp(-t / 800) * np.exp(noise * rng.normal(size=n)) + 1e-4


def with_spike(loss, at=1200, factors=(3, 10, 30, 12, 4, 2)):
    out = loss.copy()
    out[at:at + len(factors)] *= np.asarray(factors, dtype=float)
    return out


# ---------------------------------------------------------------- the rule
def test_constructed_spike_found_once_at_its_peak():
    steps, loss = smooth_loss()
    spikes = find_spikes(steps, with_spike(loss))
    assert len(spikes) == 1
    s = spikes[0]
    assert (s.step, s.onset) == (1202, 1200)
    assert s.end in (1204, 1205)  # the last factor (2) is at the threshold, under the noise
    assert 20 < s.ratio < 45 and s.loss == pytest.approx(with_spike(loss)[1202])
    assert s.sigmas > 5


def test_no_spike_on_the_same_curve_without_it():
    for seed in range(5):
        steps, loss = smooth_loss(seed=seed)
        assert find_spikes(steps, loss) == []


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_scale_free(scale):
    steps, loss = smooth_loss()
    spiked = with_spike(loss)
    base = find_spikes(steps, spiked)
    scaled = find_spikes(steps, spiked * scale)
    assert [(s.step, s.onset, s.end, s.flagged) for s in scaled] == [(s.step, s.onset, s.end, s.flagged)
                                                                        for s in base]
    for a, b in zip(base, scaled):
        assert b.ratio == pytest.approx(a.ratio, rel=1e-9)
        assert b.loss == pytest.approx(a.loss * scale, rel=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(st.floats(1e-4, 1e4), st.just(0.0), st.just(1.0), st.just(2.0)),
                       min_size=12, max_size=120),
       log_scale=st.floats(-12, 12), window=st.integers(3, 10), min_gap=st.integers(1, 5))
def test_scale_free_property(values, log_scale, window, min_gap):
    loss = np.asarray(values)
    steps = np.arange(len(loss)) * 3
    c = 10.0 ** log_scale
    rule = {"window": window, "min_gap": min_gap, "factor": 2.0, "sigmas": 3.0}
    base = find_spikes(steps, loss, **rule)
    scaled = find_spikes(steps, loss * c, **rule)
    assert [(s.step, s.onset, s.end, s.flagged) for s in scaled] == [(s.step, s.onset, s.end, s.flagged)
                                                                        for s in base]
    for a, b in zip(base, scaled):
        assert b.ratio == pytest.approx(a.ratio, rel=1e-6)


def test_merging_and_the_gap():
    steps, loss = smooth_loss()
    two = with_spike(with_spike(loss, 1200, (10,)), 1215, (20,))
    assert [s.step for s in find_spikes(steps, two)] == [1215]  # 15 steps apart: one spike (min_gap 20)
    assert [s.step for s in find_spikes(steps, two, min_gap=10)] == [1200, 1215]


def test_a_spike_does_not_raise_the_baseline_of_its_own_tail():
    """An oscillating episode (every other step 20x) and a tail at 5x: one spike to the tail's end. Were the
    flagged steps kept in the baseline, the spread of the episode would hide the tail (5 sigmas)."""
    steps, loss = smooth_loss()
    spiked = loss.copy()
    spiked[1200:1270:2] *= 20
    spiked[1270:1290] *= 5
    (s,) = find_spikes(steps, spiked)
    assert (s.onset, s.end) == (1200, 1289)
    assert s.flagged == 35 + 20


def test_noise_alone_is_not_a_spike():
    """A doubling that is everyday noise (a noisy curve) is refused by the sigmas condition."""
    steps, loss = smooth_loss(noise=0.5)
    assert find_spikes(steps, loss, sigmas=0) != []  # doublings happen
    assert find_spikes(steps, loss) == []


@pytest.mark.parametrize("kwargs, name, exc", [
    ({"window": 2}, "window", ValueError), ({"window": 10.0}, "window", TypeError),
    ({"factor": 1.0}, "factor", ValueError), ({"factor": "2"}, "factor", TypeError),
    ({"min_gap": 0}, "min_gap", ValueError), ({"sigmas": -1.0}, "sigmas", ValueError),
])
def test_rule_checks(kwargs, name, exc):
    steps, loss = smooth_loss(200)
    with pytest.raises(exc, match=name):
        find_spikes(steps, loss, **kwargs)


def test_curve_checks():
    steps, loss = smooth_loss(200)
    with pytest.raises(ValueError, match="steps must increase"):
        find_spikes(steps[::-1], loss)
    with pytest.raises(ValueError, match="loss"):
        find_spikes(steps, loss[:-1])
    with pytest.raises(ValueError, match="loss must be >= 0"):
        find_spikes(steps, -loss)
    with pytest.raises(ValueError, match="loss must be finite"):
        find_spikes(steps, np.where(steps == 50, np.nan, loss))
    assert find_spikes(steps[:50], loss[:50]) == []  # shorter than the window
    assert find_spikes(steps, np.zeros(200)) == []


# ---------------------------------------------------------------- hand-built runs
G = 8
EXTENT = np.array([-1.0, 1.0, -1.0, 1.0])
#: the class of a grid point: 1 right of x = 0, 0 left of it (grid columns 4..7 / 0..3)
REGIONS = np.tile((np.arange(G) >= G // 2).astype(float), (G, 1))
TOKENS = np.array([[0, 1, 0], [1, 1, 1], [0, 0, 1], [1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
LABELS = TOKENS[:, 0] ^ TOKENS[:, 1]


def build_run(*, cross=0, collapse=False, spike_at=120, snapshot_every=50, n_steps=300, jump="value"):
    """A run of ``n_steps`` steps with one loss spike at ``spike_at`` (peak two
    steps later), the gradient of ``jump`` jumping 200x there (the others 3x),
    snapshots every ``snapshot_every`` steps; ``cross`` probe sequences move
    across the region boundary from the first snapshot after the spike on,
    and with ``collapse`` the input of token 1 at position 2 has 1/100 of the
    median norm at the snapshot before the spike."""
    rng = np.random.default_rng(0)
    t = np.arange(n_steps)
    loss = 0.3 * np.exp(-t / 500) * np.exp(0.02 * rng.normal(size=n_steps))
    loss[spike_at:spike_at + 4] *= (5, 20, 60, 8)
    curves = {"train_loss": (t, loss), "train_acc": (t, np.ones(n_steps))}
    for g in GROUPS:
        v = np.exp(0.05 * rng.normal(size=n_steps))
        v[spike_at:spike_at + 4] *= 200 if g == jump else 3
        curves[f"grad_norm_{g}"] = (t, v)
    rec = np.arange(0, n_steps + 1, snapshot_every)
    S, B = len(rec), len(LABELS)
    seq = np.column_stack([np.where(LABELS == 1, 0.5, -0.5), np.linspace(-0.5, 0.5, B)])
    sequence = np.repeat(seq[None], S, axis=0)
    after = rec > spike_at + 2
    movers = np.flatnonzero(LABELS == 0)[:cross]
    sequence[np.ix_(after, movers, [0])] = 0.5  # across x = 0
    inputs = np.ones((S, 2, TOKENS.shape[1], 2)) * np.array([0.6, 0.8])
    if collapse:
        inputs[np.flatnonzero(rec < spike_at)[-1], 1, 2] *= 0.01
    states = {"sequence": sequence, "regions_sequence": np.repeat(REGIONS[None], S, axis=0),
              "extent_sequence": np.repeat(EXTENT[None], S, axis=0), "inputs": inputs,
              "residual": sequence.copy()}
    states["normed_inputs"] = inputs / np.linalg.norm(inputs, axis=-1, keepdims=True)
    states["normed_sequence"] = sequence / np.linalg.norm(sequence, axis=-1, keepdims=True)
    return LayerStates(steps=rec, states=states, probe_tokens=TOKENS, probe_labels=LABELS,
                       probe_split=np.array(["train"] * len(LABELS)), p=2, curves=curves)


def test_region_classes_looks_up_the_nearest_grid_point():
    pts = np.array([[-0.5, 0.0], [0.5, 0.9], [0.2, -0.3], [-0.2, 0.3], [3.0, 0.0], [np.nan, 0.0]])
    assert region_classes(pts, REGIONS, EXTENT).tolist() == [0, 1, 1, 0, 1, -1]
    rows = np.tile((np.arange(G) >= G // 2).astype(float)[:, None], (1, G))  # by y: a row is one y
    assert region_classes(pts, rows, EXTENT).tolist() == [1, 1, 0, 1, 1, -1]


def test_region_classes_strict_leaves_boundary_cells_undecided():
    pts = np.array([[-0.5, 0.0], [0.0, 0.3], [0.1, 0.3], [0.5, -0.9], [np.nan, 0.0]])
    assert region_classes(pts, REGIONS, EXTENT).tolist() == [0, 1, 1, 1, -1]  # 0.0 rounds to column 4
    assert region_classes(pts, REGIONS, EXTENT, strict=True).tolist() == [0, -2, -2, 1, -1]


def test_points_on_a_boundary_are_not_counted_as_crossing():
    run = build_run(cross=2)
    b = np.flatnonzero(LABELS == 0)[3]
    run.states["sequence"][3, b, 0] = 0.0  # snapshot 150: on the boundary, not across it
    (r,) = trace_spikes(run)
    assert (r.crossings, r.on_boundary, r.on_boundary_before) == (2, 1, 0)
    assert "2 (25.0%), 0 before; 1 on boundary (0 before)" in report_table([r])


def test_boundary_crossing_counted_exactly():
    run = build_run(cross=3)
    (r,) = trace_spikes(run)
    assert r.spike.step == 122
    assert (r.before, r.after, r.gap) == (100, 150, 50)
    assert r.crossings == 3 and r.crossing_share == pytest.approx(3 / 8) and r.crossings_before == 0
    assert r.causes == ("decision boundary",) and r.cause == "decision boundary"
    assert r.norm_ratio > 0.5 and r.norm_share == 0.0  # the sequence points: norms 0.5 to 0.71
    assert "50 steps apart" in r.note


def with_logits(run):
    """The run with logits of the class its region map gives each sequence point (1 right of x = 0)."""
    cls = (run.states["sequence"][..., 0] > 0).astype(int)
    run.states["logits"] = np.stack([1.0 - cls, cls.astype(float)], axis=-1)
    return run


def test_classes_from_the_logits_when_recorded():
    run = with_logits(build_run(cross=3))
    (r,) = trace_spikes(run)
    assert (r.crossings, r.class_source, r.cause) == (3, "logits", "decision boundary")
    run.states["logits"][3] = run.states["logits"][2]  # the network's classes did not change: the map's grid did
    (r,) = trace_spikes(run)
    assert (r.crossings, r.cause) == (0, "neither")
    assert trace_spikes(build_run(cross=3))[0].class_source == "region map"


def test_normalisation_collapse_named():
    run = build_run(collapse=True)
    (r,) = trace_spikes(run)
    assert r.cause == "normalisation" and r.causes == ("normalisation",)
    assert r.crossings == 0
    assert r.norm_input == "inputs" and r.norm_where.startswith("token 1 at position 2")
    assert r.norm_ratio == pytest.approx(0.01)
    assert r.norm_after == pytest.approx(1.0)
    assert r.norm_share == pytest.approx(np.mean(TOKENS[:, 2] == 1))


def test_both_causes_the_stronger_named():
    (r,) = trace_spikes(build_run(cross=1, collapse=True))
    assert set(r.causes) == {"decision boundary", "normalisation"}
    assert r.cause == "normalisation"  # half the probe sequences hold token 1 at position 2; 1 of 8 crossed
    (r,) = trace_spikes(build_run(cross=4, collapse=True))
    assert r.crossing_share == 0.5 and r.cause == "normalisation"  # a tie: the upstream cause
    table = report_table([r])
    assert "normalisation (+decision boundary)" in table


def test_normalisation_share_weighted_by_attention():
    """A near-zero input at a position the head ignores feeds little: the crossing is then the stronger cause."""
    run = build_run(cross=1, collapse=True)
    attention = np.full((len(run.steps), len(LABELS), TOKENS.shape[1]), 0.49)
    attention[..., 2] = 0.02
    run.states["attention"] = attention
    (r,) = trace_spikes(run)
    assert set(r.causes) == {"decision boundary", "normalisation"}
    assert r.norm_share == pytest.approx(0.02 * np.mean(TOKENS[:, 2] == 1))
    assert r.cause == "decision boundary"


def test_sequence_norm_collapse_named():
    run = build_run()
    run.states["sequence"][2, 5] = [0.001, 0.0]  # the snapshot before the spike (step 100)
    (r,) = trace_spikes(run)
    assert r.cause == "normalisation" and r.norm_input == "sequence"
    assert r.norm_where == "sequence 5, step 100" and r.norm_share == pytest.approx(1 / 8)


def test_crossings_at_the_learning_rate_are_not_the_spike():
    """One probe sequence changes class at every snapshot (learning): as many across the spike as before it."""
    run = build_run()
    seq = run.states["sequence"]
    for k, b in enumerate(np.flatnonzero(LABELS == 0)):
        seq[k + 1:, b, 0] = 0.5  # sequence b crosses between snapshots k and k + 1
    (r,) = trace_spikes(run)
    assert (r.crossings, r.crossings_before) == (1, 1)
    assert r.cause == "neither" and r.causes == ()
    (r,) = trace_spikes(build_run(cross=2))
    assert (r.crossings, r.crossings_before, r.cause) == (2, 0, "decision boundary")


def test_no_normalisation_where_the_model_normalises_nothing():
    run = build_run(collapse=True)
    del run.states["normed_inputs"], run.states["normed_sequence"]
    (r,) = trace_spikes(run)
    assert r.cause == "neither" and r.norm_ratio is None and r.norm_input is None


def test_neither_when_nothing_happens():
    (r,) = trace_spikes(build_run())
    assert r.cause == "neither" and r.causes == () and r.crossings == 0


def test_not_recorded_outside_the_snapshots():
    run = build_run(spike_at=120, n_steps=300)
    run.steps, run.states = run.steps[3:], {k: v[3:] for k, v in run.states.items()}  # from step 150 on
    (r,) = trace_spikes(run)
    assert r.cause == "not recorded" and r.before is None and r.crossings is None


def test_the_layer_whose_gradient_jumped_most():
    for jump in ("value", "mlp_in", "position"):
        (r,) = trace_spikes(build_run(jump=jump))
        assert r.layer == jump
        assert r.layer_ratio == pytest.approx(200, rel=0.3)
        assert all(v < 10 for g, v in r.grad_ratios.items() if g != jump)


def test_given_spikes_and_coarse_snapshots():
    run = build_run(cross=2, snapshot_every=100)
    (r,) = trace_spikes(run, spikes=[Spike(122, 120, 123, 1.0, 0.1, 10.0, 9.0, 4)])
    assert (r.before, r.after, r.gap, r.crossings) == (100, 200, 100, 2)
    assert trace_spikes(run, spikes=[]) == []


def test_trace_checks():
    run = build_run()
    with pytest.raises(TypeError, match="layers must be a fitting.sandbox.LayerStates"):
        trace_spikes({"steps": []})
    with pytest.raises(TypeError, match="unexpected keyword 'windw'"):
        trace_spikes(run, windw=10)
    with pytest.raises(ValueError, match="window"):
        trace_spikes(run, window=1)
    with pytest.raises(ValueError, match="norm_fraction"):
        trace_spikes(run, norm_fraction=1.5)
    with pytest.raises(TypeError, match="spikes must be a sequence of Spike"):
        trace_spikes(run, spikes=[1, 2])
    del run.curves["train_loss"]
    with pytest.raises(ValueError, match="train_loss"):
        trace_spikes(run)


# ---------------------------------------------------------------- stages
def reference_share(frame, labels):
    """docs/examples/training_experiments.py's within-class share, written out."""
    z = frame / np.maximum(np.linalg.norm(frame, axis=1, keepdims=True), 1e-12)
    total = np.sum((z - z.mean(axis=0)) ** 2)
    within = sum(np.sum((z[labels == c] - z[labels == c].mean(axis=0)) ** 2) for c in np.unique(labels))
    return within / total if total > 0 else 1.0


def test_within_class_share_is_the_existing_definition():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 40)
    frames = rng.normal(size=(5, 40, 2)) + labels[None, :, None]
    got = within_class_share(frames, labels)
    assert got.shape == (5,)
    assert np.allclose(got, [reference_share(f, labels) for f in frames])
    assert within_class_share(np.zeros((4, 2)), [0, 0, 1, 1]) == 1.0
    with pytest.raises(ValueError, match="labels"):
        within_class_share(frames, labels[:-1])


def build_stages_run(cluster_at=800, fit_at=1300, dip=(1600, 1605)):
    rng = np.random.default_rng(2)
    rec = np.arange(0, 2001, 50)
    B = 64
    labels = np.arange(B) % 2
    theta = rng.uniform(0, 2 * np.pi, size=(len(rec), B))
    residual = np.stack([np.cos(theta), np.sin(theta)], axis=-1)  # no clustering
    centres = np.where(labels[:, None] == 1, [1.0, 0.2], [-1.0, -0.2])
    clustered = rec >= cluster_at
    residual[clustered] = centres + 0.1 * rng.normal(size=(clustered.sum(), B, 2))
    t = np.arange(2000)
    acc = np.where(t >= fit_at, 1.0, 0.5)
    loss = np.where(t >= fit_at, 0.01, 0.69) * np.exp(0.01 * rng.normal(size=2000))
    acc[dip[0]:dip[1]] = 0.9
    loss[dip[0]:dip[1]] *= 50
    return LayerStates(steps=rec, states={"residual": residual, "sequence": residual.copy()},
                       probe_tokens=np.zeros((B, 3), dtype=int), probe_labels=labels,
                       probe_split=np.array(["train"] * B), p=2,
                       curves={"train_loss": (t, loss), "train_acc": (t, acc), "val_acc": (t, acc)})


def test_stages_found_where_built():
    run = build_stages_run()
    s = find_stages(run)
    assert isinstance(s, Stages) and s.state == "residual"
    assert (s.clustering.step, s.clustering.first) == (800, 800)
    assert (s.fitting.step, s.fitting.first) == (1300, 1300)  # the spike's dip at 1600 overlooked
    assert s.order == "clustering first" and s.excluded == [(1600, 1604)]
    assert s.shares[s.share_steps < 800].min() > 0.5 and s.shares[s.share_steps >= 800].max() < 0.1
    strict = find_stages(run, spikes=[])
    assert (strict.fitting.step, strict.fitting.first) == (1605, 1300)
    assert find_stages(run, curve="val_acc").fitting.step == 1300
    table = report_table([], s)
    assert "clustering  800" in table and "fitting     1300" in table and "loss spikes: 0" in table


def test_stages_that_never_happen():
    run = build_stages_run(cluster_at=5000, fit_at=5000)
    s = find_stages(run)
    assert s.clustering.step is None and s.clustering.first is None
    assert s.fitting.step is None and s.order is None
    assert "never" in report_table([], s)


def test_stage_checks():
    run = build_stages_run()
    with pytest.raises(ValueError, match="share"):
        find_stages(run, share=1.0)
    with pytest.raises(ValueError, match="accuracy"):
        find_stages(run, accuracy=0.0)
    with pytest.raises(ValueError, match="curve"):
        find_stages(run, curve="loss")
    with pytest.raises(TypeError, match="layers"):
        find_stages(None)


# ---------------------------------------------------------------- the table
def test_report_table():
    run = build_run(cross=3)
    reports = trace_spikes(run)
    text = report_table(reports, find_stages(run))
    lines = text.splitlines()
    assert lines[0].startswith("loss spikes: 1")
    assert lines[1].split()[:2] == ["step", "onset-end"]
    row = lines[2]
    assert row.startswith("122 ") and "value (" in row and "decision boundary" in row
    assert "3 (37.5%), 0 before" in row and "100-150 (50 steps)" in row
    assert "stages" in text and not text.endswith("\n")
    with pytest.raises(TypeError, match="reports"):
        report_table(reports[0])
    with pytest.raises(TypeError, match="stages"):
        report_table(reports, stages="x")
    with pytest.raises(TypeError, match="rule"):
        report_table(reports, rule={"window": 5})
    assert "2 x its median over the 100 steps" in report_table([])
    assert "3 x its median over the 50 steps" in report_table([], rule={**SPIKE_RULE, "window": 50, "factor": 3.0})


def test_defaults_are_the_documented_rule():
    assert SPIKE_RULE == {"window": 100, "factor": 2.0, "sigmas": 5.0, "min_gap": 20}
    assert isinstance(trace_spikes(build_run())[0], SpikeReport)
    assert math.log(SPIKE_RULE["factor"]) > 0
