"""Covariance-weighted refit of weak-form coefficients (generalised least squares).

The weak-form rows are not independent: neighbouring windows overlap, so
their errors are correlated, and the error of a row depends on the state
through the library (noise in x enters Theta(x) through its Jacobian).
Ordinary least squares ignores both. With measurement noise of standard
deviation sigma_j in column j, the residual of equation i over the windows
of one run is, to first order in the noise eps::

    r_i = sum_j (Phi diag(df_i/dx_j) + [i = j] dPhi) eps_j = sum_j L_ij eps_j
    Cov(r) = sum_j sigma_j^2 L_(:,j) L_(:,j)^T

The refit minimises r^T Cov(r)^-1 r
over the coefficients of the terms the regressor selected, recomputing
Cov(r) at the current coefficients until they stop changing: the weak-form
estimator of Bortz, Messenger & Dukic (2023, "WENDy"), which we apply after
the sparse selection. sigma_j is estimated from the data: for white noise,
fourth differences of the samples have variance 70 sigma^2 (the signal's own
fourth differences are negligible when it is sampled finely enough to be
fitted).

Runs are independent, so Cov(r) is block diagonal over runs; within a run
only overlapping windows are correlated, so each run's block is a band
matrix, solved in time linear in its number of windows.
"""

from __future__ import annotations

import numpy as np
from scipy import special
from scipy.linalg import LinAlgError

from particles.core.validation import check_array

from particles.core.validation import check_float
from .library import Library
from .gls import normal_equations, scaled_inverse, solve_scaled, standard_errors, whiten, whitened_rss
from .noise import noise_level
from .weak import windowed

__all__ = ["covariance_refit"]

#: relative change of the coefficients at which the iteration stops
TOLERANCE = 1e-6
#: the iteration also stops when what is left of it is below this share of
#: every coefficient's standard error (GLS, at the current weighting). With
#: the last step s and the change contracting by rho per iteration (the ratio
#: of the last two relative changes), the steps still to come add up to at
#: most s rho / (1 - rho): the iteration stops when s <= this share times
#: min(1, (1 - rho) / rho), which raises the estimate's mean squared error by
#: at most 1 %. Fast contractions (rho <= 1/2, most fits) stop at a step of
#: 0.1 standard errors, slow ones (Laser at 5 % noise: rho ~0.85) at a
#: proportionally smaller one (docs/fitting.md).
STEP_IN_STANDARD_ERRORS = 1e-1
#: at the first iteration no contraction rate is known yet: it stops there only
#: when its step is below this share of every standard error (the rule before
#: 2026-11-26 at every iteration)
FIRST_STEP_IN_STANDARD_ERRORS = 1e-2
#: iterations before the refit gives up and keeps the regressor's coefficients;
#: it also gives up as soon as the change of the coefficients stops shrinking
#: (where it converges it contracts at every step: by 2-1000x per iteration on
#: the benchmark systems; on 29 slow signals the change stayed near 100 %)
MAX_ITERATIONS = 30
#: ridge added to Cov(r), relative to its mean diagonal (keeps it positive definite)
FLOOR = 1e-8
#: whitened residual sum of squares per degree of freedom above which the
#: weighting is not trusted (about 1 when the terms and the noise model are
#: right: 0.9-1.2 measured on the benchmark systems; 5.1 with a spurious term)
MISFIT = 2.0
#: level of the likelihood-ratio test a pruned term must pass to be readmitted after a misfit
READMIT_LEVEL = 1e-3
#: most allowed terms (equations x features) for which a misfit triggers the readmission search
READMIT_MAX_TERMS = 400
#: share of the regressor's bar a pruned term's standardised coefficient
#: must reach to compete in the readmission search (the likelihood-ratio
#: test decides): a true constant or small term whose contribution is a few
#: per cent of its equation's RMS is below STLSQ's bar of 0.1 and must be
#: able to return (Rossler's constant 0.2: 0.04)
READMIT_SHARE = 0.1
#: level of the backward elimination of the regressor's terms (Bonferroni
#: over the terms): a term whose GLS coefficient is not significantly
#: different from zero at this level is removed, least significant first
ELIMINATE_LEVEL = 1e-3
#: rounds of backward elimination, each with the rows' covariance at the
#: coefficients the last one left (the spurious terms of the first fit can
#: make that covariance wrong)
ELIMINATE_ROUNDS = 5
#: most terms in the regressor's support for which the elimination runs (each
#: step inverts the normal matrix of the support: a 29-signal linear fit has
#: 870 terms, which would take minutes; those fits are left as the regressor
#: selected them, as before)
ELIMINATE_MAX_TERMS = 400
#: most state columns for which the rows' covariance is built by the
#: all-offsets product of evenly spaced windows; it copies (windows, K^2,
#: window) arrays, which for K = 29 was 3x the memory and 2.4x the time of
#: the chunked general path
UNIFORM_MAX_K = 8


