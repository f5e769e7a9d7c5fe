"""Exact rank and nullity of integer constraint matrices, degeneracy, and the
Hessian spectrum that sets the grokking rate (docs/effective_theory.md).

Exactness of :func:`nullity`. Over any prime q, rank_q(A) <= rank(A) (a minor
that vanishes over the rationals vanishes mod q). If rank(A) = r, some r x r
minor M is a nonzero integer, and by Hadamard's inequality
|M| <= prod of the r largest row norms of A = H. M is divisible by every prime
of a set only if it is divisible by their product; so when the product of the
primes exceeds H, at least one of them leaves M nonzero and the largest of the
ranks mod those primes is exactly r. We take as many primes below 2^31 as the
bound requires (one for parallelogram rows up to p = 23, whose norms are at
most sqrt(8)); arithmetic stays within int64.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from numba import njit

from particles.datasets import PairDataset
from particles.parallelograms import as_pair_dataset, constraint_matrix
from particles.core.validation import check_array, check_float, check_int

__all__ = ["nullity", "rank", "degeneracy", "laplacian_spectrum", "hessian_spectrum", "grokking_rate",
           "predicted_steps", "DENSE_MAX_P"]

#: primes below 2**31: products of two residues fit in int64
PRIMES = np.array([2147483647, 2147483629, 2147483587, 2147483579, 2147483563, 2147483549, 2147483543,
                   2147483497], dtype=np.int64)
#: above this many tokens the spectrum uses sparse eigsh instead of dense eigh
DENSE_MAX_P = 400


@njit(cache=True)
def _inverse_mod(a, q):
    """a^-1 mod q by the extended Euclidean algorithm (q prime, a != 0)."""
    t, new_t = 0, 1
    r, new_r = q, a % q
    while new_r != 0:
        quotient = r // new_r
        t, new_t = new_t, t - quotient * new_t
        r, new_r = new_r, r - quotient * new_r
    return t % q


@njit(cache=True)
def reduce_into_basis(row, basis, pivots, rank, q):
    """Reduce ``row`` (mod q, in place) by the echelon ``basis``; if something
    is left, normalise it, add it as a new basis row and return rank + 1."""
    p = row.shape[0]
    for b in range(rank):
        col = pivots[b]
        f = row[col]
        if f != 0:
            for c in range(p):
                row[c] = (row[c] - f * basis[b, c]) % q
    for col in range(p):
        if row[col] != 0:
            inv = _inverse_mod(row[col], q)
            for c in range(p):
                basis[rank, c] = (row[c] * inv) % q
            pivots[rank] = col
            return rank + 1
    return rank


@njit(cache=True)
def _rank_mod(dense, q):
    """Rank over GF(q) of an integer matrix (m, p)."""
    m, p = dense.shape
    basis = np.zeros((p, p), dtype=np.int64)
    pivots = np.zeros(p, dtype=np.int64)
    row = np.empty(p, dtype=np.int64)
    rank = 0
    for i in range(m):
        for c in range(p):
            row[c] = dense[i, c] % q
        rank = reduce_into_basis(row, basis, pivots, rank, q)
        if rank == p:
            break
    return rank


def _primes_needed(A: sp.csr_matrix) -> int:
    norms = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).ravel())
    r = min(A.shape)
    top = np.sort(norms[norms > 0])[::-1][:r]
    log2_bound = float(np.sum(np.log2(top))) if top.size else 0.0
    k = int(math.floor(log2_bound / 30.99)) + 1
    if k > len(PRIMES):
        raise ValueError(f"the matrix is too large for the exact rank (Hadamard bound 2^{log2_bound:.0f} needs "
                         f"{k} primes, {len(PRIMES)} available)")
    return k


def _as_integer_matrix(A) -> sp.csr_matrix:
    if isinstance(A, (PairDataset, tuple)):
        raise TypeError("A must be a constraint matrix; use degeneracy() for a dataset")
    if not sp.issparse(A):
        A = check_array(A, "A", dtype="number", ndim=2)
    elif A.dtype.kind not in "iuf":
        raise TypeError(f"A must be an integer matrix, got a sparse matrix of dtype {A.dtype}")
    A = sp.csr_matrix(A)
    if A.dtype.kind == "f":
        if not np.all(np.isfinite(A.data)) or not np.all(A.data == np.round(A.data)):
            raise ValueError("A must hold integers (it is a constraint matrix)")
        A = A.astype(np.int64)
    elif A.dtype.kind not in "iu":
        raise TypeError(f"A must be an integer matrix, got dtype {A.dtype}")
    return A.astype(np.int64)


def rank(A: sp.spmatrix | np.ndarray) -> int:
    """Exact rank of an integer matrix (see the module docstring)."""
    A = _as_integer_matrix(A)
    if A.shape[0] == 0 or A.nnz == 0:
        return 0
    dense = np.ascontiguousarray(A.toarray())
    return max(int(_rank_mod(dense, q)) for q in PRIMES[: _primes_needed(A)])


def nullity(A: sp.spmatrix | np.ndarray) -> int:
    """Exact nullity p - rank(A) of an integer matrix A (m x p)."""
    A = _as_integer_matrix(A)
    return int(A.shape[1]) - rank(A)


def degeneracy(data: PairDataset | tuple[np.ndarray, np.ndarray]) -> int:
    """n0 = p - rank(A(P0(D))): the dimension of the representations the
    training set leaves free (per embedding dimension). For addition n0 >= 2
    whenever P0 is non-empty; n0 = 2 means the linear structure is fixed; with
    no parallelogram n0 = p."""
    data = as_pair_dataset(data)
    if len(data) == 0:
        raise ValueError("the training set is empty")
    return nullity(constraint_matrix(data))


def laplacian_spectrum(data: PairDataset | tuple[np.ndarray, np.ndarray], k: int | None = None) -> np.ndarray:
    """Ascending eigenvalues of L = A^T A (all, or the ``k`` smallest).

    Dense ``eigh`` up to DENSE_MAX_P tokens, sparse ``eigsh`` (shift-invert
    near 0) above.
    """
    data = as_pair_dataset(data)
    A = constraint_matrix(data).astype(np.float64)
    L = (A.T @ A).tocsc()
    p = L.shape[0]
    k = check_int(k, "k", 1, p, allow_none=True)
    if p <= DENSE_MAX_P or (k is not None and k >= p - 1):
        values = scipy.linalg.eigh(L.toarray(), eigvals_only=True)
        values = np.clip(values, 0.0, None)
        return values if k is None else values[:k]
    kk = 6 if k is None else k
    values = scipy.sparse.linalg.eigsh(L, k=kk, sigma=-1.0, which="LM", return_eigenvectors=False)
    return np.clip(np.sort(values), 0.0, None)


def hessian_spectrum(data: PairDataset | tuple[np.ndarray, np.ndarray], k: int | None = None) -> np.ndarray:
    """Eigenvalues of H0 = (2 / |P0|) A^T A, the Hessian of l0 per embedding
    dimension (ascending; divide by Z for l_eff at fixed Z)."""
    data = as_pair_dataset(data)
    k = check_int(k, "k", 1, data.p, allow_none=True)
    m = constraint_matrix(data).shape[0]
    if m == 0:
        return np.zeros(data.p if k is None else k)
    return 2.0 / m * laplacian_spectrum(data, k)


def grokking_rate(data: PairDataset | tuple[np.ndarray, np.ndarray], Z: float | None = None) -> float:
    """l3, the third-smallest eigenvalue of H0 (divided by Z if given), when
    the structure is unique (n0 = 2); 0 otherwise."""
    data = as_pair_dataset(data)
    Z = check_float(Z, "Z", 0.0, strict=True, allow_none=True)
    if data.p < 3 or degeneracy(data) != 2:
        return 0.0
    l3 = float(hessian_spectrum(data, 3)[2])
    return l3 / Z if Z is not None else l3


def predicted_steps(data: PairDataset | tuple[np.ndarray, np.ndarray], eta: float, Z: float | None = None) -> float:
    """1 / (l3 eta): the predicted number of steps to form the structure
    (inf when it is not unique)."""
    eta = check_float(eta, "eta", 0.0, strict=True)
    rate = grokking_rate(data, Z)
    return math.inf if rate == 0 else 1.0 / (rate * eta)
