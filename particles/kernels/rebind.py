"""Copies of compiled kernels with some of the functions they call replaced.

The force kernels call the force law through a few global names (the slots
``attraction``, ``repulsion``, ``alignment_same`` and ``alignment_other``,
see :mod:`.clustering` and :mod:`.alignment`). :func:`rebind` compiles a copy
of a kernel, and of every kernel it reaches that calls a replaced name, with
other functions in those slots; everything else (the built-in kernels, their
on-disk cache) is untouched. This is how a custom pair energy runs on the
same code as the built-in law, with no second copy of the loops.
"""

from __future__ import annotations

import itertools
import types as pytypes
from typing import Any

import numba
from numba.core.registry import CPUDispatcher

from .slots import check_slots

__all__ = ["rebind"]

#: numbers the copies' names
_COPIES = itertools.count(1)


def rebind(kernel: CPUDispatcher, slots: dict[str, Any], memo: dict | None = None) -> CPUDispatcher:
    """``kernel`` compiled with the global names in ``slots`` bound to other
    functions, in it and in every compiled function it calls, directly or
    not, that uses them.

    Parameters
    ----------
    kernel : numba dispatcher
        A compiled function of this package.
    slots : dict of str to numba dispatcher or constant
        Global names and the functions (or compile-time constants) to use in
        their place.
    memo : dict, optional
        Copies made so far (shared between calls so that a function reached
        twice is compiled once).

    Returns
    -------
    numba dispatcher
        ``kernel`` itself when nothing it reaches uses a slot, else a new
        dispatcher with the same compile options except ``cache`` (copies
        are compiled once per process).

    Raises
    ------
    ValueError
        When ``slots`` names a global that is not a slot of the kernels
        (:data:`.slots.SLOTS`): such a name would bind nothing and leave
        the built-in law running.
    """
    if memo is None or not memo:  # a first call: the names are checked against the contract once
        check_slots(slots)
    memo = {} if memo is None else memo
    key = id(kernel)
    if key in memo:
        return memo[key]
    func = kernel.py_func
    changes = {}
    for name in func.__code__.co_names:
        if name in slots:
            changes[name] = slots[name]
            continue
        target = func.__globals__.get(name)
        if isinstance(target, CPUDispatcher):
            copy = rebind(target, slots, memo)
            if copy is not target:
                changes[name] = copy
    if not changes:
        memo[key] = kernel
        return kernel
    namespace = dict(func.__globals__)
    namespace.update(changes)
    clone = pytypes.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__, func.__closure__)
    # a name of its own: numba names compiled symbols by module, qualified
    # name and a per-process counter, and the built-in kernels come from the
    # on-disk cache with counters of the process that compiled them; a copy
    # named like its original could take an original's symbol at link time
    clone.__qualname__ = f"{func.__qualname__}_law{next(_COPIES)}"
    clone.__doc__ = func.__doc__
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("cache", "nopython")}
    copy = numba.njit(**options)(clone)
    memo[key] = copy
    return copy
