"""The four networks of docs/training.md, models and their training tasks (needs torch).

A *task* owns a model, its data and its optimizers and exposes what the
trainer records: ``step()`` (gradient step at the current parameters,
returning the training metrics measured *before* the update),
``evaluate()`` (validation metrics at the same parameters), the token
embedding, per-layer gradient norms and, for the transformer, the sequence
embeddings of a fixed probe set. All randomness comes from the run seed
through ``numpy.random.SeedSequence`` (data) and ``torch.Generator``
(initialisation, minibatches).

A task is built on the CPU (the initial parameters drawn there, so that a
run starts from the same numbers on every device) and moved whole to its
run's device by :meth:`_Task.to` (``make_task(..., device=...)``); what it
records (the token embedding, its gradient, the probe arrays, losses and
accuracies) is copied back to the CPU.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


from .configs import (ConstantAttentionConfig, SparseModularConfig, SurvivalMLPConfig, ToyConfig, TrainingConfig,
                      pair_dataset)

__all__ = ["make_task", "linear_init", "SurvivalMLP"]

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def _seeds(seed: int, n: int) -> list[np.random.SeedSequence]:
    return np.random.SeedSequence(int(seed)).spawn(n)


def _torch_generator(ss: np.random.SeedSequence) -> torch.Generator:
    return torch.Generator().manual_seed(int(ss.generate_state(1, dtype=np.uint64)[0] >> 1))


def linear_init(gen: torch.Generator, fan_in: int, fan_out: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """PyTorch's default ``nn.Linear`` init, drawn from ``gen``: weight and bias
    ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)); weight shape (fan_out, fan_in)."""
    bound = 1.0 / math.sqrt(fan_in)
    w = (torch.rand(fan_out, fan_in, generator=gen, dtype=dtype) * 2 - 1) * bound
    b = (torch.rand(fan_out, generator=gen, dtype=dtype) * 2 - 1) * bound
    return w, b


def _linear(gen: torch.Generator, fan_in: int, fan_out: int, dtype) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out, dtype=dtype)
    w, b = linear_init(gen, fan_in, fan_out, dtype)
    with torch.no_grad():
        layer.weight.copy_(w)
        layer.bias.copy_(b)
    return layer


def _accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return float((logits.argmax(dim=-1) == labels).to(torch.float64).mean())


# ------------------------------------------------------------------ models
class SurvivalMLP(nn.Module):
    """[E_a, E_b] -> hidden -> hidden -> p with SiLU.

    The first layer is evaluated on the p token embeddings and gathered per
    pair (the same function; ~3x fewer operations per step at p = 59,
    d = 128)."""

    def __init__(self, embedding: torch.Tensor, layers: list[tuple[torch.Tensor, torch.Tensor]]):
        super().__init__()
        self.embedding = nn.Parameter(embedding.clone())
        self.layers = nn.ModuleList()
        for w, b in layers:
            lin = nn.Linear(w.shape[1], w.shape[0], dtype=w.dtype)
            with torch.no_grad():
                lin.weight.copy_(w)
                lin.bias.copy_(b)
            self.layers.append(lin)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        # first layer on [E_a, E_b] = E_a W_a^T + E_b W_b^T: project the p
        # embeddings once, then gather (p rows instead of one per pair)
        first = self.layers[0]
        d = self.embedding.shape[1]
        proj_a = self.embedding @ first.weight[:, :d].T
        proj_b = self.embedding @ first.weight[:, d:].T
        x = F.silu(proj_a[pairs[:, 0]] + proj_b[pairs[:, 1]] + first.bias)
        for layer in self.layers[1:-1]:
            x = F.silu(layer(x))
        return self.layers[-1](x)


class ToyModel(nn.Module):
    """decoder(E_a + E_b) (or decoder(flatten(E_a @ E_b)) for matrix
    embeddings), decoder input -> hidden -> hidden -> out with tanh."""

    def __init__(self, cfg: ToyConfig, gen: torch.Generator, out: int, dtype):
        super().__init__()
        self.group = cfg.group
        self.d = cfg.d
        width = cfg.d * cfg.d if cfg.group == "permutation" else cfg.d
        self.embedding = nn.Parameter(torch.rand(cfg.p, width, generator=gen, dtype=dtype) - 0.5)
        self.decoder = nn.Sequential(_linear(gen, cfg.input_dim, cfg.hidden, dtype), nn.Tanh(),
                                     _linear(gen, cfg.hidden, cfg.hidden, dtype), nn.Tanh(),
                                     _linear(gen, cfg.hidden, out, dtype))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return self.decoder(toy_decoder_input(self.embedding, pairs, self.group, self.d))


def toy_decoder_input(embedding: torch.Tensor, pairs: torch.Tensor, group: str, d: int) -> torch.Tensor:
    """Decoder input of the toy for ``pairs`` (..., n, 2) of ``embedding``
    (..., p, width): E_a + E_b, or flatten(E_a @ E_b) for d x d matrices.
    Leading axes (a stack of models) are gathered row by row."""
    if embedding.dim() == 2:
        ea, eb = embedding[pairs[..., 0]], embedding[pairs[..., 1]]
    else:
        rows = torch.arange(embedding.shape[0], device=embedding.device)[:, None]
        ea, eb = embedding[rows, pairs[..., 0]], embedding[rows, pairs[..., 1]]
    if group == "permutation":
        shape = ea.shape[:-1] + (d, d)
        return (ea.reshape(shape) @ eb.reshape(shape)).flatten(-2)
    return ea + eb


def predict_labels(out: torch.Tensor, targets: torch.Tensor, classification: bool) -> torch.Tensor:
    """Predicted labels (C, n) of toy decoder outputs ``out`` (C, n, out):
    the largest logit, or the nearest of ``targets`` (C, labels, out) by
    squared Euclidean distances summed directly (not torch's matrix-product
    shortcut, which rounds far more coarsely). Single runs and
    ``train_grid`` (inside its compiled step) both search with it."""
    if classification:
        return out.argmax(dim=2)
    return (out[:, :, None, :] - targets[:, None, :, :]).pow(2).sum(dim=3).argmin(dim=2)


class Tap(nn.Module):
    """The identity, a named point of a model's forward pass where a forward
    hook (:meth:`torch.nn.Module.register_forward_hook`) reads a layer's state
    (:mod:`fitting.training.layers`)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class RMSNorm(nn.Module):
    """RMS normalisation without gain over the last axis: x / sqrt(mean(x^2) + eps)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rms_norm(x)


class ConstantAttentionNet(nn.Module):
    """s = E_a + E_b (constant attention), ReLU hidden layer, linear output."""

    def __init__(self, cfg: ConstantAttentionConfig, gen: torch.Generator, dtype):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(cfg.p, cfg.d, generator=gen, dtype=dtype))
        self.hidden = _linear(gen, cfg.d, cfg.hidden, dtype)
        self.output = _linear(gen, cfg.hidden, cfg.p, dtype)
        self.sequence, self.logits = Tap(), Tap()  # read by forward hooks (fitting.training.layers)

    def head(self, s: torch.Tensor) -> torch.Tensor:
        """Logits (n, p) of pair sums ``s`` (n, d)."""
        return self.logits(self.output(F.relu(self.hidden(s))))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return self.head(self.sequence(self.embedding[pairs[:, 0]] + self.embedding[pairs[:, 1]]))


def _rms_norm(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def _circle_embedding(p: int, d: int, gen: torch.Generator, dtype) -> torch.Tensor:
    """p points evenly spaced on a circle of radius sqrt(d) (the RMS norm of a
    standard Gaussian in R^d) in a random plane of R^d, at a random phase."""
    frame, _ = torch.linalg.qr(torch.randn(d, 2, generator=gen, dtype=torch.float64))
    phase = float(torch.rand(1, generator=gen, dtype=torch.float64)) * 2 * math.pi
    angles = phase + 2 * math.pi * torch.arange(p, dtype=torch.float64) / p
    circle = torch.stack([torch.cos(angles), torch.sin(angles)], dim=1) * math.sqrt(d)
    return (circle @ frame.T).to(dtype)


class SparseModularTransformer(nn.Module):
    """One block: token + position embeddings, RMSNorm without gain, attention
    from one learned query over the normed inputs with a value map, residual
    GELU MLP after RMSNorm, logits tied to the token embedding.

    Each intermediate state passes through a parameterless module (a
    :class:`Tap`, :class:`RMSNorm`, ``nn.Softmax``) that a forward hook can
    read: ``inputs`` (E + P, (batch, T, d)), ``norm_in``, ``attend`` (the
    attention weights, (batch, T)), ``value`` (the value map's output),
    ``sequence`` (the attention output, (batch, d)), ``norm_mlp``, ``mlp``
    (the MLP's output), ``residual`` (the final residual stream) and
    ``logits`` ((batch, p)). They add no parameters and no arithmetic."""

    def __init__(self, cfg: SparseModularConfig, gen: torch.Generator, dtype):
        super().__init__()
        d = cfg.d
        self.embedding = nn.Parameter(torch.randn(cfg.p, d, generator=gen, dtype=dtype))
        self.position = nn.Parameter(torch.randn(cfg.seq_len, d, generator=gen, dtype=dtype))
        self.query = nn.Parameter(torch.randn(d, generator=gen, dtype=dtype))
        self.value = _linear(gen, d, d, dtype)
        self.mlp_in = _linear(gen, d, cfg.mlp_hidden, dtype)
        self.mlp_out = _linear(gen, cfg.mlp_hidden, d, dtype)
        with torch.no_grad():
            if cfg.init == "apart":  # drawn after every other parameter: those are the "normal" run's own
                self.embedding.copy_(_circle_embedding(cfg.p, d, gen, dtype))
            if cfg.init_scale != 1.0:
                self.embedding.mul_(cfg.init_scale)
                self.position.mul_(cfg.init_scale)
        self.inputs, self.sequence, self.mlp, self.residual, self.logits = Tap(), Tap(), Tap(), Tap(), Tap()
        self.norm_in, self.norm_mlp = RMSNorm(), RMSNorm()
        self.attend = nn.Softmax(dim=-1)

    def attention_output(self, tokens: torch.Tensor) -> torch.Tensor:
        """Output of the single-query attention head, shape (batch, d)."""
        h = self.norm_in(self.inputs(self.embedding[tokens] + self.position))  # (batch, T, d)
        weights = self.attend(h @ self.query / math.sqrt(h.shape[-1]))  # (batch, T)
        return self.sequence(torch.einsum("bt,btd->bd", weights, self.value(h)))

    def head(self, s: torch.Tensor) -> torch.Tensor:
        """The residual stream (n, d) the block gives the attention outputs ``s`` (n, d): s + MLP(RMSNorm(s))."""
        return self.residual(s + self.mlp(self.mlp_out(F.gelu(self.mlp_in(self.norm_mlp(s))))))

    def unembed(self, r: torch.Tensor) -> torch.Tensor:
        """Logits (n, p) of residual streams ``r`` (n, d), tied to the token embedding."""
        return self.logits(r @ self.embedding.T)

    def sequence_embedding(self, tokens: torch.Tensor) -> torch.Tensor:
        """The final residual stream (batch, d) that the tied output reads:
        logits = sequence_embedding @ E^T."""
        return self.head(self.attention_output(tokens))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.unembed(self.sequence_embedding(tokens))


# ------------------------------------------------------------------ tasks
class _Task:
    """Common recording helpers; subclasses set model, data and optimizers."""

    config: TrainingConfig
    model: nn.Module
    optimizers: list[torch.optim.Optimizer]
    layer_groups: dict[str, list[str]]
    extra_series: tuple[str, ...] = ()  # per-step values step() returns beyond loss and accuracy
    device: torch.device = torch.device("cpu")  # where the model, its data and its optimiser state live

    def to(self, device: torch.device | str | None) -> "_Task":
        """Move the model and the data tensors to ``device`` (None: stay) before
        the first step (the optimisers keep their parameters: the same objects,
        moved); returns the task. On the device it is on already nothing is
        touched, so a CPU task stays bit for bit as built."""
        if device is None:
            return self
        device = torch.device(device)
        if device == self.device or device.type == self.device.type == "cpu":
            return self
        if any(opt.state for opt in self.optimizers):
            raise RuntimeError("a task is moved to its device before its first step")
        names = {id(p): n for n, p in self.model.named_parameters()}
        self.model.to(device)
        moved = dict(self.model.named_parameters())
        for opt in self.optimizers:  # the same Parameter objects in torch 2.x; re-pointed should that change
            for group in opt.param_groups:
                group["params"] = [moved[names[id(p)]] if id(p) in names else p for p in group["params"]]
        for key, value in list(vars(self).items()):
            if isinstance(value, torch.Tensor):
                setattr(self, key, value.to(device))
        self.device = device
        return self

    def embedding(self) -> np.ndarray:
        return self.model.embedding.detach().cpu().numpy().copy()

    def probe_arrays(self) -> dict[str, np.ndarray]:
        return {}

    #: the recorder of every layer's state (:meth:`record_layers`), or None
    layers: Any = None

    def record_layers(self, n_probe: int | None = None) -> Any:
        """Record every layer's state at each snapshot from now on (a
        :class:`fitting.training.layers.LayerRecorder` on the task's probe
        set, kept as ``self.layers``); only the d = 2 networks whose layers
        the sandbox draws have them."""
        raise ValueError(f"layer states (layers=True, --layers) exist for sparse-modular and constant-attention at "
                         f"d = 2, not for {self.config.model}")

    def snapshot_arrays(self) -> dict[str, np.ndarray]:
        """What a snapshot keeps besides the embedding: the probe arrays and, when recorded, the layer states."""
        out = self.probe_arrays()
        if self.layers is not None:
            out.update(self.layers.read())
        return out

    def step_work(self) -> int:
        """Multiply-adds of one training step, roughly: parameters x batch rows."""
        params = sum(p.numel() for p in self.model.parameters())
        rows = len(self.train_pairs) if hasattr(self, "train_pairs") else getattr(self.config, "batch_size", 1) \
            * getattr(self.config, "seq_len", 1)
        return int(params * rows)

    def embedding_gradient(self) -> np.ndarray:
        """dL/dE of the last :meth:`step` (the loss gradient, without the
        optimiser's decoupled weight decay)."""
        grad = self.model.embedding.grad
        if grad is None:
            return np.zeros(tuple(self.model.embedding.shape))
        return grad.detach().cpu().numpy().astype(np.float64, copy=True)

    def grad_norms(self) -> dict[str, float]:
        params = dict(self.model.named_parameters())
        out = {}
        for group, names in self.layer_groups.items():
            total = 0.0
            for name in names:
                g = params[name].grad
                if g is not None:
                    total += float(g.detach().pow(2).sum())
            out[group] = math.sqrt(total)
        return out

    def _backward(self, loss: torch.Tensor) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=False)
        loss.backward()

    def apply_update(self) -> None:
        for opt in self.optimizers:
            opt.step()

    # checkpoints
    def state_dict(self) -> dict[str, Any]:
        return {"model": self.model.state_dict(), "optimizers": [o.state_dict() for o in self.optimizers],
                "extra": self._extra_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        for opt, s in zip(self.optimizers, state["optimizers"]):
            opt.load_state_dict(s)
        self._load_extra_state(state["extra"])

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        pass

    def split_meta(self) -> dict[str, Any]:
        return {}


def _layer_groups(model: nn.Module) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name, _ in model.named_parameters():
        head = name.rsplit(".", 1)[0] if "." in name else name
        key = head.replace(".", "_")
        groups.setdefault(key, []).append(name)
    return groups


class _PairTask(_Task):
    """Full-batch training on a pair dataset with cross-entropy or MSE."""

    def _setup_pairs(self, data, fraction: float, ss: np.random.SeedSequence) -> None:
        self.train_set, self.val_set = data.split(fraction, np.random.default_rng(ss))
        self.train_pairs = torch.as_tensor(self.train_set.pairs, dtype=torch.long)
        self.val_pairs = torch.as_tensor(self.val_set.pairs, dtype=torch.long)
        self.train_labels = torch.as_tensor(self.train_set.labels, dtype=torch.long)
        self.val_labels = torch.as_tensor(self.val_set.labels, dtype=torch.long)

    def _loss(self, out: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, float]:
        return F.cross_entropy(out, labels), _accuracy(out, labels)

    def step(self) -> dict[str, float]:
        loss, acc = self._loss(self.model(self.train_pairs), self.train_labels)
        self._backward(loss)
        return {"train_loss": float(loss.detach()), "train_acc": acc}

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        loss, acc = self._loss(self.model(self.val_pairs), self.val_labels)
        return {"val_loss": float(loss), "val_acc": acc}

    def split_meta(self) -> dict[str, Any]:
        return {"train_indices": self.train_set.indices.tolist(), "val_indices": self.val_set.indices.tolist()}


def survival_initial_parameters(cfg: SurvivalMLPConfig, seed: int):
    """(embedding, [(W, b), ...], split seed) of one survival-MLP run; shared
    by the sequential and the batched trainer so both start identically.

    The values are drawn in float64 and rounded to the config's dtype, so a
    float32 run starts where the float64 run of the same seed starts (torch
    draws different numbers for a float32 request) and the two can be
    compared run by run."""
    dtype = DTYPES[cfg.dtype]
    split_ss, init_ss, emb_ss = _seeds(seed, 3)
    if cfg.embedding_seed is not None:
        emb_ss = _seeds(cfg.embedding_seed, 3)[2]
    embedding = torch.randn(cfg.p, cfg.d, generator=_torch_generator(emb_ss), dtype=torch.float64).to(dtype)
    gen = _torch_generator(init_ss)
    sizes = [2 * cfg.d, cfg.hidden, cfg.hidden, cfg.p]
    layers = [tuple(v.to(dtype) for v in linear_init(gen, a, b, torch.float64)) for a, b in zip(sizes[:-1], sizes[1:])]
    return embedding, layers, split_ss


class SurvivalTask(_PairTask):
    def __init__(self, cfg: SurvivalMLPConfig, seed: int):
        self.config = cfg
        embedding, layers, split_ss = survival_initial_parameters(cfg, seed)
        self._setup_pairs(pair_dataset(cfg), cfg.train_fraction, split_ss)
        self.model = SurvivalMLP(embedding, layers)
        self.optimizers = [torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)]
        self.layer_groups = {"embedding": ["embedding"],
                             **{f"layer{i + 1}": [f"layers.{i}.weight", f"layers.{i}.bias"] for i in range(3)}}


def toy_dataset(cfg: ToyConfig):
    """The pair dataset of a toy config (addition or S_3)."""
    return pair_dataset(cfg)


def toy_train_fraction(cfg: ToyConfig) -> float:
    """The split fraction that gives exactly ``cfg.n_train`` pairs, if set."""
    return cfg.train_fraction if cfg.n_train is None else cfg.n_train / cfg.n_pairs


class ToyTask(_PairTask):
    def __init__(self, cfg: ToyConfig, seed: int):
        self.config = cfg
        dtype = DTYPES[cfg.dtype]
        split_ss, init_ss, target_ss = _seeds(seed, 3)
        n_labels = cfg.n_labels
        self._setup_pairs(pair_dataset(cfg), toy_train_fraction(cfg), split_ss)
        out = cfg.target_dim if cfg.task == "regression" else n_labels
        self.targets = torch.randn(n_labels, cfg.target_dim, generator=_torch_generator(target_ss), dtype=dtype)
        self.model = ToyModel(cfg, _torch_generator(init_ss), out, dtype)
        self.optimizers = [
            torch.optim.AdamW([self.model.embedding], lr=cfg.embedding_lr, weight_decay=cfg.embedding_weight_decay),
            torch.optim.AdamW(self.model.decoder.parameters(), lr=cfg.decoder_lr,
                              weight_decay=cfg.decoder_weight_decay),
        ]
        self.layer_groups = {"embedding": ["embedding"], "decoder": [n for n, _ in self.model.named_parameters()
                                                                     if n.startswith("decoder")]}

    def _loss(self, out: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, float]:
        if self.config.task == "classification":
            return super()._loss(out, labels)
        loss = F.mse_loss(out, self.targets[labels])
        nearest = predict_labels(out.detach()[None], self.targets[None], False)[0]  # the search of train_grid
        return loss, float((nearest == labels).to(torch.float64).mean())


class ConstantAttentionTask(_PairTask):
    def __init__(self, cfg: ConstantAttentionConfig, seed: int):
        self.config = cfg
        split_ss, init_ss = _seeds(seed, 2)
        self._setup_pairs(pair_dataset(cfg), cfg.train_fraction, split_ss)
        self.model = ConstantAttentionNet(cfg, _torch_generator(init_ss), DTYPES[cfg.dtype])
        if cfg.embedding_weight_decay is None:
            self.optimizers = [torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)]
        else:
            classifier = [p for n, p in self.model.named_parameters() if n != "embedding"]
            self.optimizers = [torch.optim.AdamW([{"params": [self.model.embedding], "weight_decay": cfg.embedding_decay},
                                                  {"params": classifier, "weight_decay": cfg.weight_decay}], lr=cfg.lr)]
        self.layer_groups = _layer_groups(self.model)

    def record_layers(self, n_probe: int | None = None) -> Any:
        from .layers import LAYER_PROBE, LayerRecorder

        if self.config.d != 2:
            raise ValueError(f"layer states (layers=True, --layers) need d = 2 (the sandbox draws the plane), got "
                             f"d={self.config.d}")
        half = (LAYER_PROBE if n_probe is None else n_probe) // 2
        pairs = torch.cat([self.train_pairs[:half], self.val_pairs[:half]]).cpu().numpy()
        labels = torch.cat([self.train_labels[:half], self.val_labels[:half]]).cpu().numpy()
        split = ["train"] * min(half, len(self.train_pairs)) + ["val"] * min(half, len(self.val_pairs))
        m = self.model
        self.layers = LayerRecorder(m, pairs, labels, p=self.config.p, split=split,
                                    taps={"sequence": m.sequence, "logits": m.logits},
                                    parameters={"token_embedding": lambda: m.embedding},
                                    regions={"sequence": m.head})
        return self.layers


