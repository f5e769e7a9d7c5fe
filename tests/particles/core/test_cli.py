"""The embdyn command: --version, --debug, and bad values as one line with
exit code 2 (particles/cli.py's main is the boundary for every command)."""
import subprocess
import sys

import pytest

from particles.cli import main

BAD = [
    ["simulate", "--steps", "-5"],
    ["simulate", "--dt", "-0.1"],
    ["simulate", "--seed", "-1"],
    ["simulate", "--set", "p=1"],
    ["simulate", "--steps", "1000000000000", "--set", "record_every=1"],
    ["theory", "critical-fraction", "--p", "1"],
    ["theory", "critical-fraction", "--samples", "0"],
    ["theory", "grokking-rate", "--p", "0"],
    ["sweep", "--grid", "lam=1", "--shard", "1/1"],
    ["sweep", "--grid", "lam=1", "--seeds", "-2"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_values_are_one_line_and_exit_2(argv, tmp_path, capsys):
    code = main(argv + ["--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.strip().splitlines() if not line.startswith("compiling kernels")]
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"embdyn {argv[0]}"), captured.err
    assert "Traceback" not in captured.err


def test_debug_shows_the_traceback(tmp_path):
    with pytest.raises(ValueError, match="p must be"):
        main(["--debug", "theory", "critical-fraction", "--p", "1", "--out", str(tmp_path)])


def test_version_and_help_in_a_fresh_process():
    out = subprocess.run([sys.executable, "-m", "particles.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("embdyn (embedding-dynamics) ")
    # --help builds the parser without loading the kernels, the fitting code or torch
    code = ("import sys; from particles.core.cli import build_parser; build_parser().format_help(); "
            "heavy = [m for m in ('numba', 'sklearn', 'torch', 'scipy.signal', 'matplotlib') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def _options(parser, path=("embdyn",)):
    """(command path, action) for every option and positional of every command."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, path + (name,))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield " ".join(path), action


def test_every_option_has_help_and_quiet_has_one_meaning():
    from particles.core.cli import build_parser
    from particles.core.cli import QUIET_HELP

    options = list(_options(build_parser()))
    missing = [f"{path} {action.option_strings or action.dest}" for path, action in options if not action.help]
    assert not missing, missing
    quiet = {path: action.help for path, action in options if action.dest == "quiet"}
    assert len(quiet) >= 8  # simulate, sweep, theory x4, fit, demo (+ train commands with torch)
    assert set(quiet.values()) == {QUIET_HELP}, quiet
