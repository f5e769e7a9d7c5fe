"""`embdyn theory`: each curve writes its figure and JSON (effective_theory.cli)."""
import subprocess
import sys

import pytest

from particles.cli import main


@pytest.mark.slow
def test_cli_theory(tmp_path, capsys):
    from particles.cli import main
    assert main(["theory", "critical-fraction", "--p", "6", "--samples", "200", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "critical fraction" in out
    assert (tmp_path / "critical_fraction.png").stat().st_size > 0
    assert main(["theory", "grokking-rate", "--p", "6", "--samples", "3", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "grokking_rate.png").stat().st_size > 0
    assert main(["theory", "digits", "--steps", "20", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "digits_collapse.png").stat().st_size > 0
    assert main(["theory", "steps", "--p", "6", "--sets", "1", "--out", str(tmp_path)]) == 0
    assert "measured / predicted" in capsys.readouterr().out


@pytest.mark.slow
def test_theory_curves_each_write_json(tmp_path, capsys):
    import json

    runs = {"critical-fraction": ["--p", "5", "--samples", "20"], "grokking-rate": ["--p", "5", "--samples", "2"],
            "steps": ["--p", "5", "--sets", "1"], "digits": ["--steps", "6"]}
    names = {"critical-fraction": "critical_fraction", "grokking-rate": "grokking_rate",
             "steps": "steps_predicted_vs_measured", "digits": "digits_collapse"}
    for curve, argv in runs.items():
        assert main(["theory", curve, *argv, "--quiet", "--out", str(tmp_path)]) == 0
        data = json.loads((tmp_path / f"{names[curve]}.json").read_text())
        assert data and (tmp_path / f"{names[curve]}.png").stat().st_size > 0
    help_text = subprocess.run([sys.executable, "-m", "particles.cli", "theory", "steps", "--help"],
                               capture_output=True, text=True).stdout
    assert "(default: 10)" in " ".join(help_text.split())  # --sets shows its default
    assert "l3 is the third-smallest eigenvalue" in " ".join(help_text.split())
