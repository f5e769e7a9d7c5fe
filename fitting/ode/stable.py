"""Least squares over stable linear systems.

Every matrix A = (J - R) Q with J skew-symmetric and R, Q symmetric
positive definite is Hurwitz (all eigenvalues have negative real part):
V(x) = x^T Q x gives Q A + A^T Q = -2 Q R Q < 0. Conversely every Hurwitz
A has this form (take Q from its Lyapunov equation), so minimising the
least-squares loss over (J, R, Q) searches exactly the stable systems
(Gillis, Karow & Sharma 2019, "stable" port-Hamiltonian parametrisation).
We use R = L L^T + eps I, Q = M M^T + eps I and L-BFGS with the analytic
gradient, in coordinates where every state and the time unit are
standardised (a similarity transform plus a positive time scaling, which
keeps stability). The intercept b is free and eliminated in closed form.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

__all__ = ["stable_least_squares"]

EPS = 1e-6


def _unpack(theta: np.ndarray, K: int):
    S = theta[: K * K].reshape(K, K)
    L = theta[K * K : 2 * K * K].reshape(K, K)
    M = theta[2 * K * K :].reshape(K, K)
    return S, L, M


def stable_least_squares(Theta: np.ndarray, Y: np.ndarray, linear_cols: np.ndarray, bias_col: int | None,
                         max_iter: int = 3000) -> tuple[np.ndarray, dict]:
    """Coefficients (K, F) minimising ||Y - Theta C^T|| with A = C[:, linear_cols] Hurwitz.

    Parameters
    ----------
    Theta : ndarray, shape (n, F)
        Library rows; ``linear_cols`` are the K state columns, ``bias_col``
        the constant (or None); other columns must not exist.
    Y : ndarray, shape (n, K)
    linear_cols : ndarray of int, shape (K,)
    bias_col : int or None

    Returns
    -------
    coef : ndarray, shape (K, F)
    info : dict
        ``constrained`` (False when plain least squares is already stable),
        ``iterations``, ``loss_ratio`` (constrained / unconstrained loss).
    """
    n, F = Theta.shape
    K = len(linear_cols)
    X = Theta[:, linear_cols]
    c = Theta[:, bias_col] if bias_col is not None else None
    ols = np.linalg.lstsq(Theta, Y, rcond=None)[0].T
    if np.max(np.linalg.eigvals(ols[:, linear_cols]).real) < 0:
        return ols, {"constrained": False, "iterations": 0, "loss_ratio": 1.0}
    d = np.sqrt(np.mean(X * X, axis=0))
    d[d == 0] = 1.0
    Xz, Yz = X / d, Y / d
    g = float(np.sqrt(np.mean(Yz * Yz))) or 1.0
    Yz = Yz / g
    if c is not None:  # project out the intercept column
        cc = float(c @ c)
        Xp = Xz - np.outer(c, c @ Xz) / cc
        Yp = Yz - np.outer(c, c @ Yz) / cc
    else:
        Xp, Yp = Xz, Yz
    G = Xp.T @ Xp / n
    H = Xp.T @ Yp / n
    const = float(np.sum(Yp * Yp) / n)
    eye = np.eye(K)

    def loss_grad(theta):
        S, L, M = _unpack(theta, K)
        J = S - S.T
        R = L @ L.T + EPS * eye
        Q = M @ M.T + EPS * eye
        A = (J - R) @ Q
        loss = float(np.sum((A @ G) * A) - 2 * np.sum(A * H.T) + const)
        E = 2 * (A @ G - H.T)
        EQ = E @ Q
        gS = EQ - EQ.T
        gR = -EQ
        gL = (gR + gR.T) @ L
        gQ = (J - R).T @ E
        gM = (gQ + gQ.T) @ M
        return loss, np.concatenate([gS.ravel(), gL.ravel(), gM.ravel()])

    A0 = ols[:, linear_cols] * d[None, :] / d[:, None] / g  # the least-squares A in these coordinates
    sym = (A0 + A0.T) / 2
    lam, V = np.linalg.eigh(-sym)
    floor = 1e-3 * max(float(np.abs(lam).max()), 1e-12)
    R0 = (V * np.maximum(lam, floor)) @ V.T
    theta0 = np.concatenate([((A0 - A0.T) / 4).ravel(),  # J = S - S^T = skew part of A0
                             np.linalg.cholesky(R0 + EPS * eye).ravel(), eye.ravel()])
    best = minimize(loss_grad, theta0, jac=True, method="L-BFGS-B",
                    options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-15, "gtol": 1e-10})
    S, L, M = _unpack(best.x, K)
    Az = (S - S.T - L @ L.T - EPS * eye) @ (M @ M.T + EPS * eye)
    A = g * Az * d[:, None] / d[None, :]
    coef = np.zeros((K, F))
    coef[:, linear_cols] = A
    if c is not None:
        resid = Y - X @ A.T
        coef[:, bias_col] = resid.T @ c / float(c @ c)
    unc = float(np.sum((Y - Theta @ ols.T) ** 2))
    con = float(np.sum((Y - Theta @ coef.T) ** 2))
    return coef, {"constrained": True, "iterations": int(best.nit), "loss_ratio": con / unc if unc > 0 else np.inf}
