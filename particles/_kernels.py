"""Numba kernels of the particle model.

Scalar loops over arrays, no Python objects. Every interaction of two pair
sums is evaluated once (u < v) and applied to both; the parallel kernel gives
each chunk of rows its own accumulation buffer (a thread writes only its own
buffer) and sums the buffers afterwards, so results do not depend on thread
scheduling. The parameter vector ``prm`` is ``ForceParams.as_array()``.
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


@njit(cache=True, inline="always")
def _pair_sums(x, pairs, s):
    n, d = s.shape
    for u in range(n):
        a = pairs[u, 0]
        b = pairs[u, 1]
        for k in range(d):
            s[u, k] = x[a, k] + x[b, k]


@njit(cache=True, inline="always")
def _directions(s, eps, unit, rho):
    n, d = s.shape
    for u in range(n):
        r2 = eps * eps
        for k in range(d):
            r2 += s[u, k] * s[u, k]
        rho[u] = np.sqrt(r2)
        for k in range(d):
            unit[u, k] = s[u, k] / rho[u]


@njit(cache=True, inline="always")
def _row_upper(u, s, unit, labels, prm, fbuf, abuf, bbuf):
    """Interactions of pair sum u with every v > u, accumulated into the
    buffers of both: fbuf (clustering force), abuf and bbuf (the vector and
    scalar parts of the alignment gradient, sum dh unit_v and sum dh c).
    Returns the energy U_clu + lam U_ali of these interactions."""
    n, d = s.shape
    inv_2sa2 = 0.5 / (prm[SIG_A] * prm[SIG_A])
    inv_2sr2 = 0.5 / (prm[SIG_R] * prm[SIG_R])
    k_a = prm[K_A]
    k_r = prm[K_R]
    lam = prm[LAM]
    inv_st2 = 1.0 / (prm[SIG_T] * prm[SIG_T])
    axial = prm[FORM] == FORM_AXIAL
    clustering = k_a > 0.0 or k_r > 0.0
    e_clu = 0.0
    e_ali = 0.0
    lu = labels[u]
    for v in range(u + 1, n):
        same = labels[v] == lu
        if clustering:
            r2 = 0.0
            for k in range(d):
                dk = s[u, k] - s[v, k]
                r2 += dk * dk
            if same:
                e = k_a * np.exp(-r2 * inv_2sa2)
                e_clu -= e
                coef = -2.0 * inv_2sa2 * e
            else:
                e = k_r * np.exp(-r2 * inv_2sr2)
                e_clu += e
                coef = 2.0 * inv_2sr2 * e
            for k in range(d):
                fk = coef * (s[u, k] - s[v, k])
                fbuf[u, k] += fk
                fbuf[v, k] -= fk
        if lam > 0.0:
            c = 0.0
            for k in range(d):
                c += unit[u, k] * unit[v, k]
            if axial:
                g = c * c
                dg = 2.0 * c
            else:
                g = c
                dg = 1.0
            if same:
                h = -g
                dh = -dg
            else:
                h = np.exp((g - 1.0) * inv_st2)
                dh = h * dg * inv_st2
            e_ali += h
            for k in range(d):
                abuf[u, k] += dh * unit[v, k]
                abuf[v, k] += dh * unit[u, k]
            bbuf[u] += dh * c
            bbuf[v] += dh * c
    return e_clu + lam * e_ali


@njit(cache=True, inline="always")
def _finish(x, pairs, s, unit, rho, prm, fpair, abuf, bbuf, force):
    """Pair-sum forces -> particle forces (alignment transform, scatter, wd)."""
    n, d = s.shape
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
                    gk = scale * (abuf[u, k] - bbuf[u] * unit[u, k])
                    s2 += s[u, k] * s[u, k]
                    sg += s[u, k] * gk
                for k in range(d):
                    gk = scale * (abuf[u, k] - bbuf[u] * unit[u, k])
                    fpair[u, k] += s2 * gk - sg * s[u, k]
            else:
                for k in range(d):
                    fpair[u, k] += scale * (abuf[u, k] - bbuf[u] * unit[u, k])
        a = pairs[u, 0]
        b = pairs[u, 1]
        for k in range(d):
            force[a, k] += fpair[u, k]
            force[b, k] += fpair[u, k]


@njit(cache=True, inline="always")
def _weight_decay_energy(x, wd):
    e = 0.0
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            e += x[a, k] * x[a, k]
    return 0.5 * wd * e


@njit(cache=True)
def forces_serial(x, pairs, labels, prm, force):
    """Particle forces into ``force`` (p, d); returns the energy U(x). Serial."""
    n = pairs.shape[0]
    d = x.shape[1]
    s = np.empty((n, d))
    unit = np.empty((n, d))
    rho = np.empty(n)
    fpair = np.zeros((n, d))
    abuf = np.zeros((n, d))
    bbuf = np.zeros(n)
    _pair_sums(x, pairs, s)
    _directions(s, prm[EPS], unit, rho)
    energy = 0.0
    for u in range(n):
        energy += _row_upper(u, s, unit, labels, prm, fpair, abuf, bbuf)
    _finish(x, pairs, s, unit, rho, prm, fpair, abuf, bbuf, force)
    return energy + _weight_decay_energy(x, prm[WD])


@njit(cache=True, parallel=True)
def forces_parallel(x, pairs, labels, prm, force, n_chunks):
    """As :func:`forces_serial`, with rows split over ``n_chunks`` threads.

    Chunk t takes the row pairs (i, n-1-i) for i = t, t + n_chunks, ..., so
    every chunk does about the same number of interactions.
    """
    n = pairs.shape[0]
    d = x.shape[1]
    s = np.empty((n, d))
    unit = np.empty((n, d))
    rho = np.empty(n)
    _pair_sums(x, pairs, s)
    _directions(s, prm[EPS], unit, rho)
    fbufs = np.zeros((n_chunks, n, d))
    abufs = np.zeros((n_chunks, n, d))
    bbufs = np.zeros((n_chunks, n))
    ebuf = np.zeros(n_chunks)
    half = (n + 1) // 2
    for t in prange(n_chunks):
        e = 0.0
        for i in range(t, half, n_chunks):
            e += _row_upper(i, s, unit, labels, prm, fbufs[t], abufs[t], bbufs[t])
            j = n - 1 - i
            if j != i:
                e += _row_upper(j, s, unit, labels, prm, fbufs[t], abufs[t], bbufs[t])
        ebuf[t] = e
    fpair = np.zeros((n, d))
    abuf = np.zeros((n, d))
    bbuf = np.zeros(n)
    for u in prange(n):
        for t in range(n_chunks):
            for k in range(d):
                fpair[u, k] += fbufs[t, u, k]
                abuf[u, k] += abufs[t, u, k]
            bbuf[u] += bbufs[t, u]
    _finish(x, pairs, s, unit, rho, prm, fpair, abuf, bbuf, force)
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
def _forces(x, pairs, labels, prm, force, n_chunks):
    if n_chunks > 1:
        return forces_parallel(x, pairs, labels, prm, force, n_chunks)
    return forces_serial(x, pairs, labels, prm, force)


@njit(cache=True)
def run_euler(x, pairs, labels, prm, start, stop, dt, record_every, t0, t_end, total, rng, traj, energies, slot0,
              n_chunks):
    """Euler steps ``start .. stop-1`` (Langevin when a temperature is > 0), in place on x.

    The state before global step i is recorded when i % record_every == 0.
    The temperature at step i is t0 + (t_end - t0) * i / total, the noise
    sqrt(2 T dt) * N(0, 1) drawn from ``rng``. ``n_chunks > 1`` selects the
    parallel force kernel. Returns (status, step reached, next slot).
    """
    force = np.empty_like(x)
    slot = slot0
    noisy = t0 > 0.0 or t_end > 0.0
    for i in range(start, stop):
        energy = _forces(x, pairs, labels, prm, force, n_chunks)
        if not np.isfinite(energy) or not _all_finite(force):
            return NONFINITE, i, slot
        if i % record_every == 0:
            _record(x, energy, slot, traj, energies)
            slot += 1
        for a in range(x.shape[0]):
            for k in range(x.shape[1]):
                x[a, k] += dt * force[a, k]
        if noisy:
            temp = t0 + (t_end - t0) * i / total
            if temp > 0.0:
                _langevin_kick(x, np.sqrt(2.0 * temp * dt), rng)
        if not _all_finite(x):
            return NONFINITE, i + 1, slot
    return OK, stop, slot


@njit(cache=True)
def minimize_serial(x, pairs, labels, prm, max_steps, step0, gtol, force):
    """Gradient descent with Armijo backtracking on U (gradient forces only).

    Returns (status, steps, energy, max |F|); status 0 converged (max |F| <
    gtol), 2 step budget used up, 1 non-finite state.
    """
    trial = np.empty_like(x)
    ftrial = np.empty_like(x)
    energy = forces_serial(x, pairs, labels, prm, force)
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
            e_trial = forces_serial(trial, pairs, labels, prm, ftrial)
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
