import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import (best_circularity, circularity, classify_structure, grid_defects, line_ratio,
                       modular_addition, pair_sum_accuracy, structure_metrics)
from particles.metrics import GRID_THRESHOLD, LINE_THRESHOLD


def _circle(p, k, radius=1.0, phase=0.0, centre=(0.0, 0.0), d=2, rng=None):
    t = np.arange(p)
    E = np.zeros((p, d))
    E[:, 0] = radius * np.cos(2 * np.pi * k * t / p + phase)
    E[:, 1] = radius * np.sin(2 * np.pi * k * t / p + phase)
    if rng is not None and d > 2:  # random orthogonal map into d dimensions
        q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        E = E @ q
    return E + np.asarray(list(centre) + [0.0] * (d - 2))


@settings(deadline=None, max_examples=40)
@given(p=st.sampled_from([5, 7, 11, 13, 17, 19, 23]), data=st.data(), radius=st.floats(0.1, 10),
       phase=st.floats(0, 2 * np.pi), cx=st.floats(-5, 5), d=st.integers(2, 5), flip=st.booleans())
def test_perfect_circle_of_any_coprime_frequency(p, data, radius, phase, cx, d, flip):
    k = data.draw(st.sampled_from([k for k in range(1, p) if math.gcd(k, p) == 1]))
    E = _circle(p, k, radius, phase, (cx, -cx), d, np.random.default_rng(p))
    if flip:
        E[:, 1] = -E[:, 1]
    k_best, score = best_circularity(E)
    assert score == pytest.approx(1.0, abs=1e-9)
    assert k_best == min(k, p - k)
    assert circularity(E, k) == pytest.approx(1.0, abs=1e-9)
    assert classify_structure(E) == "circle"
    if p >= 11:  # for smaller p some class directions hold a single pair sum
        assert pair_sum_accuracy(E, metric="angular") == 1.0


