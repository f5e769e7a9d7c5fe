"""Documented upper bounds on run sizes, refused up front (before any
allocation or compiled work) so that a mistyped size fails at once instead
of running for days.

This module imports only ``os``, so light modules (presets, the CLI) can use
the bounds without loading the compiled integrators.
"""

import os

#: most steps of one run (``simulate``, ``simulate_effective``,
#: ``minimize``, a preset): about an hour for the smallest systems
MAX_STEPS = 10**9

__all__ = ["MAX_STEPS", "physical_memory", "check_memory"]


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine (None where unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(need: float, what: str, fix: str) -> None:
    """Refuse, before allocating, ``need`` bytes that exceed this machine's
    physical memory: "``what`` would need X GiB, more than this machine's Y
    GiB; ``fix``"."""
    total = physical_memory()
    if total is not None and need > total:
        raise ValueError(f"{what} would need {need / 2**30:.3g} GiB, more than this machine's {total / 2**30:.3g} "
                         f"GiB; {fix}")
