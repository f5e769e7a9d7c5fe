"""When an embedding snapshot is kept: every N steps, or on the geometric
schedule that keeps the early steps, where a representation forms, densely.

``snapshot_every="geometric"`` keeps every step below
:data:`GEOMETRIC_DENSE` and then a snapshot every 10^(k-1) steps in the
decade [10^k, 10^(k+1)) for k >= 2: every 10th step in 100-999, every
100th in 1 000-9 999, and so on, 90 snapshots a decade. The spacing grows in
proportion to the step (between 1/100 and 1/10 of it), so a run of any
length has its formation in the first hundreds of steps recorded step by
step, and a run of 10^n steps keeps about 100 + 90 (n - 2) snapshots.
A config's default, ``"auto"``, is the geometric schedule when the run
records gradients and the model's own spacing otherwise
(:func:`resolve_schedule`). Plain Python, no torch (the configurations use it).
"""

from __future__ import annotations

from typing import Any

from particles.core.validation import check_int, describe

__all__ = ["AUTO", "GEOMETRIC", "GEOMETRIC_DENSE", "check_snapshot_every", "resolve_schedule", "snapshot_due",
           "geometric_spacing", "snapshot_count"]

#: the name of the geometric schedule
GEOMETRIC = "geometric"
#: a config's default: the geometric schedule when gradients are recorded, else the model's own spacing
AUTO = "auto"
#: steps below this are all kept by the geometric schedule
GEOMETRIC_DENSE = 100


def check_snapshot_every(value: Any, name: str = "snapshot_every", high: int | None = None, *,
                         auto: bool = False) -> int | str:
    """An int >= 1 (at most ``high``) or ``"geometric"`` (or ``"auto"`` with
    ``auto``); anything else raises, naming ``name``."""
    names = f"{GEOMETRIC!r}" + (f" or {AUTO!r}" if auto else "")
    bound = "" if high is None else f" (at most {high})"
    if isinstance(value, str):
        if value != GEOMETRIC and not (auto and value == AUTO):
            raise ValueError(f"{name} must be an int >= 1{bound} or {names}, got {value!r}")
        return value
    try:
        return check_int(value, name, 1, high)
    except TypeError:
        raise TypeError(f"{name} must be an int >= 1{bound} or {names}, got {describe(value)}") from None
    except ValueError:
        raise ValueError(f"{name} must be an int >= 1{bound} or {names}, got {value!r}") from None


def resolve_schedule(every: int | str, spacing: int, gradients: bool) -> int | str:
    """The schedule a run keeps: ``every`` as given, or for ``"auto"`` the
    geometric schedule when the run records gradients (the force fit needs
    the formation's forces) and every ``spacing`` steps otherwise."""
    if every == AUTO:
        return GEOMETRIC if gradients else spacing
    return every


def geometric_spacing(step: int) -> int:
    """The geometric schedule's spacing at ``step``: 1 below
    :data:`GEOMETRIC_DENSE`, else 10^(number of digits - 2)."""
    if step < GEOMETRIC_DENSE:
        return 1
    return 10 ** (len(str(int(step))) - 2)


def snapshot_due(step: int, every: int | str) -> bool:
    """Whether the schedule ``every`` (an int, or ``"geometric"``) keeps the snapshot at ``step``."""
    if every == GEOMETRIC:
        return step % geometric_spacing(step) == 0
    return step % every == 0


def snapshot_count(steps: int, every: int | str) -> int:
    """How many snapshots a run of ``steps`` steps keeps on the schedule
    ``every`` (an int or ``"geometric"``): those of steps 0 .. steps - 1 that
    :func:`snapshot_due` keeps, and the one after the last update. Counted
    per decade, without a loop over the steps."""
    if every != GEOMETRIC:
        return -(-steps // int(every)) + 1
    count = min(steps, GEOMETRIC_DENSE)
    low = GEOMETRIC_DENSE
    while low < steps:
        high = min(steps, low * 10)
        spacing = geometric_spacing(low)
        count += -(-(high - low) // spacing)
        low *= 10
    return count + 1
