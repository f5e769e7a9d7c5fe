"""Numba kernels of the particle model.

Scalar loops over arrays, no Python objects. Every interaction of two pair
sums is evaluated once (u < v) and applied to both. Pair sums are stored
coordinate-major (d, n) so the inner loops over v run over contiguous memory
and vectorise; the exponentials use :func:`_exp_from`, a vectorisable exp
accurate to 3e-16 relative (libm's exp is a scalar call). The inner loop
treats every v as a different class; same-class partners (a few per row,
listed in a CSR structure) are corrected afterwards, so the hot loop has no
branch.

The parallel kernel gives each chunk of rows its own accumulation buffers (a
thread writes only its own buffers) and sums them afterwards, so results do
not depend on thread scheduling. The parameter vector ``prm`` is
``ForceParams.as_array()``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# indices into the parameter vector
K_A, SIG_A, K_R, SIG_R, LAM, SIG_T, EPS, WD, ALIGN, FORM = range(10)
ALIGN_GRADIENT, ALIGN_POLAR = 0, 1
FORM_COSINE, FORM_AXIAL = 0, 1

# status codes of the step loops
OK = 0
NONFINITE = 1


# fastmath without nnan/ninf (finiteness checks stay meaningful) and without
# reassoc: reassociation made results depend on how the code was compiled
# (fresh or from the cache), and a chaotic flow turns a last-digit change into
# another final state. Sums use _lane_sum's fixed order instead.
FAST = {"nsz", "arcp", "contract"}


@njit(cache=True, inline="always")
def _lane_sum(x, lo, hi):
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

_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
_INV_LN2 = 1.4426950408889634
_SHIFTER = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer
_SHIFTER_BITS = np.int64(4843621399236968448)  # its IEEE-754 bit pattern


# Inlined into the force kernels (a call per row would cost more than the
# work: numba reference-counts every array argument). Unsigned indices (see
# _rows_upper) let the loops vectorise.
@njit(cache=True, inline="always")
def _exp_from(arg, out, bits, lo, hi):
    """out[i] = exp(arg[i]) for lo <= i < hi (unsigned), for arg <= 0.

    Cody-Waite reduction to |r| <= ln2/2 with k = round(x / ln2) found by the
    1.5 * 2**52 shifter (no float-to-int conversion, which AVX2 lacks), a
    degree-13 Taylor polynomial, and 2**k built in the exponent bits from the
    shifter's low bits; below -708 the result is 0. Relative error below
    3e-16 (tests compare with numpy.exp).
    """
    shifted = bits.view(np.float64)
    for i in range(lo, hi):
        x = max(arg[i], -708.0)
        t = x * _INV_LN2 + _SHIFTER
        k = t - _SHIFTER
        r = (x - k * _LN2_HI) - k * _LN2_LO
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (
            1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0 + r * (1.0 / 362880.0 + r * (
                1.0 / 3628800.0 + r * (1.0 / 39916800.0 + r * (1.0 / 479001600.0 + r * (
                    1.0 / 6227020800.0)))))))))))))
        out[i] = p
        shifted[i] = t
    for i in range(lo, hi):
        bits[i] = (bits[i] - _SHIFTER_BITS + 1023) << 52
    for i in range(lo, hi):
        out[i] = out[i] * shifted[i] if arg[i] > -708.0 else 0.0


@njit(cache=True, inline="always")
def _prepare(x, pairs, eps, S, U, rho):
    """Pair sums S (d, n), their softened directions U (d, n) and rho (n)."""
    d, n = S.shape
    for u in range(n):
        a = pairs[u, 0]
        b = pairs[u, 1]
        r2 = eps * eps
        for k in range(d):
            S[k, u] = x[a, k] + x[b, k]
            r2 += S[k, u] * S[k, u]
        rho[u] = np.sqrt(r2)
        for k in range(d):
            U[k, u] = S[k, u] / rho[u]


# One call per chunk of rows (a call per row would cost more than the work
# at small n: numba reference-counts every array argument). The inner loops
# index with unsigned integers: numba then emits no negative-index
# wrap-around, and the loops vectorise.
@njit(cache=True, fastmath=FAST)
def _rows_upper(t, n_chunks, S, U, same_ptr, same_idx, prm, F, A, B, r2, cc, coef, ec, dh, ha, bits):
    """Interactions of the pair sums u of chunk t with every v > u,
    accumulated into both rows of F (clustering force), A and B (vector and
    scalar parts of the alignment gradient: sum dh U_v and sum dh c).

    Chunk t of n_chunks takes the rows i and n-1-i for i = t, t + n_chunks,
    ..., so chunks do about equal work. r2, cc, coef, ec, dh, ha, bits are
    scratch arrays of length n. Returns U_clu + lam U_ali of these
    interactions.
    """
    d, n = S.shape
    inv_2sa2 = 0.5 / (prm[SIG_A] * prm[SIG_A])
    inv_2sr2 = 0.5 / (prm[SIG_R] * prm[SIG_R])
    k_a = prm[K_A]
    k_r = prm[K_R]
    lam = prm[LAM]
    inv_st2 = 1.0 / (prm[SIG_T] * prm[SIG_T])
    axial = prm[FORM] == FORM_AXIAL
    clustering = k_a > 0.0 or k_r > 0.0
    aligning = lam > 0.0
    e_clu = 0.0
    e_ali = 0.0
    half = (n + 1) // 2
    for i in range(t, half, n_chunks):
        for second in range(2):
            u = i if second == 0 else n - 1 - i
            if second == 1 and u == i:
                break
            if u + 1 >= n:
                continue
            lo = np.uint64(u + 1)
            hi = np.uint64(n)
            if d == 2:  # the common case, one pass
                s0 = S[0, u]
                s1 = S[1, u]
                u0 = U[0, u]
                u1 = U[1, u]
                for v in range(lo, hi):
                    d0 = s0 - S[0, v]
                    d1 = s1 - S[1, v]
                    r2[v] = d0 * d0 + d1 * d1
                    cc[v] = u0 * U[0, v] + u1 * U[1, v]
            else:
                for v in range(lo, hi):
                    r2[v] = 0.0
                    cc[v] = 0.0
                for k in range(d):
                    su = S[k, u]
                    uu = U[k, u]
                    for v in range(lo, hi):
                        dk = su - S[k, v]
                        r2[v] += dk * dk
                        cc[v] += uu * U[k, v]

            # every v as a different class first
            if clustering:
                for v in range(lo, hi):
                    coef[v] = -r2[v] * inv_2sr2
                _exp_from(coef, ec, bits, lo, hi)
                for v in range(lo, hi):
                    ec[v] *= k_r
                    coef[v] = 2.0 * inv_2sr2 * ec[v]
                e_clu += _lane_sum(ec, lo, hi)
            if aligning:
                if axial:
                    for v in range(lo, hi):
                        dh[v] = (cc[v] * cc[v] - 1.0) * inv_st2
                else:
                    for v in range(lo, hi):
                        dh[v] = (cc[v] - 1.0) * inv_st2
                _exp_from(dh, ha, bits, lo, hi)
                e_ali += _lane_sum(ha, lo, hi)
                if axial:
                    for v in range(lo, hi):
                        dh[v] = ha[v] * 2.0 * cc[v] * inv_st2
                else:
                    for v in range(lo, hi):
                        dh[v] = ha[v] * inv_st2

            # then correct the same-class partners
            for q in range(same_ptr[u], same_ptr[u + 1]):
                v = same_idx[q]
                if clustering:
                    att = k_a * np.exp(-r2[v] * inv_2sa2)
                    e_clu += -att - ec[v]
                    coef[v] = -2.0 * inv_2sa2 * att
                if aligning:
                    c = cc[v]
                    g = c * c if axial else c
                    dg = 2.0 * c if axial else 1.0
                    e_ali += -g - ha[v]
                    dh[v] = -dg

            # r2, ec and coef are free from here on and hold the terms of the
            # row sums
            if clustering:
                if d == 2:
                    s0 = S[0, u]
                    s1 = S[1, u]
                    for v in range(lo, hi):
                        f0 = coef[v] * (s0 - S[0, v])
                        f1 = coef[v] * (s1 - S[1, v])
                        r2[v] = f0
                        ec[v] = f1
                        F[0, v] -= f0
                        F[1, v] -= f1
                    F[0, u] += _lane_sum(r2, lo, hi)
                    F[1, u] += _lane_sum(ec, lo, hi)
                else:
                    for k in range(d):
                        su = S[k, u]
                        for v in range(lo, hi):
                            fk = coef[v] * (su - S[k, v])
                            r2[v] = fk
                            F[k, v] -= fk
                        F[k, u] += _lane_sum(r2, lo, hi)
            if aligning:
                if d == 2:
                    u0 = U[0, u]
                    u1 = U[1, u]
                    for v in range(lo, hi):
                        w = dh[v]
                        r2[v] = w * U[0, v]
                        ec[v] = w * U[1, v]
                        coef[v] = w * cc[v]
                        A[0, v] += w * u0
                        A[1, v] += w * u1
                        B[v] += coef[v]
                    A[0, u] += _lane_sum(r2, lo, hi)
                    A[1, u] += _lane_sum(ec, lo, hi)
                    B[u] += _lane_sum(coef, lo, hi)
                else:
                    for k in range(d):
                        uu = U[k, u]
                        for v in range(lo, hi):
                            r2[v] = dh[v] * U[k, v]
                            A[k, v] += dh[v] * uu
                        A[k, u] += _lane_sum(r2, lo, hi)
                    for v in range(lo, hi):
                        w = dh[v] * cc[v]
                        r2[v] = w
                        B[v] += w
                    B[u] += _lane_sum(r2, lo, hi)
    return e_clu + lam * e_ali


@njit(cache=True, inline="always")
def _finish(x, pairs, S, U, rho, prm, F, A, B, force):
    """Pair-sum forces -> particle forces (alignment transform, scatter, wd)."""
    d, n = S.shape
    lam = prm[LAM]
    polar = prm[ALIGN] == ALIGN_POLAR
    for a in range(x.shape[0]):
        for k in range(d):
            force[a, k] = -prm[WD] * x[a, k]
    for u in range(n):
        if lam > 0.0:
            scale = -lam / rho[u]
            if polar:
                # f = |s|^2 g - (s . g) s with g the gradient alignment force
                s2 = 0.0
                sg = 0.0
                for k in range(d):
                    gk = scale * (A[k, u] - B[u] * U[k, u])
                    s2 += S[k, u] * S[k, u]
                    sg += S[k, u] * gk
                for k in range(d):
                    gk = scale * (A[k, u] - B[u] * U[k, u])
                    F[k, u] += s2 * gk - sg * S[k, u]
            else:
                for k in range(d):
                    F[k, u] += scale * (A[k, u] - B[u] * U[k, u])
        a = pairs[u, 0]
        b = pairs[u, 1]
        for k in range(d):
            force[a, k] += F[k, u]
            force[b, k] += F[k, u]


@njit(cache=True, inline="always")
def _weight_decay_energy(x, wd):
    e = 0.0
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            e += x[a, k] * x[a, k]
    return 0.5 * wd * e


@njit(cache=True)
def forces_serial(x, pairs, same_ptr, same_idx, prm, force):
    """Particle forces into ``force`` (p, d); returns the energy U(x). Serial.

    ``same_ptr``/``same_idx`` list, for each training pair u, the pairs v > u
    of the same class (see ``particles.energy.same_class_partners``).
    """
    n = pairs.shape[0]
    d = x.shape[1]
    S = np.empty((d, n))
    U = np.empty((d, n))
    rho = np.empty(n)
    _prepare(x, pairs, prm[EPS], S, U, rho)
    F = np.zeros((d, n))
    A = np.zeros((d, n))
    B = np.zeros(n)
    r2, cc, coef, ec, dh, ha = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    bits = np.empty(n, dtype=np.int64)
    energy = _rows_upper(0, 1, S, U, same_ptr, same_idx, prm, F, A, B, r2, cc, coef, ec, dh, ha, bits)
    _finish(x, pairs, S, U, rho, prm, F, A, B, force)
    return energy + _weight_decay_energy(x, prm[WD])


@njit(cache=True, parallel=True)
def forces_parallel(x, pairs, same_ptr, same_idx, prm, force, n_chunks):
    """As :func:`forces_serial`, with rows split over ``n_chunks`` threads
    (see :func:`_rows_upper`), each accumulating into its own buffers."""
    n = pairs.shape[0]
    d = x.shape[1]
    S = np.empty((d, n))
    U = np.empty((d, n))
    rho = np.empty(n)
    _prepare(x, pairs, prm[EPS], S, U, rho)
    Fs = np.zeros((n_chunks, d, n))
    As = np.zeros((n_chunks, d, n))
    Bs = np.zeros((n_chunks, n))
    ebuf = np.zeros(n_chunks)
    for t in prange(n_chunks):
        r2, cc, coef, ec, dh, ha = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        bits = np.empty(n, dtype=np.int64)
        ebuf[t] = _rows_upper(t, n_chunks, S, U, same_ptr, same_idx, prm, Fs[t], As[t], Bs[t], r2, cc, coef, ec,
                              dh, ha, bits)
    F = np.zeros((d, n))
    A = np.zeros((d, n))
    B = np.zeros(n)
    for u in prange(n):
        for t in range(n_chunks):
            for k in range(d):
                F[k, u] += Fs[t, k, u]
                A[k, u] += As[t, k, u]
            B[u] += Bs[t, u]
    _finish(x, pairs, S, U, rho, prm, F, A, B, force)
    energy = 0.0
    for t in range(n_chunks):
        energy += ebuf[t]
    return energy + _weight_decay_energy(x, prm[WD])


@njit(cache=True, inline="always")
def _all_finite(x):
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not np.isfinite(x[a, k]):
                return False
    return True


@njit(cache=True, inline="always")
def _record(x, energy, slot, traj, energies):
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            traj[slot, a, k] = x[a, k]
    energies[slot] = energy


@njit(cache=True, inline="always")
def _langevin_kick(x, amplitude, rng):
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[a, k] += amplitude * rng.standard_normal()


@njit(cache=True, inline="always")
def _advance(x, force, energy, i, dt, record_every, t0, t_end, total, rng, traj, energies, slot):
    """The rest of Euler step i once the forces at x are known: check, record
    the state before the step when i % record_every == 0, move, add noise.
    Returns (status, step reached, next slot)."""
    if not np.isfinite(energy) or not _all_finite(force):
        return NONFINITE, i, slot
    if i % record_every == 0:
        _record(x, energy, slot, traj, energies)
        slot += 1
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[a, k] += dt * force[a, k]
    if t0 > 0.0 or t_end > 0.0:
        temp = t0 + (t_end - t0) * i / total
        if temp > 0.0:
            _langevin_kick(x, np.sqrt(2.0 * temp * dt), rng)
    if not _all_finite(x):
        return NONFINITE, i + 1, slot
    return OK, i + 1, slot


# Two step loops, one per force kernel: a loop that could call either would
# compile both, and the parallel kernel takes most of the compile time.
@njit(cache=True)
def run_euler_serial(x, pairs, same_ptr, same_idx, prm, start, stop, dt, record_every, t0, t_end, total, rng, traj,
                     energies, slot0):
    """Euler steps ``start .. stop-1`` (Langevin when a temperature is > 0), in place on x.

    The state before global step i is recorded when i % record_every == 0.
    The temperature at step i is t0 + (t_end - t0) * i / total, the noise
    sqrt(2 T dt) * N(0, 1) drawn from ``rng``. Returns (status, step
    reached, next slot).
    """
    force = np.empty_like(x)
    slot = slot0
    for i in range(start, stop):
        energy = forces_serial(x, pairs, same_ptr, same_idx, prm, force)
        status, reached, slot = _advance(x, force, energy, i, dt, record_every, t0, t_end, total, rng, traj,
                                         energies, slot)
        if status != OK:
            return status, reached, slot
    return OK, stop, slot


@njit(cache=True)
def run_euler_parallel(x, pairs, same_ptr, same_idx, prm, start, stop, dt, record_every, t0, t_end, total, rng, traj,
                       energies, slot0, n_chunks):
    """As :func:`run_euler_serial` with the parallel force kernel."""
    force = np.empty_like(x)
    slot = slot0
    for i in range(start, stop):
        energy = forces_parallel(x, pairs, same_ptr, same_idx, prm, force, n_chunks)
        status, reached, slot = _advance(x, force, energy, i, dt, record_every, t0, t_end, total, rng, traj,
                                         energies, slot)
        if status != OK:
            return status, reached, slot
    return OK, stop, slot


@njit(cache=True)
def minimize_serial(x, pairs, same_ptr, same_idx, prm, max_steps, step0, gtol, force):
    """Gradient descent with Armijo backtracking on U (gradient forces only).

    Returns (status, steps, energy, max |F|); status 0 converged (max |F| <
    gtol), 2 step budget used up, 1 non-finite state.
    """
    trial = np.empty_like(x)
    ftrial = np.empty_like(x)
    energy = forces_serial(x, pairs, same_ptr, same_idx, prm, force)
    step = step0
    fmax = 0.0
    for it in range(max_steps):
        g2 = 0.0
        fmax = 0.0
        for a in range(x.shape[0]):
            for k in range(x.shape[1]):
                g2 += force[a, k] * force[a, k]
                if abs(force[a, k]) > fmax:
                    fmax = abs(force[a, k])
        if not np.isfinite(energy) or not np.isfinite(g2):
            return NONFINITE, it, energy, fmax
        if fmax < gtol:
            return OK, it, energy, fmax
        accepted = False
        for _ in range(60):
            for a in range(x.shape[0]):
                for k in range(x.shape[1]):
                    trial[a, k] = x[a, k] + step * force[a, k]
            e_trial = forces_serial(trial, pairs, same_ptr, same_idx, prm, ftrial)
            if e_trial <= energy - 0.5 * step * g2:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            return OK, it, energy, fmax  # no descent possible at machine precision
        for a in range(x.shape[0]):
            for k in range(x.shape[1]):
                x[a, k] = trial[a, k]
                force[a, k] = ftrial[a, k]
        energy = e_trial
        step *= 1.5
    return 2, max_steps, energy, fmax
