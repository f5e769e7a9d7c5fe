"""Sphinx configuration: build with `python -m sphinx -W -b html docs docs/_build/html`."""

project = "embedding-dynamics"
author = "embedding-dynamics contributors"
copyright = "2026, embedding-dynamics contributors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.intersphinx"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "figures/**/*.json", "figures/**/*.md", "_inventories"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# the torch backend's modules import torch; the docs build with .[docs]
# alone, so autodoc mocks the optional imports (torch, dask, pandas, xarray)
autodoc_mock_imports = ["torch", "dask", "distributed", "pandas", "xarray"]
myst_heading_anchors = 3
html_theme = "furo"  # a readable code width, long lines wrap in tables, a search box
html_title = "embedding-dynamics"
html_static_path = ["_static"]
html_css_files = ["wrap.css"]
pygments_style = "default"

# Links to the NumPy, SciPy, scikit-learn, torch and Python docs. CI has no
# network, so the inventories ship in docs/_inventories: small objects.inv
# files for the names our docs use, written by docs/_inventories/make.py with
# each project's real URL scheme (rerun it when the docs name a new object).
intersphinx_mapping = {
    name: (url, f"_inventories/{name}.inv")
    for name, url in {
        "python": "https://docs.python.org/3/",
        "numpy": "https://numpy.org/doc/stable/",
        "scipy": "https://docs.scipy.org/doc/scipy/",
        "sklearn": "https://scikit-learn.org/stable/",
        "torch": "https://docs.pytorch.org/docs/stable/",
        "matplotlib": "https://matplotlib.org/stable/",
    }.items()
}
napoleon_preprocess_types = True
napoleon_type_aliases = {
    "ndarray": "numpy.ndarray", "np.ndarray": "numpy.ndarray", "array_like": ":term:`numpy:array_like`",
    "array-like": ":term:`numpy:array_like`", "Generator": "numpy.random.Generator",
    "np.random.Generator": "numpy.random.Generator", "Tensor": "torch.Tensor", "torch.Tensor": "torch.Tensor",
    "torch.nn.Module": "torch.nn.Module", "Figure": "matplotlib.figure.Figure",
}

# ---------------------------------------------------------------- API pages
# One page per module (docs/api/<module>.rst) and the index docs/api.rst,
# written at build time from these tables: module -> members (None: the
# module's __all__). The generated files are not in git. API holds the
# modules users call; INTERNALS, on its own page (api/internals.rst), the few
# engine modules the user docs name (status codes, the cut-off bounds, the
# kernel chooser, the input checks). The other compiled kernels
# (particles.kernels.fastmath, pair_sums, clustering, alignment, forces,
# record, rebind), the stacked trainer's AdamW and the private modules
# (precompile; their public names are particles.warmup, effective_theory.warmup)
# have no page.
API = {
    "particles": {
        "particles.datasets": None, "particles.params": None, "particles.energy": None,
        "particles.pair_energy": "PairEnergy, PairTerm", "particles.pair_functions": "fast_exp", "particles.pair_laws": "gaussian_clustering, cosine_alignment",
        "particles.simulate": "simulate, minimize, NonFiniteStateError, RunawayError, MinimizeResult",
        "particles.effective": None, "particles.law_terms": None, "particles.metrics": None, "particles.presets": None, "particles.sweep": None,
        "particles.trajectory": None, "particles.parallelograms": None, "particles.figures": None,
        "particles.reference": None, "particles.testing.checks": None, "particles.testing.strategies": None,
    },
    "effective_theory": {
        "effective_theory.linalg": None, "effective_theory.montecarlo": None, "effective_theory.metrics": None,
        "effective_theory.experiments": None, "effective_theory.figures": None,
    },
    "fitting": {
        "fitting.signals.fourier": None, "fitting.signals.frequencies": None, "fitting.signals.stages": None,
        "fitting.ode.windows": None, "fitting.forcefit.verdict": None, "fitting.survival.measures": None, "fitting.ode.report": None, "fitting.ode.derivatives": None, "fitting.ode.noise": None,
        "fitting.ode": "ODEModel, LinearODE, LotkaVolterra, BootstrapEnsemble, EnsembleSimulation, "
                       "PolynomialLibrary, FourierLibrary, CustomLibrary, STLSQ, OLS, Lasso, LassoCV, "
                       "FiniteDifference, SavitzkyGolay, WeakForm, BlowUpError, linear_solution",
        "fitting.ode.weighted": "covariance_refit",
        "fitting.ode.relations": "linear_relation, LinearRelationWarning",
        "fitting.forcefit": "ForceLawFit, ForceRun, as_force_runs", "fitting.forcefit.figures": None,
        "fitting.survival.analysis": None, "fitting.signals.figures": None, "fitting.ode.figures": None, "fitting.training.figures": None, "fitting.survival.examples": None,
        "fitting.demo": "run_demo, DemoError",
        "fitting.sandbox.data": None, "fitting.sandbox.frame": "draw_frame, class_colors",
        "fitting.sandbox.animation": None, "fitting.sandbox.spikes": None,
    },
    "fitting.training (needs the torch extra)": {
        "fitting.training.configs": None, "fitting.training.trainer": "train, TrainingDivergedError, checkpoint_path",
        "fitting.training.batched": None, "fitting.training.recorder": None,
        "fitting.training.grid": "train_grid, GridResult, GridFormatError, GRID_FIELDS",
        "fitting.training.network_sweep": "train_network_sweep, NetworkSweep, NetworkSweepFormatError",
        "fitting.training.compare": "compare_network, NetworkComparison, structure_summary, total_variation",
        "fitting.training.layers": "LayerRecorder, check_layer_budget, TAP_STATES, PARAMETER_STATES, LAYER_BUDGET",
    },
}
INTERNALS = {
    "particles.core (the base every package builds on)": {
        "particles.core": "", "particles.core.validation": None, "particles.core.io": None,
        "particles.core.cli": None, "particles.core.limits": None,
    },
    "particles.kernels (compiled)": {
        "particles.kernels": "", "particles.kernels.records": None, "particles.kernels.euler": None,
        "particles.kernels.status": None, "particles.kernels.cells": "cutoff_radius, cutoff_bounds, CellList",
        "particles.kernels.terms": None,
    },
    "engine helpers": {
        "particles.threads": None, "fitting.training.loop": None, "fitting.training.stacked": None,
        "fitting.training.activations": None,
    },
}
# sklearn's request-routing helpers are not ours to document
_EXCLUDE = {"fitting.ode": "set_fit_request, set_score_request, set_predict_request",
            "fitting.forcefit": "set_fit_request, set_score_request, set_predict_request"}


