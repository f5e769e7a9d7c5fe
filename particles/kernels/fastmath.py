"""Arithmetic shared by the force kernels: a vectorisable exp and a
fixed-order sum.

Kernels compile with :data:`FAST`: fastmath without ``nnan``/``ninf`` (the
finiteness checks stay meaningful) and without ``reassoc``. Reassociation made
results depend on how the code was compiled (fresh or from the cache), and a
chaotic flow turns a last-digit change into another final state; sums use
:func:`lane_sum`'s fixed order instead.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["FAST", "exp_nonpositive", "lane_sum", "exp_nonpositive_reference"]

FAST = {"nsz", "arcp", "contract"}

_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_INV_LN2 = 1.4426950408889634
_SHIFTER = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer
_SHIFTER_BITS = np.int64(4843621399236968448)  # its IEEE-754 bit pattern
#: below this argument exp underflows to (sub)normal numbers; returns 0
EXP_FLOOR = -708.0


@intrinsic
def _bits_of(typingctx, x):
    """The IEEE-754 bit pattern of a float64, as an int64 (no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, i):
    """The float64 whose bit pattern is the int64 ``i``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(cache=True, inline="always", fastmath=FAST)
def exp_nonpositive(arg):
    """exp(arg) for arg <= 0, written so that loops calling it vectorise.

    Cody-Waite reduction to |r| <= ln2/2 with k = round(x / ln2) found by the
    1.5 * 2**52 shifter (no float-to-int conversion, which AVX2 lacks), a
    degree-13 Taylor polynomial, and 2**k built in the exponent bits from the
    shifter's low bits; below -708 the result is 0. Relative error below
    3e-16 against numpy.exp (tested). The same holds for 0 < arg < 709
    (the Gram path's repulsion factors, :func:`.clustering.repulsion_factors`,
    take arguments up to 340; tested).
    """
    x = max(arg, EXP_FLOOR)
    t = x * _INV_LN2 + _SHIFTER
    k = t - _SHIFTER
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (
        1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0 + r * (1.0 / 362880.0 + r * (
            1.0 / 3628800.0 + r * (1.0 / 39916800.0 + r * (1.0 / 479001600.0 + r * (
                1.0 / 6227020800.0)))))))))))))
    scale = _float_of((_bits_of(t) - _SHIFTER_BITS + 1023) << 52)
    return p * scale if arg > EXP_FLOOR else 0.0


def exp_nonpositive_reference(arg: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`exp_nonpositive`: exp, 0 below -708."""
    arg = np.asarray(arg, dtype=np.float64)
    return np.where(arg > EXP_FLOOR, np.exp(np.maximum(arg, EXP_FLOOR)), 0.0)


@njit(cache=True, inline="always")
def lane_sum(x, lo, hi):
    """sum(x[lo:hi]) (unsigned bounds) over 8 interleaved partial sums: a
    fixed order that vectorises without reassociation."""
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    a4 = 0.0
    a5 = 0.0
    a6 = 0.0
    a7 = 0.0
    v = lo
    eight = np.uint64(8)
    while v + eight <= hi:
        a0 += x[v]
        a1 += x[v + np.uint64(1)]
        a2 += x[v + np.uint64(2)]
        a3 += x[v + np.uint64(3)]
        a4 += x[v + np.uint64(4)]
        a5 += x[v + np.uint64(5)]
        a6 += x[v + np.uint64(6)]
        a7 += x[v + np.uint64(7)]
        v += eight
    while v < hi:
        a0 += x[v]
        v += np.uint64(1)
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
