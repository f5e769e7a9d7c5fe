"""Pair datasets: modular addition and (non-modular) addition.

A dataset is a set of token pairs ``(a, b)`` with integer labels. The particle
model only needs to know which pairs share a label, so any labelled pair set
works with the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .core.validation import check_array, check_bool, check_float, check_int, check_path

__all__ = ["PairDataset", "modular_addition", "addition", "permutation_group", "make_rng", "as_training_set",
           "TASK_LABELS", "read_training_set"]


def make_rng(seed: int | np.random.Generator | None, name: str = "seed") -> np.random.Generator:
    """Return ``seed`` if it is a Generator, else a new Generator built from
    it (an int >= 0, or None for fresh OS entropy); errors name ``name``."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"{name} must be an int, a numpy.random.Generator or None, got {type(seed).__name__}")
    if seed is not None and seed < 0:
        raise ValueError(f"{name} must be >= 0, got {seed}")
    return np.random.default_rng(seed)


@dataclass(frozen=True, eq=False)
class PairDataset:
    """Labelled token pairs.

    Attributes
    ----------
    pairs : ndarray of int64, shape (n, 2)
        Token indices ``(a, b)``, each in ``[0, p)``.
    labels : ndarray of int64, shape (n,)
        Class label of each pair.
    p : int
        Number of tokens.
    name : str
        ``"modular_addition"``, ``"addition"`` or a user name.
    indices : ndarray of int64, shape (n,)
        Row of each pair in the full dataset it was split from (``arange(n)``
        for a full dataset).
    """

    pairs: np.ndarray
    labels: np.ndarray
    p: int
    name: str = "pairs"
    indices: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        pairs = np.ascontiguousarray(check_array(self.pairs, "pairs", dtype="int"))
        labels = np.ascontiguousarray(check_array(self.labels, "labels", dtype="int"))
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n, 2), got {pairs.shape}")
        if labels.shape != (pairs.shape[0],):
            raise ValueError(f"labels must have shape ({pairs.shape[0]},) to match pairs, got {labels.shape}")
        check_int(self.p, "p", 1, MAX_P)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= self.p):
            raise ValueError(f"pairs must hold token indices in [0, {self.p}) for p = {self.p}, got range "
                             f"[{pairs.min()}, {pairs.max()}] (is p = {self.p} the number of tokens?)")
        indices = np.arange(len(pairs)) if self.indices is None else check_array(self.indices, "indices",
                                                                                     dtype="int", low=0)
        if indices.shape != (pairs.shape[0],):
            raise ValueError(f"indices must have shape ({pairs.shape[0]},), got {indices.shape}")
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "p", int(self.p))
        object.__setattr__(self, "indices", indices)

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def n_classes(self) -> int:
        """Number of distinct labels present."""
        return int(np.unique(self.labels).size)

    def subset(self, rows: np.ndarray) -> "PairDataset":
        """The pairs at ``rows`` (indices into this dataset), as a dataset."""
        rows = check_array(rows, "rows", dtype="int", ndim=1, low=0, high=len(self) - 1)
        return PairDataset(self.pairs[rows], self.labels[rows], self.p, self.name, self.indices[rows])

    def split(self, fraction: float, seed: int | np.random.Generator | None = 0) -> tuple["PairDataset", "PairDataset"]:
        """Random train/validation split.

        Parameters
        ----------
        fraction : float in (0, 1]
            Share of the pairs used for training; ``round(fraction * n)`` pairs.
        seed : int or numpy.random.Generator
            Same seed, same split.

        Returns
        -------
        train, val : PairDataset
            Disjoint subsets; ``train.indices`` and ``val.indices`` are sorted
            rows of this dataset.
        """
        fraction = check_float(fraction, "fraction")
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
        n = len(self)
        n_train = int(np.floor(float(fraction) * n + 0.5))
        if n_train == 0:
            raise ValueError(f"fraction={fraction} of {n} pairs gives an empty training set")
        order = make_rng(seed).permutation(n)
        return self.subset(np.sort(order[:n_train])), self.subset(np.sort(order[n_train:]))


