"""The Phase tab's files: sweep tables and toy-phases grids as one grid of cells; foreign files refused."""

import json

import pytest

import particles as pt
from fitting.explore.phases import PhaseFileError, load_phase_file


@pytest.mark.slow
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


def test_a_journal_gives_the_sweeps_base(tmp_path):
    base = pt.preset("circles").replace(p=7, steps=50, dt=0.02)
    table = pt.sweep({"lam": [1.0, 3.0]}, seeds=2, base=base, journal=tmp_path / "sweep.journal.jsonl")
    table.to_csv(tmp_path / "sweep.csv")
    for name in ("sweep.csv", "sweep.journal.jsonl"):
        grid = load_phase_file(tmp_path / name)
        assert grid["live"] and grid["base"]["preset"] == "circles"
        assert (grid["base"]["p"], grid["base"]["d"], grid["base"]["dt"]) == (7, 2, 0.02)
        assert grid["base"]["wd"] == base.params.wd and "journal" in grid["live_note"]
        assert sorted(c["x"] for c in grid["cells"]) == [1.0, 3.0]


def test_a_base_the_live_tab_cannot_run_is_said(tmp_path):
    base = pt.preset("circles").replace(p=7, steps=50, alignment_form="cosine")  # circles is axial
    pt.sweep({"lam": [1.0]}, seeds=1, base=base, journal=tmp_path / "sweep.journal.jsonl")
    grid = load_phase_file(tmp_path / "sweep.journal.jsonl")
    assert not grid["live"] and grid["base"] is None and "alignment_form" in grid["live_note"]
    # without a journal the values alone can be set, and the page says the base is the Live tab's own
    table = pt.sweep({"lam": [1.0]}, seeds=1, base=base)
    grid = load_phase_file(table.to_csv(tmp_path / "other" / "sweep.csv") if (tmp_path / "other").mkdir() is None
                           else None)
    assert grid["live"] and grid["base"] is None and "keeps its own" in grid["live_note"]
