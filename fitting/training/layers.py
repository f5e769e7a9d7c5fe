"""Every layer's state of a d = 2 network at chosen steps, read through forward
hooks (the clustering-head sandbox: :mod:`fitting.sandbox` draws and reads
what this records).

A :class:`LayerRecorder` holds a fixed probe set of sequences and, at each
:meth:`LayerRecorder.record`, runs the model on it once with a forward hook
on each named module (``register_forward_hook``), reads the named parameters
and classifies a grid of the plane through the named region maps. The
arrays of one record (all float64, names prefixed ``layer_``; B probe
sequences of T tokens, p classes, d = 2):

=============================  ==============  ==========================================
array                          shape           what
=============================  ==============  ==========================================
``layer_token_embedding``      (p, d)          the token embedding E (parameter)
``layer_position``             (T, d)          the position embedding P (parameter)
``layer_query``                (d,)            the attention's query (parameter)
``layer_value_map``            (d, d + 1)      the value map [W | b] (parameter)
``layer_inputs``               (p, T, d)       E + P for token i at position t (tap)
``layer_normed_inputs``        (p, T, d)       their normalised versions (tap)
``layer_values``               (p, T, d)       the value map of the normed inputs (tap)
``layer_attention``            (B, T)          the attention weights of each sequence (tap)
``layer_sequence``             (B, d)          the sequence embedding (attention output) (tap)
``layer_normed_sequence``      (B, d)          its normalised version, the MLP's input (tap)
``layer_mlp``                  (B, d)          the MLP's output (tap)
``layer_residual``             (B, d)          the residual stream the output reads (tap)
``layer_logits``               (B, p)          the logits (tap)
``layer_regions_sequence``     (G, G)          the class the rest of the network gives each
                                               point of a G x G grid of the sequence plane
``layer_regions_residual``     (G, G)          the class the output gives each point of a
                                               grid of the residual plane
``layer_extent_<plane>``       (4,)            each grid's x0, x1, y0, y1
=============================  ==============  ==========================================

A model gives the states it has: the constant-attention network, whose
"sequence" is the pair sum E_a + E_b, gives the token embedding, the
sequence, the logits and the regions of the sequence plane. The per-token
states ``inputs``, ``normed_inputs`` and ``values`` depend only on the token
and its position, so each is kept once per (token, position) pair, read from
the first probe sequence holding that token there (NaN for a pair no probe
sequence holds). A grid row is one y (``y0`` first), a column one x; a
region is stored as its class index. The probe set, its labels and splits,
the grid size and the states go into ``meta["layers"]``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from particles.core.limits import format_bytes
from particles.core.validation import check_int

__all__ = ["LayerRecorder", "TAP_STATES", "PARAMETER_STATES", "REGION_PLANES", "LAYER_PREFIX", "LAYER_GRID",
           "LAYER_PROBE", "LAYER_BUDGET", "check_layer_budget"]

#: prefix of the layer arrays among a trajectory's snapshot arrays
LAYER_PREFIX = "layer_"
#: grid points per side of each region map
LAYER_GRID = 48
#: probe sequences of the package's trainers: half training, half validation sequences
LAYER_PROBE = 256
#: the most the layer states of one run may take (in memory, float64; the file is compressed)
LAYER_BUDGET = 256 * 2 ** 20
#: tapped states and their shapes: B probe sequences, T positions, p classes, d = 2
TAP_STATES: dict[str, tuple[str, ...]] = {
    "inputs": ("B", "T", "d"), "normed_inputs": ("B", "T", "d"), "values": ("B", "T", "d"),
    "attention": ("B", "T"), "sequence": ("B", "d"), "normed_sequence": ("B", "d"), "mlp": ("B", "d"),
    "residual": ("B", "d"), "logits": ("B", "p"),
}
#: parameters and their shapes (the value map as [W | b])
PARAMETER_STATES: dict[str, tuple[str, ...]] = {
    "token_embedding": ("p", "d"), "position": ("T", "d"), "query": ("d",), "value_map": ("d", "d+1"),
}
#: the planes a region map classifies, each the plane of one tapped state
REGION_PLANES: dict[str, str] = {"sequence": "the rest of the network", "residual": "the output"}
#: the per-token states, kept once per (token, position)
_PER_TOKEN = ("inputs", "normed_inputs", "values")
#: the padding of a region grid around the probe points, as a share of their span
_PAD = 0.25


def check_layer_budget(snapshots: int, snapshot_bytes: int, what: str, advice: str,
                       budget: int = LAYER_BUDGET) -> None:
    """Refuse ``snapshots`` records of ``snapshot_bytes`` each when they
    exceed ``budget`` (:data:`LAYER_BUDGET`), before any step; the
    message names ``what`` was asked and ``advice``."""
    need = int(snapshots) * int(snapshot_bytes)
    if need > budget:
        raise ValueError(f"layers: {what} records {snapshots} layer states of {format_bytes(snapshot_bytes)} each "
                         f"({format_bytes(need)}), over the layer-state budget of {format_bytes(budget)}: {advice}")


def _module_name(model: nn.Module, module: nn.Module) -> str:
    for name, m in model.named_modules():
        if m is module:
            return name or "the model itself"
    return type(module).__name__


def _extent(points: np.ndarray) -> np.ndarray:
    """A square box (x0, x1, y0, y1) around ``points`` (n, 2) and the origin, padded by a quarter of its side."""
    pts = np.vstack([points[np.all(np.isfinite(points), axis=1)], np.zeros((1, 2))])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, half = (lo + hi) / 2, max(float(np.max(hi - lo)) / 2, 1e-6) * (1 + _PAD)
    return np.array([centre[0] - half, centre[0] + half, centre[1] - half, centre[1] + half])


def grid_points(extent: np.ndarray, n: int) -> np.ndarray:
    """The n x n points (n * n, 2) of a region grid over ``extent``, row by row (one y a row, y0 first)."""
    xs = np.linspace(extent[0], extent[1], n)
    ys = np.linspace(extent[2], extent[3], n)
    X, Y = np.meshgrid(xs, ys)
    return np.column_stack([X.ravel(), Y.ravel()])


class LayerRecorder:
    """Record every layer's state of a d = 2 network on a fixed probe set.

    Parameters
    ----------
    model : torch.nn.Module
        The network; its forward takes ``tokens`` (B, T) and returns logits (B, p).
    tokens : array-like of int, shape (B, T)
        The probe sequences (token indices in 0..p-1).
    labels : array-like of int, shape (B,)
        Their classes.
    p : int >= 2
        Number of classes (and tokens).
    taps : mapping of str to torch.nn.Module
        Modules whose output is a state, by the state's name (keys of
        :data:`TAP_STATES`); a hook reads each one's output when the model
        runs on the probe set. At least ``sequence`` and ``logits``.
    parameters : mapping of str to callable, optional
        Functions returning a parameter state (keys of :data:`PARAMETER_STATES`),
        e.g. ``{"token_embedding": lambda: model.embed.weight[:p]}``.
    regions : mapping of str to callable, optional
        For a plane of :data:`REGION_PLANES` (``sequence``, ``residual``): a
        function mapping points (n, 2) of that plane (a float tensor) to
        logits (n, p); the region map is their arg max over a grid around
        the probe points (and the origin).
    split : sequence of str, optional
        "train" or "val" for each probe sequence (default all "train").
    grid : int >= 8
        Grid points per side of each region map (:data:`LAYER_GRID`).

    Raises
    ------
    ValueError
        naming the state, its module and the shape, when a tapped module's
        output does not have its state's shape (at the first :meth:`record`,
        or before any training with :meth:`check`).
    """

    def __init__(self, model: nn.Module, tokens: Any, labels: Any, *, p: int,
                 taps: Mapping[str, nn.Module], parameters: Mapping[str, Callable[[], Any]] | None = None,
                 regions: Mapping[str, Callable[[torch.Tensor], torch.Tensor]] | None = None,
                 split: Sequence[str] | None = None, grid: int = LAYER_GRID) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.p = check_int(p, "p", 2)
        toks = np.asarray(tokens)
        if toks.ndim != 2 or toks.shape[0] < 1 or toks.dtype.kind not in "iu":
            raise ValueError(f"tokens must be an int array of shape (B, T), got {toks.dtype} of shape {toks.shape}")
        if toks.min() < 0 or toks.max() >= self.p:
            raise ValueError(f"tokens must be in 0..{self.p - 1} (p={self.p}), got {toks.min()}..{toks.max()}")
        labs = np.asarray(labels)
        if labs.shape != (toks.shape[0],) or labs.dtype.kind not in "iu" or labs.min() < 0 or labs.max() >= self.p:
            raise ValueError(f"labels must be {toks.shape[0]} ints in 0..{self.p - 1}, one per probe sequence")
        split = ["train"] * len(toks) if split is None else list(split)
        if len(split) != len(toks) or not set(split) <= {"train", "val"}:
            raise ValueError(f"split must be 'train' or 'val' for each of the {len(toks)} probe sequences")
        for kind, given, known in (("taps", taps, TAP_STATES), ("parameters", parameters or {}, PARAMETER_STATES),
                                   ("regions", regions or {}, REGION_PLANES)):
            if not isinstance(given, Mapping):
                raise TypeError(f"{kind} must be a mapping of state names to "
                                f"{'modules' if kind == 'taps' else 'functions'}, got {type(given).__name__}")
            bad = [k for k in given if k not in known]
            if bad:
                raise ValueError(f"{kind} names {bad[0]!r}; the {kind} are {', '.join(known)}")
        for name in ("sequence", "logits"):
            if name not in taps:
                raise ValueError(f"taps must name the module whose output is {name!r} (the sandbox's least)")
        for name, module in taps.items():
            if not isinstance(module, nn.Module):
                raise TypeError(f"taps[{name!r}] must be a torch.nn.Module (its output is read by a forward hook), "
                                f"got {type(module).__name__}")
        for kind, given in (("parameters", parameters or {}), ("regions", regions or {})):
            for name, fn in given.items():
                if not callable(fn):
                    raise TypeError(f"{kind}[{name!r}] must be a function, got {type(fn).__name__}")
        for plane in regions or {}:
            if plane not in taps:
                raise ValueError(f"regions[{plane!r}] needs taps[{plane!r}]: the grid is placed around its points")
        self.model = model
        self.tokens, self.labels, self.split = toks.astype(np.int64), labs.astype(np.int64), split
        self.taps = dict(taps)
        self.parameters = dict(parameters or {})
        self.regions = dict(regions or {})
        self.grid = check_int(grid, "grid", 8)
        B, T = toks.shape
        first = np.full((self.p, T), -1, dtype=np.int64)  # the first probe sequence with token i at position t
        for t in range(T):
            for i in range(self.p):
                hits = np.flatnonzero(toks[:, t] == i)
                if hits.size:
                    first[i, t] = hits[0]
        self._first = first
        self._sizes = {"B": B, "T": T, "p": self.p, "d": 2, "d+1": 3}
        self._checked = False
        self._steps: list[int] = []
        self._records: list[dict[str, np.ndarray]] = []
        self._curves: dict[str, tuple[list[int], list[float]]] = {}
        self._device = next((q.device for q in model.parameters()), torch.device("cpu"))
        self._probe = torch.as_tensor(self.tokens, device=self._device)

    # -------------------------------------------------------------- what is recorded
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of each array one :meth:`record` gives, by its name."""
        out = {}
        for name in self.parameters:
            out[LAYER_PREFIX + name] = tuple(self._sizes[a] for a in PARAMETER_STATES[name])
        for name in self.taps:
            dims = TAP_STATES[name]
            if name in _PER_TOKEN:
                dims = ("p",) + dims[1:]
            out[LAYER_PREFIX + name] = tuple(self._sizes[a] for a in dims)
        for plane in self.regions:
            out[f"{LAYER_PREFIX}regions_{plane}"] = (self.grid, self.grid)
            out[f"{LAYER_PREFIX}extent_{plane}"] = (4,)
        return out

    def snapshot_bytes(self) -> int:
        """Bytes of one record (float64)."""
        return 8 * sum(math.prod(s) for s in self.shapes().values())

    def meta(self) -> dict[str, Any]:
        """What ``meta["layers"]`` of the run's file holds: the probe set, its labels and splits, the grid, the states."""
        return {"version": 1, "p": self.p, "grid": self.grid, "probe_tokens": self.tokens.tolist(),
                "probe_labels": self.labels.tolist(), "probe_split": list(self.split),
                "states": sorted(k[len(LAYER_PREFIX):] for k in self.shapes())}

    # -------------------------------------------------------------- reading the model
    @torch.no_grad()
    def read(self) -> dict[str, np.ndarray]:
        """The arrays of the model's state now (one snapshot), without keeping them."""
        seen: dict[str, torch.Tensor] = {}
        calls: dict[str, int] = {}

        def hook(name: str, out: Any) -> None:
            seen[name] = out
            calls[name] = calls.get(name, 0) + 1

        handles = [module.register_forward_hook(lambda _m, _i, out, name=name: hook(name, out))
                   for name, module in self.taps.items()]
        modes = {m: m.training for m in self.model.modules()}  # each module's own mode, put back after
        try:
            self.model.eval()
            self.model(self._probe)
            for handle in handles:
                handle.remove()
            return self._arrays(seen, calls)  # the parameters and region maps in eval mode too
        finally:
            for handle in handles:
                handle.remove()
            for m, mode in modes.items():
                m.training = mode

    def _arrays(self, seen: dict[str, Any], calls: dict[str, int]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name, fn in self.parameters.items():
            value = fn()
            out[LAYER_PREFIX + name] = (value.detach().cpu().numpy() if isinstance(value, torch.Tensor)
                                        else np.asarray(value)).astype(np.float64)
        for name in self.taps:
            if name not in seen:
                raise ValueError(f"taps[{name!r}] (module {_module_name(self.model, self.taps[name])}) did not run "
                                 "when the model ran on the probe set: name a module of its forward pass")
            if calls[name] > 1:
                raise ValueError(f"taps[{name!r}] (module {_module_name(self.model, self.taps[name])}) runs "
                                 f"{calls[name]} times in one forward pass: tap a module that runs once (give "
                                 "each use its own module, e.g. two normalisation layers)")
            value = seen[name]
            if not isinstance(value, torch.Tensor):
                raise ValueError(f"taps[{name!r}] (module {_module_name(self.model, self.taps[name])}) returned "
                                 f"{type(value).__name__}; it must return the state as one tensor")
            arr = value.detach().cpu().numpy().astype(np.float64)
            if name in _PER_TOKEN and arr.ndim == 3:
                B, T = self.tokens.shape
                if arr.shape[:2] == (B, T):
                    idx = np.where(self._first >= 0, self._first, 0)
                    arr = arr[idx, np.arange(T)[None, :]]
                    arr[self._first < 0] = np.nan
            out[LAYER_PREFIX + name] = arr
        if not self._checked:
            self._check_shapes(out)
        for plane, fn in self.regions.items():
            extent = _extent(out[LAYER_PREFIX + plane])
            pts = torch.as_tensor(grid_points(extent, self.grid), dtype=next(
                (q.dtype for q in self.model.parameters()), torch.float64), device=self._device)
            logits = fn(pts)
            if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != (len(pts), self.p):
                got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
                raise ValueError(f"regions[{plane!r}] must map points (n, 2) of the plane to logits (n, {self.p}), "
                                 f"got {got} for n = {len(pts)}")
            out[f"{LAYER_PREFIX}regions_{plane}"] = logits.argmax(dim=1).cpu().numpy().reshape(
                self.grid, self.grid).astype(np.float64)
            out[f"{LAYER_PREFIX}extent_{plane}"] = extent
        return out

    def _check_shapes(self, out: dict[str, np.ndarray]) -> None:
        for key, shape in self.shapes().items():
            if key not in out:
                continue
            if out[key].shape != shape:
                name = key[len(LAYER_PREFIX):]
                where = (f"module {_module_name(self.model, self.taps[name])}" if name in self.taps
                         else f"parameters[{name!r}]")
                dims = TAP_STATES.get(name) or PARAMETER_STATES[name]
                raise ValueError(f"{name}: {where} gives shape {out[key].shape}, expected {shape} "
                                 f"({', '.join(dims)} with B = {self._sizes['B']} probe sequences, T = "
                                 f"{self._sizes['T']}, p = {self.p}, d = 2)")
        self._checked = True

    def check(self) -> None:
        """Run the model on the probe set once and check every state's shape (before any training)."""
        self.read()

    # -------------------------------------------------------------- a user's own run
    def record(self, step: int) -> dict[str, np.ndarray]:
        """Read and keep the state at ``step`` (increasing); returns the arrays."""
        step = check_int(step, "step", 0)
        if self._steps and step <= self._steps[-1]:
            raise ValueError(f"step must increase, got {step} after {self._steps[-1]}")
        arrays = self.read()
        self._steps.append(step)
        self._records.append(arrays)
        return arrays

    def log(self, step: int, **values: float) -> None:
        """Keep per-step values (``train_loss``, ``train_acc``, ``val_loss``,
        ``val_acc``, ``grad_norm_<group>``, ...) for the run's file."""
        step = check_int(step, "step", 0)
        for name, value in values.items():
            if not name.isidentifier():
                raise ValueError(f"a logged value's name must be an identifier, got {name!r}")
            steps, vals = self._curves.setdefault(name, ([], []))
            if steps and step <= steps[-1]:
                raise ValueError(f"{name}: step must increase, got {step} after {steps[-1]}")
            steps.append(step)
            vals.append(float(value))

    def trajectory(self, meta: Mapping[str, Any] | None = None):
        """The recording as a :class:`~particles.Trajectory`: the token
        embedding at each recorded step (its ``embeddings``; zeros when
        ``parameters`` has no ``token_embedding``), the layer arrays and the
        logged values as curves."""
        from particles.core.version import package_version
        from particles.trajectory import Trajectory

        if not self._records:
            raise ValueError("nothing recorded yet: call record(step) first")
        arrays = {k: np.stack([r[k] for r in self._records]) for k in self._records[0]}
        key = LAYER_PREFIX + "token_embedding"
        emb = arrays[key] if key in arrays else np.zeros((len(self._records), self.p, 2))
        curves = {n: (np.asarray(s, dtype=np.int64), np.asarray(v)) for n, (s, v) in self._curves.items()}
        info = {"source": "fitting.training.LayerRecorder", "p": self.p, "d": 2, "version": package_version(),
                "layers": self.meta(), **(meta or {})}
        return Trajectory(emb, np.asarray(self._steps, dtype=np.int64), snapshot_arrays=arrays, meta=info,
                          curves=curves)
