"""Statistical runs: the presets' rates over 40 seeds (CI runs these in a
separate step; `pytest -m slow`). The targets are those of docs/particles.md."""
import pytest

from particles import sweep


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
