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

__all__ = ["MAX_STEPS", "physical_memory", "check_memory", "MEMORY_BUDGET_ENV", "memory_budget", "check_budget",
           "format_bytes", "load_bytes", "MIB"]

MIB = 1 << 20


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


#: the environment variable that sets the memory budget of run counts (:func:`memory_budget`)
MEMORY_BUDGET_ENV = "EMBDYN_MEMORY_BUDGET"
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
          "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40, "tib": 2**40}


def format_bytes(n: float) -> str:
    """``n`` bytes for a message: "3.2 GiB", "512 MiB", "2,100 TiB", "900 B"."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}" if n < 1000 * size else f"{n / size:,.0f} {unit}"
    return f"{n:.0f} B"


def memory_budget() -> tuple[int, str]:
    """The memory (bytes) that counts of runs, seeds, grid cells and steps
    may claim before any work, and where the figure comes from: the
    environment variable ``EMBDYN_MEMORY_BUDGET`` (bytes, or a number with
    a unit: ``512MiB``, ``16GiB``, ``1TiB``; K, M, G, T and KB, MB, GB, TB
    are read as powers of 1024) when set, else a quarter of this machine's
    physical memory (4 GiB where it cannot be read). A malformed variable is
    a ValueError naming it."""
    import re

    text = os.environ.get(MEMORY_BUDGET_ENV)
    if text is not None and text.strip():
        match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([A-Za-z]*)\s*", text)
        unit = match[2].lower() if match else None
        if match is None or unit not in _UNITS or float(match[1]) * _UNITS[unit] < 1:
            raise ValueError(f"{MEMORY_BUDGET_ENV} must be a size >= 1 byte such as 8GiB, 512MiB or 1000000 (bytes), "
                             f"got {text!r}")
        return int(float(match[1]) * _UNITS[unit]), f"{MEMORY_BUDGET_ENV}={text.strip()}"
    total = physical_memory()
    if total is None:
        return 4 * 2**30, "4 GiB: this machine's memory is unknown"
    return total // 4, f"a quarter of this machine's {format_bytes(total)}"


def check_budget(need: float, what: str, fix: str) -> None:
    """Refuse, before any work, ``need`` bytes over :func:`memory_budget`:
    "``what`` would hold about X in memory, over the budget of Y (where Y
    comes from); ``fix``, or raise the budget with ... EMBDYN_MEMORY_BUDGET=Z"
    (no such advice when X is more than the machine has)."""
    budget, source = memory_budget()
    if need <= budget:
        return
    total = physical_memory()
    text = (f"{what} would hold about {format_bytes(need)} in memory, over the budget of {format_bytes(budget)} "
            f"({source})")
    if total is not None and need > total:
        raise ValueError(f"{text} and more than this machine's {format_bytes(total)}; {fix}")
    raise ValueError(f"{text}; {fix}, or raise the budget with the environment variable {MEMORY_BUDGET_ENV} "
                     f"(e.g. {MEMORY_BUDGET_ENV}={-(-need // 2**30):.0f}GiB)")


def load_bytes(nbytes: int) -> int:
    """Peak bytes of reading a file whose arrays take ``nbytes`` (a trajectory's ``.npz``): the arrays
    plus the reader's buffers (measured: 12-15 % of the arrays while a member is decompressed)."""
    return int(1.2 * nbytes + 2 * MIB)
