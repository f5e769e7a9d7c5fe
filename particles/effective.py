"""Dynamics of the normalised effective loss (docs/effective_theory.md)::

    l0(E) = ||A E||_F^2 / m,   m = |P0(D)| (number of constraint rows)
    Z(E)  = sum_k |E_k - mean(E)|^2   ("centred", default)
          = sum_k |E_k|^2             ("uncentred", as in the reference code)
    l_eff = l0 / Z

The gradient uses the precomputed Laplacian L = A^T A:
grad l0 = (2/m) L E, grad Z = 2 (E - mean) (or 2 E), and
grad l_eff = (grad l0 Z - l0 grad Z) / Z^2. Under gradient flow
C = sum_k E_k is conserved exactly with the centred normalisation (every term
has rows summing to zero), also under explicit Euler; Z is conserved in
continuous time and drifts O(dt^2) per Euler step unless ``project=True``
rescales E about its mean to restore it.

The same machinery runs the classification variant: A holds a row
e_i - e_j for every same-label pair (:func:`particles.parallelograms.label_constraints`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

from .datasets import PairDataset
from .energy import check_embedding
from .parallelograms import constraint_matrix, label_constraints
from .kernels.euler import EulerSchedule
from .kernels.records import Recording, Span
from .kernels.status import NONFINITE, OK, check_state
from .core.validation import check_nonnegative
from .core.version import package_version
from .simulate import (MAX_GROWTH, MAX_STEPS, NonFiniteStateError, check_record_memory, chunk_bounds, growth_bound,
                       progress_reporter, stopped)
from .trajectory import Trajectory
from .core.validation import check_array, check_int, describe

__all__ = [
    "EffectiveLoss",
    "NORMALIZATIONS",
    "effective_loss",
    "effective_loss_gradient",
    "effective_loss_reference",
    "centroid_sum",
    "spread",
    "simulate_effective",
]

NORMALIZATIONS = ("centred", "uncentred")


def _check_normalization(normalization: str) -> bool:
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    return normalization == "centred"


@dataclass(frozen=True, eq=False)
class EffectiveLoss:
    """A constraint system ready for the effective-loss dynamics.

    Attributes
    ----------
    A : scipy.sparse.csr_matrix, shape (m, p)
        Integer constraint matrix.
    laplacian : ndarray, shape (p, p)
        L = A^T A (float64).
    """

    A: sp.csr_matrix
    laplacian: np.ndarray

    @classmethod
    def from_matrix(cls, A: sp.spmatrix | np.ndarray) -> "EffectiveLoss":
        """From a constraint matrix A (m x p, real and finite, m >= 1)."""
        A = _check_constraints(A)
        return cls(A=A, laplacian=np.ascontiguousarray((A.T @ A).toarray(), dtype=np.float64))

    @classmethod
    def from_pairs(cls, train: PairDataset) -> "EffectiveLoss":
        """Parallelogram constraints of a labelled pair dataset."""
        if not isinstance(train, PairDataset):
            raise TypeError(f"train must be a PairDataset, got {type(train).__name__}")
        if len(train) == 0:
            raise ValueError("train holds no pairs")
        return cls.from_matrix(constraint_matrix(train))

    @classmethod
    def classification(cls, labels: np.ndarray) -> "EffectiveLoss":
        """Classification variant: same-label samples attract."""
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.size < 2:
            raise ValueError(f"labels must be a 1-D array of at least 2 samples, got shape {labels.shape}")
        return cls.from_matrix(label_constraints(labels))

    @property
    def p(self) -> int:
        return int(self.A.shape[1])

    # ------------------------------------------- the force-law protocol (particles.law_protocol)
    # (the class-level answers are static: the string law "effective" is answered by the class)
    pair_terms = ()
    tied_terms = {}
    #: l_eff is invariant under translation and scaling of E: its gradient has no drift and no
    #: component along the centred embedding
    term_invariances = {"effective": ("translation", "scale")}
    simulates = False
    cell_lists = False

    @staticmethod
    def term_names() -> tuple[str, ...]:
        return ("effective", "wd")

    @staticmethod
    def strengths() -> dict[str, float]:
        return {"effective": 1.0, "wd": 0.0}

    @staticmethod
    def active_terms(d: int) -> tuple[str, ...]:
        return ("effective", "wd")

    @staticmethod
    def check_dimension(d: int) -> None:
        """Any d."""

    @staticmethod
    def range_names(terms) -> tuple[str, ...]:
        return ()

    @staticmethod
    def range_fields(terms) -> tuple[str, ...]:
        return ()

    @staticmethod
    def range_dependencies(term) -> tuple[str, ...]:
        return ()

    @staticmethod
    def range_values(names) -> list[float]:
        return []

    def with_ranges(self, names, values) -> "EffectiveLoss":
        return self

    def with_strengths(self, s) -> "EffectiveLoss":
        return self

    def unit_term_forces(self, X: np.ndarray, train: PairDataset, terms) -> np.ndarray:
        """(T, K, p, d): -grad l_eff for ``effective``, -x for ``wd``."""
        T, p, d = X.shape
        if self.p != p:
            raise ValueError(f"law is an effective loss on p = {self.p} tokens, but X has p = {p}")
        out = np.empty((T, len(terms), p, d))
        for t in range(T):
            for k, name in enumerate(terms):
                out[t, k] = -effective_loss_gradient(X[t], self)[1] if name == "effective" else -X[t]
        return out

    @property
    def n_constraints(self) -> int:
        return int(self.A.shape[0])


def _as_loss(system: EffectiveLoss | PairDataset, name: str = "system") -> EffectiveLoss:
    if isinstance(system, EffectiveLoss):
        return system
    if not isinstance(system, PairDataset):
        raise TypeError(f"{name} must be an EffectiveLoss or a PairDataset, got {describe(system)}")
    return EffectiveLoss.from_pairs(system)


def _check_E(E: np.ndarray, p: int, name: str = "E") -> np.ndarray:
    return check_embedding(E, p, name, allow_1d=True)


@njit(cache=True, inline="always")
def _mean_and_spread(E, centred):
    """The column mean (zeros when not centred) and Z about it."""
    p, d = E.shape
    mean = np.zeros(d)
    if centred:
        for k in range(p):
            for c in range(d):
                mean[c] += E[k, c]
        for c in range(d):
            mean[c] /= p
    z = 0.0
    for k in range(p):
        for c in range(d):
            dev = E[k, c] - mean[c]
            z += dev * dev
    return mean, z


@njit(cache=True)
def loss_and_grad(E, L, m, centred, grad):
    """l0, Z and grad l_eff (written into grad) of E (p, d)."""
    p, d = E.shape
    mean, z = _mean_and_spread(E, centred)
    # LE and l0 = tr(E^T L E) / m
    l0 = 0.0
    for i in range(p):
        for c in range(d):
            acc = 0.0
            for j in range(p):
                acc += L[i, j] * E[j, c]
            grad[i, c] = acc
            l0 += E[i, c] * acc
    l0 /= m
    if z <= 0.0:
        return l0, z
    inv_z = 1.0 / z
    for i in range(p):
        for c in range(d):
            grad[i, c] = (2.0 / m * grad[i, c] - l0 * inv_z * 2.0 * (E[i, c] - mean[c])) * inv_z
    return l0, z


class EffectiveFlow(NamedTuple):
    """The effective-loss flow as the compiled loop takes it: the constraint
    Laplacian L, the constraint count m, the normalisation (``centred``) and,
    with ``project``, the spread Z the state is rescaled to after every step."""

    L: Any  # scipy.sparse CSR pieces or a dense array, as loss_and_grad takes it
    m: float
    centred: bool
    project: bool
    z_target: float


@njit(cache=True)
def _run_effective(E, flow, sched, span, rec):
    """Euler steps ``span.start .. span.stop - 1`` on E in place (step
    ``sched.dt``); records E into ``rec.traj`` and (l_eff, Z, C_0..C_{d-1})
    into ``rec.energies`` before step i when i % sched.record_every == 0.
    With ``flow.project`` E is rescaled about its mean after every step so
    that Z = flow.z_target. Stops with RUNAWAY once max |E| exceeds
    sched.max_abs. Returns (status, step, slot)."""
    L = flow.L
    m = flow.m
    centred = flow.centred
    project = flow.project
    z_target = flow.z_target
    dt = sched.dt
    record_every = sched.record_every
    max_abs = sched.max_abs
    traj = rec.traj
    series = rec.energies
    p, d = E.shape
    grad = np.empty_like(E)
    slot = span.slot
    for i in range(span.start, span.stop):
        l0, z = loss_and_grad(E, L, m, centred, grad)
        if not (np.isfinite(l0) and np.isfinite(z)) or z <= 0.0:
            return NONFINITE, i, slot
        if i % record_every == 0:
            for k in range(p):
                for c in range(d):
                    traj[slot, k, c] = E[k, c]
            series[slot, 0] = l0 / z
            series[slot, 1] = z
            for c in range(d):
                s = 0.0
                for k in range(p):
                    s += E[k, c]
                series[slot, 2 + c] = s
            slot += 1
        for k in range(p):
            for c in range(d):
                E[k, c] -= dt * grad[k, c]
        if project:
            mean, z_new = _mean_and_spread(E, centred)
            if not z_new > 0.0:
                return NONFINITE, i + 1, slot
            scale = np.sqrt(z_target / z_new)
            for k in range(p):
                for c in range(d):
                    E[k, c] = mean[c] + scale * (E[k, c] - mean[c])
        code = check_state(E, max_abs)
        if code != OK:
            return code, i + 1, slot
    return OK, span.stop, slot


def effective_loss(E: np.ndarray, system: EffectiveLoss | PairDataset, normalization: str = "centred") -> float:
    """l_eff(E) = l0(E) / Z(E) for a training set (or prepared constraints)."""
    return effective_loss_gradient(E, system, normalization)[0]


def effective_loss_gradient(E: np.ndarray, system: EffectiveLoss | PairDataset,
                            normalization: str = "centred") -> tuple[float, np.ndarray]:
    """``(l_eff, grad l_eff)`` by the compiled kernel (gradient shape (p, d))."""
    centred = _check_normalization(normalization)
    loss = _as_loss(system)
    E = _check_E(E, loss.p)
    grad = np.empty_like(E)
    l0, z = loss_and_grad(E, loss.laplacian, float(loss.n_constraints), centred, grad)
    if z <= 0:
        raise ValueError("Z(E) = 0: all embeddings coincide, l_eff is undefined")
    return l0 / z, grad


def _check_constraints(A: Any, p: int | None = None) -> sp.csr_matrix:
    """A as a float64 CSR matrix with m >= 1 rows (and p columns), real and finite."""
    if sp.issparse(A):
        A = sp.csr_matrix(A)
        check_array(A.data, "A", ndim=1)  # dtype and finiteness of the stored entries
        A = A.astype(np.float64)
    else:
        A = sp.csr_matrix(check_array(A, "A", ndim=2))
    if A.shape[0] == 0:
        raise ValueError("A (the constraint matrix) has no rows: the training set holds no parallelogram")
    if p is not None and A.shape[1] != p:
        raise ValueError(f"A must have one column per token of E (p = {p}), got shape {A.shape}")
    return A


def effective_loss_reference(E: np.ndarray, A: sp.spmatrix | np.ndarray,
                             normalization: str = "centred") -> tuple[float, np.ndarray]:
    """NumPy reference of ``(l_eff, grad l_eff)`` from A itself: A^T (A E)."""
    centred = _check_normalization(normalization)
    E = check_array(E, "E", ndim=2, min_size=1)
    A = _check_constraints(A, E.shape[0])
    m = A.shape[0]
    AE = A @ E
    l0 = float(np.sum(AE**2)) / m
    dev = E - E.mean(axis=0) if centred else E
    z = float(np.sum(dev**2))
    if z == 0:
        raise ValueError("E has Z(E) = 0 (all embeddings coincide): the normalized effective loss is undefined")
    grad = ((2.0 / m) * (A.T @ AE) * z - l0 * 2.0 * dev) / z**2
    return l0 / z, grad


def centroid_sum(E: np.ndarray) -> np.ndarray:
    """C = sum_k E_k, shape (d,): conserved by the centred flow."""
    E = check_array(E, "E", ndim=2)
    if E.shape[0] < 1:
        raise ValueError(f"E must have shape (p, d) with at least 1 token (row), got {E.shape}")
    return E.sum(axis=0)


def spread(E: np.ndarray, normalization: str = "centred") -> float:
    """Z = sum_k |E_k - mean|^2 (centred) or sum_k |E_k|^2 (uncentred)."""
    centred = _check_normalization(normalization)
    E = check_array(E, "E", ndim=2, min_size=1)
    dev = E - E.mean(axis=0) if centred else E
    return float(np.sum(dev**2))


def simulate_effective(
    E0: np.ndarray,
    train: EffectiveLoss | PairDataset,
    *,
    steps: int,
    dt: float,
    normalization: str = "centred",
    project: bool = False,
    record_every: int | None = None,
    max_growth: float = MAX_GROWTH,
    callback: Callable[[int, int], None] | None = None,
    meta: dict[str, Any] | None = None,
) -> Trajectory:
    """Gradient flow dE/dt = -grad l_eff by explicit Euler.

    Parameters
    ----------
    E0 : ndarray, shape (p, d) or (p,)
    train : PairDataset or EffectiveLoss
        Training pairs (their parallelograms) or prepared constraints (e.g.
        :meth:`EffectiveLoss.classification`).
    steps : int in [1, MAX_STEPS = 10**9]
    dt : float > 0
        Learning rate eta.
    normalization : {"centred", "uncentred"}
    project : bool
        Rescale E about its mean after every step so Z keeps its initial value.
    record_every : int, optional
        Snapshot stride (default ``max(1, steps // 100)``); the final state is
        always recorded.
    max_growth : float > 1
        Stop with :class:`~particles.RunawayError` once max |E| exceeds
        max_growth * max(1, max |E0|) (default 1e6).
    callback : callable(step, steps), optional
        Progress, about 100 calls.

    Returns
    -------
    Trajectory
        ``embeddings`` per snapshot and the series ``l_eff``, ``Z`` and
        ``C0``, ``C1``, ... (the components of C).
    """
    centred = _check_normalization(normalization)
    loss = _as_loss(train, "train")
    E = _check_E(E0, loss.p, "E0").copy()
    bound = growth_bound(E, max_growth)
    steps = check_int(steps, "steps", 1, MAX_STEPS)
    dt = check_nonnegative(dt, "dt", strict=True)
    record_every = max(1, steps // 100) if record_every is None else check_int(record_every, "record_every", 1)
    if spread(E, normalization) <= 0:
        raise ValueError("E0 has Z = 0 (all embeddings coincide): l_eff is undefined")
    d = E.shape[1]
    check_record_memory(steps // record_every + 2, loss.p, d, extra_series=2 + d)
    record_steps = list(range(0, steps, record_every)) + [steps]
    traj = np.empty((len(record_steps), loss.p, d))
    series = np.empty((len(record_steps), 2 + d))
    m = float(loss.n_constraints)
    bounds = chunk_bounds(steps, callback)
    slot = 0
    z0 = spread(E, normalization)
    report = progress_reporter(callback, steps)
    flow = EffectiveFlow(loss.laplacian, m, centred, bool(project), z0)
    sched = EulerSchedule(dt, record_every, 0.0, 0.0, steps, bound)
    rec = Recording(traj, series)
    for start, stop in zip(bounds[:-1], bounds[1:]):
        status, reached, slot = _run_effective(E, flow, sched, Span(start, stop, slot), rec)
        if status != OK:
            raise stopped(status, int(reached), bound, None, "simulate_effective")
        report(stop)
    grad = np.empty_like(E)
    l0, z = loss_and_grad(E, loss.laplacian, m, centred, grad)
    if not (np.isfinite(l0) and z > 0 and np.all(np.isfinite(E))):
        raise NonFiniteStateError(steps, None, "simulate_effective")
    traj[slot] = E
    series[slot] = [l0 / z, z, *E.sum(axis=0)]
    scalars = {"l_eff": series[:, 0], "Z": series[:, 1]}
    scalars.update({f"C{c}": series[:, 2 + c] for c in range(d)})
    info = {"source": "particles.simulate_effective", "p": loss.p, "d": d, "steps": steps, "dt": dt,
            "normalization": normalization, "project": bool(project), "n_constraints": loss.n_constraints,
            "record_every": record_every, "version": package_version()}
    if isinstance(train, PairDataset):
        info.update(dataset=train.name, train_indices=train.indices.tolist())
    info.update(meta or {})
    return Trajectory(traj, np.asarray(record_steps, dtype=np.int64), scalars=scalars, meta=info)
