"""Statistical runs: the presets' rates over 40 seeds (CI runs these in a
separate step; `pytest -m slow`)."""
import pytest

from particles import sweep


@pytest.mark.slow
@pytest.mark.parametrize("name, structure", [("circles", ["circle"]), ("grids", ["grid"])])
def test_preset_rate_over_40_seeds(name, structure):
    table = sweep([{}], 40, base=name)
    rate = sum(s in structure for s in table.column("structure")) / len(table)
    assert rate >= 0.6, f"preset {name!r} formed {structure} in {rate:.0%} of 40 seeds"
