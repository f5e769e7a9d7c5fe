"""Configurations of the four trainable models (docs/training.md, models).

Plain dataclasses without torch, so they can be built, validated and
stored in trajectory metadata on a machine without the extra. Each
validates itself on construction: a bad field raises ``ValueError`` (a
value out of range) or ``TypeError`` (the wrong kind) naming it and the
accepted range. NumPy scalars are stored as Python numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np

from particles.datasets import MAX_P
from particles.core.limits import MAX_STEPS
from particles.core.validation import check_choice, check_float, check_int, check_replace

from .schedule import check_snapshot_every

__all__ = ["SurvivalMLPConfig", "ToyConfig", "TOY_PHASE_SETTINGS", "toy_phase_setting", "ConstantAttentionConfig",
           "SparseModularConfig", "MODEL_CONFIGS", "config_for", "MAX_WIDTH", "MAX_EXAMPLES"]


#: widest layer, embedding or sequence a config accepts (a hidden x hidden
#: layer at the limit is 2 GiB of float64 weights)
MAX_WIDTH = 16_384
#: most examples in a dataset or batch
MAX_EXAMPLES = 10**8
#: upper bound per integer field (fields not listed: MAX_WIDTH; seeds: none)
_HIGH = {"steps": MAX_STEPS, "snapshot_every": MAX_STEPS, "p": MAX_P, "n_train": MAX_EXAMPLES,
         "n_val": MAX_EXAMPLES, "n_probe": MAX_EXAMPLES, "batch_size": MAX_EXAMPLES, "embedding_seed": None}


def _int_at_least(name: str, value: Any, low: int) -> None:
    check_int(value, name, low, _HIGH.get(name, MAX_WIDTH))


def _fraction(name: str, value: Any) -> None:
    """A share in (0, 1), worded "NAME must be in (0, 1)" as the trainers always said."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")


def _check_full_batch_mlp(cfg: Any) -> None:
    """Fields shared by the full-batch MLPs on pairs (survival, constant attention)."""
    _int_at_least("p", cfg.p, 3)
    _int_at_least("d", cfg.d, 1)
    _int_at_least("hidden", cfg.hidden, 1)
    check_float(cfg.lr, "lr", 0.0, strict=True)
    check_float(cfg.weight_decay, "weight_decay", 0.0)
    _fraction("train_fraction", cfg.train_fraction)


@dataclass(frozen=True)
class TrainingConfig:
    """Fields shared by every model."""

    model: ClassVar[str] = ""
    #: the spacing of snapshots (steps) that ``snapshot_every="auto"`` keeps when no gradients are recorded
    spacing: ClassVar[int] = 100
    steps: int = 1000
    snapshot_every: int | str = "auto"
    dtype: str = "float64"

    def __post_init__(self) -> None:
        for f in fields(self):  # NumPy scalars are stored as Python numbers (the dict goes into JSON metadata)
            value = getattr(self, f.name)
            if isinstance(value, np.integer) and not isinstance(value, np.bool_):
                object.__setattr__(self, f.name, int(value))
            elif isinstance(value, np.floating):
                object.__setattr__(self, f.name, float(value))
        _int_at_least("steps", self.steps, 1)
        check_snapshot_every(self.snapshot_every, high=MAX_STEPS, auto=True)
        check_choice(self.dtype, "dtype", ("float64", "float32"))
        self._validate()

    def _validate(self) -> None:  # pragma: no cover - overridden
        pass

    def replace(self, **changes: Any) -> "TrainingConfig":
        """A copy with some fields changed (validated again)."""
        check_replace(changes, [f.name for f in fields(self)], f"{self.model} config field(s)")
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, **asdict(self)}


@dataclass(frozen=True)
class SurvivalMLPConfig(TrainingConfig):
    """The survival paper's MLP on concatenated embeddings [E_a, E_b].

    Ordered pairs of Z_p, 2d -> hidden -> hidden -> p with SiLU, E ~ N(0, 1),
    AdamW(lr, weight_decay) on all parameters, full batch, float64.
    ``embedding_seed`` fixes the initial embedding across runs (the survival
    experiment varies only the MLP and the split); None uses the run seed.
    """

    model: ClassVar[str] = "survival-mlp"
    p: int = 59
    d: int = 128
    hidden: int = 100
    lr: float = 0.01
    weight_decay: float = 0.5
    train_fraction: float = 0.8
    steps: int = 30_000
    spacing: ClassVar[int] = 100
    snapshot_every: int | str = "auto"
    embedding_seed: int | None = None

    def _validate(self) -> None:
        _check_full_batch_mlp(self)
        if self.embedding_seed is not None:
            _int_at_least("embedding_seed", self.embedding_seed, 0)


