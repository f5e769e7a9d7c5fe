"""`embdyn force-fit` (fitting.forcefit.cli): the table, JSON and figure;
bad input as one line; the training set from the file or from --train."""
import json

import numpy as np
import pytest

from particles.cli import main


def _force_run(tmp_path, sig_a=2.5):
    """A constant-attention-shaped run whose gradients come from a known law
    (the meta names its training set as the trainer's files do)."""
    import particles as P
    from fitting.training.configs import ConstantAttentionConfig, pair_dataset

    config = ConstantAttentionConfig(p=11)
    data = pair_dataset(config)
    rng = np.random.default_rng(0)
    train, _ = data.split(0.8, seed=rng)
    law = P.ForceParams(k_a=2.0, sig_a=sig_a, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)
    X = P.simulate(rng.normal(size=(11, 2)), train, law, steps=600, dt=0.01, record_every=20).embeddings
    G = np.stack([P.forces(x, train, law) for x in X])
    meta = {"model": config.model, "config": config.to_dict(), "train_indices": train.indices.tolist()}
    path = tmp_path / ("run.npz" if sig_a == 2.5 else f"run_sig_a{sig_a:g}.npz")
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
    (["--law", "effective", "--path", "gram"], "path"),
    (["--horizon", "40"], "horizon"),
    (["--target", "displacement", "--horizon", "7"], "horizon=7"),
    (["--target", "displacement", "--horizon", "0"], "horizon"),
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


@pytest.mark.slow
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


def test_force_fit_path_gives_the_same_fit_and_shows_progress(tmp_path, capsys):
    path = _force_run(tmp_path)
    tables = {}
    for kernels in ("direct", "gram"):
        assert main(["force-fit", str(path), "--normalize", "none", "--bootstrap", "0", "--path", kernels,
                     "--out", str(tmp_path / kernels)]) == 0
        err = capsys.readouterr().err
        # the progress bar, on stderr, on the screen before the kernels' compilation (issue 68)
        assert "force fit: starting (a first run compiles its kernels)" in err and "snapshot evaluations" in err
        report = json.loads((tmp_path / kernels / "force_fit.json").read_text())
        assert report["fit_info"]["path"] == kernels and report["fit_info"]["snapshot_evaluations"] > 0
        tables[kernels] = {row["name"]: row["value"] for row in report["table"]}
    for name, value in tables["direct"].items():
        assert abs(tables["gram"][name] - value) <= 1e-6 * max(1.0, abs(value)), name
    assert main(["force-fit", str(path), "--quiet", "--bootstrap", "0", "--out", str(tmp_path / "q")]) == 0
    assert "force fit" not in capsys.readouterr().err


