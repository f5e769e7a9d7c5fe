"""Flow-map formulation for linear systems: fit the H-step map, then take its logarithm.

For dx/dt = A x + b the exact solution over a lag tau = H dt is

    [x(t + tau); 1] = exp(tau [[A, b], [0, 0]]) [x(t); 1] = [[M, c], [0, 1]] [x(t); 1],

so a least-squares fit of x(t + tau) on x(t) (and a constant) over every
pair of samples H apart estimates M and c without any derivative, and
A, b follow from the matrix logarithm of the augmented map divided by tau.
The fit measures what a long simulation needs, the state a lag ahead,
rather than local slopes, which the fast early part of a run dominates.
The system is stable exactly when the spectral radius of M is below 1; with
``stable=True`` eigenvalues of M outside radius exp(-1e-3) are pulled onto
it (the continuous decay rate becomes at least 1e-3 / tau). A negative real
eigenvalue lambda of M (a mode flipping sign every lag) has no real
logarithm: no real flow flips a mode's sign, the lag does not resolve it.
Such a mode keeps its fitted decay, |lambda| per lag (A gets log|lambda| /
tau on it), and the map's rest state x* = (I - M)^-1 c is kept (of the
projected map with ``stable=True``), so b = -A x*: only the sign flip is
dropped, not where the fitted map settles.

The map is fitted as an increment, x(t + tau) - x(t) = (M - I) x(t) + c,
by ridge regression on the columns (1, x) scaled to unit RMS, with penalty
``shrinkage`` times the number of rows: ``shrinkage`` 0 is plain least
squares, a large one pulls the map to the identity (M = I, c = 0: "nothing
changes", the persistence forecast). The default, ``shrinkage="auto"``,
chooses it by forecasting inside the fit window: every run's first two
thirds are fitted at each value of ``SHRINKAGE_GRID`` (and infinity, the
identity map), each run's last third is forecast by iterating the map from
its observed state at the split, and the value with the smallest relative
error (the first, i.e. the least shrinkage, among equals) is used on the whole
window. Where the window's own later part is forecast best by the plain fit
(the survival MLP runs: 15 of 16 new runs chose 0) nothing changes; where the
plain map overshoots (grokking runs, whose first half holds the
transition), the forecast moves towards persistence. Runs too short to
split (a last third shorter than one lag, or fewer rows than parameters in
the first two thirds) use 0, and ``shrinkage_`` of the bound formulation
says which was used.

Needs uniformly spaced samples with the same step in every run. Linear
models only.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from scipy.linalg import expm, logm

from .derivatives import is_uniform
from particles.core.validation import check_int
from .differentiation import Formulation
from .quality import warn_quality
from .integrate import augmented
from .library import Library
from .noise import dominant_period

__all__ = ["FlowMap", "map_to_generator", "fit_flow_map"]

RADIUS = float(np.exp(-1e-3))
#: shrinkage values ``shrinkage="auto"`` compares (besides infinity, the identity map)
SHRINKAGE_GRID = (0.0,) + tuple(float(v) for v in 10.0 ** np.arange(-6.0, 3.5, 0.5))
#: share of each run ``shrinkage="auto"`` forecasts to choose the shrinkage
VALIDATION_SHARE = 1.0 / 3.0
LOGM_TOLERANCE = 1e-8  # relative 1-norm error of expm(logm(map)) beyond which fit warns


class FlowMap(Formulation):
    """Rows (1, x(t)) -> x(t + H dt) for :class:`~fitting.ode.LinearODE`.

    Parameters
    ----------
    horizon : int >= 1 or None
        Lag H in samples. None: a quarter of the data's dominant period
        (:func:`~fitting.ode.noise.dominant_period`, so an oscillation turns
        by at most a quarter turn per lag and the logarithm is not aliased),
        at most a fifth of the shortest run.
    shrinkage : float >= 0, inf, or "auto"
        Ridge penalty pulling the map towards the identity (see the module
        notes); "auto" (default) chooses it by forecasting the last third
        of the fit window, 0 is plain least squares.

    Attributes (after binding to data)
    ----------------------------------
    shrinkage_ : float
        The shrinkage used (``inf``: the identity map, persistence).
    shrinkage_errors_ : dict
        With ``shrinkage="auto"``: the relative forecast error of the
        window's last third at each compared value.

    Notes
    -----
    The regressor is not used: the map is fitted by least squares (a sparse
    A does not give a sparse M).
    """

    pointwise = True
    linear_only = True
    kind = "flowmap"
    estimates_derivatives = False
    maps_states = True

    def description(self) -> str:
        lag = self.lag if self.horizon is not None and hasattr(self, "step_") else None  # known once bound
        return ("flow map (the state one lag ahead" + (f", lag {lag:.4g}" if lag is not None else "")
                + "; no derivatives)")

    def __init__(self, horizon: int | None = None, shrinkage: float | str = "auto"):
        self.horizon = horizon
        self.shrinkage = shrinkage

    def check(self) -> None:
        check_int(self.horizon, "FlowMap horizon", 1, allow_none=True, unit=" (samples)")
        if not (isinstance(self.shrinkage, str) and self.shrinkage == "auto"):
            if isinstance(self.shrinkage, str) or isinstance(self.shrinkage, bool) or not isinstance(
                    self.shrinkage, (int, float, np.integer, np.floating)):
                raise TypeError(f"FlowMap shrinkage must be a number >= 0 (inf allowed) or 'auto', "
                                f"got {self.shrinkage!r}")
            if not float(self.shrinkage) >= 0:
                raise ValueError(f"FlowMap shrinkage must be a number >= 0 (inf allowed) or 'auto', "
                                 f"got {self.shrinkage!r}")

    def min_samples(self) -> int:
        return (self.horizon if self.horizon is not None else 1) + 1

    def bind(self, runs, times) -> "FlowMap":
        steps = [float(ti[1] - ti[0]) for ti in times if len(ti) > 1]
        if any(len(ti) > 2 and not is_uniform(ti) for ti in times) or (
                steps and not np.allclose(steps, steps[0], rtol=1e-9)):
            raise ValueError("the flow-map formulation needs uniformly spaced samples with the same step in "
                             "every run")
        bound = copy.copy(self)
        bound.step_ = steps[0] if steps else 1.0
        if self.horizon is None:
            T = min(len(r) for r in runs)
            bound.horizon = int(max(1, min(T // 5, round(0.25 * dominant_period(runs)))))
        if isinstance(self.shrinkage, str):
            bound.shrinkage_, bound.shrinkage_errors_ = choose_shrinkage(runs, bound.horizon)
        else:
            bound.shrinkage_ = float(self.shrinkage)
        return bound

    def rows(self, x: np.ndarray, t: np.ndarray, library: Library) -> tuple[np.ndarray, np.ndarray]:
        H = self.horizon if self.horizon is not None else 1
        return library.features(x[:-H]), x[H:]

    @property
    def lag(self) -> float:
        """tau = H dt in the units of t (after ``bind``)."""
        return self.horizon * self.step_


def fit_flow_map(Theta: np.ndarray, Y: np.ndarray, shrinkage: float = 0.0) -> np.ndarray:
    """The map [c | M] (K, K + 1) of rows Theta = (1, x(t)) (n, K + 1) to
    Y = x(t + tau) (n, K): the increment Y - x(t) regressed on Theta's
    columns scaled to unit RMS, ridge penalty ``shrinkage`` times n
    (``inf``: the identity map)."""
    return flow_maps(Theta, Y, (shrinkage,))[0]


def flow_maps(Theta: np.ndarray, Y: np.ndarray, shrinkages) -> list[np.ndarray]:
    """:func:`fit_flow_map` at each of ``shrinkages``, the products that do
    not depend on the shrinkage formed once."""
    K = Y.shape[1]
    increment = Y - Theta[:, 1:]
    ridge = None
    maps = []
    for shrinkage in shrinkages:
        W = np.zeros((K + 1, K))
        if shrinkage == 0:
            W = np.linalg.lstsq(Theta, increment, rcond=None)[0]
        elif np.isfinite(shrinkage):
            if ridge is None:
                scale = np.sqrt(np.mean(Theta**2, axis=0))
                scale[scale == 0] = 1.0
                Z = Theta / scale
                ridge = (scale, Z.T @ Z, Z.T @ increment, len(Z))
            scale, ZZ, Zi, n = ridge
            W = np.linalg.solve(ZZ + shrinkage * n * np.eye(K + 1), Zi) / scale[:, None]
        C = W.T.copy()
        C[:, 1:] += np.eye(K)
        maps.append(C)
    return maps


def choose_shrinkage(runs: list[np.ndarray], horizon: int) -> tuple[float, dict]:
    """The shrinkage of ``SHRINKAGE_GRID`` (or inf) whose map, fitted on the
    first two thirds of every run, best forecasts their last thirds (lag
    ``horizon``, iterated from the observed state at the split); 0 with no
    errors when the runs are too short to split."""
    K = runs[0].shape[1]
    fit_parts, tests = [], []
    for r in runs:
        split = int(round(len(r) * (1.0 - VALIDATION_SHARE)))
        if len(r) - 1 - split >= horizon and split > horizon:
            fit_parts.append(r[:split + 1])
            tests.append(r[split::horizon])
    if not tests:
        return 0.0, {}
    Theta = np.vstack([np.column_stack([np.ones(len(f) - horizon), f[:-horizon]]) for f in fit_parts])
    Y = np.vstack([f[horizon:] for f in fit_parts])
    if len(Theta) < 2 * (K + 1):
        return 0.0, {}
    norm = np.sqrt(sum(float(np.sum(obs**2)) for obs in tests))
    errors = {}
    values = SHRINKAGE_GRID + (float("inf"),)
    for value, C in zip(values, flow_maps(Theta, Y, values)):
        total = 0.0
        with np.errstate(all="ignore"):
            for obs in tests:
                state, sq = obs[0], 0.0
                for target in obs[1:]:
                    state = C[:, 1:] @ state + C[:, 0]
                    sq += float(np.sum((state - target) ** 2))
                total += sq
        errors[value] = float(np.sqrt(total) / norm) if norm > 0 and np.isfinite(total) else float("inf")
    best = min(errors, key=lambda v: (errors[v], v))
    return best, errors


def map_to_generator(C: np.ndarray, tau: float, stable: bool) -> tuple[np.ndarray, dict]:
    """[b | A] from the fitted map [c | M] over lag tau.

    Returns the coefficients (K, K + 1) and ``info``: the largest
    |eigenvalue| of M before projection, whether it was projected, how many
    negative real eigenvalues (modes flipping sign every lag, which no real
    flow gives) were replaced by their modulus (keeping the map's rest
    state), the largest imaginary part the real logarithm dropped
    (rounding level when all went well), the relative 1-norm error
    ||expm(L) - map|| / ||map|| of the logarithm L actually used and, when
    modes were changed, how well the eigenvectors rebuild the fitted M
    (``eigen_rebuild_error``; 0 otherwise). ``fit`` warns when either
    exceeds ``LOGM_TOLERANCE``. With ``stable=True`` the rest state kept is
    that of the projected map.
    """
    K = C.shape[0]
    M, c = C[:, 1:], C[:, 0]
    lam, V = np.linalg.eig(M)
    radius = float(np.abs(lam).max())
    # a mode that flips sign every lag (negative real eigenvalue) has no real
    # logarithm: no real flow gives it at this lag, the lag does not resolve it
    flips = (np.abs(lam.imag) <= 1e-12 * np.abs(lam)) & (lam.real < 0)
    kept = lam
    projected = False
    if stable and radius >= RADIUS:
        r = np.abs(lam)
        kept = np.where(r >= RADIUS, lam / r * RADIUS, lam)
        projected = True
    rebuild = 0.0
    if projected or flips.any():
        new = np.where(flips, np.abs(kept), kept)
        Vinv = np.linalg.inv(V)

        def through_modes(ev):  # the map with eigenvalues ev on M's eigenvectors
            return np.real((V * ev) @ Vinv)

        # the modes are changed through V: measure how well V rebuilds the fitted map
        # (a defective or nearly defective map is not rebuilt; fit then warns)
        rebuild = float(np.linalg.norm(through_modes(lam) - M, 1) / max(np.linalg.norm(M, 1), 1e-300))
        M = through_modes(new)
        # keep the rest state x* = (I - M_kept)^-1 c of the (projected) fitted map:
        # c -> c - (M_new - M_kept) x*, computed mode by mode (1 - kept > 1 on a flip)
        with np.errstate(all="ignore"):
            shift = np.where(flips, (new - kept) / (1.0 - kept), 0.0)
        c = c - np.real(V @ (shift * (Vinv @ c)))
    aug = augmented(M, c, corner=1.0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # scipy warns from ~1e3 machine epsilons on; the error is measured below instead
        warnings.filterwarnings("ignore", message="logm result may be inaccurate", category=RuntimeWarning)
        L = logm(aug)
    imag = float(np.abs(np.imag(L)).max()) if np.iscomplexobj(L) else 0.0
    L = np.real(L)
    error = float(np.linalg.norm(expm(L) - aug, 1) / np.linalg.norm(aug, 1))
    if not max(error, rebuild) <= LOGM_TOLERANCE:
        what = (f"the map's eigenvectors rebuild it only to {rebuild:.1e} (a nearly defective map)"
                if not rebuild <= LOGM_TOLERANCE else f"its logarithm reproduces the map only to {error:.1e}")
        warn_quality(f"flow map: {what} (relative, 1-norm), so the fitted A, b do not follow the fitted map "
                     f"closely; a shorter lag (FlowMap(horizon)) may help")
    L = L / tau
    coef = np.column_stack([L[:K, K], L[:K, :K]])
    return coef, {"map_spectral_radius": radius, "projected": projected, "sign_flipping_modes": int(flips.sum()),
                  "dropped_imaginary": imag, "logm_error": error, "eigen_rebuild_error": rebuild}
