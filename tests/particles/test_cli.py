"""`embdyn simulate` and `embdyn sweep` (particles.cli): files written, bad
values as one line with exit code 2."""
import json

import pytest

from particles import Trajectory, classify_structure
from particles.cli import main


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


@pytest.mark.parametrize("argv", [["sweep", "--preset", "grids", "--grid", "lam"],
                                  ["sweep", "--preset", "grids", "--grid", "lam=1", "--set", "steps"],
                                  ["simulate", "--preset", "grids", "--set", "steps"]])
def test_cli_malformed_name_value_is_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NAME=" in err[0]


@pytest.mark.parametrize("args", [["--steps", "-5"], ["--dt", "-0.1"]])
def test_simulate_cli_bad_run_values_one_line_exit_2(args, tmp_path, capsys):
    from particles.cli import main
    assert main(["simulate", *args, "--quiet", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("embdyn simulate:")
