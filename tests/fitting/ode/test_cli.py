"""`embdyn fit` on trajectory files and particle runs (fitting.ode.cli): the
report, the figures, every derivative choice, errors as one line."""

import json

import joblib

import numpy as np
import pytest

from fitting.ode.names import DERIVATIVE_METHODS
from particles import Trajectory, preset
from particles.cli import main

from ..helpers import growing_circle_trajectory


def test_cli_fit_on_a_trajectory_file(tmp_path, capsys):
    path = growing_circle_trajectory().save(tmp_path / "run.npz")
    out = tmp_path / "fit"
    # every frequency, as before issue 50 made the survivors / key frequencies the default
    code = main(["fit", str(path), "--regressor", "ols", "--derivative", "central", "--window", "0", "400",
                 "--frequencies", "all", "--out", str(out)])
    assert code == 0
    report = json.loads((out / "fit.json").read_text())
    assert report["survivors"] == [3]
    assert report["frequencies"] == 6 and report["samples"] == 60
    assert report["rows_r2"] > 0.9 and "estimated derivatives" in report["scores"]["rows_r2"]["what"]
    # past the window: a forecast from the observed state at the window's end, beside persistence
    assert {"forecast_error", "persistence_error", "forecast_skill"} <= set(report["scores"])
    assert "t = 390" in report["scores"]["forecast_error"]["what"]  # the last sample inside [0, 400)
    for name in ("signals.png", "fit.png", "coefficients.png"):
        assert (out / name).stat().st_size > 1000
    printed = capsys.readouterr().out
    assert "rows_r2:" in printed and "(R^2 of estimated derivatives" in printed and "dS3/dt" in printed


def test_cli_fit_on_a_particle_simulation(tmp_path):
    config = preset("circles").replace(steps=600)
    path = config.run(0).save(tmp_path / "circles.npz")
    code = main(["fit", str(path), "--model", "lv-classic", "--regressor", "lasso_cv", "--derivative", "central",
                 "--out", str(tmp_path / "f"),
                 "--quiet"])
    assert code == 0
    report = json.loads((tmp_path / "f" / "fit.json").read_text())
    assert report["model"] == "lv-classic" and report["frequencies"] == 8
    assert np.isfinite(report["rows_r2"])
    assert "forecast_skill" not in report["scores"]  # fitted on everything: nothing to forecast, and a note says so
    assert any("no forecast" in note for note in report["notes"])
    # the logistic form: two terms per equation, each signal on its own
    assert main(["fit", str(path), "--model", "lv-logistic", "--out", str(tmp_path / "g"), "--quiet"]) == 0
    report = json.loads((tmp_path / "g" / "fit.json").read_text())
    assert report["model"] == "lv-logistic"
    assert 0 < report["nonzero_coefficients"] <= 2 * report["frequencies"]  # x_i and x_i^2 per equation at most


def test_cli_fit_errors_name_the_problem(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "missing.npz"), "--out", str(tmp_path)]) == 2
    assert "no trajectory file" in capsys.readouterr().err
    path = growing_circle_trajectory(T=4).save(tmp_path / "short.npz")
    assert main(["fit", str(path), "--model", "lv-general", "--regressor", "ols", "--out", str(tmp_path)]) == 2
    assert "fewer than" in capsys.readouterr().err


def test_cli_fit_bad_values_are_one_line_with_exit_code_2(tmp_path, capsys):
    path = growing_circle_trajectory().save(tmp_path / "run.npz")
    for args in (["--derivative", "bogus"], ["--alpha", "abc"], ["--alpha", "-1"], ["--window", "5", "1"],
                 ["--model", "lv-classic", "--stable"]):
        with pytest.raises(SystemExit) as info:
            raise SystemExit(main(["fit", str(path), "--out", str(tmp_path / "o"), *args]))
        assert info.value.code == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)


@pytest.mark.slow
@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("derivative", DERIVATIVE_METHODS)
def test_every_derivative_choice_works_through_the_cli(derivative, stable, tmp_path, capsys):
    from particles.cli import main

    from particles import Trajectory

    # a small run of its own: 6 signals whose circle at k = 3 grows while noise decays, recorded every 10 steps
    p, rng = 13, np.random.default_rng(0)
    n = np.arange(p)
    circle = np.column_stack([np.cos(2 * np.pi * 3 * n / p), np.sin(2 * np.pi * 3 * n / p)])
    noise = rng.normal(size=(p, 2))
    steps = np.arange(120)
    E = np.stack([(1 - np.exp(-0.03 * s)) * circle + np.exp(-0.02 * s) * noise for s in steps])
    path = Trajectory(embeddings=E, snapshot_steps=steps * 10, meta={"source": "test"}).save(tmp_path / "run.npz")
    argv = ["fit", str(path), "--derivative", derivative, "--window", "0", "800",
            "--out", str(tmp_path / "fit"), "--quiet"]
    code = main(argv + (["--stable"] if stable else []))
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.err == ""  # --quiet: no warnings either
    report = json.loads((tmp_path / "fit" / "fit.json").read_text())
    for name in ("rows_r2", "trajectory_r2_fit_window", "forecast_error", "persistence_error", "forecast_skill"):
        assert name in report["scores"] and report["scores"][name]["what"]
    assert "forecast_skill:" in out.out and "(1 - forecast error / persistence error" in out.out


def test_fit_writes_coefficients_and_model(tmp_path):
    from particles.cli import main

    rng = np.random.default_rng(1)
    p, d, T = 11, 4, 120
    t = np.arange(T)
    k = np.arange(p)
    E = np.stack([np.stack([np.cos(2 * np.pi * f * k / p) * (1 + 0.01 * s) for f in (1, 2)] +
                           [rng.standard_normal(p) * 0.01 for _ in range(d - 2)], axis=1) for s in t])
    path = Trajectory(E[::4], t[::4]).save(tmp_path / "t.npz")
    assert main(["fit", str(path), "--out", str(tmp_path / "fit"), "--quiet"]) == 0
    report = json.loads((tmp_path / "fit" / "fit.json").read_text())
    coef = np.array(report["coefficients"])
    assert coef.shape == (len(report["variables"]), len(report["terms"]))
    model = joblib.load(tmp_path / "fit" / report["model_file"])
    np.testing.assert_array_equal(model.coef_, coef)
