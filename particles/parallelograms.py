"""Parallelogram sets and their integer constraint matrix (docs/effective_theory.md).

A parallelogram of a labelled pair dataset D is an unordered pair {u, v} of
distinct samples with the same label; for u = (i, j) and v = (m, n) its row of
the constraint matrix A is e_i + e_j - e_m - e_n (coefficient 2 where i = j).
A representation E satisfies the parallelogram when (A E)_row = 0.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .datasets import PairDataset
from .core.validation import check_array, describe

__all__ = ["same_label_pairs", "parallelograms", "constraint_matrix", "label_constraints", "as_pair_dataset"]


def as_pair_dataset(data: PairDataset | tuple[np.ndarray, np.ndarray], p: int | None = None,
                    name: str = "data") -> PairDataset:
    """A PairDataset from a dataset or a ``(pairs, labels)`` tuple (p inferred
    from the largest token when not given); errors name ``name``."""
    if isinstance(data, PairDataset):
        return data
    if isinstance(data, tuple) and len(data) == 2:
        pairs = check_array(data[0], f"{name}[0] (pairs)", dtype="int", shape=(None, 2), low=0)
        labels = check_array(data[1], f"{name}[1] (labels)", dtype="int", shape=(pairs.shape[0],))
        if p is None:
            p = int(pairs.max()) + 1 if pairs.size else 1
        return PairDataset(pairs, labels, p)
    raise TypeError(f"{name} must be a PairDataset or a (pairs, labels) tuple, got {describe(data)}")


def same_label_pairs(labels: np.ndarray) -> np.ndarray:
    """Every pair (u, v), u < v, of samples with one label, sorted by u then v;
    shape (m, 2), int64."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    blocks = []
    for group in np.split(order, bounds):
        if len(group) > 1:
            group = np.sort(group)
            u, v = np.triu_indices(len(group), k=1)
            blocks.append(np.stack([group[u], group[v]], axis=1))
    if not blocks:
        return np.empty((0, 2), dtype=np.int64)
    out = np.concatenate(blocks).astype(np.int64)
    return out[np.lexsort((out[:, 1], out[:, 0]))]


def parallelograms(data: PairDataset | tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """P0(D): every unordered pair {u, v}, u < v, of samples with one label.

    Returns
    -------
    ndarray of int64, shape (m, 2)
        Sample indices (rows of ``data.pairs``), sorted.
    """
    return same_label_pairs(as_pair_dataset(data).labels)


def constraint_matrix(data: PairDataset | tuple[np.ndarray, np.ndarray]) -> sp.csr_matrix:
    """The integer constraint matrix A (|P0(D)| x p) as a sparse CSR matrix:
    row {(i, j), (m, n)} = e_i + e_j - e_m - e_n. Rows sum to zero."""
    data = as_pair_dataset(data)
    par = parallelograms(data)
    m = len(par)
    a, b = data.pairs[par[:, 0]].T if m else (np.empty(0, int), np.empty(0, int))
    c, d = data.pairs[par[:, 1]].T if m else (np.empty(0, int), np.empty(0, int))
    rows = np.repeat(np.arange(m), 4)
    cols = np.stack([a, b, c, d], axis=1).ravel()
    vals = np.tile(np.array([1, 1, -1, -1], dtype=np.int64), m)
    A = sp.coo_matrix((vals, (rows, cols)), shape=(m, data.p), dtype=np.int64).tocsr()
    A.sum_duplicates()
    A.eliminate_zeros()
    return A


def label_constraints(labels: np.ndarray) -> sp.csr_matrix:
    """Constraint matrix of the classification variant: a row e_i - e_j for
    every pair i < j of samples with the same label (N samples, N columns).
    ``labels``: shape (N,), integer class labels."""
    labels = check_array(labels, "labels", dtype="int", ndim=1)
    par = same_label_pairs(labels)
    m = len(par)
    rows = np.repeat(np.arange(m), 2)
    cols = par.ravel()
    vals = np.tile(np.array([1, -1], dtype=np.int64), m)
    return sp.coo_matrix((vals, (rows, cols)), shape=(m, len(labels)), dtype=np.int64).tocsr()
