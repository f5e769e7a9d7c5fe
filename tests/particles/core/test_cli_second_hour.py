"""What a new user's second hour ran into: output folders checked before any
work, the compile note only when compiling, no broken-pipe message, one
wording of a range, warnings as one line (silenced by --quiet)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from particles.cli import main
from particles.core.cli import CompileNote


DATA = Path(__file__).resolve().parents[3] / "fitting" / "survival" / "data" / "survival_mlp_seed0.npz"


def _journal(tmp_path: Path) -> str:
    path = tmp_path / "shard.jsonl"
    path.write_text("{}\n")
    return str(path)


# (arguments before --out, the library functions that are the command's work)
WRITERS = [
    (["simulate", "--steps", "10"], ["particles.presets.Preset.run", "particles.precompile.warmup"]),
    (["sweep", "--grid", "lam=1,2", "--seeds", "1"], ["particles.sweep.sweep", "particles.precompile.warmup"]),
    (["sweep", "merge", "JOURNAL"], ["particles.sweep.merge_journals"]),
    (["theory", "critical-fraction", "--samples", "10"], ["effective_theory.montecarlo.unique_structure_probability"]),
    (["theory", "grokking-rate", "--samples", "2"], ["effective_theory.montecarlo.grokking_rate_curve"]),
    (["theory", "steps", "--sets", "1"], ["effective_theory.experiments.compare_steps"]),
    (["theory", "digits", "--steps", "5"], ["effective_theory.experiments.digits_collapse"]),
    (["fit", str(DATA)], ["fitting.ode.base.ODEModel.fit"]),
    (["demo", "--quick"], ["fitting.demo.run.run_demo", "fitting.demo.run.compile_kernels"]),
]


def _forbid(monkeypatch, targets):
    def refuse(*args, **kwargs):
        raise AssertionError("the command started its work before checking --out")

    from importlib import import_module

    for target in targets:
        module, _, attr = target.rpartition(".")
        try:
            owner = import_module(module)
        except ModuleNotFoundError:  # module.Class.method
            module, _, cls = module.rpartition(".")
            owner = getattr(import_module(module), cls)
        assert hasattr(owner, attr), target
        monkeypatch.setattr(owner, attr, refuse)


@pytest.mark.parametrize("kind", ["existing file", "under a file"])
@pytest.mark.parametrize("argv,work", WRITERS, ids=[" ".join(a[:2]) for a, _ in WRITERS])
def test_every_writing_command_checks_its_output_folder_first(argv, work, kind, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    out = blocker if kind == "existing file" else blocker / "sub"
    argv = [_journal(tmp_path) if a == "JOURNAL" else a for a in argv]
    _forbid(monkeypatch, work)
    code = main(argv + ["--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and "--out" in err[0] and str(out) in err[0], err
    assert ("is a file" if kind == "existing file" else "must be a writable folder") in err[0]
    assert "Errno" not in err[0] and ".tmp" not in err[0]
    assert blocker.read_text() == "not a folder"


def test_compile_note_only_when_compiling():
    import io

    stream = io.StringIO()
    with CompileNote("x: ", stream=stream, delay=0.5):
        pass  # a load from the cache: quick
    assert stream.getvalue() == ""
    with CompileNote("x: ", stream=stream, delay=0.01):
        time.sleep(0.3)  # compiling: slow
    text = stream.getvalue()
    assert text.startswith("x: compiling kernels (first run only)... ready in ") and text.endswith(" s\n")
    stream = io.StringIO()
    with CompileNote("x: ", stream=stream, delay=0.01, quiet=True):
        time.sleep(0.1)
    assert stream.getvalue() == ""


def test_no_compile_note_before_an_argument_error(tmp_path, capsys):
    assert main(["simulate", "--steps", "0", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "compiling" not in err and err.count("\n") == 1


@pytest.mark.slow
def test_a_closed_pipe_is_not_an_error(tmp_path):
    read, write = os.pipe()
    os.close(read)  # the reader went away (embdyn ... | head)
    code = ("import sys; from particles.cli import main; "
            f"sys.exit(main(['theory', 'grokking-rate', '--p', '5', '--samples', '2', '--quiet', '--out', "
            f"{str(tmp_path)!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], stdout=write, stderr=subprocess.PIPE, text=True)
    os.close(write)
    assert proc.returncode == 141, proc.stderr  # as a process killed by SIGPIPE, with nothing on stderr
    assert proc.stderr == ""


def test_a_broken_pipe_that_is_not_stdout_is_an_error(capsys, monkeypatch):
    import argparse

    from particles.core import cli

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe to a worker")

    args = argparse.Namespace(command="theory", debug=False, quiet=True, func=broken)
    monkeypatch.setattr(cli, "build_parser", lambda: _Fixed(args))
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("embdyn theory: [Errno 32] Broken pipe to a worker") and err.count("\n") == 1
    print("stdout still works")
    assert capsys.readouterr().out == "stdout still works\n"


def test_one_wording_of_the_steps_range(tmp_path, capsys):
    messages = []
    for steps in ("0", "10000000000"):
        assert main(["simulate", "--steps", steps, "--out", str(tmp_path)]) == 2
        messages.append(capsys.readouterr().err)
    for message, steps in zip(messages, ("0", "10000000000")):
        assert f"steps must be an int in [1, 1000000000], got {steps}" in message, message


def test_a_nan_window_says_nan(capsys, tmp_path):
    assert main(["fit", str(DATA), "--window", "0", "nan", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not NaN" in err and "start < stop" not in err


def test_cli_warnings_are_one_line_and_quiet_silences_them(capsys):
    import argparse

    from particles.core import cli

    def warn(args):
        warnings.warn("a fit may be wrong:\n  see fit_info_", UserWarning)
        return 0

    parser = cli.build_parser()
    parser.set_defaults(func=warn)
    for quiet, expected in ((False, "embdyn theory: warning: a fit may be wrong: see fit_info_\n"), (True, "")):
        args = argparse.Namespace(command="theory", debug=False, quiet=quiet, func=warn)
        original = cli.build_parser
        cli.build_parser = lambda: _Fixed(args)
        try:
            assert main([]) == 0
        finally:
            cli.build_parser = original
        assert capsys.readouterr().err == expected


class _Fixed:
    """A parser stand-in that returns fixed arguments."""

    def __init__(self, args):
        self.args = args

    def parse_args(self, argv):
        return self.args
