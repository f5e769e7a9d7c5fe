"""Parallelogram constraints (particles.parallelograms)."""
import numpy as np

from particles import addition
from particles.parallelograms import constraint_matrix, label_constraints


def test_constraint_rows():
    A = constraint_matrix(addition(6))
    assert np.all(np.asarray(A.sum(axis=1)).ravel() == 0)
    dense = A.toarray()
    assert set(np.unique(dense)) <= {-2, -1, 0, 1, 2}
    assert np.all(dense @ np.arange(6) == 0)  # the linear mode E_k = k satisfies addition


def test_label_constraints():
    A = label_constraints(np.array([0, 1, 0, 1, 1]))
    assert A.shape == (4, 5)
    assert np.all(np.asarray(A.sum(axis=1)).ravel() == 0)