@dataclass(frozen=True)
class ToyConfig(TrainingConfig):
    """The effective-theory toy: decoder(E_a + E_b) on addition (labels a + b).

    ``task="regression"`` fits fixed random targets Y_label in R^target_dim
    (MSE; the prediction is the label of the nearest target);
    ``"classification"`` uses cross-entropy over the labels. Separate
    AdamW optimizers for the embedding and the tanh decoder
    in -> hidden -> hidden -> out. E ~ U(-1/2, 1/2).

    ``group="addition"``: tokens 0..p-1, all p(p+1)/2 unordered pairs,
    2p - 1 labels, decoder input E_a + E_b in R^d. ``group="permutation"``:
    the 6 elements of S_3 (p must be 6), all 36 ordered pairs, each element
    embedded as a d x d matrix and the decoder input the flattened product
    E_a @ E_b (the paper's hard-coded matrix multiplication).

    ``n_train`` (if set) is the exact number of training pairs and overrides
    ``train_fraction``. :func:`toy_phase_setting` gives the paper's settings.
    """

    model: ClassVar[str] = "toy"
    p: int = 10
    d: int = 1
    hidden: int = 200
    task: str = "regression"
    group: str = "addition"
    target_dim: int = 10
    embedding_lr: float = 1e-3
    decoder_lr: float = 1e-4
    embedding_weight_decay: float = 0.0
    decoder_weight_decay: float = 0.0
    train_fraction: float = 0.5
    n_train: int | None = None
    steps: int = 5000
    spacing: ClassVar[int] = 50
    snapshot_every: int | str = "auto"

    def _validate(self) -> None:
        check_choice(self.group, "group", ("addition", "permutation"))
        if self.group == "permutation":
            if self.p != 6:
                raise ValueError(f"p must be 6 (the elements of S_3) when group='permutation', got {self.p!r}")
        else:
            _int_at_least("p", self.p, 3)
        _int_at_least("d", self.d, 1)
        if self.d > 8:
            raise ValueError(f"d must be an int in [1, 8], got {self.d!r}")
        _int_at_least("hidden", self.hidden, 1)
        check_choice(self.task, "task", ("regression", "classification"))
        _int_at_least("target_dim", self.target_dim, 1)
        check_float(self.embedding_lr, "embedding_lr", 0.0, strict=True)
        check_float(self.decoder_lr, "decoder_lr", 0.0, strict=True)
        check_float(self.embedding_weight_decay, "embedding_weight_decay", 0.0)
        check_float(self.decoder_weight_decay, "decoder_weight_decay", 0.0)
        _fraction("train_fraction", self.train_fraction)
        if self.n_train is not None:
            _int_at_least("n_train", self.n_train, 1)
            n_pairs = self.n_pairs
            if self.n_train >= n_pairs:
                raise ValueError(f"n_train must be in [1, {n_pairs - 1}] (the dataset has {n_pairs} pairs), "
                                 f"got {self.n_train}")

    @property
    def n_pairs(self) -> int:
        """Number of pairs in the full dataset."""
        return 36 if self.group == "permutation" else self.p * (self.p + 1) // 2

    @property
    def n_labels(self) -> int:
        """Number of labels (2p - 1 sums, or the 6 elements of S_3)."""
        return 6 if self.group == "permutation" else 2 * self.p - 1

    @property
    def input_dim(self) -> int:
        """Width of the decoder input (d, or d * d for matrices)."""
        return self.d * self.d if self.group == "permutation" else self.d


def _logspace(lo: float, hi: float, n: int) -> list[float]:
    import math

    return [float(10 ** (math.log10(lo) + (math.log10(hi) - math.log10(lo)) * i / (n - 1))) for i in range(n)]


