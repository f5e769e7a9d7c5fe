"""Presets (particles.presets): lookup, determinism, the structure each forms;
and, as slow statistical runs (`pytest -m slow`, a separate CI step), their
rates over 40 seeds, whose targets are those of docs/particles.md."""
import numpy as np
import pytest

from particles import PRESETS, Preset, classify_structure, preset, sweep


def test_preset_lookup_and_errors():
    assert set(PRESETS) == {"grids", "circles", "clustering-alignment"}
    assert isinstance(preset("grids"), Preset)
    with pytest.raises(ValueError, match="unknown preset 'spirals'"):
        preset("spirals")
    with pytest.raises(ValueError, match="unknown preset or force parameter"):
        preset("grids").replace(colour=1)
    with pytest.raises(ValueError, match="sig_a must be > 0"):
        preset("grids").replace(sig_a=-1)


def test_preset_run_is_deterministic():
    config = preset("circles").replace(steps=300)
    a, b, c = config.run(seed=5), config.run(seed=5), config.run(seed=6)
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    assert not np.allclose(a.final, c.final)
    assert a.meta["preset"] == "circles" and a.meta["seed"] == 5


def test_presets_form_their_structure_on_seed_zero():
    # the measured rates over 40 seeds are in tests/particles/test_presets.py and docs/
    assert classify_structure(preset("circles").run(0).final) == "circle"
    assert classify_structure(preset("grids").run(0).final) in ("grid", "imperfect grid")


def test_grids_is_the_wd_zero_end_of_clustering_alignment():
    """At classifier weight decay 0 the alignment is off and the particles
    decay as in `grids`: the two presets give the same run."""
    a = preset("grids").replace(steps=300).run(3)
    b = preset("clustering-alignment").replace(wd=0.0, steps=300).run(3)
    assert np.array_equal(a.embeddings, b.embeddings)


def test_clustering_alignment_wd_is_the_classifier_decay():
    p = preset("clustering-alignment")
    assert p.params.wd_target == "classifier"
    assert p.replace(wd=0.0).params.effective_lam == 0.0
    eps = [p.replace(wd=w).params.effective_eps for w in (0.3, 0.6, 1.0, 3.0)]
    assert eps == sorted(eps, reverse=True) and eps[-1] > p.params.eps
    assert p.replace(wd=1.0).params.effective_wd == p.params.particle_wd


def test_particle_target_rejects_classifier_only_fields():
    with pytest.raises(ValueError, match="particle_wd"):
        preset("grids").replace(particle_wd=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("name, structure, target", [("circles", "circle", 0.6), ("grids", "grid", 0.5)])
def test_preset_rate_over_40_seeds(name, structure, target):
    table = sweep([{}], 40, base=name)
    rate = sum(s == structure for s in table.column("structure")) / len(table)
    assert rate >= target, f"preset {name!r} formed {structure}s in {rate:.0%} of 40 seeds"


@pytest.mark.slow
def test_classifier_weight_decay_turns_grids_into_circles():
    """clustering-alignment: at most 10 % circles at wd = 0, at least 40 % and
    30 points more at wd = 1, and the share does not fall as wd rises."""
    wds = (0.0, 0.3, 0.6, 1.0)
    table = sweep([{"wd": w} for w in wds], 40, base="clustering-alignment")
    rates = table.rates()
    circles = [rates[(w,)]["circle"] for w in wds]
    assert circles[0] <= 0.1 and circles[-1] >= 0.4 and circles[-1] - circles[0] >= 0.3, circles
    assert all(b >= a - 1e-12 for a, b in zip(circles, circles[1:])), circles
