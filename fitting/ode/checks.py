"""Parameter checks shared by the ODE parts: a ValueError/TypeError that
names the parameter and its accepted range, before any work."""

from __future__ import annotations

import numpy as np

__all__ = ["check_int", "check_number", "check_bool"]


def check_int(value, name: str, low: int, *, allow_none: bool = False, unit: str = "") -> int | None:
    """``value`` as an int >= low (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be {'None or ' if allow_none else ''}an int >= {low}{unit}, got {value!r}")
    return int(value)


def check_number(value, name: str, low: float, *, strict: bool = False, allow_none: bool = False) -> float | None:
    """``value`` as a finite float >= low (> low when ``strict``; or None when allowed)."""
    if value is None and allow_none:
        return None
    ok = (not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
          and np.isfinite(value) and (value > low if strict else value >= low))
    if not ok:
        raise ValueError(f"{name} must be {'None or ' if allow_none else ''}a finite number "
                         f"{'>' if strict else '>='} {low:g}, got {value!r}")
    return float(value)


def check_bool(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)
