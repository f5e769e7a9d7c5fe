"""Freed memory kept in the process between fits (glibc's malloc).

An ODE fit allocates and frees a few megabytes of NumPy temporaries. glibc
gives the freed top of its heap back to the system once it exceeds the trim
threshold (128 KiB at start, raised only when a block it had mapped on its
own is freed), and serves blocks above the mmap threshold by fresh mappings,
so every fit faults its pages in again: about 1 500 page faults per fit of
Lorenz (1 600 samples, quadratic library), a fifth of its CPU time (8.9 ->
7.0 ms measured with the thresholds below), and kernel work that a busy
neighbour slows further (page zeroing competes for memory bandwidth).

:func:`keep_freed_memory`, called by every fit, sets both thresholds once
per process to the ceilings glibc's own adjustment can reach on a 64-bit
machine (mmap threshold 32 MiB, trim threshold twice that): up to 64 MiB
of free heap top per malloc arena then stays with the process (memory
freed below live blocks is kept by glibc in any case). Nothing is changed

* where the C library is not glibc (``os.confstr("CS_GNU_LIBC_VERSION")``),
* where the user set any of glibc's ``MALLOC_TRIM_THRESHOLD_``,
  ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TOP_PAD_`` or ``MALLOC_MMAP_MAX_``, or
  a ``glibc.malloc.`` tunable in ``GLIBC_TUNABLES`` (their choice stands),
* with ``EMBDYN_KEEP_HEAP`` set to ``0``, ``false``, ``no`` or ``off``.

Anything that goes wrong on the way is recorded (:func:`heap_state`), never
raised: a fit does not depend on it. Results do not depend on it either
(only where memory comes from).
"""

from __future__ import annotations

import ctypes
import os
import threading

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory", "heap_state"]

#: glibc's mallopt parameter numbers (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: the largest mmap threshold glibc's dynamic adjustment sets on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
MMAP_THRESHOLD = 32 * 2**20
#: the trim threshold that adjustment pairs with it (twice the mmap threshold)
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: glibc's environment settings that leave the thresholds to the user
USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

_LOCK = threading.Lock()
_STATE: dict = {"decided": False, "applied": False, "reason": "no fit yet"}


def keep_freed_memory() -> bool:
    """Set glibc's trim and mmap thresholds (see the module notes) unless
    the platform or the user says otherwise; once per process. Returns
    whether the thresholds are set."""
    if _STATE["decided"]:
        return _STATE["applied"]
    with _LOCK:
        if not _STATE["decided"]:
            try:
                reason = _apply()
            except Exception as exc:  # noqa: BLE001 - a speed setting must never fail a fit
                reason = f"{type(exc).__name__}: {exc}"
            _STATE.update(applied=reason == "set", reason=reason, decided=True)
    return _STATE["applied"]


def heap_state() -> dict:
    """``{"applied": bool, "reason": str}``: whether :func:`keep_freed_memory`
    set the thresholds, and why not when it did not."""
    return {"applied": _STATE["applied"], "reason": _STATE["reason"]}


def _apply() -> str:
    choice = os.environ.get("EMBDYN_KEEP_HEAP", "1").strip()
    if choice.lower() in ("0", "false", "no", "off"):
        return f"EMBDYN_KEEP_HEAP={choice}"
    user = [name for name in USER_SETTINGS if name in os.environ]
    if user:
        return f"{user[0]} is set"
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES sets glibc.malloc"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        libc = None
    if not libc or not libc.startswith("glibc"):
        return "the C library is not glibc"
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return "mallopt not found"
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1 or mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        return "mallopt refused the thresholds"
    return "set"