def _write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _write_api_pages(app):
    from pathlib import Path

    src = Path(app.srcdir)
    (src / "api").mkdir(exist_ok=True)
    written = set()

    def sections(table, prefix):
        lines = []
        for section, modules in table.items():
            lines += [section, "-" * len(section), "", ".. toctree::", "   :maxdepth: 1", ""]
            for module, members in modules.items():
                lines.append(f"   {prefix}{module}")
                page = [module, "=" * len(module), "", f".. automodule:: {module}"]
                if members is None:
                    page.append("   :members:")
                elif members:
                    page.append(f"   :members: {members}")
                if module in _EXCLUDE:
                    page.append(f"   :exclude-members: {_EXCLUDE[module]}")
                _write_if_changed(src / "api" / f"{module}.rst", "\n".join(page) + "\n")
                written.add(f"{module}.rst")
            lines.append("")
        return lines

    index = ["API reference", "=============", "",
             "Generated from the numpydoc docstrings, one page per module.", ""]
    index += sections(API, "api/")
    index += ["Internals", "---------", "",
              "Engine modules the other pages refer to (status codes, the cut-off bounds, the",
              "kernel chooser, the input checks), for reference; the modules users call are above.", "",
              ".. toctree::", "   :maxdepth: 1", "", "   api/internals", ""]
    internals = ["Internals", "=========", "",
                 "Modules of the engine that the user pages refer to: the status codes of the",
                 "compiled loops, the repulsion cut-off's radius and error bounds, the serial or",
                 "parallel kernel choice, the shared input checks and the grid trainer's fast",
                 "tanh. For reference: the modules users call are on the", ":doc:`API reference <../api>` page.", ""]
    internals += sections(INTERNALS, "")
    _write_if_changed(src / "api" / "internals.rst", "\n".join(internals))
    written.add("internals.rst")
    for old in (src / "api").glob("*.rst"):  # pages of modules no longer listed
        if old.name not in written:
            old.unlink()
    _write_if_changed(src / "api.rst", "\n".join(index))

napoleon_use_ivar = True  # Attributes sections as fields, not duplicate object descriptions


def _escape_pipes(app, what, name, obj, options, lines):
    """Docstrings write norms as |x|; in reST a bare pipe starts a substitution."""
    import re

    for i, line in enumerate(lines):
        lines[i] = re.sub(r"(?<!\\)\|", r"\\|", line)


def setup(app):
    app.connect("builder-inited", _write_api_pages)
    app.connect("autodoc-process-docstring", _escape_pipes)
