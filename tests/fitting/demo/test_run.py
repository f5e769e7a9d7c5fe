"""`embdyn demo --quick`: every expected file, numbers in the summary, failures."""

import json

import pytest

import fitting.demo.run as demo
from fitting import example_trajectory, surviving_frequencies
from particles.cli import main

EXPECTED = ["particles_circles.png", "particles_circles.gif", "particles_grids.png", "theory_critical_fraction.png",
            "theory_grokking_rate.png", "fitting_signals.png", "fitting_fit.png", "fitting_coefficients.png",
            "summary.md", "summary.html", "summary.json"]


@pytest.mark.slow  # the whole quick demo (CI's main-job step runs it too); keeps the README suite short
def test_demo_quick_writes_everything_and_the_summary_carries_the_numbers(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--quiet"]) == 0
    for name in EXPECTED:
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    markdown = (out / "summary.md").read_text()
    html = (out / "summary.html").read_text()
    theory = summary["stages"]["theory"]
    assert f"**{theory['critical_fraction']:.3f}**" in markdown
    assert 0.35 < theory["critical_fraction"] < 0.45
    fit = summary["stages"]["fitting"]
    assert f"| {fit['lasso_r2']:.4g} |" in markdown and f"| {fit['ols_r2']:.4g} |" in markdown
    expected = [int(k) for k in (surviving_frequencies(example_trajectory()).nonzero()[0] + 1)]
    assert fit["survivors"] == expected
    assert ", ".join(map(str, expected)) in markdown
    counts = summary["stages"]["particles"]["circles"]
    assert f"| circles | {counts.get('circle', 0)} |" in markdown
    assert html.count("data:image/png;base64,") == 7 and "data:image/gif;base64," in html
    # every number drawn in the fit figure is in summary.md, and the held-out R^2 is explained
    import re

    title = fit["figure_titles"]["fitting_fit.png"]
    for number in re.findall(r"(?<![\w.-])-?\d+(?:\.\d+)?", title):
        assert number in markdown, (number, title)
    assert "Held out, the" in markdown
    for name, m in summary["stages"]["particles"]["seed0"].items():  # the numbers of the snapshot figures
        assert f"| {name} | {m['structure']} | {m['circularity']:.2f} | {m['accuracy']:.2f} |" in markdown
    assert "demo finished" in capsys.readouterr().out


def test_demo_refuses_an_unwritable_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["demo", "--quick", "--out", str(blocker / "sub"), "--quiet"]) == 2
    assert "--out must be a writable folder" in capsys.readouterr().err


@pytest.mark.slow  # runs demo stages; keeps the README suite short
def test_a_failing_stage_keeps_finished_stages_and_says_what_failed(tmp_path, monkeypatch):
    def broken(out, quick, progress):
        raise RuntimeError("simulated failure")

    monkeypatch.setitem(demo.STAGE_FUNCTIONS, "fitting", broken)
    with pytest.raises(demo.DemoError, match="stage 'fitting' failed: RuntimeError: simulated failure"):
        demo.run_demo(tmp_path, quick=True)
    assert (tmp_path / "theory_critical_fraction.png").stat().st_size > 0
    markdown = (tmp_path / "summary.md").read_text()
    assert "Stage **fitting** failed: RuntimeError: simulated failure" in markdown
    assert "Critical training fraction" in markdown


def test_example_trajectory_is_small_and_complete():
    traj = example_trajectory()
    assert traj.signals.shape == (3000, 29) and traj.meta["model"] == "survival-mlp"
    assert {"train_loss", "val_acc", "signal_dc"} <= set(traj.scalars)


def test_summary_html_is_rendered_by_markdown_it_with_images_inline(tmp_path):
    from matplotlib.figure import Figure

    Figure(figsize=(1, 1)).savefig(tmp_path / "a.png")
    html = demo.inline_html("# Title\n\n| x | y |\n|---|---|\n| 1 | **2** |\n\n![a.png](a.png)\n\n"
                             "a `b` <script>", tmp_path)
    assert "<h1>Title</h1>" in html and "<td><strong>2</strong></td>" in html and "<code>b</code>" in html
    assert 'src="data:image/png;base64,' in html and 'alt="a.png"' in html
    assert "<script>" not in html  # raw HTML is escaped


@pytest.mark.parametrize("held, eig, words", [(-1958.0, 0.0026, "grows away"), (-3.0, -0.01, "drifts away"),
                                              (0.9, -0.01, "still follows"), (None, 0.1, "not available")])
def test_the_held_out_r2_gets_a_sentence(held, eig, words):
    sentence = demo.heldout_sentence({"heldout_r2": held, "max_real_eigenvalue": eig, "notes": []})
    assert words in sentence
