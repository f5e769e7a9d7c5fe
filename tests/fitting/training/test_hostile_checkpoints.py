"""Issue 69 (part): damaged, truncated, foreign or hostile checkpoints are
refused by name before any training (in Python and on the command line);
``--resume`` skips the runs whose finished files are there; counts of
seeds, steps and cells are bounded by the memory budget before anything is
allocated."""

import os
import pickle

import numpy as np
import pytest

from ..helpers import Interrupt

from fitting.training import config_for
from particles import Trajectory
from particles.cli import main

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")
from fitting.training import CheckpointError, load_checkpoints, train  # noqa: E402

TOY = dict(steps=30, snapshot_every=10, embedding_lr=1e-2, decoder_lr=1e-2)


class Foreign:
    """A class no checkpoint holds."""

    def __init__(self):
        self.weights = [1.0, 2.0]


class Hostile:
    """Unpickled without weights_only, this would run a command."""

    def __reduce__(self):
        return (os.system, ("touch HACKED",))


def _damage(kind, path, good, seed=0):
    """Write at ``path`` one of the damaged kinds of the checkpoint ``good`` (bytes; made again for ``seed``)."""
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "random bytes":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "a plain tensor":
        torch.save(torch.zeros(3), path)
    elif kind == "missing keys":
        torch.save({"identity": {**torch.load(_io(good), weights_only=True)["identity"], "seed": seed}}, path)
    elif kind == "a foreign class":
        torch.save(Foreign(), path)
    elif kind == "a hostile pickle":
        torch.save({"identity": Hostile()}, path)
    elif kind == "a plain pickle":
        path.write_bytes(pickle.dumps({"identity": {}, "task": {}, "recorder": {}}))
    elif kind == "wrong shapes":
        state = torch.load(_io(good), weights_only=True)
        state["recorder"]["signals"] = torch.zeros(100, 3, dtype=torch.float64)  # more steps than the run has
        state["identity"]["seed"] = seed
        torch.save(state, path)
    else:
        raise AssertionError(kind)


def _io(data):
    import io

    return io.BytesIO(data)


KINDS = ["empty", "truncated", "random bytes", "a plain tensor", "missing keys", "a foreign class",
         "a hostile pickle", "a plain pickle", "wrong shapes"]
