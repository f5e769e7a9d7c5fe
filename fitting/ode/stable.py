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
    M = theta[2 * K * K : 3 * K * K].reshape(K, K)
    return S, L, M


def hurwitz(theta: np.ndarray, K: int) -> np.ndarray:
    """A = (J - R) Q from the parameters (S, L, M): J = S - S^T, R = L L^T + eps, Q = M M^T + eps."""
    S, L, M = _unpack(theta, K)
    eye = np.eye(K)
    return (S - S.T - L @ L.T - EPS * eye) @ (M @ M.T + EPS * eye)


def hurwitz_gradient(theta: np.ndarray, K: int, E: np.ndarray) -> np.ndarray:
    """Gradient with respect to (S, L, M) of a loss whose gradient with respect to A is E."""
    S, L, M = _unpack(theta, K)
    eye = np.eye(K)
    J = S - S.T
    R = L @ L.T + EPS * eye
    Q = M @ M.T + EPS * eye
    EQ = E @ Q
    gR = -EQ
    gQ = (J - R).T @ E
    return np.concatenate([(EQ - EQ.T).ravel(), ((gR + gR.T) @ L).ravel(), ((gQ + gQ.T) @ M).ravel()])


def hurwitz_start(A0: np.ndarray) -> np.ndarray:
    """Parameters whose A is A0 when the symmetric part of A0 is negative definite
    (Q = I, J = skew part, R = -symmetric part); otherwise R's eigenvalues are floored."""
    K = A0.shape[0]
    sym = (A0 + A0.T) / 2
    lam, V = np.linalg.eigh(-sym)
    floor = 1e-3 * max(float(np.abs(lam).max()), 1e-12)
    R0 = (V * np.maximum(lam, floor)) @ V.T
    return np.concatenate([((A0 - A0.T) / 4).ravel(),  # J = S - S^T = skew part of A0
                           np.linalg.cholesky(R0 + EPS * np.eye(K)).ravel(), np.eye(K).ravel()])


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
        ``iterations``, ``loss_ratio`` (constrained / unconstrained loss);
        when constrained also ``max_iter``, ``converged`` (False when L-BFGS
        stopped at its iteration limit or failed) and ``optimizer_message``.
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

    def loss_grad(theta):
        A = hurwitz(theta, K)
        loss = float(np.sum((A @ G) * A) - 2 * np.sum(A * H.T) + const)
        return loss, hurwitz_gradient(theta, K, 2 * (A @ G - H.T))

    A0 = ols[:, linear_cols] * d[None, :] / d[:, None] / g  # the least-squares A in these coordinates
    best = minimize(loss_grad, hurwitz_start(A0), jac=True, method="L-BFGS-B",
                    options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-15, "gtol": 1e-10})
    A = g * hurwitz(best.x, K) * d[:, None] / d[None, :]
    coef = np.zeros((K, F))
    coef[:, linear_cols] = A
    if c is not None:
        resid = Y - X @ A.T
        coef[:, bias_col] = resid.T @ c / float(c @ c)
    unc = float(np.sum((Y - Theta @ ols.T) ** 2))
    con = float(np.sum((Y - Theta @ coef.T) ** 2))
    return coef, {"constrained": True, "iterations": int(best.nit), "max_iter": int(max_iter),
                  "converged": bool(best.success), "optimizer_message": str(best.message),
                  "loss_ratio": con / unc if unc > 0 else np.inf}
