"""`embdyn fit` on trajectory files and particle runs (fitting.cli): the
report, the figures, every derivative choice, errors as one line."""

import json

import numpy as np
import pytest

from fitting.ode.names import DERIVATIVE_METHODS
from particles import preset
from particles.cli import main

from .helpers import growing_circle_trajectory


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


def _force_run(tmp_path):
    """A constant-attention-shaped run whose gradients come from a known law
    (the meta names its training set as the trainer's files do)."""
    import particles as P
    from fitting.training.configs import ConstantAttentionConfig, pair_dataset

    config = ConstantAttentionConfig(p=11)
    data = pair_dataset(config)
    rng = np.random.default_rng(0)
    train, _ = data.split(0.8, seed=rng)
    law = P.ForceParams(k_a=2.0, sig_a=2.5, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)
    X = P.simulate(rng.normal(size=(11, 2)), train, law, steps=600, dt=0.01, record_every=20).embeddings
    G = np.stack([P.forces(x, train, law) for x in X])
    meta = {"model": config.model, "config": config.to_dict(), "train_indices": train.indices.tolist()}
    path = tmp_path / "run.npz"
    P.Trajectory(X, np.arange(len(X)) * 20, gradients=-G, meta=meta).save(path)
    return path


def test_force_fit_writes_table_json_and_figure(tmp_path, capsys):
    path = _force_run(tmp_path)
    assert main(["force-fit", str(path), "--normalize", "none", "--bootstrap", "20", "--out",
                 str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "R^2 of the force field 1.0000" in text and "alignment_other" in text
    report = json.loads((tmp_path / "o" / "force_fit.json").read_text())
    values = {row["name"]: row["value"] for row in report["table"]}
    assert abs(values["attraction"] - 2.0) < 1e-6 and abs(values["sig_t"] - 0.3) < 1e-6
    assert (tmp_path / "o" / "force_shares.png").stat().st_size > 0


@pytest.mark.parametrize("args, message", [
    (["--window", "5000", "6000"], "window"),
    (["--law", "gravity"], "law"),
    (["--terms", "gravity"], "terms"),
    (["--bootstrap", "-1"], "bootstrap"),
    (["--window", "5", "2"], "window"),
])
def test_force_fit_bad_input_is_one_line(tmp_path, capsys, args, message):
    path = _force_run(tmp_path)
    assert main(["force-fit", str(path), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_force_fit_without_gradients_says_how_to_record_them(tmp_path, capsys):
    import particles as P

    path = P.Trajectory(np.zeros((2, 5, 2)), [0, 1]).save(tmp_path / "plain.npz")
    assert main(["force-fit", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "--gradients" in capsys.readouterr().err


# --- issue 50: the force fit from the command line on a run whose file has no training set ------------------

def _own_force_run(tmp_path, stored: bool):
    """A user's run: gradients from a known law, no trainer metadata; the training set in the file or not."""
    import particles as P

    rng = np.random.default_rng(1)
    data = P.modular_addition(11, ordered=True)
    train, _ = data.split(0.6, seed=rng)
    law = P.ForceParams(k_a=2.0, sig_a=2.5, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)
    X = P.simulate(rng.normal(size=(11, 2)), train, law, steps=400, dt=0.01, record_every=20).embeddings
    G = np.stack([P.forces(x, train, law) for x in X])
    traj = P.Trajectory(X, np.arange(len(X)) * 20, gradients=-G[:-1],  # the last snapshot without a gradient
                        meta={"source": "my script", "task": "modular_addition", "n_train": len(train)})
    if stored:
        traj = traj.with_train(train)
    return traj.save(tmp_path / "run.npz"), train


def test_force_fit_takes_the_training_set_from_the_file_or_from_train(tmp_path, capsys):
    path, train = _own_force_run(tmp_path, stored=True)
    assert main(["force-fit", str(path), "--normalize", "none", "--bootstrap", "0", "--out",
                 str(tmp_path / "a")]) == 0
    assert "R^2 of the force field 1.0000" in capsys.readouterr().out
    path, train = _own_force_run(tmp_path, stored=False)
    assert main(["force-fit", str(path), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "train=" in err and "--train FILE" in err and len(err.strip().splitlines()) == 1
    np.savez(tmp_path / "train.npz", pairs=train.pairs, labels=train.labels)
    csv = tmp_path / "train.csv"
    csv.write_text("a,b,label\n" + "".join(f"{a},{b},{y}\n" for (a, b), y in zip(train.pairs, train.labels)))
    for i, file in enumerate((tmp_path / "train.npz", csv)):
        assert main(["force-fit", str(path), "--train", str(file), "--normalize", "none", "--bootstrap", "0",
                     "--out", str(tmp_path / f"c{i}")]) == 0
        assert "R^2 of the force field 1.0000" in capsys.readouterr().out


def test_force_fit_refuses_a_training_set_that_does_not_fit_the_run(tmp_path, capsys):
    path, train = _own_force_run(tmp_path, stored=False)
    cases = {"outside.npz": (train.pairs + 5, train.labels, "0..10"),
             "labels.npz": (train.pairs, (train.labels + 1) % 11, "disagree with the run's task"),
             "size.npz": (train.pairs[:10], train.labels[:10], f"records {len(train)} training pairs")}
    for name, (pairs, labels, words) in cases.items():
        np.savez(tmp_path / name, pairs=pairs, labels=labels)
        assert main(["force-fit", str(path), "--train", str(tmp_path / name), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, (name, err)
    (tmp_path / "bad.csv").write_text("x,y\n1,2\n")
    assert main(["force-fit", str(path), "--train", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "a,b,label" in capsys.readouterr().err
    assert not (tmp_path / "o" / "force_fit.json").exists()  # refused before any work


def test_force_fit_train_never_replaces_the_files_own_training_set(tmp_path, capsys):
    path, train = _own_force_run(tmp_path, stored=True)
    other = train.subset(np.arange(len(train))[::-1])  # the same pairs in another order: a different file
    np.savez(tmp_path / "other.npz", pairs=other.pairs, labels=other.labels)
    assert main(["force-fit", str(path), "--train", str(tmp_path / "other.npz"), "--out", str(tmp_path / "o")]) == 2
    assert "holds its own training set" in capsys.readouterr().err
    np.savez(tmp_path / "same.npz", pairs=train.pairs, labels=train.labels)
    assert main(["force-fit", str(path), "--train", str(tmp_path / "same.npz"), "--bootstrap", "0",
                 "--out", str(tmp_path / "o")]) == 0


def test_force_fit_says_when_the_training_labels_could_not_be_checked(tmp_path, capsys):
    import particles as P

    path, train = _own_force_run(tmp_path, stored=True)
    traj = P.Trajectory.load(path)
    unchecked = P.Trajectory(traj.embeddings, traj.snapshot_steps, gradients=traj.gradients,
                             meta={"source": "my script"}, train_pairs=traj.train_pairs, train_labels=traj.train_labels)
    unchecked.save(tmp_path / "unchecked.npz")
    assert main(["force-fit", str(tmp_path / "unchecked.npz"), "--bootstrap", "0", "--out", str(tmp_path / "u")]) == 0
    assert "were not checked against a task" in capsys.readouterr().err
    assert main(["force-fit", str(path), "--bootstrap", "0", "--out", str(tmp_path / "c")]) == 0
    assert "were not checked" not in capsys.readouterr().err  # meta names the task: checked, nothing to say