#: The paper's phase-diagram settings of the toy (Liu et al. 2022, section 5 and
#: appendix H; facts from the GS code): each entry is (config, grid).
TOY_PHASE_SETTINGS: dict[str, tuple[dict[str, Any], dict[str, list[float]]]] = {
    "regression": (dict(p=10, d=1, hidden=200, task="regression", target_dim=30, embedding_lr=1e-3,
                        n_train=45, steps=100_000, snapshot_every=1000, dtype="float32"),
                   {"decoder_lr": _logspace(1e-5, 1e-2, 16), "decoder_weight_decay": [float(w) for w in range(11)]}),
    "classification": (dict(p=10, d=1, hidden=200, task="classification", target_dim=30, embedding_lr=1e-3,
                            n_train=45, steps=100_000, snapshot_every=1000, dtype="float32"),
                       {"decoder_lr": _logspace(1e-5, 1e-2, 16),
                        "decoder_weight_decay": [float(w) for w in range(0, 21, 2)]}),
    "permutation": (dict(p=6, d=3, hidden=200, task="regression", group="permutation", target_dim=30,
                         embedding_lr=1e-3, n_train=24, steps=100_000, snapshot_every=1000, dtype="float32"),
                    {"decoder_lr": _logspace(1e-5, 1e-2, 16),
                     "decoder_weight_decay": [float(w) for w in range(0, 201, 20)]}),
}


def toy_phase_setting(name: str, **changes: Any) -> tuple["ToyConfig", dict[str, list[float]]]:
    """(config, grid) of one of the paper's toy phase diagrams.

    Parameters
    ----------
    name : {"regression", "classification", "permutation"}
        Addition with MSE onto 30-d random targets, addition with
        cross-entropy, or S_3 with 3 x 3 matrix embeddings (regression).
    **changes
        Config fields to change (for example ``steps`` for a quick run).
    """
    if name not in TOY_PHASE_SETTINGS:
        raise ValueError(f"name must be one of {tuple(TOY_PHASE_SETTINGS)}, got {name!r}")
    fields_, grid = TOY_PHASE_SETTINGS[name]
    return ToyConfig(**fields_).replace(**changes), {k: list(v) for k, v in grid.items()}


@dataclass(frozen=True)
class ConstantAttentionConfig(TrainingConfig):
    """The particle model's network: E in R^{N x 2}, s = E_a + E_b, ReLU hidden
    layer, linear output over N classes, cross-entropy, full batch, AdamW.
    Unordered pairs of Z_N, split as the particle presets.

    ``weight_decay`` acts on every parameter unless ``embedding_weight_decay``
    is set: then that is the embedding's and ``weight_decay`` the
    classifier's (hidden and output layers)."""

    model: ClassVar[str] = "constant-attention"
    p: int = 17
    d: int = 2
    hidden: int = 64
    lr: float = 0.01
    weight_decay: float = 0.3
    train_fraction: float = 0.8
    steps: int = 3000
    spacing: ClassVar[int] = 50
    snapshot_every: int | str = "auto"
    embedding_weight_decay: float | None = None

    def _validate(self) -> None:
        _check_full_batch_mlp(self)
        if self.embedding_weight_decay is not None:
            check_float(self.embedding_weight_decay, "embedding_weight_decay", 0.0)

    @property
    def embedding_decay(self) -> float:
        """The embedding's weight decay: ``embedding_weight_decay``, or
        ``weight_decay`` when that is None (AdamW on all parameters)."""
        return self.weight_decay if self.embedding_weight_decay is None else self.embedding_weight_decay


