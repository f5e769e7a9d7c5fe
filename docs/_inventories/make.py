"""Write the small intersphinx inventories that ship with the docs.

CI builds the docs without network, so Sphinx cannot fetch each project's
objects.inv. These files list only the objects our docs name, with the URL
scheme of each project's real documentation (checked by hand against the
live sites when written). Run ``python docs/_inventories/make.py`` after the
docs start naming a new object; the output is deterministic.
"""

from __future__ import annotations

import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# project -> [(name, domain:role, uri relative to the project's base URL)]
# A uri ending in "#$" means "#" + name (the objects.inv shorthand).
OBJECTS: dict[str, list[tuple[str, str, str]]] = {
    "python": [
        *[(name, "py:class", "library/functions.html#$") for name in
          ("float", "int", "str", "bool", "complex", "tuple", "list", "dict", "object", "slice", "range")],
        ("callable", "py:function", "library/functions.html#$"),
        ("None", "py:data", "library/constants.html#$"),
        ("pathlib.Path", "py:class", "library/pathlib.html#$"),
        ("os.PathLike", "py:class", "library/os.html#$"),
        ("typing.NamedTuple", "py:class", "library/typing.html#$"),
        ("collections.abc.Callable", "py:class", "library/collections.abc.html#$"),
        *[(name, "py:exception", "library/exceptions.html#$") for name in
          ("ValueError", "TypeError", "OSError", "FloatingPointError", "KeyboardInterrupt", "AssertionError",
           "RuntimeError", "FileNotFoundError", "MemoryError")],
    ],
    "numpy": [
        ("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$"),
        ("numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$"),
        ("numpy.float64", "py:class", "reference/arrays.scalars.html#$"),
        ("numpy.float32", "py:class", "reference/arrays.scalars.html#$"),
        ("numpy.random.Generator", "py:class", "reference/random/generator.html#$"),
        ("numpy.random.default_rng", "py:function", "reference/random/generator.html#$"),
        ("numpy.random.SeedSequence", "py:class", "reference/random/bit_generators/generated/$.html#$"),
        ("numpy.exp", "py:data", "reference/generated/numpy.exp.html#$"),
        ("numpy.savez_compressed", "py:function", "reference/generated/numpy.savez_compressed.html#$"),
        ("numpy.load", "py:function", "reference/generated/numpy.load.html#$"),
        ("array_like", "std:term", "glossary.html#term-array_like"),
    ],
    "scipy": [
        (name, role, f"reference/generated/{name}.html#$") for name, role in (
            ("scipy.linalg.null_space", "py:function"), ("scipy.linalg.eigh", "py:function"),
            ("scipy.linalg.svd", "py:function"), ("scipy.linalg.expm", "py:function"),
            ("scipy.linalg.lstsq", "py:function"), ("scipy.integrate.solve_ivp", "py:function"),
            ("scipy.signal.savgol_filter", "py:function"), ("scipy.stats.pearsonr", "py:function"),
            ("scipy.stats.spearmanr", "py:function"), ("scipy.stats.binomtest", "py:function"),
            ("scipy.optimize.minimize", "py:function"), ("scipy.sparse.csr_array", "py:class"),
        )
    ],
    "sklearn": [
        (name, role, f"modules/generated/{name}.html#$") for name, role in (
            ("sklearn.linear_model.Lasso", "py:class"), ("sklearn.linear_model.LassoCV", "py:class"),
            ("sklearn.linear_model.LassoLarsCV", "py:class"),
            ("sklearn.linear_model.LinearRegression", "py:class"), ("sklearn.base.BaseEstimator", "py:class"),
            ("sklearn.exceptions.NotFittedError", "py:class"), ("sklearn.metrics.r2_score", "py:function"),
            ("sklearn.utils.validation.check_is_fitted", "py:function"),
            ("sklearn.utils.estimator_checks.parametrize_with_checks", "py:function"),
            ("sklearn.datasets.load_digits", "py:function"),
        )
    ],
    "torch": [
        ("torch.Tensor", "py:class", "tensors.html#$"),
        ("torch.optim.Optimizer", "py:class", "optim.html#$"),
        *[(name, role, f"generated/{name}.html#$") for name, role in (
            ("torch.nn.Module", "py:class"), ("torch.nn.Embedding", "py:class"), ("torch.optim.AdamW", "py:class"),
            ("torch.optim.Adam", "py:class"), ("torch.load", "py:function"), ("torch.save", "py:function"),
            ("torch.compile", "py:function"), ("torch.func.vmap", "py:function"),
            ("torch.func.functional_call", "py:function"),
        )],
    ],
    "matplotlib": [
        ("matplotlib.figure.Figure", "py:class", "api/_as_gen/matplotlib.figure.Figure.html#$"),
        ("matplotlib.axes.Axes", "py:class", "api/_as_gen/matplotlib.axes.Axes.html#$"),
        ("matplotlib.animation.FuncAnimation", "py:class", "api/_as_gen/matplotlib.animation.FuncAnimation.html#$"),
    ],
}

VERSIONS = {"python": "3", "numpy": "stable", "scipy": "stable", "sklearn": "stable", "torch": "stable",
            "matplotlib": "stable"}


def inventory(project: str) -> bytes:
    """The objects.inv (version 2) bytes of one project."""
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {VERSIONS[project]}\n"
              "# The remainder of this file is compressed using zlib.\n").encode()
    lines = []
    for name, role, uri in sorted(OBJECTS[project]):
        uri = uri.replace("$.html", f"{name}.html")
        if uri.endswith("#" + name):
            uri = uri[: -len(name)] + "$"
        lines.append(f"{name} {role} 1 {uri} -\n")
    return header + zlib.compress("".join(lines).encode(), 9)


def main() -> None:
    for project in OBJECTS:
        (HERE / f"{project}.inv").write_bytes(inventory(project))


if __name__ == "__main__":
    main()
