import json

import numpy as np
import pytest

from particles import PRESETS, Preset, Trajectory, classify_structure, preset, sweep
from particles.cli import main


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
    # the measured rates over 40 seeds are in tests/test_slow.py and docs/
    assert classify_structure(preset("circles").run(0).final) == "circle"
    assert classify_structure(preset("grids").run(0).final) in ("grid", "imperfect grid")


def test_sweep_table():
    table = sweep({"lam": [0.0, 1.0], "steps": [100]}, seeds=2, base="grids", n_jobs=1)
    assert len(table) == 4
    assert table.parameters == ["lam", "steps"]
    assert sorted(table.column("seed")) == [0, 0, 1, 1]
    rates = table.rates()
    assert set(rates) == {(0.0, 100), (1.0, 100)}
    for shares in rates.values():
        assert sum(shares.values()) == pytest.approx(1.0)


def test_sweep_parallel_equals_serial():
    grid = [{"wd": 0.1}, {"wd": 0.3}]
    a = sweep(grid, [0, 1], base=preset("circles").replace(steps=200), n_jobs=2)
    b = sweep(grid, [0, 1], base=preset("circles").replace(steps=200), n_jobs=1)
    assert [r["circularity"] for r in a] == [r["circularity"] for r in b]


def test_sweep_validates_before_work():
    with pytest.raises(ValueError, match="unknown preset or force parameter"):
        sweep({"nonsense": [1]}, seeds=1)
    with pytest.raises(ValueError, match="seeds"):
        sweep({"lam": [1.0]}, seeds=[])


def test_cli_simulate(tmp_path, capsys):
    code = main(["simulate", "--preset", "grids", "--steps", "200", "--seed", "1", "--out", str(tmp_path),
                 "--quiet"])
    assert code == 0
    for name in ("grids_seed1.npz", "grids_seed1.png", "grids_seed1_energy.png", "grids_seed1.json"):
        assert (tmp_path / name).stat().st_size > 0
    traj = Trajectory.load(tmp_path / "grids_seed1.npz")
    assert traj.meta["steps"] == 200
    summary = json.loads((tmp_path / "grids_seed1.json").read_text())
    assert summary["structure"] == classify_structure(traj.final)
    assert "grids, seed 1" in capsys.readouterr().out


def test_cli_bad_override(tmp_path, capsys):
    assert main(["simulate", "--set", "sig_a=-2", "--out", str(tmp_path), "--quiet"]) == 2
    assert "sig_a must be > 0" in capsys.readouterr().err


def test_cli_sweep_phase_diagram(tmp_path):
    code = main(["sweep", "--preset", "circles", "--grid", "lam=1,3", "--grid", "wd=0.1,0.3", "--set", "steps=100",
                 "--seeds", "1", "--jobs", "1", "--out", str(tmp_path), "--quiet"])
    assert code == 0
    assert (tmp_path / "phase_diagram.png").stat().st_size > 0
    rates = json.loads((tmp_path / "rates.json").read_text())
    assert len(rates) == 4


def test_sweep_table_csv_round_trip(tmp_path):
    from particles import SweepTable
    table = sweep({"lam": [0.0, 0.5]}, seeds=1, base=preset("grids").replace(steps=50), n_jobs=1)
    back = SweepTable.from_csv(table.to_csv(tmp_path / "t.csv"))
    assert back.parameters == ["lam"]
    assert back.rates() == table.rates()
    assert list(back.column("circularity")) == pytest.approx(list(table.column("circularity")))


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
    assert p.replace(wd=1.0).params.particle_wd == p.params.particle_decay


def test_sweep_table_with_a_diverged_first_run_writes_csv(tmp_path):
    base = preset("circles").replace(dt=50.0, steps=400, record_every=10)  # x grows 14-fold a step
    table = sweep([{"lam": 3.0}], [0], base=base, n_jobs=1)
    assert table.column("structure")[0] == "diverged"
    text = table.to_csv(tmp_path / "s.csv").read_text()
    assert "line_ratio" in text.splitlines()[0]


def test_particle_target_rejects_classifier_only_fields():
    with pytest.raises(ValueError, match="particle_decay"):
        preset("grids").replace(particle_decay=1.0)


@pytest.mark.parametrize("argv", [["sweep", "--preset", "grids", "--grid", "lam"],
                                  ["sweep", "--preset", "grids", "--grid", "lam=1", "--set", "steps"],
                                  ["simulate", "--preset", "grids", "--set", "steps"]])
def test_cli_malformed_name_value_is_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NAME=" in err[0]


@pytest.mark.parametrize("bad, err", [("5", TypeError), (2.5, TypeError), ([1, "2"], TypeError), (True, TypeError)])
def test_sweep_seeds_checked(bad, err):
    from particles import sweep
    with pytest.raises(err, match="seeds"):
        sweep({"wd": [0.1]}, bad, base="grids")


def test_sweep_table_from_csv_refuses_a_file_descriptor():
    from particles.sweep import SweepTable
    with pytest.raises(TypeError, match="path"):
        SweepTable.from_csv(3)


@pytest.mark.parametrize("args", [["--steps", "-5"], ["--dt", "-0.1"]])
def test_simulate_cli_bad_run_values_one_line_exit_2(args, tmp_path, capsys):
    from particles.cli import main
    assert main(["simulate", *args, "--quiet", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("embdyn simulate:")
