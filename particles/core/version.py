"""The installed package version (no heavy imports: the command line's
``--version`` reads it)."""

from __future__ import annotations

__all__ = ["package_version"]


def package_version() -> str:
    """The installed embedding-dynamics version, or "0+unknown" from a source tree."""
    try:
        from importlib.metadata import version

        return version("embedding-dynamics")
    except Exception:  # not installed (running from a source tree)
        return "0+unknown"
