"""Warnings for results that may be wrong.

A fit or a simulation that may be wrong is never silent: it warns with
:class:`FitQualityWarning`, in one plain sentence that says what happened
and where the numbers are (``fit_info_``). Filter it like any warning::

    import warnings
    from fitting.ode import FitQualityWarning
    warnings.simplefilter("ignore", FitQualityWarning)   # or "error"

``embdyn`` prints each as one line; ``--quiet`` silences them.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["FitQualityWarning", "warn_quality", "warn_at_caller"]


class FitQualityWarning(UserWarning):
    """A fitted model or a simulation may be wrong: a misfit, an optimiser
    stopped at its iteration limit, an unstable linear fit, a simulation
    that blew up. The numbers are in the model's ``fit_info_``."""


#: the package's folder: a warning points at the first caller outside it
_PACKAGE = Path(__file__).resolve().parents[1]


def _inside(filename: str) -> bool:
    """Whether code from ``filename`` belongs to :mod:`fitting` (``<stdin>``
    and the like never do)."""
    if filename.startswith("<"):
        return False
    return Path(filename).resolve().is_relative_to(_PACKAGE)


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the first caller
    outside :mod:`fitting` (the user's line, whatever the depth of the
    package's own calls)."""
    stacklevel, frame = 2, sys._getframe(1)
    while frame is not None and _inside(frame.f_code.co_filename):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(message, category, stacklevel=stacklevel)


def warn_quality(message: str) -> None:
    """Warn with :class:`FitQualityWarning` (``message`` is one sentence) at
    the user's line."""
    warn_at_caller(message, FitQualityWarning)
