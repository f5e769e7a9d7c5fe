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


def check_files(value, name: str) -> list:
    """``value`` as a list of file paths; a ``TypeError`` naming ``name`` otherwise."""
    import os

    from particles.core.validation import describe

    if isinstance(value, (str, bytes, os.PathLike)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of file paths, got {describe(value)}")
    for item in value:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"{name} must hold file paths (str or os.PathLike), got {describe(item)}")
    return list(value)


def make_app(trajectories=(), phases=(), *, hosts=("127.0.0.1", "localhost", "::1"), max_json_bytes=None,
             max_ws_message=None, max_meta_chars=None, body_timeout=None, memory_budget=None):
    """The explorer as an ASGI application (Starlette).

    Parameters
    ----------
    trajectories : list of paths
        Trajectory files (``.npz``) for the Run tab; each is read (and checked) now.
    phases : list of paths
        Sweep tables (``.csv``) or toy-phases grids (``.json``) for the Phase tab.
    hosts : sequence of str or None
        Host names the server answers (default this machine's); None answers any.
        Requests from another site's page are refused either way.
    max_json_bytes, max_ws_message, max_meta_chars : int, optional
        The most bytes of a JSON request body (413 beyond), of a WebSocket message (closed with
        1009 beyond) and characters of an upload's ``meta`` (422 beyond); defaults
        :data:`fitting.explore.limits.MAX_JSON_BYTES` (64 KiB), ``MAX_WS_MESSAGE`` (4 KiB),
        ``MAX_META_CHARS`` (1 Mi).
    body_timeout : float, optional
        Seconds a request body may stall (408 beyond; default ``limits.BODY_TIMEOUT``, 20 s).
        The connection limits (header timeout, connection cap) belong to the server:
        :func:`fitting.explore.limits.server_config`.
    memory_budget : int, optional
        Bytes the server's runs and the work of its requests may hold together
        (:class:`fitting.explore.budget.MemoryLedger`: a request whose estimate does not fit is
        refused before it starts, 413 or 503); default
        :func:`particles.core.limits.memory_budget` (``EMBDYN_MEMORY_BUDGET``, else a quarter of
        the machine's memory).

    Raises
    ------
    TypeError
        When either is not a list of paths.
    TrajectoryFormatError, PhaseFileError, FileNotFoundError
        For a file that cannot be shown.
    """
    trajectories = check_files(trajectories, "trajectories")
    phases = check_files(phases, "phases")
    from .server import build_app

    if hosts is not None and (isinstance(hosts, str) or not isinstance(hosts, (list, tuple))
                              or not all(isinstance(h, str) and h for h in hosts)):
        raise TypeError(f"hosts must be a list of host names (str) or None, got {hosts!r}")
    from particles.core.validation import check_float, check_int

    limits = {}
    for key, value in (("max_json_bytes", max_json_bytes), ("max_ws_message", max_ws_message),
                       ("max_meta_chars", max_meta_chars)):
        if value is not None:
            limits[key] = check_int(value, key, 1)
    if memory_budget is not None:
        limits["memory_budget"] = check_int(memory_budget, "memory_budget", 1)
    if body_timeout is not None:
        limits["body_timeout"] = check_float(body_timeout, "body_timeout", 0, strict=True)
    return build_app(trajectories, phases, hosts, limits)
