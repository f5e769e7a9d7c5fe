"""The functions a pair term is made of: the checks of a term's functions
and parameters, their compiled and Python forms, a function scaled by a
constant, and :func:`fast_exp` (the vectorising exponential a law may use
in compiled code)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numba
import numpy as np
from numba import types
from numba.core.registry import CPUDispatcher
from numba.extending import overload

from .core.validation import check_array
from .kernels.fastmath import FAST, exp_nonpositive, exp_nonpositive_reference

__all__ = ["COMPLEX_STEP", "FAST_EXP_CEILING", "fast_exp", "compiled_function", "python_function", "scaled_function",
           "check_callable", "check_term_params", "check_params_fit"]

#: the imaginary step of the complex-step derivative
#: d phi / dq = Im phi(q + i h) / h (no cancellation, so h can be tiny)
COMPLEX_STEP = 1e-20

#: above this argument :func:`fast_exp` returns inf (exp overflows near 709.78)
FAST_EXP_CEILING = 709.0


def fast_exp(x):
    """exp(x) as the built-in kernels compute it: in compiled code a
    polynomial exp that vectorises (within 2 ulp of ``np.exp``), in Python
    ``np.exp``. 0 below x = -708 and inf above x = 709 on both paths. Real x
    only: complex input raises a TypeError, so a function that uses it needs
    its derivative supplied (complex step cannot go through it)."""
    if np.iscomplexobj(x):
        raise TypeError("fast_exp takes real numbers; give the derivative of a function that uses it "
                        "(same_derivative=/other_derivative=), complex-step differentiation cannot go through it")
    x = check_array(x, "x", finite=False)
    if np.isnan(x).any():
        raise ValueError("x must not hold NaN (fast_exp takes numbers in [-inf, inf]; the compiled path gives 0 "
                         "for NaN, so it is refused here)")
    with np.errstate(over="ignore"):
        return np.where(x > FAST_EXP_CEILING, np.inf, exp_nonpositive_reference(x))


@overload(fast_exp, jit_options={"fastmath": FAST})
def _fast_exp_compiled(x):
    if isinstance(x, types.Float):
        # a select, not a branch: loops calling it still vectorise
        return lambda x: exp_nonpositive(x) if x <= FAST_EXP_CEILING else np.inf
    if isinstance(x, types.Complex):
        raise numba.core.errors.TypingError(
            "fast_exp takes real numbers; give the derivative of a function that uses it "
            "(same_derivative=/other_derivative=), complex-step differentiation cannot go through it")
    return None


def check_callable(name: str, fn: Any) -> Any:
    if fn is not None and not callable(fn):
        raise TypeError(f"{name} must be a function (q, params) -> float or None, got {type(fn).__name__}")
    if fn is not None:
        import inspect

        try:
            signature = inspect.signature(getattr(fn, "py_func", fn))
        except (TypeError, ValueError):  # no signature to read (a builtin): the compiler judges it
            return fn
        try:
            signature.bind(0.0, ())
        except TypeError:
            raise TypeError(f"{name} must be a function (q, params) -> float taking two arguments, got one with "
                            f"signature {signature}") from None
    return fn


def check_term_params(params: Any) -> tuple:
    """``params`` with every value a float (NumPy scalars included), as the
    same NamedTuple class, or as a plain tuple."""
    if not isinstance(params, tuple):
        raise TypeError("params must be a tuple or NamedTuple of real numbers (what numba can pass to compiled "
                        f"code), got {type(params).__name__}")
    fields = getattr(params, "_fields", None)
    values = []
    for i, value in enumerate(params):
        label = fields[i] if fields else f"[{i}]"
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"params.{label} must be a real number, got {type(value).__name__}")
        if not math.isfinite(float(value)):
            raise ValueError(f"params.{label} must be finite, got {value}")
        values.append(float(value))
    return type(params)(*values) if fields else tuple(values)


def python_function(fn: Callable) -> Callable:
    """The Python form of a term's function (what the NumPy path calls):
    a compiled function's ``py_func``, or the NumPy form it names."""
    py = fn.py_func if isinstance(fn, CPUDispatcher) else fn
    return getattr(py, "numpy_form", py)




def check_params_fit(functions: dict[str, Callable | None], params: tuple, q: float) -> None:
    """Call each function's Python form once at ``q`` with ``params``: a
    function that reads more parameters (or fields) than ``params`` holds
    fails here, with an error naming ``params``, instead of deep inside
    compiled code. Other errors are left to the function's real use."""
    for name, fn in functions.items():
        if fn is None:
            continue
        try:
            with np.errstate(all="ignore"):
                python_function(fn)(q, params)
        except (IndexError, AttributeError) as exc:
            raise ValueError(f"params does not fit {name}: called as {name}(q, params) with params={params!r} "
                             f"it raised {type(exc).__name__}: {exc}; give every value it reads") from None
        except Exception:  # noqa: BLE001 - the function may be undefined at this q; the run will tell
            pass


def compiled_function(fn: Callable) -> CPUDispatcher:
    # NumPy's error model: a division by zero gives inf or NaN, which the
    # integrators report as a non-finite state, instead of an exception
    # from inside a kernel
    return fn if isinstance(fn, CPUDispatcher) else numba.njit(error_model="numpy")(fn)




def scaled_function(fn: Callable | None, factor: float) -> Callable | None:
    """fn times a constant, compiled (a new function per factor); None (no
    interaction) for factor 0 or no fn."""
    if fn is None or factor == 0.0:
        return None
    inner = compiled_function(fn)
    py = python_function(fn)

    def scaled(q, prm):
        return factor * inner(q, prm)

    dispatcher = numba.njit(error_model="numpy")(scaled)

    def scaled_python(q, prm):  # the NumPy path calls the Python form
        return factor * py(q, prm)

    dispatcher.py_func.__dict__["numpy_form"] = scaled_python
    return dispatcher
