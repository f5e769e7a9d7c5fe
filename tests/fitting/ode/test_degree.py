"""library="auto" (issue 73): the degree chosen on generated polynomial
systems, the evidence in fit_info_, and the bad input refused before work."""
import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fitting import ODEModel
from fitting.ode import AutoDegree
from fitting.ode.degree import ERROR_FLOOR, ERROR_RATIO, choose_degree

SYSTEMS = {  # name: (rhs, x0, span, true degree)
    "linear": (lambda t, x: [-0.5 * x[0] + x[1], -x[0] - 0.5 * x[1]], [1.0, 0.0], 10.0, 1),
    "logistic": (lambda t, x: [x[0] * (1.0 - x[0])], [0.01], 20.0, 2),
    "lorenz": (lambda t, x: [10.0 * (x[1] - x[0]), x[0] * (28.0 - x[2]) - x[1], x[0] * x[1] - 8.0 / 3.0 * x[2]],
               [1.0, 1.0, 20.0], 10.0, 2),
    "van_der_pol": (lambda t, x: [x[1], 2.0 * (1.0 - x[0] ** 2) * x[1] - x[0]], [2.0, 0.0], 20.0, 3),
    "quintic": (lambda t, x: [x[0] - x[0] ** 5], [0.1], 10.0, 5),
}


def data(name, n=512):
    f, x0, span, _ = SYSTEMS[name]
    t = np.linspace(0.0, span, n)
    return t, solve_ivp(f, (0.0, span), x0, t_eval=t, rtol=1e-5).y.T


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_the_true_degree_is_chosen_on_clean_data(name):
    t, x = data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ODEModel(library="auto").fit(x, t)
    evidence = model.fit_info_["degree"]
    assert evidence["chosen"] == SYSTEMS[name][3] == model.library_.degree
    assert evidence["degrees"] == [1, 2, 3, 4, 5] and len(evidence["errors"]) == 5
    assert model.coef_.shape[1] == model.library_.n_features(x.shape[1]) and model.fit_quality_["trusted"]


def test_the_rule_takes_the_lowest_degree_as_good_as_the_best():
    errors = [0.5, 1e-3, 0.9e-3, 1.2e-3, float("inf")]
    index, evidence = choose_degree(errors, [1, 2, 3, 4, 5], [True] * 5)
    assert index == 1 and evidence["tolerance"] == pytest.approx(ERROR_RATIO * 0.9e-3 + ERROR_FLOOR)
    assert choose_degree([0.5, 0.2, 0.01], [1, 2, 3], [True, True, True])[0] == 2  # only the best is good enough
    assert choose_degree([0.5, 1e-9, 1e-9], [1, 2, 3], [True, False, True])[0] == 2  # an unusable one is skipped


@pytest.mark.parametrize("bad, error, words", [(0, ValueError, "max_degree"), (2.5, TypeError, "max_degree"),
                                               ("3", TypeError, "max_degree")])
def test_a_bad_max_degree_is_refused(bad, error, words):
    with pytest.raises(error, match=words):
        AutoDegree(bad)


def test_a_max_degree_the_data_cannot_support_is_refused_before_work(monkeypatch):
    x = np.random.default_rng(0).standard_normal((30, 4))
    model = ODEModel(library=AutoDegree(5), derivative="central")  # 126 terms on 4 variables, 30 samples
    called = []
    monkeypatch.setattr(ODEModel, "_fit", lambda *a, **k: called.append(1))
    with pytest.raises(ValueError, match=r"max_degree = 5 .* needs 126 terms"):
        model.fit(x, 0.1)
    assert called == []


def test_a_bad_library_string_lists_auto():
    with pytest.raises(ValueError, match="'auto'"):
        ODEModel(library="quartic").check_params()


def test_the_default_top_degree_is_what_the_data_support():
    """library="auto" without a max_degree tries degrees up to 5 or the highest
    the samples support (3 variables, 30 samples: degree 2's 10 terms, not 3's 20 + ...)."""
    choice = AutoDegree()
    assert [lib.degree for lib in choice.candidates(3, 30)] == [1, 2, 3]  # 1 + 3 + 6 + 10 = 20 terms <= 30
    assert [lib.degree for lib in choice.candidates(3, 10_000)] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="even the linear library"):
        choice.candidates(5, 4)


def test_the_command_line_fits_a_polynomial_model_of_the_chosen_degree(tmp_path):
    import json

    from particles.core.cli import main
    from fitting import example_trajectory

    path = tmp_path / "run.npz"
    example_trajectory().save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(path), "--model", "poly", "--library", "auto", "--frequencies", "1,2",
                     "--out", str(tmp_path / "out"), "--quiet"]) == 0
    report = json.loads((tmp_path / "out" / "fit.json").read_text())
    assert report["degree"]["chosen"] in report["degree"]["degrees"] and "trusted" in report["fit_quality"]
    for bad in (["--library", "7"], ["--library", "cubic"], ["--model", "linear", "--library", "2"]):
        assert main(["fit", str(path), "--model", "poly", *bad, "--out", str(tmp_path / "bad")]) == 2 \
            if "--model" not in bad else main(["fit", str(path), *bad, "--out", str(tmp_path / "bad")]) == 2


def test_degrees_the_rows_cannot_fit_are_named_in_the_evidence():
    """The weak form gives fewer rows than samples: a degree the samples allow
    but the rows do not is reported, not silently skipped."""
    t, x = data("van_der_pol", n=60)  # 2 variables: degree 6's library has 28 terms, more than the weak rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ODEModel(library=AutoDegree(8)).fit(x, t)
    evidence = model.fit_info_["degree"]
    skipped = evidence["not_fitted"]
    assert skipped and all("rows" in why for why in skipped.values())
    assert all(evidence["errors"][d - 1] == float("inf") for d in skipped) and evidence["chosen"] not in skipped