#: largest modulus the dataset builders accept (p**2 ordered pairs must fit in memory: 1.6 GB at the limit)
MAX_P = 10_000


def _check_p(p: int) -> int:
    return check_int(p, "p", 2, MAX_P)


def _pairs(p: int, ordered: bool) -> np.ndarray:
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    if not ordered:
        keep = a <= b
        a, b = a[keep], b[keep]
    return np.stack([a, b], axis=1)


def modular_addition(p: int, ordered: bool = False) -> PairDataset:
    """Modular addition ``(a + b) mod p``.

    Parameters
    ----------
    p : int in [2, MAX_P]
        Modulus and number of tokens.
    ordered : bool
        ``False``: the p(p+1)/2 unordered pairs ``a <= b``; ``True``: all p**2
        ordered pairs.
    """
    p = _check_p(p)
    pairs = _pairs(p, check_bool(ordered, "ordered"))
    return PairDataset(pairs, (pairs[:, 0] + pairs[:, 1]) % p, p, "modular_addition")


def addition(p: int) -> PairDataset:
    """Non-modular addition ``a + b`` on unordered pairs (2p - 1 classes)."""
    p = _check_p(p)
    pairs = _pairs(p, False)
    return PairDataset(pairs, pairs[:, 0] + pairs[:, 1], p, "addition")