WHAT = {"empty": "is empty", "truncated": "truncated, damaged or not a torch.save file",
        "random bytes": "damaged or not a torch.save file", "a plain tensor": "holds a Tensor",
        "missing keys": "entries ['task', 'recorder'] are missing", "a foreign class": "refers to",
        "a hostile pickle": "refers to posix.system", "a plain pickle": "not a torch.save file",
        "wrong shapes": "does not fit this run"}


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A toy run of seed 0 interrupted at step 15, with its checkpoint (bytes)."""
    folder = tmp_path_factory.mktemp("ckpt")
    cfg = config_for("toy", **TOY)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, seed=0, out=folder / "toy_seed0.npz", checkpoint_every=5, callback=Interrupt(at=15))
    return cfg, (folder / "toy_seed0.ckpt.pt").read_bytes()


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_checkpoint_is_refused_by_name_before_training(kind, interrupted, tmp_path, monkeypatch):
    cfg, good = interrupted
    path = tmp_path / "toy_seed0.ckpt.pt"
    _damage(kind, path, good)
    monkeypatch.chdir(tmp_path)
    steps = []
    with pytest.raises(CheckpointError) as info:
        train(cfg, seed=0, out=tmp_path / "toy_seed0.npz", checkpoint_every=5, resume=True,
              callback=lambda done, total: steps.append(done))
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert str(path) in message and WHAT[kind] in message, message
    assert steps == [] and not (tmp_path / "HACKED").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_cli_train_resume_with_a_damaged_checkpoint_is_one_line_exit_2(kind, interrupted, tmp_path, capsys,
                                                                      monkeypatch):
    cfg, good = interrupted
    _damage(kind, tmp_path / "toy_seed1.ckpt.pt", good, seed=1)  # seed 1's: refused before seed 0 trains
    monkeypatch.chdir(tmp_path)
    argv = ["train", "toy", "--seeds", "2", "--checkpoint-every", "5", "--resume", "--out", str(tmp_path), "--quiet"]
    argv += [f"--set={k}={v}" for k, v in TOY.items() if k != "steps"] + ["--steps", str(TOY["steps"])]
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "toy_seed1.ckpt.pt" in err[0] and WHAT[kind] in err[0], err
    assert "Traceback" not in captured.err and not (tmp_path / "toy_seed0.npz").exists()
    assert not (tmp_path / "HACKED").exists()


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ("missing keys", "wrong shapes")] + ["folder"])
def test_load_checkpoints_refuses_a_damaged_file_by_name(kind, interrupted, tmp_path, monkeypatch):
    _, good = interrupted
    monkeypatch.chdir(tmp_path)
    fine = tmp_path / "a.pt"
    torch.save({"embed.weight": torch.randn(7, 2)}, fine)
    bad = tmp_path / "b.pt"
    if kind == "folder":
        bad.mkdir()
        with pytest.raises(FileNotFoundError):  # not a file: as before
            load_checkpoints([fine, bad], "embed.weight")
        return
    _damage(kind, bad, good)
    with pytest.raises(CheckpointError, match="b.pt") as info:
        load_checkpoints([fine, bad], "embed.weight")
    if kind != "a plain tensor":
        assert WHAT[kind] in str(info.value)
    else:  # a tensor has no entries: the key is missing (a CheckpointError that is also the KeyError of before)
        assert isinstance(info.value, KeyError) and "has no entry 'embed.weight'" in str(info.value)
    assert not (tmp_path / "HACKED").exists()


def test_resume_skips_the_seeds_whose_finished_files_are_there(tmp_path, capsys):
    """A kill during seed 2 of three: --resume leaves seeds 0 and 1 alone (and says so) and continues seed 2
    from its checkpoint to the uninterrupted result."""
    cfg = config_for("toy", **TOY)
    for seed in (0, 1):
        train(cfg, seed=seed, out=tmp_path / f"toy_seed{seed}.npz", checkpoint_every=5)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, seed=2, out=tmp_path / "toy_seed2.npz", checkpoint_every=5, callback=Interrupt(at=15))
    stamps = {s: os.stat(tmp_path / f"toy_seed{s}.npz").st_mtime_ns for s in (0, 1)}
    argv = ["train", "toy", "--seeds", "3", "--steps", str(TOY["steps"]), "--checkpoint-every", "5", "--resume",
            "--out", str(tmp_path)] + [f"--set={k}={v}" for k, v in TOY.items() if k != "steps"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    skipped = [line for line in captured.err.splitlines() if "skipped (--resume)" in line]
    assert len(skipped) == 2 and "seed 0:" in skipped[0] and "seed 1:" in skipped[1], captured.err
    assert all(f"seed {s}:" in captured.out for s in (0, 1, 2))
    assert {s: os.stat(tmp_path / f"toy_seed{s}.npz").st_mtime_ns for s in (0, 1)} == stamps  # not rewritten
    resumed = Trajectory.load(tmp_path / "toy_seed2.npz")
    np.testing.assert_array_equal(resumed.signals, train(cfg, seed=2).signals)
    # in Python: a finished run is returned as it is
    again = train(cfg, seed=0, out=tmp_path / "toy_seed0.npz", resume=True,
                  callback=lambda done, total: pytest.fail("trained again"))
    assert again.meta["completed"] and os.stat(tmp_path / "toy_seed0.npz").st_mtime_ns == stamps[0]
    # a finished file of another config or an interrupted one is trained again
    other = config_for("toy", **{**TOY, "steps": 20})
    steps = []
    train(other, seed=0, out=tmp_path / "toy_seed0.npz", resume=True, callback=lambda d, t: steps.append(d))
    assert steps[-1] == 20


def test_batched_resume_skips_finished_groups(tmp_path, capsys):
    from fitting.training import train_batched

    cfg = config_for("survival-mlp", p=11, d=8, hidden=16, steps=6, snapshot_every=3)
    train_batched(cfg, [0, 1], tmp_path)
    stamps = [os.stat(tmp_path / f"survival-mlp_seed{s}.npz").st_mtime_ns for s in (0, 1)]
    again = train_batched(cfg, [0, 1], tmp_path, resume=True, callback=lambda d, t: pytest.fail("trained again"))
    assert [t.meta["seed"] for t in again] == [0, 1]
    assert [os.stat(tmp_path / f"survival-mlp_seed{s}.npz").st_mtime_ns for s in (0, 1)] == stamps
    assert main(["train", "survival-mlp", "--batched", "--seeds", "2", "--steps", "6", "--set", "p=11", "--set", "d=8",
                 "--set", "hidden=16", "--snapshot-every", "3", "--resume", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.count("skipped (--resume)") == 2


def test_train_grid_resume_returns_a_finished_grid(tmp_path, monkeypatch):
    from fitting.training import train_grid
    from fitting.training.configs import toy_phase_setting
    from fitting.training.grid import finished_grid

    config, grid = toy_phase_setting("regression", steps=5)
    grid = {k: v[:2] for k, v in grid.items()}
    out = tmp_path / "g.json"
    first = train_grid(config, grid, [0], out=out, compile="never")
    assert finished_grid(out, config, grid, [0], compile="never") is not None
    assert finished_grid(out, config, grid, [0, 1], compile="never") is None  # another grid: trained
    import fitting.training.grid_cells as cells

    monkeypatch.setattr(cells, "CellStack", lambda *a, **k: pytest.fail("trained again"))
    again = train_grid(config, grid, [0], out=out, compile="never", resume=True)
    assert again.records == first.records


@pytest.mark.slow
def test_toy_phases_resume_does_not_train_a_finished_grid_again(tmp_path, capsys, monkeypatch):
    argv = ["toy-phases", "regression", "--quick", "--steps", "5", "--out", str(tmp_path)]
    assert main(argv + ["--quiet"]) == 0
    capsys.readouterr()
    import fitting.training.grid_cells as cells

    monkeypatch.setattr(cells, "CellStack", lambda *a, **k: pytest.fail("trained again"))
    assert main(argv + ["--resume"]) == 0
    assert "not trained again (--resume)" in capsys.readouterr().err


def test_train_seeds_whose_files_do_not_fit_on_the_disk_are_one_line_exit_2(tmp_path, capsys):
    """Issue 69: `embdyn train --seeds N` (one seed at a time, so memory does not bound N) is bounded by the
    disk its files go to: a trillion seeds is refused before any output, naming --seeds."""
    out = tmp_path / "o"
    assert main(["train", "survival-mlp", "--seeds", "1000000000000", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--seeds 1000000000000 runs of survival-mlp would write about" in err[0], err
    assert "free on the disk" in err[0] and not out.exists()


# ------------------------------------------------------------ counts bounded by the memory budget
@pytest.mark.parametrize("argv,words", [
    (["train", "toy", "--steps", "1000000000"], "toy: a run of steps=1000000000"),
    (["train", "survival-mlp", "--batched", "--seeds", "1000000000000"], "survival-mlp: 1000000000000 runs (seeds)"),
    (["toy-phases", "regression", "--seeds", "1000000000000"], "(grid points x --seeds)"),
    (["compare-network", "--seeds", "1000000000000"], "--seeds 1000000000000 x 4 --weight-decays points"),
    (["compare-network", "--seeds", "10000000", "--network-results", "none.json"], "--seeds 10000000 x 4"),
], ids=["train steps", "train --batched seeds", "toy-phases seeds", "compare-network seeds", "compare rows"])
def test_training_counts_over_the_memory_budget_are_one_line_exit_2_before_any_output(argv, words, tmp_path,
                                                                                      capsys, monkeypatch):
    monkeypatch.setenv("EMBDYN_MEMORY_BUDGET", "1GiB")  # the same refusals on any machine
    out = tmp_path / "o"
    assert main(argv + ["--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "over the budget of" in err[0], err
    assert not out.exists()


def test_a_run_over_the_memory_budget_is_refused_in_python(monkeypatch):
    from fitting.training import train_grid
    from fitting.training.configs import toy_phase_setting

    with pytest.raises(ValueError, match=r"toy: a run of steps=1000000000 .* over the budget of .*fewer steps"):
        train(config_for("toy", steps=10**9))
    monkeypatch.setenv("EMBDYN_MEMORY_BUDGET", "1MiB")
    with pytest.raises(ValueError, match=r"budget of 1 MiB \(EMBDYN_MEMORY_BUDGET=1MiB\)"):
        train(config_for("toy", steps=100_000))
    config, grid = toy_phase_setting("regression", steps=5)
    with pytest.raises(ValueError, match=r"a grid of \d+ cells \(grid points x seeds\)"):
        train_grid(config, grid, list(range(40)))
