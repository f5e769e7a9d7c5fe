"""Structure metrics for any embedding (simulated or trained).

Thresholds of :func:`classify_structure` are module constants and are
documented in ``docs/particles.md``.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .datasets import PairDataset, modular_addition
from .core.validation import check_array, check_int

__all__ = [
    "circularity",
    "best_circularity",
    "pair_sum_accuracy",
    "grid_defects",
    "classify_structure",
    "structure_metrics",
    "STRUCTURES",
    "CIRCLE_THRESHOLD",
    "GRID_THRESHOLD",
    "IMPERFECT_GRID_THRESHOLD",
    "LINE_THRESHOLD",
    "line_ratio",
    "fourier_plane_share",
    "UNDEFINED",
    "CIRCLE_PLANE_SHARE",
]

#: the class of a d > 2 embedding these metrics cannot classify (see :func:`structure_metrics`)
UNDEFINED = "undefined"
STRUCTURES = ("circle", "grid", "line", "imperfect grid", "unstructured", UNDEFINED)
#: for d > 2 a circle's Fourier plane must hold at least this share of the embedding's variance
CIRCLE_PLANE_SHARE = 0.5
#: best circularity at or above which an embedding is a circle
CIRCLE_THRESHOLD = 0.9
#: euclidean pair-sum accuracy at or above which an embedding is a lattice
#: (a grid or a line). Ideal 2-D lattices of 17 tokens (a = i + m j on an
#: m-column block) score 0.889-0.935: their corner pair sums have no
#: same-label partner. 0.85 leaves a margin below the lowest of them.
GRID_THRESHOLD = 0.85
#: euclidean pair-sum accuracy at or above which it is an imperfect grid
IMPERFECT_GRID_THRESHOLD = 0.6
#: a lattice whose second singular value (centred token embedding) is below
#: this fraction of the first is a line (1-D chain), otherwise a 2-D grid
LINE_THRESHOLD = 0.1


def _check_embedding(E: np.ndarray, name: str = "E") -> np.ndarray:
    if np.ndim(E) != 2:
        raise ValueError(f"{name} must have shape (p, d), got {np.shape(E)}")
    E = check_array(E, name)  # real (complex refused, not cast) and finite
    if E.shape[0] < 2 or E.shape[1] < 1:
        raise ValueError(f"{name} must have at least 2 tokens and 1 dimension, got {E.shape}")
    return E


def _frequency_scores(E: np.ndarray) -> np.ndarray:
    """Circularity of every frequency k = 0..p-1 (k = 0 is always 0)."""
    p, d = E.shape
    centred = E - E.mean(axis=0)
    F = np.fft.fft(centred, axis=0)  # (p, d) complex
    t = np.arange(p)
    scores = np.zeros(p)
    for k in range(1, p):
        plane = np.stack([F[k].real, F[k].imag], axis=1)  # (d, 2)
        u, sv, _ = np.linalg.svd(plane, full_matrices=False)
        rank = int(np.sum(sv > 1e-12 * max(sv.max(), 1e-300)))
        if rank == 0:
            continue
        y = centred @ u[:, :rank]
        yc = y[:, 0] + 1j * y[:, 1] if rank == 2 else y[:, 0].astype(complex)
        power = float(np.sum(np.abs(yc) ** 2))
        if power <= 0:
            continue
        z = np.exp(2j * np.pi * k * t / p)
        fit = max(abs(np.vdot(z, yc)) ** 2, abs(np.vdot(z.conj(), yc)) ** 2)
        scores[k] = fit / (p * power)
    return scores


def circularity(E: np.ndarray, frequency: int | None = None) -> np.ndarray | float:
    """How closely the embedding is a circle of frequency k.

    For each frequency k the centred embedding is projected onto the plane of
    Re F_k and Im F_k (F = FFT over tokens) and compared with the circle
    t -> (cos 2 pi k t / p, sin 2 pi k t / p) up to rotation, scale and
    reflection: the score is the share of the projected variance explained by
    that rotating circle, |sum_t y_t e^{-+2 pi i k t/p}|^2 / (p sum_t |y_t|^2).
    A perfect circle scores 1; points on a line at most 0.5.

    Parameters
    ----------
    E : ndarray, shape (p, d)
    frequency : int in [1, p-1], optional
        Score only this frequency.

    Returns
    -------
    float if ``frequency`` is given, else ndarray of shape ((p-1)//2,) for
    k = 1..(p-1)//2 (k and p - k are the same circle).
    """
    E = _check_embedding(E)
    p = E.shape[0]
    scores = _frequency_scores(E)
    if frequency is not None:
        frequency = check_int(frequency, "frequency", 1, p - 1)
        return float(scores[frequency])
    return scores[1 : (p - 1) // 2 + 1]


def line_ratio(E: np.ndarray) -> float:
    """Second over first singular value of the centred embedding (0 for
    collinear tokens, 1 for an isotropic cloud; 0 when d = 1)."""
    E = _check_embedding(E)
    sv = np.linalg.svd(E - E.mean(axis=0), compute_uv=False)
    if sv.size < 2 or sv[0] <= 0:
        return 0.0
    return float(sv[1] / sv[0])


def best_circularity(E: np.ndarray) -> tuple[int, float]:
    """``(k, score)`` of the most circular frequency k in 1..(p-1)//2."""
    scores = circularity(E)
    if scores.size == 0:
        return 0, 0.0
    k = int(np.argmax(scores))
    return k + 1, float(scores[k])


def _dataset_for(E: np.ndarray, dataset: PairDataset | None) -> PairDataset:
    if dataset is None:
        return modular_addition(E.shape[0])
    if not isinstance(dataset, PairDataset):
        raise TypeError(f"dataset must be a PairDataset, got {type(dataset).__name__}")
    if dataset.p != E.shape[0]:
        raise ValueError(f"E has {E.shape[0]} tokens but the dataset has p = {dataset.p}")
    return dataset


def _unordered(dataset: PairDataset) -> PairDataset:
    """The dataset with (b, a) dropped where (a, b) has the same label: both have the same pair
    sum, so each would be the other's nearest neighbour and count as correct for free."""
    key = np.column_stack([np.minimum(dataset.pairs[:, 0], dataset.pairs[:, 1]),
                           np.maximum(dataset.pairs[:, 0], dataset.pairs[:, 1]), dataset.labels])
    _, first = np.unique(key, axis=0, return_index=True)
    if len(first) == len(dataset):
        return dataset
    return dataset.subset(np.sort(first))


def _nearest_other(points: np.ndarray) -> np.ndarray:
    """Index of each point's nearest neighbour other than itself."""
    tree = cKDTree(points)
    _, idx = tree.query(points, k=2)
    own = np.arange(len(points))
    # with duplicates the point itself may come second
    return np.where(idx[:, 0] != own, idx[:, 0], idx[:, 1])


def _pair_sum_neighbours(E: np.ndarray, dataset: PairDataset, metric: str) -> np.ndarray:
    if metric == "angular":  # directions seen from the centroid of the embedding
        E = E - E.mean(axis=0)
    s = E[dataset.pairs[:, 0]] + E[dataset.pairs[:, 1]]
    if metric == "angular":
        norm = np.linalg.norm(s, axis=1, keepdims=True)
        s = np.divide(s, norm, out=np.zeros_like(s), where=norm > 0)
    elif metric != "euclidean":
        raise ValueError(f"metric must be 'euclidean' or 'angular', got {metric!r}")
    return _nearest_other(s)


def pair_sum_accuracy(E: np.ndarray, dataset: PairDataset | None = None, metric: str = "euclidean") -> float:
    """Leave-one-out 1-nearest-neighbour accuracy of the pair sums by label.

    Parameters
    ----------
    E : ndarray, shape (p, d)
    dataset : PairDataset, optional
        The pairs to classify; default the full unordered modular-addition
        dataset D0(p). A pair and its mirror (b, a) with the same label
        count once (they have the same pair sum). Pass the full dataset, not a training split, to measure
        how well the representation predicts unseen sums.
    metric : {"euclidean", "angular"}
        Distance between pair sums, or between their directions as seen from
        the centroid of the embedding (grids score high on the first, circles
        on the second).
    """
    E = _check_embedding(E)
    dataset = _unordered(_dataset_for(E, dataset))
    if len(dataset) < 2:
        raise ValueError("dataset must hold at least 2 distinct pairs")
    nn = _pair_sum_neighbours(E, dataset, metric)
    return float(np.mean(dataset.labels[nn] == dataset.labels))


def grid_defects(E: np.ndarray, dataset: PairDataset | None = None) -> int:
    """Number of pair sums whose euclidean nearest neighbour has another label
    (a pair and its mirror with the same label count once)."""
    E = _check_embedding(E)
    dataset = _unordered(_dataset_for(E, dataset))
    nn = _pair_sum_neighbours(E, dataset, "euclidean")
    return int(np.sum(dataset.labels[nn] != dataset.labels))


def fourier_plane_share(E: np.ndarray, frequency: int) -> float:
    """Share of the centred embedding's variance in the plane of Re F_k and
    Im F_k (the plane :func:`circularity` scores frequency k on): 1 for
    d <= 2 whenever that plane spans the space, small for a wide embedding
    whose variance lies elsewhere."""
    E = _check_embedding(E)
    p = E.shape[0]
    k = check_int(frequency, "frequency", 1, p - 1)
    centred = E - E.mean(axis=0)
    total = float(np.sum(centred ** 2))
    if total <= 0:
        return 0.0
    F = np.fft.fft(centred, axis=0)[k]
    u, sv, _ = np.linalg.svd(np.stack([F.real, F.imag], axis=1), full_matrices=False)
    rank = int(np.sum(sv > 1e-12 * max(sv.max(), 1e-300)))
    if rank == 0:
        return 0.0
    return float(np.sum((centred @ u[:, :rank]) ** 2) / total)


def structure_metrics(E: np.ndarray, dataset: PairDataset | None = None) -> dict[str, float | int | str]:
    """All structure metrics of one embedding and its class, as a dict.

    ``circularity`` is scored in the Fourier plane of the most circular
    frequency (``frequency``); ``plane_share`` is that plane's share of the
    embedding's variance (1 at d = 2). For d > 2 the class ``"circle"`` needs
    the plane to hold at least :data:`CIRCLE_PLANE_SHARE` of the variance:
    any embedding is nearly circular in a plane chosen from its own Fourier
    transform (0.75 for random Gaussian tokens at d = 64). A d > 2 embedding
    that is neither a circle in a dominant plane nor a lattice of pair sums
    is ``"undefined"`` (these classes cannot tell; it may hold many
    frequencies at once), not ``"unstructured"``. ``accuracy_*`` is the
    nearest-neighbour accuracy of pair sums over ``dataset``'s pairs (all
    unordered pairs of modular addition by default; ``accuracy_pairs`` says
    which).
    """
    E = _check_embedding(E)
    given = dataset is not None
    dataset = _unordered(_dataset_for(E, dataset))
    k, circ = best_circularity(E)
    share = fourier_plane_share(E, k) if k > 0 else 0.0
    acc_e = pair_sum_accuracy(E, dataset, "euclidean")
    acc_a = pair_sum_accuracy(E, dataset, "angular")
    ratio = line_ratio(E)
    wide = E.shape[1] > 2
    if circ >= CIRCLE_THRESHOLD and (not wide or share >= CIRCLE_PLANE_SHARE):
        structure = "circle"
    elif acc_e >= GRID_THRESHOLD:
        structure = "line" if ratio < LINE_THRESHOLD else "grid"
    elif acc_e >= IMPERFECT_GRID_THRESHOLD:
        structure = "imperfect grid"
    else:
        structure = UNDEFINED if wide and share < CIRCLE_PLANE_SHARE else "unstructured"
    return {
        "circularity": circ,
        "frequency": k,
        "plane_share": share,
        "accuracy_euclidean": acc_e,
        "accuracy_angular": acc_a,
        "accuracy_pairs": f"the {len(dataset)} given pairs (unordered)" if given else
                          f"all {len(dataset)} unordered pairs",
        "grid_defects": int(round((1.0 - acc_e) * len(dataset))),
        "line_ratio": ratio,
        "structure": structure,
    }


def classify_structure(E: np.ndarray, dataset: PairDataset | None = None) -> str:
    """``"circle"``, ``"grid"``, ``"line"``, ``"imperfect grid"``, ``"unstructured"`` or (d > 2 only)
    ``"undefined"``.

    circle: best circularity >= CIRCLE_THRESHOLD (0.9); otherwise a lattice
    when the euclidean pair-sum accuracy is >= GRID_THRESHOLD (0.85): a line
    (1-D chain) when :func:`line_ratio` < LINE_THRESHOLD (0.1), else a grid
    (2-D lattice); imperfect grid: accuracy >= IMPERFECT_GRID_THRESHOLD
    (0.6); else unstructured, or for d > 2 undefined when the best
    circularity's Fourier plane holds less than CIRCLE_PLANE_SHARE of the
    variance (:func:`structure_metrics`). For d > 2 a circle also needs that
    share.
    """
    return str(structure_metrics(E, dataset)["structure"])