def test_force_fit_windows_gauge_and_null_on_the_command_line(tmp_path, capsys):
    path = _force_run(tmp_path)  # steps 0, 20, ..., 600
    assert main(["force-fit", str(path), "--bootstrap", "0", "--windows", "0,100,300,601", "--null", "3",
                 "--terms", "attraction", "repulsion", "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "gauge translation" in text and "null on relabelled tokens" in text
    assert "[0, 100): R^2" in text and "[300, 601): R^2" in text
    report = json.loads((tmp_path / "o" / "force_fit.json").read_text())
    assert report["gauge"] == "translation" and report["null_r2"] is not None
    assert [w["start"] for w in report["windows"]] == [0, 100, 300]
    assert report["summary"].startswith("Force-law fit of")
    for args, message in ((["--windows", "0,x"], "--windows"), (["--windows", "300,100"], "windows"),
                          (["--null", "-2"], "null"), (["--gauge", "similarity"], "gauge")):
        assert main(["force-fit", str(path), "--out", str(tmp_path / "bad"), *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_force_fit_displacement_needs_only_the_snapshots(tmp_path, capsys):
    """--target displacement --horizon: the motion over 40 steps, from a file without gradients (issue 53)."""
    import particles as P

    run = P.Trajectory.load(_force_run(tmp_path))
    plain = P.Trajectory(run.embeddings, run.snapshot_steps, meta=run.meta).save(tmp_path / "plain.npz")
    assert main(["force-fit", str(plain), "--target", "displacement", "--horizon", "40", "--bootstrap", "0",
                 "--null", "2", "--quiet", "--out", str(tmp_path / "o")]) == 0
    report = json.loads((tmp_path / "o" / "force_fit.json").read_text())
    assert report["horizon"] == 40 and report["fit_info"]["snapshots"] == len(run) - 2
    # 40 Euler steps of dt 0.01 move the state far, so the force at the start explains a part of it only
    assert "displacement per step over 40 steps" in report["summary"]
    assert report["r2"] > report["null_r2_interval"][1]


# --- issue 68: a verdict a user can act on ------------------------------------------------------------------

@pytest.mark.parametrize("args, kwargs", [
    (["--windows", "0,100,99999"], dict(windows=[0, 100, 99999])),  # past the run's end (steps 0..600)
    (["--windows", "0,700"], dict(windows=[0, 700])),
    (["--windows", "300,100"], dict(windows=[300, 100])),  # reversed
    (["--windows", "0,5,10"], dict(windows=[0, 5, 10])),  # empty windows
    (["--window", "100", "99999"], dict(window=(100, 99999))),
    (["--window", "300", "100"], dict(window=(300, 100))),  # reversed
    (["--window", "300", "300"], dict(window=(300, 300))),  # empty
    (["--window", "10", "15"], dict(window=(10, 15))),  # holds no snapshot
])
def test_windows_are_refused_alike_in_python_and_on_the_command_line(tmp_path, capsys, args, kwargs):
    """The same words from fit() and from embdyn force-fit (one line, exit 2),
    naming the run's steps where the windows leave them."""
    import particles as P
    from fitting import ForceLawFit

    path = _force_run(tmp_path)  # steps 0, 20, ..., 600
    window = kwargs.pop("window", None)
    with pytest.raises(ValueError) as python:
        ForceLawFit(**kwargs).fit(P.Trajectory.load(path), window=window)
    assert main(["force-fit", str(path), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(python.value) in err[0], (str(python.value), err)
    assert "the run's steps are 0..600 (31 snapshots with a force), so give" in err[0]
    assert not (tmp_path / "o" / "force_fit.json").exists()


def test_force_fit_prints_the_verdict_and_reports_unidentified_ranges(tmp_path, capsys):
    """One sentence with the verdict on stdout (the library's), the JSON's
    verdict and ranges, a range at its bound as not identified, and one
    share per term everywhere."""
    from fitting.forcefit.verdict import verdict

    path = _force_run(tmp_path)
    assert main(["force-fit", str(path), "--bootstrap", "0", "--null", "4", "--terms", "attraction", "repulsion",
                 "--quiet", "--out", str(tmp_path / "o")]) == 0
    lines = capsys.readouterr().out.splitlines()
    report = json.loads((tmp_path / "o" / "force_fit.json").read_text())
    assert report["verdict"] == verdict(report["r2"], report["null_r2"], report["null_r2_interval"])
    assert report["verdict"] in ("above chance", "at chance", "below chance")
    assert report["verdict_sentence"] in lines and report["verdict_sentence"].endswith(report["verdict"] + ".")
    assert report["verdict_sentence"].startswith("The built-in law explains R^2")
    assert report["whole_run"]["verdict"] == report["verdict"]
    assert all(w["verdict"] == verdict(w["r2"], w["null_r2"], w["null_r2_interval"]) for w in report["windows"])
    shares = {r["name"]: r["share"] for r in report["table"] if r["kind"] == "strength"}
    assert shares == report["shares"] == report["whole_run"]["shares"]
    closing = next(line for line in lines if line.startswith("Terms by their share"))
    for name, value in shares.items():
        assert f"{name} {value:.2f}" in closing
    # a law whose attraction reaches further than the default box (sig_a 0.3 to 30): sig_a ends at its bound
    far = _force_run(tmp_path, sig_a=300.0)
    assert main(["force-fit", str(far), "--bootstrap", "0", "--null", "0", "--out", str(tmp_path / "b")]) == 0
    out, err = capsys.readouterr()
    report = json.loads((tmp_path / "b" / "force_fit.json").read_text())
    assert report["range_status"]["sig_a"] == "at its upper bound 30" and report["ranges"]["sig_a"] is None
    row = next(r for r in report["table"] if r["name"] == "sig_a")
    assert row["value"] is None and row["identified"] is False and row["fitted"] == pytest.approx(30.0)
    line = next(line for line in out.splitlines() if line.strip().startswith("sig_a"))
    assert "not identified: at its upper bound 30" in line and "30 " not in line.split("not identified")[0]
    assert "sig_a = 30 lies at its upper bound 30, so it is not identified" in err
    assert "no verdict without a null" in report["verdict_sentence"] and report["verdict"] is None