@pytest.mark.parametrize("p", [17, 59])
def test_lattice_is_grid(p):
    u, v = np.array([1.0, 0.0]), np.array([0.3, 1.1])
    k = np.arange(p)
    E = np.outer(k % 4, u) + np.outer(k // 4, v)
    assert classify_structure(E) == "grid"
    assert best_circularity(E)[1] < 0.5
    assert pair_sum_accuracy(E) >= 0.9
    assert grid_defects(E) == round((1 - pair_sum_accuracy(E)) * len(modular_addition(p)))


@pytest.mark.parametrize("seed", range(10))
def test_gaussian_noise_is_unstructured(seed):
    E = np.random.default_rng(seed).standard_normal((17, 2))
    assert classify_structure(E) == "unstructured"
    assert best_circularity(E)[1] < 0.9


def test_collinear_cosine_is_not_a_circle():
    t = np.arange(17)
    E = np.c_[np.cos(2 * np.pi * t / 17), np.zeros(17)]
    assert circularity(E, 1) == pytest.approx(0.5, abs=1e-9)


def test_random_high_dimensional_circularity_is_clearly_below_one():
    scores = [circularity(np.random.default_rng(s).standard_normal((59, 128))).mean() for s in range(3)]
    assert 0.5 < np.mean(scores) < 0.8  # the reference metric averages about 0.68 here


def test_circularity_per_frequency_shape():
    assert circularity(np.random.default_rng(0).standard_normal((17, 3))).shape == (8,)


def test_structure_metrics_keys():
    m = structure_metrics(_circle(17, 3))
    assert m["structure"] == "circle" and m["frequency"] == 3


@pytest.mark.parametrize("E, err, match", [
    (np.zeros(5), ValueError, r"shape \(p, d\)"),
    (np.full((5, 2), np.nan), ValueError, "E must be finite"),
])
def test_bad_embeddings(E, err, match):
    with pytest.raises(err, match=match):
        circularity(E)
    with pytest.raises(err, match=match):
        classify_structure(E)


def test_bad_metric_and_dataset():
    E = np.random.default_rng(0).standard_normal((7, 2))
    with pytest.raises(ValueError, match="metric must be"):
        pair_sum_accuracy(E, metric="cosine")
    with pytest.raises(ValueError, match="p = 5"):
        pair_sum_accuracy(E, modular_addition(5))
    with pytest.raises(ValueError, match="frequency must be"):
        circularity(E, 7)


@pytest.mark.parametrize("p, g", [(17, 1), (17, 3), (13, 5), (59, 2)])
def test_line_of_residues_is_line(p, g):
    """Tokens on a line stepping by the residue g: position t with a = g t mod p."""
    t = (np.arange(p) * pow(g, -1, p)) % p
    E = np.outer(t, [0.6, 0.8]) + 2.0
    assert line_ratio(E) < 1e-12
    assert pair_sum_accuracy(E) >= GRID_THRESHOLD
    assert classify_structure(E) == "line"


def test_slightly_bent_line_is_still_line():
    rng = np.random.default_rng(0)
    t = np.arange(17.0)
    E = np.c_[t, 0.02 * rng.standard_normal(17)]
    assert classify_structure(E) == "line"


@pytest.mark.parametrize("m", range(2, 8))
def test_every_ideal_lattice_block_of_17_tokens_is_grid(m):
    """a = i + m j on an m-column block: 2-D, and above GRID_THRESHOLD (the
    lowest of these ideal lattices scores 0.889, see LINE/GRID thresholds)."""
    a = np.arange(17)
    E = np.c_[a % m, a // m].astype(float) @ np.array([[1.0, 0.0], [0.4, 1.2]])
    assert line_ratio(E) >= LINE_THRESHOLD
    assert pair_sum_accuracy(E) >= 0.88
    assert classify_structure(E) == "grid"


def test_line_ratio_of_isotropic_cloud_and_1d():
    t = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    assert line_ratio(np.c_[np.cos(t), np.sin(t)]) == pytest.approx(1.0)
    assert line_ratio(np.arange(5.0)[:, None]) == 0.0


# --- issue 50: metrics that say what they measure for any d ------------------------------------------------

def test_a_wide_embedding_is_a_circle_only_in_a_plane_that_holds_its_variance():
    from particles.metrics import CIRCLE_PLANE_SHARE, UNDEFINED, fourier_plane_share

    rng = np.random.default_rng(0)
    noise = rng.standard_normal((41, 64))
    m = structure_metrics(noise)  # nearly circular in a plane of its own choosing, with little of the variance
    assert m["circularity"] > 0.5 and m["plane_share"] < 0.2 and m["structure"] == UNDEFINED
    circle = np.zeros((41, 64))
    circle[:, :2] = _circle(41, 5)
    m = structure_metrics(circle + 0.01 * noise)
    assert m["structure"] == "circle" and m["plane_share"] > 0.99
    # nine circles at once (a grokked network's spectrum): each plane holds about a ninth
    t = np.arange(41)
    many = np.zeros((41, 64))
    for j, k in enumerate([2, 4, 5, 6, 7, 13, 14, 16, 17]):
        many[:, 2 * j], many[:, 2 * j + 1] = np.cos(2 * np.pi * k * t / 41), np.sin(2 * np.pi * k * t / 41)
    m = structure_metrics(many)
    assert m["circularity"] > 0.99 and m["plane_share"] < CIRCLE_PLANE_SHARE and m["structure"] == UNDEFINED
    assert fourier_plane_share(many, m["frequency"]) == pytest.approx(1 / 9, rel=1e-6)
    assert structure_metrics(_circle(17, 3))["plane_share"] == pytest.approx(1.0)  # d = 2: the plane is the space


def test_a_pair_and_its_mirror_count_once():
    E = np.random.default_rng(3).standard_normal((11, 2))
    ordered, unordered = modular_addition(11, ordered=True), modular_addition(11)
    assert pair_sum_accuracy(E, ordered) == pair_sum_accuracy(E, unordered)
    assert grid_defects(E, ordered) == grid_defects(E, unordered)
    m = structure_metrics(E, ordered)
    assert m["accuracy_pairs"] == f"the {len(unordered)} given pairs (unordered)"
    assert structure_metrics(E)["accuracy_pairs"] == f"all {len(unordered)} unordered pairs"
