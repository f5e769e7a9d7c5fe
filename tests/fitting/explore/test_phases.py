"""The Phase tab's files: sweep tables and toy-phases grids as one grid of cells; foreign files refused."""

import json

import pytest

import particles as pt
from fitting.explore.phases import PhaseFileError, load_phase_file


def test_sweep_table(tmp_path):
    table = pt.sweep({"lam": [0.0, 3.0], "wd": [0.3]}, seeds=2, base=pt.preset("circles").replace(p=7, steps=50))
    path = table.to_csv(tmp_path / "sweep.csv")
    grid = load_phase_file(path)
    assert grid["kind"] == "sweep" and grid["x"] == "lam" and grid["y"] == "wd" and grid["live"]
    assert len(grid["cells"]) == 2 and sum(len(c["runs"]) for c in grid["cells"]) == 4
    for cell in grid["cells"]:
        runs = [r for r in table if r["lam"] == cell["x"]]
        structures = [r["structure"] for r in runs]
        assert cell["share"] == max(structures.count(s) for s in structures) / len(runs)
        assert abs(sum(cell["shares"].values()) - 1) < 1e-12


def test_toy_phases_grid(tmp_path):
    data = {"meta": {"grid": {"lr": [0.1, 1.0], "wd": [0.0]}},
            "records": [{"lr": lr, "wd": 0.0, "seed": s, "phase": ph}
                        for lr, ph in [(0.1, "memorization"), (1.0, "comprehension")] for s in (0, 1)]}
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(data))
    grid = load_phase_file(path)
    assert grid["kind"] == "toy-phases" and not grid["live"]
    assert {c["x"]: c["majority"] for c in grid["cells"]} == {0.1: "memorization", 1.0: "comprehension"}


@pytest.mark.parametrize("name, text", [("a.csv", "x,y\n1,2\n"), ("b.json", "[1, 2]"), ("c.json", "{not json"),
                                        ("d.txt", "hello"), ("e.csv", "")])
def test_foreign_files_are_refused(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PhaseFileError):
        load_phase_file(path)