class SparseModularTask(_Task):
    extra_series = ("batch_loss",)

    def __init__(self, cfg: SparseModularConfig, seed: int):
        self.config = cfg
        data_ss, init_ss, batch_ss = _seeds(seed, 3)
        rng = np.random.default_rng(data_ss)
        n = cfg.n_train + cfg.n_val + cfg.n_probe
        tokens = rng.integers(0, cfg.p, size=(n, cfg.seq_len))
        labels = tokens[:, : cfg.k].sum(axis=1) % cfg.p
        t = torch.as_tensor(tokens, dtype=torch.long)
        y = torch.as_tensor(labels, dtype=torch.long)
        a, b = cfg.n_train, cfg.n_train + cfg.n_val
        self.train_tokens, self.val_tokens, self.probe_tokens = t[:a], t[a:b], t[b:]
        self.train_labels, self.val_labels, self.probe_labels = y[:a], y[a:b], y[b:]
        self.model = SparseModularTransformer(cfg, _torch_generator(init_ss), DTYPES[cfg.dtype])
        self.optimizers = [torch.optim.Adam(self.model.parameters(), lr=cfg.lr)]
        self.batch_gen = _torch_generator(batch_ss)
        self.layer_groups = _layer_groups(self.model)
        self.steps_done = 0  # the curriculum's clock
        if cfg.curriculum:  # the labels of the first 1, ..., k - 1 summed tokens
            self.curriculum_labels = torch.stack([self.train_tokens[:, :j].sum(dim=1) % cfg.p
                                                  for j in range(1, cfg.k)])

    def batch_labels(self, step: int) -> torch.Tensor:
        """The training labels of ``step``: the curriculum's (the first 1 + step (k - 1) // curriculum tokens
        summed) during its steps, the task's after them."""
        cfg = self.config
        if step >= cfg.curriculum:
            return self.train_labels
        return self.curriculum_labels[step * (cfg.k - 1) // cfg.curriculum]

    def minibatch_step(self) -> torch.Tensor:
        """The loss gradient of the next minibatch (``backward``; no update) and that batch's loss: the
        whole of a step's arithmetic, without the metrics :meth:`step` adds."""
        idx = torch.randint(0, self.config.n_train, (self.config.batch_size,), generator=self.batch_gen)
        idx = idx.to(self.device)  # drawn on the CPU, by the run's generator, on every device
        logits = self.model(self.train_tokens[idx])
        loss = F.cross_entropy(logits, self.batch_labels(self.steps_done)[idx])
        self.steps_done += 1
        self._backward(loss)
        return loss

    def step(self) -> dict[str, float]:
        loss = self.minibatch_step()
        with torch.no_grad():
            full = self.model(self.train_tokens)
            return {"train_loss": float(F.cross_entropy(full, self.train_labels)),
                    "train_acc": _accuracy(full, self.train_labels), "batch_loss": float(loss.detach())}

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        logits = self.model(self.val_tokens)
        return {"val_loss": float(F.cross_entropy(logits, self.val_labels)),
                "val_acc": _accuracy(logits, self.val_labels)}

    @torch.no_grad()
    def probe_arrays(self) -> dict[str, np.ndarray]:
        return {"sequence_embedding": self.model.sequence_embedding(self.probe_tokens).cpu().numpy().copy(),
                "attention_output": self.model.attention_output(self.probe_tokens).cpu().numpy().copy()}

    def record_layers(self, n_probe: int | None = None) -> Any:
        from .layers import LAYER_PROBE, LayerRecorder

        if self.config.d != 2:
            raise ValueError(f"layer states (layers=True, --layers) need d = 2 (the sandbox draws the plane), got "
                             f"d={self.config.d}")
        half = (LAYER_PROBE if n_probe is None else n_probe) // 2
        tokens = torch.cat([self.train_tokens[:half], self.val_tokens[:half]]).cpu().numpy()
        labels = torch.cat([self.train_labels[:half], self.val_labels[:half]]).cpu().numpy()
        split = ["train"] * min(half, self.config.n_train) + ["val"] * min(half, self.config.n_val)
        m = self.model
        self.layers = LayerRecorder(
            m, tokens, labels, p=self.config.p, split=split,
            taps={"inputs": m.inputs, "normed_inputs": m.norm_in, "values": m.value, "attention": m.attend,
                  "sequence": m.sequence, "normed_sequence": m.norm_mlp, "mlp": m.mlp, "residual": m.residual,
                  "logits": m.logits},
            parameters={"token_embedding": lambda: m.embedding, "position": lambda: m.position,
                        "query": lambda: m.query,
                        "value_map": lambda: torch.cat([m.value.weight, m.value.bias[:, None]], dim=1)},
            regions={"sequence": lambda x: m.unembed(m.head(x)), "residual": m.unembed})
        return self.layers

    def _extra_state(self) -> dict[str, Any]:
        return {"batch_gen": self.batch_gen.get_state(), "steps_done": self.steps_done}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.batch_gen.set_state(state["batch_gen"])
        self.steps_done = int(state.get("steps_done", 0))  # checkpoints before the curriculum: no clock, none

    def split_meta(self) -> dict[str, Any]:
        return {"probe_labels": self.probe_labels.tolist(), "n_train": self.config.n_train,
                "n_val": self.config.n_val}


_TASKS = {
    SurvivalMLPConfig: SurvivalTask,
    ToyConfig: ToyTask,
    ConstantAttentionConfig: ConstantAttentionTask,
    SparseModularConfig: SparseModularTask,
}


def make_task(config: TrainingConfig, seed: int, *, device: torch.device | str | None = None) -> _Task:
    """The task (model, data, optimizers) of ``config`` for run ``seed``,
    built on the CPU and moved to ``device`` (None: the CPU; the name is
    not checked here, see :func:`fitting.training.devices.check_device`)."""
    if type(config) not in _TASKS:
        raise TypeError(f"config must be one of {[c.__name__ for c in _TASKS]}, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    return _TASKS[type(config)](config, int(seed)).to(device)
