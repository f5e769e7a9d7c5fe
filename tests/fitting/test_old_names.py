"""Old module names of the re-laid-out packages (issue 51): each still
imports, warns with a DeprecationWarning naming the new place, and answers
with the very same objects."""
import importlib
import sys

import pytest

OLD = [
    ("fitting.backend", "fitting.training", "SurvivalMLPConfig"),
    ("fitting.backend.configs", "fitting.training.configs", "training_set"),
    ("fitting.derivatives", "fitting.ode.derivatives", "differentiate"),
    ("fitting.frequencies", "fitting.signals.frequencies", "key_frequencies"),
    ("fitting.force_law", "fitting.forcefit", "ForceLawFit"),
    ("fitting.plot", "fitting.ode.figures", "plot_fit"),
    ("fitting.report", "fitting.ode.report", "fit_report"),
    ("fitting.analysis", "fitting.survival.analysis", "survival_ode_analysis"),
    ("fitting.examples", "fitting.survival.examples", "example_trajectory"),
    ("fitting.cli", "fitting.ode.cli", "register_fit"),
    ("fitting.ode.models", "fitting.ode.linear", "LinearODE"),
    ("particles.validation", "particles.core.validation", "check_int"),
]


@pytest.mark.parametrize("old, new, name", OLD, ids=[o for o, _, _ in OLD])
def test_an_old_module_warns_and_answers_with_the_new_objects(old, new, name):
    for key in [k for k in sys.modules if k == old or k.startswith(old + ".")]:
        del sys.modules[key]  # so that the warning runs again
    if old.startswith("fitting.backend."):
        sys.modules.pop("fitting.backend", None)
    said = {"fitting.backend.configs": "fitting.training", "fitting.ode.models": "fitting.ode.linear"}.get(old, new)
    with pytest.warns(DeprecationWarning, match=said.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize("module, name, home", [("particles.trajectory", "atomic_write_text", "particles.core.io"),
                                                ("particles.simulate", "package_version", "particles.core.version")])
def test_an_old_re_export_warns(module, name, home):
    with pytest.warns(DeprecationWarning, match=home):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(importlib.import_module(home), name)
