"""``embdyn explore``: a local web application to watch particle runs form their
structures under controls, scrub through training runs, and open phase grids.

Needs the ``[explore]`` extra (Starlette and Uvicorn): ``pip install '.[explore]'``
in the repository root. Nothing else of the package imports this subpackage.
Every asset of the page is served from ``fitting/explore/static``: the page works
with no network. See docs/explore.md.
"""

from __future__ import annotations

__all__ = ["make_app", "INSTALL_HINT", "explore_available"]

INSTALL_HINT = "the explorer needs its extra: pip install '.[explore]' in the repository root (Starlette, Uvicorn)"


def explore_available() -> bool:
    """Whether the ``[explore]`` extra is installed."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("starlette", "uvicorn", "websockets"))


def make_app(*args, **kwargs):
    """The application (see :func:`fitting.explore.server.make_app`)."""
    from .server import make_app as make

    return make(*args, **kwargs)
