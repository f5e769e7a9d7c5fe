"""The same checks in Python and on the command line (issue 68): one
function makes each check, so ``LinearODE(window=...).fit``,
``forecast(horizon=...)``, ``Trajectory.load`` and ``embdyn fit`` (and the
explorer's uploads) refuse the same input with the same message."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fitting import BootstrapEnsemble, LinearODE, LotkaVolterra, ODEModel
from particles import Trajectory, TrajectoryFormatError
from particles.cli import main

from .fitting.helpers import growing_circle_trajectory

#: growing_circle_trajectory(): 60 snapshots at steps 0, 10, ..., 590
EXTENT = "the run covers 0..590 (60 samples), so give 0 <= start < stop <= 600"


def _cli_error(capsys, argv: list[str]) -> str:
    """The one line ``embdyn`` prints for a refused command (exit code 2), without its prefix and suffix."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    prefix, suffix = f"embdyn {argv[0]}: ", f" (embdyn --debug {argv[0]} ... shows where)"
    assert lines[0].startswith(prefix) and lines[0].endswith(suffix), lines[0]
    return lines[0][len(prefix):-len(suffix)]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    traj = growing_circle_trajectory()
    return traj, traj.save(tmp_path_factory.mktemp("run") / "run.npz")


@pytest.mark.parametrize("window, words", [
    ((0, 99999), "window [0, 99999) goes past the run's end"),
    ((800, 900), "window [800, 900) goes past the run's end"),
    ((300, 100), "window [300, 100) is reversed (start > stop)"),
    ((200, 200), "window [200, 200) is empty (start = stop)"),
    ((101, 105), "window [101, 105) holds no sample"),
    ((-5, 150), "window [-5, 150) begins before the run's start"),
])
def test_a_window_the_run_does_not_have_is_refused_alike_in_python_and_on_the_cli(run, tmp_path, capsys, window,
                                                                                   words):
    traj, path = run
    with pytest.raises(ValueError) as info:
        LinearODE(window=window).fit(traj)
    message = str(info.value)
    assert message == f"{words}: {EXTENT}"
    out = tmp_path / "out"
    argv = ["fit", str(path), "--window", str(window[0]), str(window[1]), "--out", str(out)]
    assert _cli_error(capsys, argv) == message
    assert not out.exists()  # refused before any work


@pytest.mark.parametrize("make", [
    lambda w: ODEModel(window=w), lambda w: LotkaVolterra(window=w),
    lambda w: BootstrapEnsemble(LinearODE(window=w), n_models=2, random_state=0),
])
def test_every_estimator_taking_a_window_refuses_it_at_fit(run, make):
    traj, _ = run
    with pytest.raises(ValueError) as info:
        make((0, 99999)).fit(traj)
    assert str(info.value) == f"window [0, 99999) goes past the run's end: {EXTENT}"