@dataclass(frozen=True)
class SparseModularConfig(TrainingConfig):
    """Sparse modular addition: T tokens from Z_p, label = sum of the first k mod p.

    One block with d-dimensional token and position embeddings, RMSNorm
    without gain, attention from one learned query over the normed inputs
    with a value map, a residual GELU MLP after RMSNorm, and logits tied to
    the token embedding. Adam, minibatches from a fixed training set.

    The paper's remarks on initialisation and curriculum as options (all
    off by default, which keeps every earlier run's bits):

    - ``init_scale``: the standard deviation of the token and position
      embeddings at initialisation (1: PyTorch's ``randn``).
    - ``init``: ``"normal"`` (Gaussian token embeddings) or ``"apart"``
      (the p token embeddings evenly spaced on a circle of radius
      ``init_scale * sqrt(d)``, the Gaussian's RMS norm, in a random plane
      at a random phase, so that no two start close; every other parameter
      is drawn as with ``"normal"``, so a seed's two runs differ only there).
    - ``curriculum``: steps of a curriculum over the number of summed
      tokens: the labels sum the first 1, 2, ..., k - 1 tokens in equal
      parts of the first ``curriculum`` steps, then the first k (the task).
      The recorded training and validation losses and accuracies are on the
      task's labels throughout; ``batch_loss`` is on the curriculum's.
    """

    model: ClassVar[str] = "sparse-modular"
    p: int = 2
    seq_len: int = 12
    k: int = 5
    d: int = 2
    mlp_hidden: int = 32
    lr: float = 3e-3
    batch_size: int = 32
    n_train: int = 2048
    n_val: int = 512
    n_probe: int = 64
    steps: int = 3000
    spacing: ClassVar[int] = 50
    snapshot_every: int | str = "auto"
    init_scale: float = 1.0
    init: str = "normal"
    curriculum: int = 0

    def _validate(self) -> None:
        _int_at_least("p", self.p, 2)
        _int_at_least("seq_len", self.seq_len, 1)
        _int_at_least("k", self.k, 1)
        if self.k > self.seq_len:
            raise ValueError(f"k must be in [1, seq_len={self.seq_len}], got {self.k}")
        _int_at_least("d", self.d, 1)
        _int_at_least("mlp_hidden", self.mlp_hidden, 1)
        check_float(self.lr, "lr", 0.0, strict=True)
        _int_at_least("batch_size", self.batch_size, 1)
        _int_at_least("n_train", self.n_train, 1)
        if self.batch_size > self.n_train:
            raise ValueError(f"batch_size must be <= n_train={self.n_train}, got {self.batch_size}")
        _int_at_least("n_val", self.n_val, 1)
        _int_at_least("n_probe", self.n_probe, 1)
        check_float(self.init_scale, "init_scale", 0.0, strict=True)
        check_choice(self.init, "init", ("normal", "apart"))
        if self.init == "apart" and self.d < 2:
            raise ValueError(f"init='apart' places the tokens on a circle: it needs d >= 2, got d={self.d}")
        _int_at_least("curriculum", self.curriculum, 0)
        if self.curriculum and self.k < 2:
            raise ValueError(f"curriculum needs k >= 2 (it sums fewer than k tokens first), got k={self.k}; use "
                             "curriculum=0")
        if self.curriculum > self.steps:
            raise ValueError(f"curriculum must be in [0, steps={self.steps}], got {self.curriculum}")


MODEL_CONFIGS: dict[str, type[TrainingConfig]] = {
    cls.model: cls for cls in (SurvivalMLPConfig, ToyConfig, ConstantAttentionConfig, SparseModularConfig)
}


def config_for(model: str, **changes: Any) -> TrainingConfig:
    """Default config of ``model`` (one of MODEL_CONFIGS) with ``changes``."""
    if model not in MODEL_CONFIGS:
        raise ValueError(f"model must be one of {tuple(MODEL_CONFIGS)}, got {model!r}")
    return MODEL_CONFIGS[model]().replace(**changes) if changes else MODEL_CONFIGS[model]()


def pair_dataset(config: TrainingConfig):
    """The full pair dataset a pair model trains on (before its split):
    ordered pairs of Z_p for the survival MLP, unordered ones for the
    constant-attention network, a + b (or S_3) for the toy model."""
    from particles.datasets import addition, modular_addition, permutation_group

    if isinstance(config, SurvivalMLPConfig):
        return modular_addition(config.p, ordered=True)
    if isinstance(config, ConstantAttentionConfig):
        return modular_addition(config.p)
    if isinstance(config, ToyConfig):
        return permutation_group(3) if config.group == "permutation" else addition(config.p)
    raise ValueError(f"model {config.model!r} has no pair dataset (it trains on sequences)")


def training_set(meta: dict[str, Any]):
    """The training pairs and labels of a run the package trained, from its
    trajectory's ``meta`` (``model``, ``config`` and ``train_indices``)."""
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be a trajectory's meta dict, got {type(meta).__name__}")
    missing = [k for k in ("model", "config", "train_indices") if k not in meta]
    if missing:
        raise ValueError(f"the trajectory's meta lacks {missing}: it was not written by fitting.training.train, so "
                         "give the training set yourself (train=PairDataset)")
    config = dict(meta["config"])
    model = config.pop("model", meta["model"])
    data = pair_dataset(config_for(model, **config))
    indices = np.asarray(meta["train_indices"], dtype=np.int64)
    if indices.ndim != 1 or indices.size == 0 or indices.min() < 0 or indices.max() >= len(data):
        raise ValueError(f"meta['train_indices'] must hold rows of the {len(data)}-pair dataset, got "
                         f"{indices.size} indices")
    return data.subset(indices)


def rebuilt_training_set(meta: dict[str, Any]):
    """The training set of a run this package's trainers wrote before they
    stored it in the file (a PairDataset), or None when ``meta`` is not such
    a run's. Registered under the entry-point group
    ``embdyn.training_sets`` (pyproject.toml), where :mod:`fitting.forcefit`
    looks it up without importing the trainers."""
    if not isinstance(meta, dict) or not all(k in meta for k in ("model", "config", "train_indices")):
        return None
    return training_set(meta)

