"""The force fit on a toy-model run recorded at every step (issue 53),
against an independent computation written here from SPEC section 2 and 8:
the effective loss and its gradient in plain NumPy (checked by finite
differences), the similarity gauge as two projections, and one least-squares
strength per window. Skipped without torch; CI's torch step runs it."""
import os

import numpy as np
import pytest

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch  # noqa: F401
else:
    pytest.importorskip("torch")

from fitting.forcefit import ForceLawFit  # noqa: E402
from fitting.training import train  # noqa: E402
from fitting.training.configs import toy_phase_setting  # noqa: E402


def constraint_rows(pairs, labels, p):
    """A: one row e_i + e_j - e_m - e_n per unordered pair of distinct samples with the same label."""
    rows = []
    for u in range(len(pairs)):
        for v in range(u + 1, len(pairs)):
            if labels[u] == labels[v]:
                row = np.zeros(p)
                np.add.at(row, pairs[u], 1.0)
                np.add.at(row, pairs[v], -1.0)
                rows.append(row)
    return np.array(rows)


def l_eff(E, A):
    Ec = E - E.mean(axis=0)
    return np.sum((A @ E) ** 2) / len(A) / np.sum(Ec ** 2)


def minus_grad_l_eff(E, A):
    Ec = E - E.mean(axis=0)
    Z = np.sum(Ec ** 2)
    l0 = np.sum((A @ E) ** 2) / len(A)
    return -(2.0 * A.T @ (A @ E) / len(A) / Z - 2.0 * l0 / Z ** 2 * Ec)


def similarity_gauge(V, E):
    """V less its token mean, then less its part along the centred embedding (one snapshot)."""
    V = V - V.mean(axis=0)
    u = E - E.mean(axis=0)
    u = u / np.linalg.norm(u)
    return V - np.sum(V * u) * u


@pytest.fixture(scope="module")
def toy_run():
    toy, _ = toy_phase_setting("regression")
    config = toy.replace(decoder_lr=2.5e-5, decoder_weight_decay=1.0, steps=400, snapshot_every=1, dtype="float64")
    return train(config, 3, gradients=True)


def test_our_gradient_of_the_effective_loss_is_its_derivative(toy_run):
    A = constraint_rows(toy_run.train.pairs, toy_run.train.labels, toy_run.train.p)
    E = toy_run.embeddings[7]
    h, numeric = 1e-6, np.zeros_like(E)
    for i in np.ndindex(E.shape):
        step = np.zeros_like(E)
        step[i] = h
        numeric[i] = -(l_eff(E + step, A) - l_eff(E - step, A)) / (2 * h)
    assert np.allclose(minus_grad_l_eff(E, A), numeric, rtol=1e-6, atol=1e-9)


def test_windowed_gauge_fixed_fit_equals_plain_numpy(toy_run):
    edges = [0, 100, 250, 401]
    fit = ForceLawFit("effective", terms=("effective",), gauge="similarity", windows=edges, n_bootstrap=0,
                      null=3).fit(toy_run)
    A = constraint_rows(toy_run.train.pairs, toy_run.train.labels, toy_run.train.p)
    n = len(toy_run.gradients)
    X, steps = toy_run.embeddings[:n], toy_run.snapshot_steps[:n]
    F = np.stack([similarity_gauge(minus_grad_l_eff(E, A), E) for E in X])
    G = np.stack([similarity_gauge(-g, E) for g, E in zip(toy_run.gradients, X)])
    assert fit.gauge_ == "similarity" and [w["start"] for w in fit.windows_] == edges[:-1]
    for w in fit.windows_:
        keep = (steps >= w["start"]) & (steps < w["stop"])
        f, g = F[keep].ravel(), G[keep].ravel()
        c = max(0.0, float(f @ g / (f @ f)))  # one non-negative strength for the window
        o = G[keep].reshape(-1, X.shape[2])
        r2 = 1 - np.sum((g - c * f) ** 2) / np.sum((o - o.mean(axis=0)) ** 2)
        assert abs(w["coef"]["effective"] - c) <= 1e-6 * max(1.0, abs(c)), w["start"]
        assert abs(w["r2"] - r2) <= 1e-6, w["start"]
    # the whole run too
    f, g = F.ravel(), G.ravel()
    c = max(0.0, float(f @ g / (f @ f)))
    assert abs(fit.coef_[0] - c) <= 1e-6 * max(1.0, c)
    assert abs(fit.r2_ - (1 - np.sum((g - c * f) ** 2) / np.sum(g ** 2))) <= 1e-6  # gauge-fixed: mean 0