def test_the_window_check_reads_arrays_and_several_runs_in_their_own_time_units():
    t = np.arange(0, 3, 0.01)  # 300 samples, 0..2.99
    x = np.column_stack([np.exp(-t), np.cos(t)])
    with pytest.raises(ValueError, match=r"^window \[0, 5\) goes past the run's end: the 2 runs cover 0\.\.2\.99 "
                                         r"\(600 samples\), so give 0 <= start < stop <= 3$"):
        LinearODE(window=(0, 5)).fit([x, x], t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearODE(derivative="central", window=(0, 3)).fit(x, t)  # stop one interval past the last sample
    assert model.t_fit_end_ == pytest.approx(2.99)
    with pytest.raises(ValueError, match=r"window \[0, 3\) begins before the run's start: the run covers "
                                         r"10\.\.12\.99"):
        LinearODE(window=(0, 3)).fit(x, t + 10)  # before the run's start and empty: the start is what is wrong
    with pytest.raises(ValueError, match=r"window \[1.005, 1.009\) holds no sample: the run covers 0\.\.2\.99"):
        LinearODE(window=(1.005, 1.009)).fit(x, t)  # between two samples
    # check_params has no run: it refuses the order without an extent
    with pytest.raises(ValueError, match=r"window must have start < stop, got \(5, 1\)"):
        LinearODE(window=(5, 1)).check_params()


@pytest.mark.parametrize("window, horizon, words", [
    ((0, 300), 1000, "horizon 1000 goes past the run's end: from t = 290 it reaches 1290, but the run covers 0..590 "
                     "(60 samples); give 0 < horizon <= 300"),
    (None, 5, "horizon 5 goes past the run's end: from t = 590 it reaches 595, but the run covers 0..590 "
              "(60 samples); no sample follows t = 590: end the fitted window earlier"),
])
def test_a_horizon_past_the_run_is_refused_alike_in_python_and_on_the_cli(run, tmp_path, capsys, window, horizon,
                                                                          words):
    traj, path = run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearODE(window=window).fit(traj)
    with pytest.raises(ValueError) as info:
        model.forecast(traj, horizon=horizon)  # from the fitted window's end: 290, or 590 without a window
    assert str(info.value) == words
    out = tmp_path / "out"
    argv = ["fit", str(path), *(["--window", str(window[0]), str(window[1])] if window else []),
            "--horizon", str(horizon), "--out", str(out)]
    assert _cli_error(capsys, argv) == words
    assert not out.exists()


def test_a_horizon_inside_the_run_is_used_by_the_cli(run, tmp_path, capsys):
    import json

    traj, path = run
    out = tmp_path / "out"
    assert main(["fit", str(path), "--window", "0", "300", "--horizon", "100", "--quiet", "--out", str(out)]) == 0
    report = json.loads((out / "fit.json").read_text())
    assert report["horizon"] == 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearODE(window=(0, 300)).fit(traj)
        forecast = model.forecast(traj, horizon=100)
    assert max(t[-1] for t in forecast.times) == 390
    assert report["forecast_error"] == pytest.approx(forecast.error, rel=1e-9)


# ------------------------------------------------------------------ files that are not trajectories
def _torch_checkpoint(folder):
    torch = pytest.importorskip("torch")
    path = folder / "model.pt"
    torch.save({"model": {"embed.weight": torch.zeros(5, 2)}, "step": 3}, path)
    return path, (f"{str(path)!r} is a torch checkpoint, not a trajectory file: load it with "
                  "fitting.training.load_checkpoints")


def _training_set(folder):
    path = folder / "train.npz"
    np.savez(path, pairs=np.zeros((4, 2), dtype=np.int64), labels=np.arange(4))
    return path, (f"{str(path)!r} is not a trajectory file (it holds pairs, labels; a trajectory holds "
                  "schema_version, snapshot_steps, embeddings, meta)")


@pytest.mark.parametrize("make", [_torch_checkpoint, _training_set], ids=["torch", "training-set"])
def test_a_file_that_is_not_a_trajectory_says_so_in_python_on_the_cli_and_in_the_explorer(tmp_path, capsys, make):
    path, expected = make(tmp_path)
    with pytest.raises(TrajectoryFormatError) as info:
        Trajectory.load(path)
    assert isinstance(info.value, ValueError) and info.value.field == "file"
    message = str(info.value)
    assert message == f"trajectory field 'file': {expected}"
    assert _cli_error(capsys, ["fit", str(path), "--out", str(tmp_path / "out")]) == message
    assert not (tmp_path / "out").exists()
    # the explorer's two ways in: a file on its command line, and an upload (named as the page sent it)
    from fitting.explore.runs import RunStore

    store = RunStore()
    with pytest.raises(TrajectoryFormatError) as info:
        store.add_path(path)
    assert str(info.value) == f"{message} (in {str(path)!r})"
    with pytest.raises(TrajectoryFormatError) as info:
        store.add_upload(path.name, path.read_bytes())
    assert str(info.value) == message.replace(repr(str(path)), repr(path.name))


def test_a_torch_checkpoint_is_never_unpickled(tmp_path, monkeypatch):
    """The message comes from the zip's directory: no member is opened, so no pickle is loaded."""
    import pickle
    import zipfile

    path, _ = _torch_checkpoint(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("a member was opened")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(zipfile.ZipFile, "open", refuse)
    with pytest.raises(TrajectoryFormatError, match="is a torch checkpoint"):
        Trajectory.load(path)


def test_an_archive_with_some_trajectory_arrays_still_names_the_missing_one(tmp_path):
    path = tmp_path / "partial.npz"
    np.savez(path, embeddings=np.zeros((2, 3, 2)), labels=np.arange(3))
    with pytest.raises(TrajectoryFormatError, match="'schema_version': is missing"):
        Trajectory.load(path)
    many = tmp_path / "many.npz"
    np.savez(many, **{f"a{i}": np.zeros(1) for i in range(10)})
    with pytest.raises(TrajectoryFormatError, match=r"it holds a0, a1, .*, a7, \.\.\. \(10 in all\); a trajectory"):
        Trajectory.load(many)