class _Run:
    """What the refit needs of one run: windows, rows, library Jacobians."""

    def __init__(self, x: np.ndarray, t: np.ndarray, library: Library, formulation):
        self.starts, self.L, self.P, self.dP = formulation.window_weights(x, t)  # (n_windows, L): phi, phi'
        self.G = windowed(library.features(x), self.starts, self.P)  # (n_windows, F)
        self.b = -windowed(x, self.starts, self.dP)  # (n_windows, K)
        self.jac = library.jacobian(x)  # (K, T, F): d Theta / d x_j

    def covariance_band(self, coef: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        """Cov(r) of the rows ordered window by window, in the upper band
        storage of ``scipy.linalg.solveh_banded``.

        With J_ij(t) = df_i/dx_j, the block of windows (w, w') is the sum over
        the samples both cover of
        phi_w phi_w' J S J' + phi_w phi'_w' J S + phi'_w phi_w' S J' + phi'_w phi'_w' S,
        S = diag(sigma^2)."""
        K = coef.shape[0]
        nw, L = self.P.shape
        J = np.einsum("jtf,if->tij", self.jac, coef)  # (T, K, K)
        S = sigma**2
        JS = J * S[None, None, :]
        JSJ = np.einsum("tij,tkj->tik", JS, J)
        stride = int(self.starts[1] - self.starts[0]) if nw > 1 else L
        reach = 0 if nw == 1 else min(nw - 1, (L - 1) // stride)
        u = K * (reach + 1) - 1
        band = np.zeros((u + 1, nw * K))
        chunk = max(1, int(2e6 // max(L * K * K, 1)))
        if self.P.strides[0] == 0 and self.dP.strides[0] == 0 and K <= UNIFORM_MAX_K:  # one set of weights
            self._uniform_band(band, u, JSJ, JS, S, stride, reach)
            band[u] += FLOOR * max(float(np.mean(band[u])), 1e-300)
            return band
        for o in range(reach + 1):
            n = L - o * stride  # samples the windows w and w + o share
            for w0 in range(0, nw - o, chunk):
                w = np.arange(w0, min(nw - o, w0 + chunk))
                t = self.starts[w][:, None] + o * stride + np.arange(n)[None, :]
                a, da = self.P[w, o * stride:], self.dP[w, o * stride:]  # window w on the shared samples
                c, dc = self.P[w + o, :n], self.dP[w + o, :n]  # window w + o on them
                block = (np.einsum("wn,wnik->wik", a * c, JSJ[t]) + np.einsum("wn,wnik->wik", a * dc, JS[t])
                         + np.einsum("wn,wnki->wik", da * c, JS[t]))
                block += np.einsum("wn,i->wi", da * dc, S)[:, :, None] * np.eye(K)[None]
                # element (w*K + i, (w+o)*K + k) -> band[u + row - col, col]
                r = (w[:, None, None] * K + np.arange(K)[None, :, None])
                cidx = ((w + o)[:, None, None] * K + np.arange(K)[None, None, :])
                r, cidx = np.broadcast_to(r, block.shape), np.broadcast_to(cidx, block.shape)
                keep = r <= cidx
                band[u + r[keep] - cidx[keep], cidx[keep]] = block[keep]
        band[u] += FLOOR * max(float(np.mean(band[u])), 1e-300)
        return band

    def _uniform_band(self, band: np.ndarray, u: int, JSJ: np.ndarray, JS: np.ndarray, S: np.ndarray,
                      stride: int, reach: int) -> None:
        """Fill ``band`` when every window has the same weights p, p'.

        The block of windows (w, w + o) sums over the samples they share,
        m = o stride .. L - 1 of window w (m - o stride of window w + o),
        products such as p[m] p[m - o stride] of the per-sample arrays at
        start_w + m: for all offsets at once, the windows' samples times one
        (L, offsets) matrix of weight products.

        The windows' samples are copied into one (windows, K^2, L) buffer
        the run keeps for all its iterations: a fresh copy each time (a few
        MB for 10 000 samples) was handed back to the system by glibc and
        faulted in again at every iteration, which doubled the fit's time."""
        T, K = JSJ.shape[0], JSJ.shape[1]
        nw, L = self.P.shape
        if "_uniform" not in self.__dict__:
            p, dp = self.P[0], self.dP[0]
            m = np.arange(L)[:, None]
            lag = m - stride * np.arange(reach + 1)[None, :]  # (L, R): position in window w + o
            ok = lag >= 0
            lag = np.where(ok, lag, 0)
            Q = [np.where(ok, p[:, None] * p[lag], 0.0), np.where(ok, p[:, None] * dp[lag], 0.0),
                 np.where(ok, dp[:, None] * p[lag], 0.0)]
            dd = np.sum(np.where(ok, dp[:, None] * dp[lag], 0.0), axis=0)  # (R,)
            w = np.arange(nw)[:, None, None, None]
            o = np.arange(reach + 1)[None, :, None, None]
            i = np.arange(K)[None, None, :, None]
            k = np.arange(K)[None, None, None, :]
            row, col = w * K + i, (w + o) * K + k  # element (w*K + i, (w+o)*K + k) of Cov(r)
            keep = np.broadcast_to((w + o < nw) & (row <= col), (nw, reach + 1, K, K))
            row, col = np.broadcast_to(row, keep.shape)[keep], np.broadcast_to(col, keep.shape)[keep]
            first = int(self.starts[0])
            even = np.array_equal(self.starts, first + stride * np.arange(nw))
            take = slice(first, first + stride * (nw - 1) + 1, stride) if even else self.starts  # a view if even
            self._uniform = (Q, dd, keep, u + row - col, col, take, np.empty((nw, K * K, L)))
        Q, dd, keep, brow, bcol, take, win = self._uniform

        def windows(A: np.ndarray) -> np.ndarray:  # (nw, K*K, L): the samples of each window, into ``win``
            np.copyto(win, np.lib.stride_tricks.sliding_window_view(A.reshape(T, K * K), L, axis=0)[take])
            return win

        # (nw, K*K, R) -> (nw, R, K, K)
        block = (windows(JSJ) @ Q[0]).transpose(0, 2, 1).reshape(nw, -1, K, K)
        win_js = windows(JS)
        block += (win_js @ Q[1]).transpose(0, 2, 1).reshape(nw, -1, K, K)
        block += (win_js @ Q[2]).transpose(0, 2, 1).reshape(nw, -1, K, K).transpose(0, 1, 3, 2)
        block += dd[None, :, None, None] * np.diag(S)[None, None]
        band[brow, bcol] = block[keep]

    def solve_parts(self, coef: np.ndarray, support: np.ndarray, sigma: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """(W D, W b): this run's rows at ``coef`` whitened by the Cholesky
        factor of their covariance, Cov(r) = U' U, W = U'^-1 (rows window by
        window, so Cov(r) is a band matrix, factored and solved in time
        linear in the number of windows). Then D' Cov(r)^-1 D = (W D)' (W D),
        and r' Cov(r)^-1 r = |W r|^2."""
        K = coef.shape[0]
        nw = self.G.shape[0]
        D = np.zeros((nw, K, int(support.sum())))
        col = 0
        for i in range(K):
            cols = np.flatnonzero(support[i])
            D[:, i, col:col + len(cols)] = self.G[:, cols]
            col += len(cols)
        D, b = D.reshape(nw * K, -1), self.b.reshape(-1)
        return whiten(self.covariance_band(coef, sigma), np.column_stack([D, b]))


def covariance_refit(coef: np.ndarray, runs: list[np.ndarray], times: list[np.ndarray], library: Library,
                     formulation, sigma: np.ndarray | None = None, mask: np.ndarray | None = None,
                     threshold: float = 0.0, term_scale: np.ndarray | None = None, eliminate: bool = False
                     ) -> tuple[np.ndarray, dict]:
    """Refit the non-zero coefficients of ``coef`` (K, F) by iterated
    generalised least squares on the weak-form rows of ``runs``.

    Parameters
    ----------
    coef : ndarray (K, F)
        Coefficients from the regressor; their non-zero pattern is kept.
    runs, times : lists of (T_r, K) and (T_r,) arrays
        The samples the rows were built from (inside the fit window).
    library : Library
    formulation : WeakForm, bound to the data
    sigma : ndarray (K,), optional
        Noise standard deviation per column; estimated by
        :func:`noise_level` when None.
    mask : ndarray (K, F) of bool, optional
        The terms the model allows. Given, a misfit (see below) is followed
        by a search for terms the regressor pruned (``_readmit_terms``):
        the pruned term whose return lowers the whitened residual most,
        while that drop passes a likelihood-ratio test at level
        ``READMIT_LEVEL`` (divided by the number of candidates), one at a
        time; once the grown support's refit converges with a noise-like
        residual, returned terms below the bar (below) are dropped and the
        rest refitted, repeatedly, and the support is kept if that refit
        converges with at least one returned term (status ``"converged"``,
        ``info["readmitted"]`` lists the (equation, term index) pairs),
        otherwise ``coef`` is returned with status ``"misfit"``. Non-zero
        terms of ``coef`` outside ``mask`` count as allowed.
    threshold : float >= 0, term_scale : ndarray (K, F), optional
        The regressor's bar, a share of which is kept for readmission: a
        pruned term is a candidate only if its refitted coefficient times
        ``term_scale`` (e.g. feature RMS / target RMS, STLSQ's standardised
        scale; ones when None; terms with scale 0 never return) has
        magnitude at least ``READMIT_SHARE`` (0.1) times ``threshold``: a
        true constant or small term of a few per cent of its equation's RMS
        can return, while on data with next to no noise (where a
        quadrature error makes the misfit) terms with coefficients of 1e-8
        stay out.
    eliminate : bool
        Before the refit, remove the terms of ``coef`` whose GLS coefficient
        is not significant (backward elimination by GLS t-statistics; supports of at most
        ``ELIMINATE_MAX_TERMS`` terms); what it removed is in
        ``info["eliminated"]``. A refit that does not converge (a misfit,
        or an iteration that does not settle) discards the elimination: the
        regressor's own terms are refitted and returned, and
        ``info["elimination"]`` says so.

    Returns
    -------
    coef : ndarray (K, F)
        The refitted coefficients, or ``coef`` unchanged when there is no
        noise to weight by, the support is empty, the iteration does not
        settle, or the whitened residual is not noise-like (its sum of
        squares per degree of freedom ``chi2_per_dof`` above ``MISFIT`` = 2:
        the selected terms or the white-noise model do not fit the data);
        ``info["status"]`` says which.
    info : dict
        ``status`` ("converged", "misfit", "no noise", "empty support",
        "not converged", ...), ``iterations``, ``noise_sd``, ``chi2_per_dof``;
        after a readmission search, ``readmitted`` and
        ``misfit_chi2_per_dof`` (the misfit that started it) when it
        succeeded, ``readmission`` (why not) when it did not.
    """
    threshold = check_float(threshold, "threshold", 0.0)
    if mask is not None:
        mask = check_array(mask, "mask", dtype="bool", shape=coef.shape)
    if term_scale is not None:
        term_scale = check_array(term_scale, "term_scale", shape=coef.shape, low=0.0)
    sigma = noise_level(runs, times) if sigma is None else np.asarray(sigma, dtype=float)
    info = {"noise_sd": sigma.tolist(), "iterations": 0}
    support = coef != 0
    if not support.any():
        return coef, {**info, "status": "empty support"}
    if not np.any(sigma > 0):
        return coef, {**info, "status": "no noise"}
    try:
        pieces = [_Run(x, t, library, formulation) for x, t in zip(runs, times)]
    except (ValueError, ArithmeticError) as exc:  # e.g. a custom feature undefined a step away from the data
        return coef, {**info, "status": f"library not differentiable at the data ({exc})"}
    if not all(np.all(np.isfinite(p.jac)) for p in pieces):
        return coef, {**info, "status": "library derivative not finite at the data"}
    eliminate = eliminate and int(support.sum()) <= ELIMINATE_MAX_TERMS
    coef, refit, out = _refit_after_elimination(pieces, coef, sigma, info, ELIMINATE_ROUNDS if eliminate else 0)
    if out["status"] != "misfit" or mask is None:
        return refit, out
    scale = np.ones(coef.shape) if term_scale is None else term_scale
    grown, grown_info = _readmit_terms(pieces, coef, mask, sigma, info, float(threshold), scale)
    if grown is None:
        return refit, {**out, **grown_info}
    return grown, {**grown_info, "misfit_chi2_per_dof": out["chi2_per_dof"]}


def _refit_after_elimination(pieces: list[_Run], coef: np.ndarray, sigma: np.ndarray, info: dict, rounds: int
                             ) -> tuple[np.ndarray, np.ndarray, dict]:
    """Up to ``rounds`` rounds of backward elimination (:func:`_eliminate`,
    each with the covariance at the support left), then the iterated GLS
    refit; an elimination whose refit does not converge is discarded and
    the regressor's own terms refitted. Returns (the support's coefficients
    before the refit, the refit, info)."""
    original, dropped, parts, more = coef, [], None, []
    for _ in range(rounds):  # again with the covariance at the reduced support
        coef, more, parts = _eliminate(pieces, coef, sigma)
        dropped += more
        if not more or not coef.any():
            break
    support = coef != 0
    if dropped and not support.any():
        return original, original, {**info, "status": "empty support", "eliminated": dropped}
    # the last round's rows at coef, when it removed nothing: the first GLS step needs exactly those
    refit, out = _iterate(pieces, coef, support, sigma, info, first_parts=None if (not parts or more) else parts)
    if dropped and out["status"] != "converged":
        # the weighting did not settle or does not fit: neither is what it eliminated trusted, so the
        # regressor's own terms are refitted and reported, as without the elimination
        coef = original
        refit, out = _iterate(pieces, coef, original != 0, sigma, info)
        out = {**out, "elimination": f"discarded ({len(dropped)} terms; its refit ended '{out['status']}')"}
    elif dropped:
        out = {**out, "eliminated": dropped}
    return coef, refit, out


def _iterate(pieces: list[_Run], coef: np.ndarray, support: np.ndarray, sigma: np.ndarray, info: dict,
             first_parts: list | None = None) -> tuple[np.ndarray, dict]:
    """Iterated GLS of the ``support`` terms, starting from ``coef``
    (``first_parts``: the runs' :meth:`_Run.solve_parts` at ``coef``, when
    the caller has them)."""
    current, previous = coef, np.inf
    for it in range(1, MAX_ITERATIONS + 1):
        try:
            parts = first_parts if it == 1 and first_parts is not None else \
                [p.solve_parts(current, support, sigma) for p in pieces]
        except (LinAlgError, ValueError):
            return coef, {**info, "iterations": it, "status": "covariance not positive definite"}
        # generalised least squares: (D' C^-1 D) xi = D' C^-1 b, columns scaled for conditioning
        M, v, rows = normal_equations(parts)
        xi = solve_scaled(M, v)
        new = np.zeros_like(coef)
        new[support] = xi  # row-major order of the support = the column order of D
        if not np.all(np.isfinite(new)):
            return coef, {**info, "iterations": it, "status": "not finite"}
        change = np.linalg.norm(new - current) / max(np.linalg.norm(current), 1e-300)
        step = np.abs(new[support] - current[support])
        current = new
        chi2 = whitened_rss(parts, xi) / max(rows - len(xi), 1)
        info = {**info, "iterations": it, "chi2_per_dof": chi2}
        if chi2 > MISFIT:  # the whitened residual is not noise: wrong terms or not white noise
            return coef, {**info, "status": "misfit"}
        allowed = _allowed_step(change, previous) * standard_errors(M, max(chi2, 1.0))
        if change < TOLERANCE or np.all(step <= allowed):
            return current, {**info, "status": "converged"}
        if change >= previous:  # not contracting: the coefficients are not determined well enough to weight by
            return coef, {**info, "status": "not converged"}
        previous = change
    return coef, {**info, "iterations": MAX_ITERATIONS, "status": "not converged"}


def _allowed_step(change: float, previous: float) -> float:
    """The step, in standard errors, below which the iteration has settled
    (see ``STEP_IN_STANDARD_ERRORS``), from its last two relative changes."""
    if not np.isfinite(previous) or previous <= 0:
        return FIRST_STEP_IN_STANDARD_ERRORS
    rate = change / previous
    if not rate < 1.0:
        return 0.0  # not contracting (the caller stops with "not converged")
    return STEP_IN_STANDARD_ERRORS * min(1.0, (1.0 - rate) / max(rate, 1e-300))


def _eliminate(pieces: list[_Run], coef: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, list, list | None]:
    """Backward elimination of the non-zero terms of ``coef`` by their GLS
    significance.

    With the rows' covariance C at ``coef`` (M = D' C^-1 D, v = D' C^-1 b),
    the GLS coefficients of the current support and their standard errors
    (diagonal of M^-1, times the whitened residual per degree of freedom
    when that exceeds 1) give t = coefficient / standard error; the term
    with the smallest |t| is removed while |t| is below the normal quantile
    at ``1 - ELIMINATE_LEVEL / (2 n)`` (n terms in the support), then the
    rest refitted. Collinear spurious terms (a cubic library on states with
    a large mean) have large standard errors and go; a true term stays
    unless the noise hides it. Returns the coefficients (GLS on the kept
    support, zeros elsewhere; ``coef`` itself when nothing is removed) and
    the removed (equation, term) pairs, and the runs' rows at ``coef``
    (:meth:`_Run.solve_parts`; None when they could not be solved)."""
    support = coef != 0
    try:
        parts = [p.solve_parts(coef, support, sigma) for p in pieces]
    except (LinAlgError, ValueError):
        return coef, [], None
    M, v, rows = normal_equations(parts)
    order = np.flatnonzero(support.ravel())
    cols = np.arange(len(order))
    dropped: list[int] = []
    while cols.size:
        sub = M[np.ix_(cols, cols)]
        inv = scaled_inverse(sub)
        xi = inv @ v[cols]
        dof = max(rows - cols.size, 1)
        s2 = max(whitened_rss(parts, xi, cols) / dof, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(xi) / np.sqrt(np.maximum(np.diag(inv), 0.0) * s2)
        t = np.where(np.isfinite(t), t, 0.0)
        k = int(np.argmin(t))
        if t[k] >= -special.ndtri(ELIMINATE_LEVEL / (2 * cols.size)):  # the normal quantile (stats.norm.isf)
            break
        dropped.append(int(order[cols[k]]))
        cols = np.delete(cols, k)
    if not dropped:
        return coef, [], parts
    out = np.zeros_like(coef)
    if cols.size:
        out.ravel()[order[cols]] = xi
    return out, [tuple(int(i) for i in np.unravel_index(f, coef.shape)) for f in dropped], parts


def _prune_readmitted(pieces: list[_Run], refit: np.ndarray, out: dict, support: np.ndarray, added: list[int],
                      sigma: np.ndarray, info: dict, bar: float,
                      term_scale: np.ndarray) -> tuple[np.ndarray | None, dict]:
    """The backward half of the readmission search: the grown support's
    converged ``refit`` with every readmitted term (``added``, flat indices)
    whose coefficient times ``term_scale`` is below ``bar`` dropped, the
    rest refitted, until every readmitted term left clears the bar. The
    forward search adds the best term of each round against a misfitting
    model, so it can take terms a later addition makes useless (Moore-Spiegel
    at 1 % noise: ten near-zero terms before the two true ones); they are
    removed here rather than rejecting the whole grown support. ``(None,
    info)`` when a pruned refit no longer converges or no readmitted term
    is left (the support that misfitted)."""
    support = support.copy()
    kept = list(added)
    while True:
        low = [f for f in kept if abs(refit.flat[f]) * term_scale.flat[f] < bar]
        if not low:
            back = [np.unravel_index(f, refit.shape) for f in kept]
            return refit, {**out, "readmitted": [(int(i), int(f)) for i, f in back]}
        for f in low:
            support.flat[f] = False
        kept = [f for f in kept if f not in low]
        if not kept:
            return None, {"readmission": f"every readmitted term fell below the threshold in the refit "
                                         f"(added {len(added)})"}
        start = np.where(support, refit, 0.0)
        refit, out = _iterate(pieces, start, support, sigma, info)
        if out["status"] != "converged":
            return None, {"readmission": f"a readmitted term fell below the threshold and the refit without "
                                         f"the {len(added) - len(kept)} such term(s) is {out['status']} "
                                         f"(added {len(added)})"}


def _readmit_terms(pieces: list[_Run], coef: np.ndarray, mask: np.ndarray, sigma: np.ndarray, info: dict,
                   threshold: float, term_scale: np.ndarray) -> tuple[np.ndarray | None, dict]:
    """Grow the support of ``coef`` by pruned terms of ``mask`` until its
    refit converges (see :func:`covariance_refit`); ``(None, info)`` when
    no grown support does.

    Each round builds the GLS normal equations of every allowed term once,
    with the covariance at the current coefficients (M = D' C^-1 D), and
    scores each pruned term j by the drop of the whitened residual its
    addition gives, computed without cancellation from the residual r of
    the current support S: drop_j = g_j^2 / s_j with g_j = d_j' C^-1 r and
    s_j = M_jj - M_jS M_SS^-1 M_Sj (its coefficient is -g_j / s_j). Only
    terms whose coefficient times ``term_scale`` reaches ``READMIT_SHARE``
    times ``threshold`` (and whose scale is non-zero) compete. The best is added when its drop, in
    units of the new residual per degree of freedom, exceeds the
    chi-square(1) quantile at ``1 - READMIT_LEVEL / candidates`` (a
    likelihood-ratio test for the best of several, Bonferroni-corrected,
    that tolerates the misfit's inflated scale); then the support is
    refitted. Once the grown support's refit converges, readmitted terms
    below that share of the bar are dropped and the rest refitted
    (:func:`_prune_readmitted`); the support is accepted when that refit
    converges. Skipped (status note) above
    ``READMIT_MAX_TERMS`` allowed terms."""
    coef = np.ascontiguousarray(coef, dtype=float)
    support = np.ascontiguousarray(coef != 0)
    mask = np.ascontiguousarray(mask, dtype=bool) | support  # the regressor's terms are always allowed
    if int(mask.sum()) > READMIT_MAX_TERMS:
        return None, {"readmission": f"skipped: {int(mask.sum())} allowed terms > {READMIT_MAX_TERMS}"}
    order = np.flatnonzero(mask.ravel())  # column order of D with support=mask (row-major, as solve_parts)
    term_scale = np.ascontiguousarray(term_scale, dtype=float)
    scale = term_scale.ravel()[order]
    current = coef
    added: list[int] = []
    for _ in range(len(order)):
        try:
            parts = [p.solve_parts(current, mask, sigma) for p in pieces]
        except (LinAlgError, ValueError):
            return None, {"readmission": "covariance not positive definite"}
        M, v, rows = normal_equations(parts)
        inside = support.ravel()[order]
        base, cand = np.flatnonzero(inside), np.flatnonzero(~inside)
        if cand.size == 0:
            return None, {"readmission": f"no pruned term left (added {len(added)})"}
        xi_b = solve_scaled(M[np.ix_(base, base)], v[base])
        resid = [WD[:, base] @ xi_b - Wb for WD, Wb in parts]  # W r, r = D_S xi_S - b, run by run
        chi2_base = sum(float(np.sum(r**2)) for r in resid)
        g = sum(WD[:, cand].T @ r for r, (WD, _) in zip(resid, parts))  # d_j' C^-1 r
        proj = np.linalg.lstsq(M[np.ix_(base, base)], M[np.ix_(base, cand)], rcond=None)[0]
        s_j = np.diag(M)[cand] - np.einsum("bc,bc->c", M[np.ix_(base, cand)], proj)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = -g / s_j
            drop = np.where(s_j > 0, g * g / s_j, 0.0)
        eligible = (s_j > 0) & (scale[cand] > 0) & (np.abs(value) * scale[cand] >= READMIT_SHARE * threshold)
        if not eligible.any():
            return None, {"readmission": f"no pruned term reaches the threshold (READMIT_SHARE x threshold; added {len(added)})"}
        k = int(np.argmax(np.where(eligible, drop, -np.inf)))
        j = int(cand[k])
        dof = max(rows - len(base) - 1, 1)
        chi2_new = max(chi2_base - float(drop[k]), 1e-300)
        critical = float(special.chdtri(1, READMIT_LEVEL / len(cand)))  # stats.chi2.ppf(1 - level, 1)
        if not float(drop[k]) / (chi2_new / dof) > critical:
            return None, {"readmission": f"no pruned term passes the test (added {len(added)})"}
        flat = int(order[j])
        support[np.unravel_index(flat, support.shape)] = True
        added.append(flat)
        sel = np.append(base, j)
        start = np.zeros_like(coef)
        start[np.unravel_index(order[sel], start.shape)] = solve_scaled(M[np.ix_(sel, sel)], v[sel])
        refit, out = _iterate(pieces, start, support, sigma, info)
        if out["status"] == "converged":
            return _prune_readmitted(pieces, refit, out, support, added, sigma, info,
                                     READMIT_SHARE * threshold, term_scale)
        if out["status"] != "misfit":
            return None, {"readmission": f"refit with {len(added)} readmitted term(s): {out['status']}"}
        current = start
    return None, {"readmission": f"no pruned term left (added {len(added)})"}
