"""Sphinx configuration: build with `python -m sphinx -W -b html docs docs/_build/html`."""

project = "embedding-dynamics"
author = "embedding-dynamics contributors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "examples", "figures/**/*.json", "figures/**/*.md"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# the torch backend's modules import torch; the docs build with .[docs]
# alone, so autodoc mocks the optional imports (torch, dask, pandas, xarray)
autodoc_mock_imports = ["torch", "dask", "distributed", "pandas", "xarray"]
myst_heading_anchors = 3
html_theme = "alabaster"

napoleon_use_ivar = True  # Attributes sections as fields, not duplicate object descriptions


def _escape_pipes(app, what, name, obj, options, lines):
    """Docstrings write norms as |x|; in reST a bare pipe starts a substitution."""
    import re

    for i, line in enumerate(lines):
        lines[i] = re.sub(r"(?<!\\)\|", r"\\|", line)


def setup(app):
    app.connect("autodoc-process-docstring", _escape_pipes)
