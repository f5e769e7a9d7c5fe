"""Parameter checks of the ODE parts: thin forms of the distribution's one
validation module, :mod:`particles.validation` (a ValueError/TypeError that
names the parameter and its accepted range, before any work)."""

from __future__ import annotations

from particles.validation import check_bool, check_float
from particles.validation import check_int as _check_int

__all__ = ["check_int", "check_number", "check_bool"]


def check_int(value, name: str, low: int, high: int | None = None, *, allow_none: bool = False,
              unit: str = "") -> int | None:
    """``value`` as an int in [low, high] (or None when allowed); ``unit``
    follows the lower bound in the message (e.g. " (samples)")."""
    try:
        return _check_int(value, name, low, high, allow_none=allow_none)
    except (ValueError, TypeError) as exc:
        if not unit:
            raise
        raise type(exc)(str(exc).replace(f">= {low}", f">= {low}{unit}", 1)) from None


def check_number(value, name: str, low: float, *, strict: bool = False, allow_none: bool = False) -> float | None:
    """``value`` as a finite float >= low (> low when ``strict``; or None when allowed)."""
    return check_float(value, name, low, strict=strict, allow_none=allow_none)
