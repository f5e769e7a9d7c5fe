"""embdyn sandbox: a frame, an animation and the report from a run file; bad input is one line and exit 2,
refused before anything is drawn or written."""

import numpy as np

from particles import Trajectory
from particles.cli import main

from .test_frame import synthetic_layers


def _run_file(tmp_path, curves=True):
    layers = synthetic_layers(S=3, every=40, curves=curves)
    arrays = {f"layer_{k}": v for k, v in layers.states.items()}
    n = int(layers.steps[-1]) + 1
    scalars = {name: values for name, (steps, values) in layers.curves.items()}
    traj = Trajectory(np.zeros((3, 2, 2)), layers.steps, steps=np.arange(n) if curves else None, scalars=scalars,
                      snapshot_arrays=arrays, meta=layers.meta)
    return traj.save(tmp_path / "run.npz")


def test_a_frame_an_animation_and_the_report(tmp_path, capsys):
    run = _run_file(tmp_path)
    frame, gif = tmp_path / "f.png", tmp_path / "a.gif"
    assert main(["sandbox", str(run), "--step", "40", "--frame-out", str(frame), "--animate", str(gif),
                 "--every", "2", "--report", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert frame.stat().st_size > 0 and gif.stat().st_size > 0
    assert "(2 of 3 recorded steps, gif (Pillow))" in out  # every other step and the last
    assert "loss spikes: 0" in out and "clustering  never" in out


def test_bad_input_is_one_line_and_nothing_is_written(tmp_path, capsys):
    run = _run_file(tmp_path)
    frame = tmp_path / "f.png"
    cases = [
        (["--step", "41", "--frame-out", str(frame)], "--step: step 41 was not recorded: the nearest recorded steps "
                                                      "are 40, 80"),
        (["--frame-out", str(frame)], "--frame-out goes with --step"),
        (["--step", "40", "--frame-out", str(tmp_path / "f.jpg")], "--frame-out must end in .png"),
        (["--animate", str(tmp_path / "nowhere" / "a.gif")], "--animate: the folder"),
        (["--animate", str(tmp_path / "a.gif"), "--every", "0"], "--every must be >= 1"),
        (["--animate", str(tmp_path / "a.gif"), "--fps", "0"], "--fps must be in [1, 60]"),
        ([], "say what to make"),
    ]
    for args, said in cases:
        assert main(["sandbox", str(run), *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], (args, err)
    (tmp_path / "b").mkdir()
    no_curves = _run_file(tmp_path / "b", curves=False)
    assert main(["sandbox", str(no_curves), "--step", "40", "--frame-out", str(frame), "--report"]) == 2
    assert "--report reads the run's per-step train_loss" in capsys.readouterr().err
    plain = Trajectory(np.zeros((2, 3, 2)), np.array([0, 1])).save(tmp_path / "plain.npz")
    assert main(["sandbox", str(plain), "--step", "0", "--frame-out", str(frame)]) == 2
    assert "has no layer states" in capsys.readouterr().err
    assert not frame.exists() and not (tmp_path / "a.gif").exists()
