"""Representation quality (RQI), predicted accuracy and learning phases
(docs/effective_theory.md)."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from particles.datasets import PairDataset
from particles.parallelograms import constraint_matrix, parallelograms
from particles.core.validation import check_array, check_bool, check_float

__all__ = ["normalized_embedding", "realised_parallelograms", "rqi", "rqi_series", "predicted_accuracy", "classify_phase",
           "PHASES"]

PHASES = ("comprehension", "grokking", "memorization", "confusion")


def _check(E: np.ndarray, dataset: PairDataset, delta2: float, name: str = "E") -> np.ndarray:
    if not isinstance(dataset, PairDataset):
        raise TypeError(f"dataset must be a PairDataset, got {type(dataset).__name__}")
    E = check_array(E, name, ndim=(1, 2))
    if E.ndim == 1:
        E = E[:, None]
    if E.shape[0] != dataset.p:
        raise ValueError(f"{name} must have shape (p, d) with p = {dataset.p}, got {np.shape(E)}")
    check_float(delta2, "delta2", 0.0, strict=True)
    return E


def normalized_embedding(E: np.ndarray) -> np.ndarray:
    """E~ = (E - mean) / sqrt(Z / p), so that sum_k |E~_k|^2 = p."""
    E = check_array(E, "E", ndim=2, min_size=1)
    dev = E - E.mean(axis=0)
    z = float(np.sum(dev**2))
    if z <= 0:
        raise ValueError("Z(E) = 0: all embeddings coincide")
    return dev / math.sqrt(z / E.shape[0])


def realised_parallelograms(E: np.ndarray, dataset: PairDataset, delta2: float = 0.01) -> np.ndarray:
    """Boolean mask over P0(dataset): mean over dimensions of
    (E~_i + E~_j - E~_m - E~_n)^2 < delta2."""
    E = _check(E, dataset, delta2)
    A = constraint_matrix(dataset).astype(np.float64)
    residual = A @ normalized_embedding(E)
    return np.mean(residual**2, axis=1) < delta2


def rqi(E: np.ndarray, dataset: PairDataset, delta2: float = 0.01) -> float:
    """Representation quality index: realised share of the parallelograms of
    the full dataset (pass D0, not a training split)."""
    mask = realised_parallelograms(E, dataset, delta2)
    if mask.size == 0:
        raise ValueError("the dataset holds no parallelogram")
    return float(mask.mean())


def rqi_series(embeddings: np.ndarray, dataset: PairDataset, delta2: float = 0.01) -> np.ndarray:
    """RQI of every snapshot of a (S, p, d) stack (one constraint matrix)."""
    if not isinstance(dataset, PairDataset):
        raise TypeError(f"dataset must be a PairDataset, got {type(dataset).__name__}")
    stack = check_array(embeddings, "embeddings", ndim=3, min_size=1)
    if stack.shape[1] != dataset.p:
        raise ValueError(f"embeddings must have shape (S, p, d) with p = {dataset.p}, got {stack.shape}")
    _check(stack[0], dataset, delta2, "embeddings")
    dev = stack - stack.mean(axis=1, keepdims=True)
    z = np.sum(dev**2, axis=(1, 2))
    if np.any(z <= 0):
        raise ValueError("embeddings: a snapshot has Z = 0 (all embeddings coincide), so its RQI is undefined")
    normed = dev / np.sqrt(z / stack.shape[1])[:, None, None]
    A = constraint_matrix(dataset).toarray().astype(float)
    if A.shape[0] == 0:
        raise ValueError("the dataset holds no parallelogram")
    residual = np.einsum("mp,spd->smd", A, normed)
    return np.mean(np.mean(residual**2, axis=2) < delta2, axis=1)


def _rowspace_basis(A: sp.spmatrix) -> np.ndarray:
    dense = A.toarray().astype(float)
    if dense.shape[0] == 0:
        return np.zeros((dense.shape[1], 0))
    _, s, vt = np.linalg.svd(dense, full_matrices=False)
    r = int(np.sum(s > 1e-9 * max(s.max(), 1.0)))
    return vt[:r].T


def predicted_accuracy(E: np.ndarray | None, train: PairDataset, dataset: PairDataset, delta2: float = 0.01,
                       ideal: bool = False) -> float:
    """Acc^ = |D^| / |D0|, D^ = the training set plus every validation sample
    v for which some training sample u makes a parallelogram {u, v} that is
    realised by E (``ideal=False``), or implied by the training set's
    parallelograms, i.e. its row lies in the row space of A(P0(train))
    (``ideal=True``, E unused).

    ``train.indices`` must index ``dataset`` (as ``dataset.split`` gives).
    """
    if not isinstance(train, PairDataset):
        raise TypeError(f"train must be a PairDataset, got {type(train).__name__}")
    if not isinstance(dataset, PairDataset):
        raise TypeError(f"dataset must be a PairDataset, got {type(dataset).__name__}")
    if len(train) == 0:
        raise ValueError("train is empty")
    ideal = check_bool(ideal, "ideal")
    if not ideal:
        E = _check(E, dataset, delta2)
    n = len(dataset)
    if train.indices.max() >= n or not np.array_equal(dataset.pairs[train.indices], train.pairs):
        raise ValueError("train.indices do not index dataset (use dataset.split to make the training set)")
    in_train = np.zeros(n, dtype=bool)
    in_train[train.indices] = True
    par = parallelograms(dataset)
    cross = in_train[par[:, 0]] != in_train[par[:, 1]]
    par = par[cross]
    if ideal:
        A_full = constraint_matrix(dataset).toarray().astype(float)[cross]
        basis = _rowspace_basis(constraint_matrix(train))
        residual = A_full - (A_full @ basis) @ basis.T
        ok = np.linalg.norm(residual, axis=1) < 1e-8
    else:
        ok = realised_parallelograms(E, dataset, delta2)[cross]
    val_side = np.where(in_train[par[:, 0]], par[:, 1], par[:, 0])
    predicted = in_train.copy()
    predicted[val_side[ok]] = True
    return float(predicted.mean())


def _reached(t, budget: float) -> bool:
    return t is not None and math.isfinite(t) and t <= budget


def classify_phase(t_train: float | None, t_val: float | None, budget: float = 1e5, gap: float = 1e3,
                   val_without_train: str = "comprehension") -> str:
    """Phase of a run from the steps at which train and validation accuracy
    first reached the threshold (None or inf: never within the budget).

    comprehension: both reached and t_val - t_train < gap; grokking: both,
    gap >= gap; memorization: only train; confusion: neither. Validation
    without training is not in the paper's table: ``val_without_train`` says
    what it counts as (``"comprehension"`` or ``"confusion"``; with few
    validation pairs a momentary hit by chance is likely, and a run that never
    fits its training data has comprehended nothing, so the phase-diagram
    trainer uses ``"confusion"``).
    """
    if val_without_train not in ("comprehension", "confusion"):
        raise ValueError(f"val_without_train must be 'comprehension' or 'confusion', got {val_without_train!r}")
    budget = check_float(budget, "budget", 0.0, strict=True)
    gap = check_float(gap, "gap", 0.0, strict=True)
    t_train = check_float(t_train, "t_train", 0.0, allow_none=True, allow_inf=True)
    t_val = check_float(t_val, "t_val", 0.0, allow_none=True, allow_inf=True)
    train_ok, val_ok = _reached(t_train, budget), _reached(t_val, budget)
    if train_ok and val_ok:
        return "comprehension" if t_val - t_train < gap else "grokking"
    if train_ok:
        return "memorization"
    if val_ok:
        return val_without_train
    return "confusion"
