"""Key frequencies and the one default frequency selection (fitting.signals.frequencies):
the rule on generated multi-frequency spectra, its chance level, and the CLI,
the Python API and the explorer fitting the same columns with the same numbers."""

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitting import FrequencySelection, LinearODE, fourier_signals, key_frequencies, select_frequencies
from fitting.signals.frequencies import chance_ratio
from particles import Trajectory
from particles.cli import main


def multi_frequency_embedding(p, d, ks, amplitude=5.0, noise=0.3, seed=0, weights=None):
    """Tokens on several circles at once (frequencies ks, each in its own pair of dimensions) plus noise."""
    rng = np.random.default_rng(seed)
    n = np.arange(p)
    E = noise * rng.standard_normal((p, d))
    weights = np.ones(len(ks)) if weights is None else np.asarray(weights, dtype=float)
    for j, (k, w) in enumerate(zip(ks, weights)):
        E[:, 2 * j] += amplitude * w * np.cos(2 * np.pi * k * n / p)
        E[:, 2 * j + 1] += amplitude * w * np.sin(2 * np.pi * k * n / p)
    return E


@pytest.mark.parametrize("p, d, ks", [(41, 64, [2, 4, 5, 6, 7, 13, 14, 16, 17]),  # a grokked MLP's nine
                                      (59, 128, [3, 10, 17, 18]),
                                      (113, 64, [14, 35, 41, 52, 9, 27]),             # survival-like: a few of 56
                                      (23, 16, [3])])
def test_key_frequencies_find_every_planted_frequency_and_nothing_else(p, d, ks):
    for seed in range(5):
        E = multi_frequency_embedding(p, d, ks, seed=seed)
        S = fourier_signals(E)
        assert key_frequencies(S, d=d).tolist() == sorted(ks)
        # scale-free: the same answer for any unit of the signals
        assert key_frequencies(1e-6 * S, d=d).tolist() == sorted(ks)
        # squared signals say so with power=2
        assert key_frequencies(S ** 2, d=d, power=2).tolist() == sorted(ks)


def test_key_frequencies_of_unequal_strengths_and_a_graded_bulk():
    p, d = 41, 64
    # strengths over a factor 2 among the key ones; the rest decays gradually, as after grokking
    E = multi_frequency_embedding(p, d, [3, 8, 12, 19], weights=[1.0, 0.8, 0.6, 0.5], amplitude=8.0, noise=0.4)
    assert key_frequencies(fourier_signals(E), d=d).tolist() == [3, 8, 12, 19]


def test_no_key_frequency_in_a_structureless_embedding_at_the_chance_level():
    # the rule's false-positive rate on i.i.d. Gaussian tokens is its stated level (1 %), whatever d and p
    rng = np.random.default_rng(7)
    for d in (1, 2, 64):
        for p in (17, 41):
            hits = sum(key_frequencies(fourier_signals(rng.standard_normal((p, d))), d=d).size > 0
                       for _ in range(400))
            assert hits <= 16, (d, p, hits)  # 4 % at most: 1 % expected, binomial 400 draws


def test_chance_ratio_falls_with_the_dimension():
    ratios = [chance_ratio(20, d) for d in (1, 2, 8, 64)]
    assert all(a > b for a, b in zip(ratios, ratios[1:]))
    assert ratios[-1] < 2.0 < ratios[1]  # the paper's factor 2 decides at large d, the chance level at d = 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.01, 1e3), min_size=4, max_size=40), st.floats(1e-3, 1e3))
