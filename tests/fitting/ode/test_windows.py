"""One ODE fit per window (fitting.ode.fit_windows, embdyn fit --windows): the
run's stages, step edges, the same numbers in Python and on the command line."""

import json

import numpy as np
import pytest

from fitting import LinearODE, fit_windows, stages
from particles.cli import main

from ..signals.test_stages import generated_run


def test_stage_windows_are_fitted_each():
    traj = generated_run()
    results = fit_windows(LinearODE(regressor="ols", derivative="central"), traj, "stages", frequencies="all")
    run = stages(traj)
    assert [r["name"] for r in results] == run.window_names
    assert [r["window"][0] for r in results] == run.edges[:-1]
    assert all(r["error"] is None and r["model"].window == r["window"] for r in results)


def test_python_and_cli_give_the_same_numbers(tmp_path, capsys):
    traj = generated_run()
    path = traj.save(tmp_path / "run.npz")
    results = fit_windows(LinearODE(regressor="ols", derivative="central"), traj, [0, 700, 2001],
                          frequencies="all")
    code = main(["fit", str(path), "--windows", "0,700,2001", "--regressor", "ols", "--derivative", "central",
                 "--frequencies", "all", "--out", str(tmp_path / "fit"), "--quiet"])
    assert code == 0
    report = json.loads((tmp_path / "fit" / "windows.json").read_text())
    assert report["edges"] == [0, 700, 2001]
    for mine, theirs in zip(results, report["fits"]):
        assert theirs["window"] == list(mine["window"])
        for name, score in mine["report"]["scores"].items():
            got = theirs["scores"][name]
            assert (got is None and score["value"] is None) or got == pytest.approx(score["value"], rel=1e-12)


def test_windows_past_the_end_are_refused_the_same_way(tmp_path, capsys):
    traj = generated_run()
    path = traj.save(tmp_path / "run.npz")
    with pytest.raises(ValueError) as python:
        fit_windows(LinearODE(), traj, [0, 100, 99999])
    code = main(["fit", str(path), "--windows", "0,100,99999", "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "0..2000" in str(python.value) and "goes past the run's end" in str(python.value)
    assert str(python.value).replace("windows", "--windows") in err


def test_stages_that_cannot_be_placed_are_one_line_exit_2(tmp_path, capsys):
    traj = generated_run()
    from particles.trajectory import Trajectory

    flat = Trajectory(traj.embeddings, traj.snapshot_steps, steps=traj.steps,
                      signals=np.ones_like(traj.signals) + 0.01 * np.random.default_rng(2).random(traj.signals.shape),
                      meta=traj.meta)  # no curves, no circuit: no stage ends inside the run
    path = flat.save(tmp_path / "flat.npz")
    with pytest.raises(ValueError, match="no stage ends inside this run"):
        fit_windows(LinearODE(), flat, "stages")
    code = main(["fit", str(path), "--windows", "stages", "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err
    assert code == 2 and "no stage ends inside this run" in err and len(err.strip().splitlines()) == 1
    code = main(["fit", str(path), "--windows", "sideways", "--out", str(tmp_path / "f")])
    assert code == 2 and "--windows must be 'stages'" in capsys.readouterr().err


def test_a_later_window_is_simulated_from_its_own_start():
    """A model of a late window is not run through the windows before it (a review found the simulation R^2 of
    every window after the first computed from the run's first sample)."""
    from particles.trajectory import Trajectory

    t = np.arange(200)
    x = np.where(t < 100, np.exp(0.02 * t), np.exp(2.0) * np.exp(-0.03 * (t - 100)))
    traj = Trajectory(np.random.default_rng(0).normal(size=(2, 5, 2)), [0, 199], steps=t,
                      signals=np.column_stack([x, 0.5 * x + 1]), meta={"signal_power": 1})
    res = fit_windows(LinearODE(regressor="ols", derivative="central"), traj, [0, 101, 200], frequencies="all")
    late = res[1]["report"]["scores"]
    assert late["rows_r2"]["value"] > 0.99 and late["trajectory_r2_fit_window"]["value"] > 0.99
