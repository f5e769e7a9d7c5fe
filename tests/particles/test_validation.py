"""particles.core.validation (the one input-check module of the distribution) and
the public functions that used to return garbage or non-finite numbers on
bad input (issue 14's list)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import effective_theory as et
import fitting as ft
import particles as pt
from fitting.ode import linear_solution
from particles.effective import EffectiveLoss
from particles.core.validation import MAX_ABS, check_array, check_bool, check_choice, check_float, check_int, check_path


@given(st.integers(-10**6, 10**6), st.integers(-100, 100), st.integers(0, 200))
def test_check_int_accepts_exactly_the_range(value, low, width):
    high = low + width
    if low <= value <= high:
        assert check_int(value, "n", low, high) == value
    else:
        with pytest.raises(ValueError, match=r"n must be an int in \["):
            check_int(value, "n", low, high)


@pytest.mark.parametrize("bad", [1.0, "3", None, True, np.float64(2.0), 2 + 0j, [1]])
def test_check_int_refuses_other_kinds_by_name(bad):
    with pytest.raises(TypeError, match="steps must be an int >= 1"):
        check_int(bad, "steps", 1)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_check_float_refuses_non_finite_and_out_of_range(value):
    ok = np.isfinite(value) and 0.0 < value <= 1.0
    if ok:
        assert check_float(value, "dt", 0.0, 1.0, strict=False) == value
    elif not (np.isfinite(value) and value == 0.0):
        with pytest.raises(ValueError, match="dt must be a finite number"):
            check_float(value, "dt", 0.0, 1.0, strict=True)


@pytest.mark.parametrize("bad", ["0.1", None, True, 1j, [0.1]])
def test_check_float_refuses_other_kinds_by_name(bad):
    with pytest.raises(TypeError, match="dt must be"):
        check_float(bad, "dt", 0.0)


def test_bool_choice_and_path():
    assert check_bool(np.bool_(True), "flag") is True
    with pytest.raises(TypeError, match="flag must be True or False"):
        check_bool(1, "flag")
    assert check_choice("ivp", "method", ("exact", "ivp")) == "ivp"
    with pytest.raises(ValueError, match="method must be one of 'exact', 'ivp', got 'x'"):
        check_choice("x", "method", ("exact", "ivp"))
    with pytest.raises(TypeError, match="method must be one of"):
        check_choice(3, "method", ("exact", "ivp"))
    with pytest.raises(TypeError, match="path must be a path"):
        check_path(3, "path")  # an int is not an open file descriptor here


@settings(max_examples=60)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_check_array_refuses_every_non_finite_value(arr):
    if not np.all(np.isfinite(arr)):
        with pytest.raises(ValueError, match="x must be finite"):
            check_array(arr, "x")
    elif arr.size and np.max(np.abs(arr)) > MAX_ABS:
        with pytest.raises(ValueError, match=r"x must hold values of magnitude <= 1e\+100"):
            check_array(arr, "x")
    else:
        out = check_array(arr, "x")
        assert out.dtype == np.float64 and np.array_equal(out, arr)


@given(st.floats(min_value=-1e300, max_value=1e300))
def test_magnitude_bound_on_scalars_and_arrays(v):
    if abs(v) > MAX_ABS:
        with pytest.raises(ValueError, match="dt must be a finite number of magnitude <= 1e\\+100"):
            check_float(v, "dt")
        with pytest.raises(ValueError, match="E must hold values of magnitude"):
            check_array([0.0, v], "E")
    else:
        assert check_float(v, "dt") == v and check_array([0.0, v], "E")[1] == v


@settings(max_examples=30)
@given(hnp.arrays(np.complex128, hnp.array_shapes(max_dims=2, max_side=4), elements=st.complex_numbers(max_magnitude=10)))
def test_check_array_refuses_complex_even_with_zero_imaginary_part(arr):
    with pytest.raises(TypeError, match="x must be real; complex input is refused"):
        check_array(arr, "x")


@pytest.mark.parametrize("bad, kind", [(np.array(["a"]), TypeError), (np.array([object()]), TypeError),
                                        (None, TypeError), ("abc", TypeError), ([[1, 2], [3]], ValueError),
                                        (np.array([True]), TypeError)])
def test_check_array_refuses_non_numbers(bad, kind):
    with pytest.raises(kind, match="x must"):
        check_array(bad, "x")


def test_check_array_shape_and_int_rules():
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\), got \(3, 3\)"):
        check_array(np.zeros((3, 3)), "x", shape=(None, 2))
    assert check_array([1.0, 2.0], "k", dtype="int").dtype == np.int64
    with pytest.raises(ValueError, match="k must hold integers"):
        check_array([1.5], "k", dtype="int")


E = np.random.default_rng(0).normal(size=(7, 2))
NAN_E = E.copy()
NAN_E[0, 0] = np.nan
FIVE = pt.modular_addition(5)

# (call, parameter named in the message): each used to return garbage or
# non-finite numbers without an error
LISTED = {
    "linear_solution overflow": (lambda: linear_solution(np.eye(2) * 100, np.zeros(2), np.ones(2), np.array([0.0, 100.0])), "overflows"),
    "differentiate NaN": (lambda: ft.differentiate(NAN_E), "x must be finite"),
    "differentiate complex": (lambda: ft.differentiate(E * 1j), "x must be real"),
    "differentiate t string": (lambda: ft.differentiate(E, "x"), "t"),
    "fitness_correlation NaN": (lambda: ft.fitness_correlation([0.1, np.nan, 0.3, 0.5], [1, 2, 3, 4]), "rate must be finite"),
    "normalized_embedding NaN": (lambda: et.normalized_embedding(NAN_E), "E must be finite"),
    "normalized_embedding complex": (lambda: et.normalized_embedding(E * 1j), "E must be real"),
    "centroid_sum NaN": (lambda: pt.centroid_sum(NAN_E), "E must be finite"),
    "spread NaN": (lambda: pt.spread(NAN_E), "E must be finite"),
    "effective_loss_reference NaN": (lambda: pt.effective_loss_reference(NAN_E, pt.constraint_matrix(pt.addition(7))), "E must be finite"),
    "effective_loss_reference Z = 0": (lambda: pt.effective_loss_reference(np.ones((7, 2)), pt.constraint_matrix(pt.addition(7))), "Z\\(E\\) = 0"),
    "from_matrix NaN": (lambda: EffectiveLoss.from_matrix(np.array([[1.0, np.nan]])), "A must be finite"),
    "unique_structure_probability bootstrap -1": (lambda: et.unique_structure_probability(6, samples=10, bootstrap=-1), "bootstrap"),
    "PairDataset NaN labels": (lambda: pt.PairDataset(np.array([[0, 1], [1, 2]]), np.array([0.0, np.nan]), 3), "labels"),
    "energy_reference p mismatch": (lambda: pt.energy_reference(E, pt.modular_addition(9).pairs, pt.modular_addition(9).labels, pt.ForceParams()), "pairs must hold token indices"),
    "forces_reference p mismatch": (lambda: pt.forces_reference(E[:4], FIVE.pairs, FIVE.labels, pt.ForceParams()), "pairs must hold token indices"),
    "circularity complex": (lambda: pt.circularity(E * 1j), "E must be real"),
    "structure_metrics complex": (lambda: pt.structure_metrics(E * 1j), "E must be real"),
}


@pytest.mark.parametrize("name", list(LISTED))
def test_listed_bad_calls_raise_named_errors(name):
    call, words = LISTED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way to the error
        with pytest.raises((ValueError, TypeError), match=words):
            call()


def test_good_calls_still_work():
    assert np.isfinite(pt.spread(E)) and pt.centroid_sum(E).shape == (2,)
    loss, grad = pt.effective_loss_reference(E, pt.constraint_matrix(pt.addition(7)))
    assert np.isfinite(loss) and np.all(np.isfinite(grad))
    assert pt.PairDataset(np.array([[0, 1]]), np.array([1.0]), 3).labels.dtype == np.int64  # integral floats


def test_review_findings_stay_fixed():
    from fitting.ode.derivatives import sample_times

    assert np.allclose(sample_times(np.array(0.5), 3), [0.0, 0.5, 1.0])  # a 0-d array is a step
    with pytest.raises(ValueError, match="int64 range"):
        check_array(np.array([1e30]), "x", dtype="int")
    with pytest.raises(TypeError, match="x must be one of"):
        check_choice(True, "x", [0, 1])  # a bool is not a number
    with pytest.raises(ValueError, match="x must be one of"):
        check_choice(np.int64(5), "x", [0, 1])
    assert check_choice(np.str_("a"), "x", ["a", "b"]) == "a"
    with pytest.raises(ValueError, match="x must be"):
        check_float(10**400, "x")
    with pytest.raises(ValueError, match="got NaN"):
        check_array([1.0, np.nan], "x", low=2, finite=False)


def test_output_folder_check_names_the_parameter(tmp_path):
    from particles.core.validation import check_output_folder

    assert check_output_folder(tmp_path / "a" / "b", "out").is_dir()  # created with its parents
    # the write probe is removed; the folder's lock file stays (one writer per folder, issue 54)
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == [".embdyn-lock"]
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match=r"^out must be a folder \(existing or new\), but .* is a file$"):
        check_output_folder(tmp_path / "f", "out")
    with pytest.raises(ValueError, match=r"^--out must be a writable folder, but .* is not: Not a directory$"):
        check_output_folder(tmp_path / "f" / "g", "--out")
    with pytest.raises(TypeError, match="out must be a path"):
        check_output_folder(3, "out")


# --- issue 54 (part): one writer per output folder ---------------------------------------------------------

def _hold_folder(folder):
    """Another process that claims ``folder`` as its --out and keeps it for 30 s (returned once it holds it)."""
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from particles.core.validation import check_output_folder; "
        f"check_output_folder({str(folder)!r}, '--out'); print('held', flush=True); time.sleep(30)")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_process_writing_the_same_folder_is_refused(tmp_path):
    import subprocess
    import sys
    import time

    from particles.core.validation import check_output_folder

    holder = _hold_folder(tmp_path / "out")
    try:
        for _ in range(20):
            with pytest.raises(ValueError, match=rf"--out: the folder .*out' is being written by process {holder.pid}"):
                check_output_folder(tmp_path / "out", "--out")
        # another claim name (a sweep shard) in the same folder is free; the same process may claim again
        assert check_output_folder(tmp_path / "out", "--out", lock="shard-0-of-2") == tmp_path / "out"
        assert check_output_folder(tmp_path / "out", "--out", lock="shard-0-of-2") == tmp_path / "out"
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert check_output_folder(tmp_path / "out", "--out") == tmp_path / "out"  # released when the holder died


@pytest.mark.slow
def test_two_embdyn_commands_into_one_folder_the_second_is_one_line_exit_2(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "o"
    first = _hold_folder(out)
    try:
        for argv in (["sweep", "--preset", "circles", "--grid", "lam=0,1", "--seeds", "1"],
                     ["theory", "critical-fraction", "--p", "5", "--samples", "10"]):
            done = subprocess.run([sys.executable, "-m", "particles.cli", *argv, "--out", str(out)],
                                  capture_output=True, text=True)
            assert done.returncode == 2, done.stderr
            assert "is being written by process" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    finally:
        first.kill()
        first.wait()


# --- issue 69 (part): lock and temporary files never follow a symlink ---------------------------------------

def test_a_symlinked_lock_file_is_refused_and_what_it_points_to_is_untouched(tmp_path):
    from particles.core.validation import check_output_folder

    victim = tmp_path / "v.txt"
    victim.write_text("v\n")
    out = tmp_path / "d"
    out.mkdir()
    (out / ".embdyn-lock").symlink_to(victim)
    with pytest.raises(ValueError, match=r"^--out: the lock file .*\.embdyn-lock' is a symbolic link"):
        check_output_folder(out, "--out")
    assert victim.read_text() == "v\n"
    # a dangling one is refused too (nothing is created where it points)
    (out / ".embdyn-lock-shard-0-of-2").symlink_to(tmp_path / "new.txt")
    with pytest.raises(ValueError, match="is a symbolic link"):
        check_output_folder(out, "--out", lock="shard-0-of-2")
    assert not (tmp_path / "new.txt").exists()


def test_a_lock_path_holding_another_file_is_refused_untouched(tmp_path):
    import os

    from particles.core.validation import check_output_folder

    out = tmp_path / "d"
    out.mkdir()
    (out / ".embdyn-lock").write_text("my notes\n")
    with pytest.raises(ValueError, match=r"^out: .*\.embdyn-lock' is not a lock file of embdyn"):
        check_output_folder(out, "out")
    assert (out / ".embdyn-lock").read_text() == "my notes\n"
    other = tmp_path / "o"
    other.mkdir()
    (tmp_path / "precious").write_text("")
    os.link(tmp_path / "precious", other / ".embdyn-lock")  # a hard link: another name of another file
    with pytest.raises(ValueError, match="not a lock file of embdyn"):
        check_output_folder(other, "out")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / ".embdyn-lock")  # would block a plain open
    with pytest.raises(ValueError, match="not a lock file of embdyn"):
        check_output_folder(tmp_path / "fifo", "out")


def test_the_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    import os

    from particles.core.validation import check_output_folder

    out = tmp_path / "d"
    out.mkdir()
    (out / ".embdyn-lock").write_text("process 999999999 (embdyn fit run.npz --out d)")
    assert check_output_folder(out, "--out") == out
    assert (out / ".embdyn-lock").read_text().startswith(f"process {os.getpid()} (")


def test_a_dangling_symlink_out_is_named(tmp_path):
    from particles.core.validation import check_output_folder

    (tmp_path / "dang").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"^--out: .*dang' is a symbolic link to .*nowhere', which does not exist"):
        check_output_folder(tmp_path / "dang", "--out")
    with pytest.raises(ValueError, match=r"^--out: .*dang' is a symbolic link to .*nowhere', which does not exist"):
        check_output_folder(tmp_path / "dang" / "sub", "--out")
    assert not (tmp_path / "nowhere").exists()


def test_cli_symlinked_lock_is_one_line_exit_2_and_the_target_kept(tmp_path, capsys):
    from particles.cli import main

    victim = tmp_path / "v.txt"
    victim.write_text("v\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / ".embdyn-lock").symlink_to(victim)
    assert main(["sweep", "--grid", "lam=0", "--seeds", "1", "--out", str(tmp_path / "d"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link" in err and len(err.strip().splitlines()) == 1
    assert victim.read_text() == "v\n"
    (tmp_path / "dang").symlink_to(tmp_path / "nowhere")
    assert main(["sweep", "--grid", "lam=0", "--seeds", "1", "--out", str(tmp_path / "dang"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out: " in err and "which does not exist" in err and "File exists" not in err


def test_a_symlinked_sweep_journal_is_refused_and_its_target_untouched(tmp_path):
    from particles.sweep import JournalError, sweep

    victim = tmp_path / "v.txt"
    victim.write_text("v\n")
    (tmp_path / "j.jsonl").symlink_to(victim)
    with pytest.raises(JournalError, match=r"journal .*j.jsonl' is a symbolic link"):
        sweep({"lam": [0.0]}, 1, base="circles", journal=tmp_path / "j.jsonl", n_jobs=1)
    assert victim.read_text() == "v\n"


def test_temporary_files_are_created_exclusively(tmp_path, monkeypatch):
    """atomic_write's temporary is made with O_EXCL (and O_NOFOLLOW): a planted name is never opened."""
    import os
    import tempfile

    from particles.core.io import atomic_write_text

    seen = []
    real = os.open

    def spy(path, flags, *args, **kwargs):
        seen.append((str(path), flags))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    atomic_write_text(tmp_path / "a.txt", "x")
    monkeypatch.undo()
    tmps = [flags for path, flags in seen if path.endswith(".tmp")]
    assert tmps and all(f & os.O_EXCL and f & os.O_CREAT and f & getattr(os, "O_NOFOLLOW", 0) == getattr(os, "O_NOFOLLOW", 0)
                        for f in tmps), (seen, tempfile.__file__)
    assert (tmp_path / "a.txt").read_text() == "x"