def permutation_group(n: int = 3) -> PairDataset:
    """The symmetric group S_n: all (n!)^2 ordered pairs, label = index of a o b.

    Elements are the permutations of ``range(n)`` in lexicographic order
    (element 0 is the identity); ``(a o b)(i) = a(b(i))``, so that the
    permutation matrices satisfy ``P[a o b] = P[a] @ P[b]`` with
    ``P[a][a(i), i] = 1``. S_3 (n = 3) has 6 elements and 36 pairs.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if not 2 <= n <= 5:
        raise ValueError(f"n must be in [2, 5] (S_n has n! elements), got {n}")
    from itertools import permutations

    elements = list(permutations(range(int(n))))
    index = {e: i for i, e in enumerate(elements)}
    m = len(elements)
    pairs = _pairs(m, True)
    labels = np.array([index[tuple(elements[a][i] for i in elements[b])] for a, b in pairs], dtype=np.int64)
    return PairDataset(pairs, labels, m, f"permutation_group_S{n}")


#: the label rule of each task a run's ``meta["task"]`` may name (checked against a stored training set)
TASK_LABELS = {
    "modular_addition": lambda a, b, p: (a + b) % p,
    "addition": lambda a, b, p: a + b,
}


def as_training_set(train, p: int, *, task: str | None = None, size: int | None = None,
                    name: str = "train") -> PairDataset:
    """A training set given as a :class:`PairDataset` or as ``(pairs, labels)``,
    checked against the run it belongs to.

    Parameters
    ----------
    train : PairDataset or tuple (pairs, labels)
        ``pairs`` (M, 2) integer token indices, ``labels`` (M,) integers;
        arrays, lists or torch tensors (anything ``numpy.asarray`` reads).
    p : int
        The run's number of tokens: every pair must lie in ``0..p-1``.
    task : str, optional
        A key of :data:`TASK_LABELS` (the run's ``meta["task"]``): the labels
        must follow that task's rule. Other names are not checked.
    size : int, optional
        The number of training pairs the run's metadata records.
    name : str
        The parameter's name in error messages.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and what was expected, before any work.
    """
    if isinstance(train, PairDataset):
        pairs, labels, label_name = train.pairs, train.labels, train.name
    elif isinstance(train, (tuple, list)) and len(train) == 2:
        pairs, labels, label_name = train[0], train[1], task or "pairs"
        try:
            pairs, labels = np.asarray(pairs), np.asarray(labels)
        except Exception as exc:  # noqa: BLE001 - anything numpy cannot read
            raise TypeError(f"{name} must be a PairDataset or (pairs, labels) arrays, got unreadable arrays ({exc})") \
                from None
    else:
        raise TypeError(f"{name} must be a PairDataset or a (pairs, labels) tuple, got {type(train).__name__}")
    pairs, labels = np.asarray(pairs), np.asarray(labels)
    for label, arr in (("pairs", pairs), ("labels", labels)):
        if arr.size and arr.dtype.kind not in "iu":  # timedelta64 is a numpy integer subtype
            if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ValueError(f"{name}: {label} must hold integers, got dtype {arr.dtype}")
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ValueError(f"{name}: pairs must have shape (M, 2) with M >= 1, got {pairs.shape}")
    if labels.shape != (pairs.shape[0],):
        raise ValueError(f"{name}: labels must have shape ({pairs.shape[0]},) to match pairs, got {labels.shape}")
    pairs, labels = pairs.astype(np.int64), labels.astype(np.int64)
    if pairs.min() < 0 or pairs.max() >= p:
        raise ValueError(f"{name}: pairs must hold token indices in 0..{p - 1} (the run has p = {p} tokens), got "
                         f"range {pairs.min()}..{pairs.max()}")
    if size is not None and len(pairs) != size:
        raise ValueError(f"{name} has {len(pairs)} pairs where the run's metadata records {size} training pairs")
    rule = TASK_LABELS.get(task) if isinstance(task, str) else None
    if rule is not None:
        wrong = np.flatnonzero(labels != rule(pairs[:, 0], pairs[:, 1], p))
        if wrong.size:
            a, b = pairs[wrong[0]]
            raise ValueError(f"{name}: {wrong.size} of {len(labels)} labels disagree with the run's task {task!r} "
                             f"(first: pair ({a}, {b}) labelled {labels[wrong[0]]}, expected "
                             f"{rule(int(a), int(b), p)})")
    return PairDataset(pairs, labels, int(p), label_name if isinstance(label_name, str) else "pairs")


def read_training_set(path, *, name: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Training pairs and labels from a file: an ``.npz`` with arrays ``pairs``
    (M, 2) and ``labels`` (M,), or a CSV with a header ``a,b,label`` (one pair
    a row, three integers each). Returns ``(pairs, labels)``; check them with
    :func:`as_training_set`. Errors name ``name``, the file and what was
    expected."""
    path = check_path(path, name)
    if not path.is_file():
        raise ValueError(f"{name}: no training-set file at {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as data:
                files = list(data.files)
                if "pairs" in files and "labels" in files:
                    return np.asarray(data["pairs"]), np.asarray(data["labels"])
        except Exception as exc:  # zip, format and pickle refusals
            raise ValueError(f"{name}: {str(path)!r} is not a readable .npz file of numeric arrays ({exc})") from None
        missing = [k for k in ("pairs", "labels") if k not in files]
        raise ValueError(f"{name}: {str(path)!r} lacks the array(s) {missing} (expected 'pairs' (M, 2) and "
                         "'labels' (M,))")
    if suffix == ".csv":
        import csv

        try:
            with open(path, newline="") as fh:
                rows = [row for row in csv.reader(fh) if row]
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise ValueError(f"{name}: {str(path)!r} is not a readable CSV file ({exc})") from None
        if not rows or [c.strip().lower() for c in rows[0]] != ["a", "b", "label"]:
            raise ValueError(f"{name}: {str(path)!r} must start with the header a,b,label, got "
                             f"{','.join(rows[0]) if rows else 'an empty file'}")
        values = []
        for line, row in enumerate(rows[1:], start=2):
            try:
                if len(row) != 3:
                    raise ValueError
                values.append([int(c) for c in row])
            except ValueError:
                raise ValueError(f"{name}: {str(path)!r} row {line} must hold three integers a,b,label, got "
                                 f"{','.join(row)!r}") from None
        values = np.array(values, dtype=np.int64).reshape(-1, 3)
        return values[:, :2], values[:, 2]
    raise ValueError(f"{name}: the file must end in .npz (arrays pairs, labels) or .csv (columns a,b,label), got "
                     f"{str(path)!r}")