def test_key_frequencies_are_scale_free_and_strongest_first(values, scale):
    S = np.array(values)
    key = key_frequencies(S, output="mask")
    assert np.array_equal(key, key_frequencies(scale * S, output="mask"))
    if key.any():  # every key frequency is stronger than every other one
        assert S[key].min() > S[~key].max()
        assert (~key).sum() >= max(3, -(-len(S) // 4))  # a bulk is left


def test_key_frequencies_at_a_given_step_and_bad_input():
    S = np.ones((3, 10))
    S[2, [1, 4]] = 10.0
    assert key_frequencies(S, steps=[0, 10, 20]).tolist() == [2, 5]
    assert key_frequencies(S, steps=[0, 10, 20], step=15).tolist() == []
    with pytest.raises(ValueError, match="step"):
        key_frequencies(S, steps=[0, 10, 20], step=25)
    with pytest.raises(ValueError, match="ratio"):
        key_frequencies(S, ratio=1.0)
    with pytest.raises(ValueError, match="power"):
        key_frequencies(S, power=3)


def _run(tmp_path, ks=(1, 2, 4, 5, 7, 9, 11, 13), p=31, d=64, T=300, name="run.npz"):
    """A recorded-style run: signals every step, the planted frequencies grow, the rest decays."""
    rng = np.random.default_rng(3)
    steps = np.arange(T)
    grow = 1 - np.exp(-steps / 80.0)
    E0 = rng.standard_normal((p, d))
    target = multi_frequency_embedding(p, d, list(ks), amplitude=2.0, noise=0.0)
    snaps = np.stack([np.exp(-s / 100.0) * E0 + g * target for s, g in zip(steps, grow)])
    traj = Trajectory(snaps[::30], steps[::30], steps=steps, signals=fourier_signals(snaps),
                      meta={"source": "test", "signal_power": 1})
    return traj, traj.save(tmp_path / name)


def test_the_cli_the_api_and_the_explorer_fit_the_same_columns_with_the_same_numbers(tmp_path, capsys):
    from fitting.explore.runs import Run

    traj, path = _run(tmp_path)
    chosen = select_frequencies(traj)
    assert isinstance(chosen, FrequencySelection) and chosen.rule == "key"
    assert chosen.frequencies == [1, 2, 4, 5, 7, 9, 11, 13]
    assert chosen.survivors == []  # the paper's rule finds none: eight equal circles lift the mean past half of each
    window = (0, 150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = LinearODE(stable=True, window=window).fit(traj)
        forecast = api.forecast(traj)
        explorer = Run("run", traj).fit(window[0], window[1])
    assert api.frequencies_ == chosen.frequencies and explorer["frequencies"] == chosen.frequencies
    assert main(["fit", str(path), "--stable", "--window", "0", "150", "--out", str(tmp_path / "fit")]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert report["fitted_frequencies"] == chosen.frequencies and report["frequency_rule"] == "key"
    assert chosen.message in printed  # the one line saying which rule chose what
    assert np.allclose(report["coefficients"], api.coef_, rtol=0, atol=0)
    assert report["forecast_error"] == pytest.approx(forecast.error, rel=1e-12)
    assert explorer["forecast"]["error"] == pytest.approx(forecast.error, rel=1e-12)
    assert report["forecast_skill"] == pytest.approx(explorer["forecast"]["skill"], rel=1e-12)
    assert chosen.message in explorer["selection"]


@pytest.mark.slow
def test_cli_frequencies_choices_and_bad_input(tmp_path, capsys):
    traj, path = _run(tmp_path)
    assert main(["fit", str(path), "--frequencies", "3,5", "--out", str(tmp_path / "a"), "--quiet"]) == 0
    assert json.loads((tmp_path / "a" / "fit.json").read_text())["fitted_frequencies"] == [3, 5]
    assert main(["fit", str(path), "--frequencies", "all", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert json.loads((tmp_path / "b" / "fit.json").read_text())["fitted_frequencies"] == list(range(1, 16))
    capsys.readouterr()
    for bad, words in ((["--frequencies", "0,3"], "outside 1..15"), (["--frequencies", "16"], "outside 1..15"),
                       (["--frequencies", "two"], "--frequencies must be one of"),
                       (["--frequencies", "survivors"], "no frequency survives"),
                       (["--window", "0", "400"], "past the run's end"),
                       (["--window", "500", "900"], "past the run's end")):
        assert main(["fit", str(path), *bad, "--out", str(tmp_path / "c")]) == 2, bad
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, (bad, err)


def test_a_model_fitted_on_arrays_scores_a_trajectory_only_when_the_columns_are_known(tmp_path):
    from fitting import trajectory_signals

    traj, path = _run(tmp_path)
    steps, signals = trajectory_signals(traj)
    t = steps.astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = LinearODE(derivative="central").fit(signals, t)  # all K columns: a Trajectory gives them all
        assert every.score(traj) == pytest.approx(every.score(signals, t))
        two = LinearODE(derivative="central").fit(signals[:, [0, 1]], t)
        with pytest.raises(ValueError, match="does not know which frequencies"):
            two.score(traj)
        two.frequencies_ = [1, 2]
        assert two.score(traj) == pytest.approx(two.score(signals[:, [0, 1]], t))
    # the command line's saved model knows its frequencies
    import joblib

    assert main(["fit", str(path), "--frequencies", "3,5", "--out", str(tmp_path / "f"), "--quiet"]) == 0
    model = joblib.load(tmp_path / "f" / "model.joblib")
    assert model.frequencies_ == [3, 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model.score(traj) == pytest.approx(model.score(signals[:, [2, 4]], t))
    report = json.loads((tmp_path / "f" / "fit.json").read_text())
    assert report["key_frequencies"] == [1, 2, 4, 5, 7, 9, 11, 13]  # what each rule found, whatever was asked


def test_validation_comes_before_the_output_folder(tmp_path, capsys):
    traj, path = _run(tmp_path)
    for bad in (["--factor", "-1"], ["--frequencies", "survivors"]):
        assert main(["fit", str(path), *bad, "--out", str(tmp_path / "never")]) == 2
        assert "--" in capsys.readouterr().err
        assert not (tmp_path / "never").exists()


def test_fit_takes_frequencies_and_the_explorer_reads_windows_as_the_command_line(tmp_path, capsys):
    from fitting.explore.runs import Run

    traj, path = _run(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearODE(stable=True, window=(0, 150)).fit(traj, frequencies="3,5")
        assert model.frequencies_ == [3, 5] and model.variables_ == ["S3", "S5"]
        # the window is [start, stop) everywhere: the explorer fits, scores and forecasts as the command line
        explorer = Run("run", traj).fit(0, 150)
    assert main(["fit", str(path), "--stable", "--window", "0", "150", "--quiet", "--out", str(tmp_path / "f")]) == 0
    report = json.loads((tmp_path / "f" / "fit.json").read_text())
    for name in ("rows_r2", "trajectory_r2_fit_window", "forecast_error", "persistence_error", "forecast_skill"):
        assert explorer["scores"][name] == pytest.approx(report[name], rel=1e-12), name
    assert set(report["notes"]) <= set(explorer["notes"])
    capsys.readouterr()
    assert main(["fit", str(path), "--window", "-5", "150", "--out", str(tmp_path / "g")]) == 2
    assert "window [-5, 150) begins before the run's start: the run covers 0..299" in capsys.readouterr().err


def test_the_report_says_when_a_fit_does_not_describe_its_data():
    from fitting.ode.report import fit_report

    rng = np.random.default_rng(0)
    t = np.arange(200.0)
    x = rng.standard_normal((200, 2))  # noise: no dynamics to find
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LinearODE(derivative="central", window=(0, 199)).fit(x, t)
        report = fit_report(model, x, t)
    rows = report["scores"]["rows_r2"]["value"]
    assert rows < 0.5
    assert any("only 1 sample after" in note for note in report["notes"])  # a forecast over one sample says so
    assert (rows < 0) == any("further from the data than their own mean" in note for note in report["notes"])
