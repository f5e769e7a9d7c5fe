"""Train a whole hyper-parameter grid of the toy model as one stacked model
(needs torch).

Every cell (grid point x seed) keeps its own parameters, data split,
targets and AdamW state; they are stacked along a leading axis, every layer
is one batched matrix product (training and validation rows in one
product), and the backward is written out per cell (the embedding's
gradient of E_a + E_b as one product with the cell's pair incidence;
autograd only through the matrix products of the S_3 input), so each cell
receives exactly its own gradient. Accuracies are computed in the same
compiled step. AdamW is applied
element-wise with per-cell learning rates and weight decays (the formulas of
``torch.optim.AdamW``), fused into one compiled kernel where
``torch.compile`` works and in plain torch otherwise. A cell stops once its
outcome is decided (both accuracies reached the threshold), diverges, or
the budget ends; stopped cells are removed from the stack, so the rest of
the grid runs faster.

Each cell starts from the parameters, split and targets of the single run
``train(config.replace(**cell), seed)``, and records the first step at which
its training and validation accuracy (measured before the update of that
step, as ``train`` records them) reach ``threshold``.
"""

from __future__ import annotations

import csv
import glob
import io
import itertools
import json
import math
import os
import queue as queue_lib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch
from torch.nn import functional as F

from effective_theory.metrics import PHASES, classify_phase
from particles.core.io import atomic_write_text

from .activations import tanh_fast, tanh_of
from .adamw import adamw_scalars, adamw_update
from particles.core.validation import check_seeds
from .compiling import compiled_or_plain
from .configs import ToyConfig
from .loop import Checkpoint, Progress, run_steps
from .models import DTYPES, ToyTask, predict_labels, toy_decoder_input
from .threads import threads_per_job, worker_sigint
from .trainer import checkpoint_path

__all__ = ["train_grid", "GridResult", "GRID_FIELDS", "GridFormatError"]

#: Config fields a grid may vary (the four optimiser settings).
GRID_FIELDS = ("decoder_lr", "decoder_weight_decay", "embedding_lr", "embedding_weight_decay")
RECORD_KEYS = ("seed", "steps_train", "steps_val", "phase", "steps_run", "train_acc", "val_acc", "train_loss",
               "diverged")


class GridFormatError(ValueError):
    """A grid result file is malformed; the message names the field."""


TANH_BEFORE_OPTION = "exact"
"""The tanh of results and checkpoints written before ``train_grid`` had a
``tanh`` option (their meta has no ``tanh`` key)."""


# ------------------------------------------------------------------ results
@dataclass
class GridResult:
    """One record per cell and seed, plus how the grid was run.

    Attributes
    ----------
    records : list of dict
        Grid fields of the cell (e.g. ``decoder_lr``, ``decoder_weight_decay``),
        ``seed``, ``steps_train`` and ``steps_val`` (first step with accuracy
        >= threshold, None if never), ``phase`` (``effective_theory.classify_phase``
        with the run's budget and gap; validation reached without training
        counts as confusion), ``steps_run`` (steps trained before
        the cell stopped), ``train_acc``/``val_acc``/``train_loss`` at the
        last step measured, ``diverged`` (loss became non-finite).
    meta : dict
        ``config``, ``grid``, ``seeds``, ``steps``, ``threshold``, ``gap``,
        ``stop_when``, ``seconds``, ``cell_steps`` (sum of steps over cells),
        ``compiled``, ``torch_version``, ``tanh`` (absent in results made
        before the option: those used ``"exact"``), ``threads`` (torch
        threads per process) and ``n_jobs`` (processes; both absent in
        older results).
    """

    records: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def merge(cls, results: Sequence["GridResult"]) -> "GridResult":
        """One result from runs of the same grid with different seeds (for
        example ``--first-seed 1 --seeds 2`` after a one-seed run). Records
        are ordered by cell, then seed; ``seconds`` and ``cell_steps`` add up."""
        results = list(results)
        if not results:
            raise ValueError("results must hold at least one GridResult")
        first = results[0].meta
        for r in results[1:]:
            for key in ("config", "grid", "steps", "threshold", "gap", "stop_when", "val_without_train"):
                if r.meta.get(key) != first.get(key):
                    raise ValueError(f"results differ in meta[{key!r}]: {first.get(key)!r} vs {r.meta.get(key)!r}")
            tanhs = (first.get("tanh", TANH_BEFORE_OPTION), r.meta.get("tanh", TANH_BEFORE_OPTION))
            if tanhs[0] != tanhs[1]:
                raise ValueError(f"results differ in meta['tanh']: {tanhs[0]!r} vs {tanhs[1]!r}")
        seeds = [s for r in results for s in r.meta.get("seeds", [])]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"results share seeds: {sorted(seeds)}")
        keys = list(first.get("grid", {}))
        order = {tuple(v): i for i, v in enumerate(itertools.product(*first["grid"].values()))} if keys else {}
        records = [rec for r in results for rec in r.records]
        for rec in records:
            if tuple(rec[k] for k in keys) not in order:
                raise ValueError(f"a record's cell {[rec[k] for k in keys]} is not in the grid {first['grid']}")
        records.sort(key=lambda rec: (order[tuple(rec[k] for k in keys)], rec["seed"]))
        meta = {**first, "tanh": first.get("tanh", TANH_BEFORE_OPTION), "seeds": sorted(seeds),
                "seconds": sum(r.meta.get("seconds", 0.0) for r in results),
                "cell_steps": sum(r.meta.get("cell_steps", 0) for r in results)}
        return cls(records, meta)

    def reclassify(self, gap: float | None = None, val_without_train: str = "confusion") -> "GridResult":
        """The same records with phases recomputed from ``steps_train`` and
        ``steps_val`` (for another grokking gap or another treatment of
        validation reached without training)."""
        gap = self.meta.get("gap", 1000.0) if gap is None else gap
        budget = float(self.meta.get("steps", 1e5))
        records = [{**r, "phase": classify_phase(r["steps_train"], r["steps_val"], budget=budget, gap=gap,
                                                 val_without_train=val_without_train)} for r in self.records]
        return GridResult(records, {**self.meta, "gap": float(gap), "val_without_train": val_without_train})

    def phase_counts(self) -> dict[str, int]:
        """Number of records in each phase."""
        return {ph: sum(r["phase"] == ph for r in self.records) for ph in PHASES}

    def majority(self, keys: Sequence[str] | None = None) -> dict[tuple, str]:
        """Majority phase per cell over seeds (ties go to the earlier phase of
        ``PHASES``); cells are keyed by the values of ``keys`` (the grid's
        fields by default)."""
        keys = list(self.meta.get("grid", {})) if keys is None else list(keys)
        votes: dict[tuple, list[str]] = {}
        for r in self.records:
            votes.setdefault(tuple(r[k] for k in keys), []).append(r["phase"])
        return {cell: max(PHASES, key=lambda ph: (v.count(ph), -PHASES.index(ph))) for cell, v in votes.items()}

    # files
    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically as JSON (``.json``: records and meta) or CSV
        (``.csv``: the records)."""
        path = Path(path)
        if path.suffix == ".json":
            text = json.dumps({"meta": self.meta, "records": self.records}, indent=1)
        elif path.suffix == ".csv":
            buf = io.StringIO()
            keys = list(self.records[0]) if self.records else list(RECORD_KEYS)
            writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
            writer.writeheader()
            for r in self.records:
                writer.writerow({k: "" if r[k] is None else r[k] for k in keys})
            text = buf.getvalue()
        else:
            raise ValueError(f"path must end in .json or .csv, got {str(path)!r}")
        return atomic_write_text(path, text)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "GridResult":
        """Read a ``.json`` file written by :meth:`save`."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise GridFormatError(f"{str(path)!r} is not a JSON grid result: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise GridFormatError(f"{str(path)!r}: field 'records' must be a list")
        for i, r in enumerate(data["records"]):
            if not isinstance(r, dict):
                raise GridFormatError(f"{str(path)!r}: field 'records[{i}]' must be an object")
            for key in ("seed", "steps_train", "steps_val", "phase"):
                if key not in r:
                    raise GridFormatError(f"{str(path)!r}: field 'records[{i}].{key}' is missing")
            if r["phase"] not in PHASES:
                raise GridFormatError(f"{str(path)!r}: field 'records[{i}].phase' must be one of {PHASES}, "
                                      f"got {r['phase']!r}")
        return cls(records=data["records"], meta=data.get("meta", {}))


# ------------------------------------------------------------------ checks
def _check_grid(grid: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    if not isinstance(grid, Mapping) or not grid:
        raise TypeError(f"grid must be a non-empty dict of field -> values, got {type(grid).__name__}")
    out = {}
    for key, values in grid.items():
        if key not in GRID_FIELDS:
            raise ValueError(f"grid keys must be among {GRID_FIELDS}, got {key!r}")
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)) or np.ndim(values) != 1 \
                or len(values) == 0:
            raise ValueError(f"grid[{key!r}] must be a non-empty list of numbers, got {values!r}")
        vals = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise ValueError(f"grid[{key!r}] must hold finite numbers, got {v!r}")
            vals.append(float(v))
        out[key] = vals
    return out


# ------------------------------------------------------------------ the stack
class _Stack:
    """Parameters, optimiser state and data of the active cells."""

    NAMES = ("embedding", "w1", "b1", "w2", "b2", "w3", "b3")

    def __init__(self, config: ToyConfig, cells: list[dict[str, float]], seeds: list[int]):
        self.config = config
        tasks = [ToyTask(config.replace(**cell), seed) for cell, seed in zip(cells, seeds)]
        self.tensors: dict[str, torch.Tensor] = {}
        emb = torch.stack([t.model.embedding.detach() for t in tasks])
        lin = [[t.model.decoder[i] for t in tasks] for i in (0, 2, 4)]
        self.tensors["embedding"] = emb.clone()
        for k, layers in enumerate(lin, start=1):
            self.tensors[f"w{k}"] = torch.stack([layer.weight.detach().T for layer in layers]).contiguous()
            self.tensors[f"b{k}"] = torch.stack([layer.bias.detach() for layer in layers]).clone()
        for name in self.NAMES:
            self.tensors[f"m_{name}"] = torch.zeros_like(self.tensors[name])
            self.tensors[f"v_{name}"] = torch.zeros_like(self.tensors[name])
        self.tensors["train_pairs"] = torch.stack([t.train_pairs for t in tasks])
        self.tensors["train_labels"] = torch.stack([t.train_labels for t in tasks])
        self.tensors["val_pairs"] = torch.stack([t.val_pairs for t in tasks])
        self.tensors["val_labels"] = torch.stack([t.val_labels for t in tasks])
        self.tensors["targets"] = torch.stack([t.targets for t in tasks])
        self.tensors["incidence"] = _incidence(self.tensors["train_pairs"], emb.shape[1], emb.dtype)
        for key in GRID_FIELDS:  # float64: per-cell scalars are rounded once, as torch rounds Python floats
            self.tensors[key] = torch.tensor([getattr(t.config, key) for t in tasks], dtype=torch.float64)
        self.tensors["index"] = torch.arange(len(tasks))

    def select(self, keep: torch.Tensor) -> None:
        self.tensors = {k: v[keep].contiguous() for k, v in self.tensors.items()}

    def __len__(self) -> int:
        return int(self.tensors["index"].shape[0])


def _incidence(pairs: torch.Tensor, p: int, dtype: torch.dtype) -> torch.Tensor:
    """(C, p, n): how often symbol i occurs in training pair r of each cell
    (pairs (C, n, 2))."""
    symbols = torch.arange(p)[None, :, None]
    return (pairs[:, None, :, 0] == symbols).to(dtype) + (pairs[:, None, :, 1] == symbols).to(dtype)


def _decoder_step(x_train: torch.Tensor, x_val: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor,
                  b2: torch.Tensor, w3: torch.Tensor, b3: torch.Tensor, train_labels: torch.Tensor,
                  val_labels: torch.Tensor, targets: torch.Tensor, classification: bool,
                  fast_tanh: bool = False, incidence: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Forward of the stacked tanh decoders on the training and validation
    inputs together, and the backward of the per-cell training loss, written
    out (no autograd).

    Shapes: ``x_*`` (C, n, in), ``w_k`` (C, in_k, out_k) (weights stored
    transposed), ``b_k`` (C, out_k), labels (C, n) and (C, m), ``targets``
    (C, labels, out). Returns the per-cell training loss (C,), the per-cell
    training and validation accuracy (C,) (float64; predictions by
    :func:`~fitting.backend.models.predict_labels`), the gradients of w1,
    b1, w2, b2, w3, b3 and that of ``x_train``, or, given ``incidence`` (C, p, n) (how often each symbol
    occurs in each training pair), that of the embedding, for decoder inputs
    E_a + E_b.

    One product per layer serves both row sets (the validation rows ride
    along at no extra call), and the backward runs on the training rows only;
    a first layer with a single input is an outer product, done element-wise.
    The formulas are autograd's for ``train``'s loss (mean squared error over
    rows and output components, or mean cross-entropy), so every cell follows
    its single run to float rounding. ``fast_tanh`` uses
    :func:`~fitting.backend.activations.tanh_fast` (absolute error <= 2 eps)
    instead of ``torch.tanh``."""
    tanh = tanh_fast if fast_tanh else torch.tanh
    n = x_train.shape[1]
    x = torch.cat([x_train, x_val], dim=1)
    if x.shape[2] == 1:
        h1 = tanh(x * w1 + b1[:, None, :])
    else:
        h1 = tanh(torch.baddbmm(b1[:, None, :], x, w1))
    h2 = tanh(torch.baddbmm(b2[:, None, :], h1, w2))
    out = torch.baddbmm(b3[:, None, :], h2, w3)
    out_train = out[:, :n]
    if classification:
        logp = torch.log_softmax(out_train, dim=2)
        loss = -logp.gather(2, train_labels[:, :, None]).squeeze(2).mean(dim=1)
        g_out = torch.exp(logp)
        g_out = (g_out - F.one_hot(train_labels, out.shape[2]).to(out.dtype)) / n
    else:
        rows = torch.arange(out.shape[0])[:, None]
        diff = out_train - targets[rows, train_labels]
        loss = diff.pow(2).mean(dim=(1, 2))
        g_out = diff * (2.0 / (n * out.shape[2]))
    h1t, h2t = h1[:, :n], h2[:, :n]
    g_w3 = torch.bmm(h2t.transpose(1, 2), g_out)
    g_b3 = g_out.sum(dim=1)
    g_a2 = torch.bmm(g_out, w3.transpose(1, 2)) * (1 - h2t * h2t)
    g_w2 = torch.bmm(h1t.transpose(1, 2), g_a2)
    g_b2 = g_a2.sum(dim=1)
    g_a1 = torch.bmm(g_a2, w2.transpose(1, 2)) * (1 - h1t * h1t)
    g_b1 = g_a1.sum(dim=1)
    if x.shape[2] == 1:
        g_w1 = (x_train * g_a1).sum(dim=1, keepdim=True)
        g_x = (g_a1 * w1).sum(dim=2, keepdim=True)
    else:
        g_w1 = torch.bmm(x_train.transpose(1, 2), g_a1)
        g_x = torch.bmm(g_a1, w1.transpose(1, 2))
    pred = predict_labels(out, targets, classification)
    train_acc = (pred[:, :n] == train_labels).to(torch.float64).mean(dim=1)
    val_acc = (pred[:, n:] == val_labels).to(torch.float64).mean(dim=1)
    if incidence is not None:  # x = E_a + E_b: the embedding's gradient sums its rows' gradients
        g_x = torch.bmm(incidence, g_x)
    return loss, train_acc, val_acc, g_w1, g_b1, g_w2, g_b2, g_w3, g_b3, g_x


def train_grid(config: ToyConfig, grid: Mapping[str, Sequence[float]], seeds: Sequence[int] = (0,), *,
               steps: int | None = None, threshold: float = 0.9, gap: float = 1000.0, stop_when: str = "decided",
               out: str | os.PathLike | None = None, checkpoint_every: int | None = None, resume: bool = False,
               callback: Callable[[int, int], None] | None = None, compile: str = "auto",
               tanh: str = "fast", n_jobs: int = 1) -> GridResult:
    """Train every cell of ``grid`` (and every seed) of the toy model at once.

    Parameters
    ----------
    config : ToyConfig
        The fields that do not vary (for example from
        :func:`fitting.backend.toy_phase_setting`); its ``dtype`` (float32 or
        float64) is used.
    grid : dict of field -> list of numbers
        Fields among ``GRID_FIELDS``; every combination is a cell.
    seeds : list of distinct ints >= 0
        Every cell runs once per seed (split, initialisation and targets as
        ``train(config, seed)``).
    steps : int >= 1, optional
        Step budget; ``config.steps`` by default.
    threshold : float in (0, 1]
        Accuracy that counts as reached (0.9 in the paper).
    gap : float > 0
        Grokking gap passed to ``effective_theory.classify_phase`` (1e3 in
        the paper).
    stop_when : {"decided", "never"}
        ``"decided"`` stops a cell once both accuracies reached the
        threshold (its phase can no longer change); ``"never"`` trains every
        cell for the whole budget.
    out : path ending in .json, optional
        Where the result is written (atomically), with a CSV beside it.
        Needed for checkpoints.
    checkpoint_every : int >= 1, optional
        Write ``<out stem>.ckpt.pt`` every this many steps (removed when the
        grid completes); ``resume=True`` continues from it bit-identically.
    callback : callable(done, total), optional
        Called after every step.
    compile : {"auto", "never"}
        ``"auto"`` fuses the AdamW update with ``torch.compile`` when it
        works (about 5x less time in the update on 2 cores); ``"never"`` uses
        plain torch (same formulas).
    tanh : {"fast", "exact"}
        The decoder's activation: ``"fast"`` (default)
        :func:`~fitting.backend.activations.tanh_fast`, within 2 machine
        epsilons of tanh, saves ~10 % of a compiled step (in plain torch,
        ``compile="never"``, it is slower than ``torch.tanh``: use
        ``"exact"`` there); ``"exact"`` is ``torch.tanh``, the function of
        ``nn.Tanh`` in ``train`` and of the grid results made before the
        option. Either way cells agree with single runs to float rounding
        (tested in float64 and float32).
    n_jobs : int >= 1
        Processes (joblib's reusable loky workers). With ``n_jobs > 1`` the
        cells are dealt round-robin into ``n_jobs`` parts, each trained as
        its own stack in its own process with ``torch threads // n_jobs``
        threads; the records are the same, bit for bit, as with one
        process (cells are independent and the result does not depend on
        the thread count; tested plain in float64 and compiled in
        float32). On 2 cores two one-thread processes ran the paper's grid
        0.97-1.24x as fast as one two-thread process (median 1.1x; 2.3-2.8x
        with a busy neighbour; docs/training.md, "Speed"). Checkpoints are then one file per part
        (``<out stem>.part<k>of<n>.ckpt.pt``), ``resume=True`` needs the
        same ``n_jobs``, and ``callback`` reports the slowest part's step
        (at most twice a second).

    Returns
    -------
    GridResult
        One record per cell and seed, in the order of
        ``itertools.product(*grid.values())`` then ``seeds``.
    """
    if not isinstance(config, ToyConfig):
        raise TypeError(f"config must be a ToyConfig, got {type(config).__name__}")
    grid = _check_grid(grid)
    seeds = check_seeds(seeds)
    steps = config.steps if steps is None else steps
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    steps = int(steps)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if isinstance(gap, bool) or not isinstance(gap, (int, float)) or not (math.isfinite(gap) and gap > 0):
        raise ValueError(f"gap must be a finite number > 0, got {gap!r}")
    if stop_when not in ("decided", "never"):
        raise ValueError(f"stop_when must be 'decided' or 'never', got {stop_when!r}")
    if compile not in ("auto", "never"):
        raise ValueError(f"compile must be 'auto' or 'never', got {compile!r}")
    tanh_of(tanh)  # ValueError naming tanh
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"checkpoint_every must be None or an int >= 1, got {checkpoint_every!r}")
    if out is not None and Path(out).suffix != ".json":
        raise ValueError(f"out must end in .json, got {str(out)!r}")
    if (checkpoint_every or resume) and out is None:
        raise ValueError("checkpoint_every and resume need an output path (out=...)")

    keys = list(grid)
    points = [dict(zip(keys, values)) for values in itertools.product(*grid.values())]
    cells = [pt for pt in points for _ in seeds]
    cell_seeds = [s for _ in points for s in seeds]
    n = len(cells)
    identity = {"config": config.to_dict(), "grid": grid, "seeds": seeds, "steps": steps,
                "threshold": float(threshold), "stop_when": stop_when, "compile": compile, "tanh": tanh,
                "torch_version": str(torch.__version__)}
    top = max_jobs(len(cells))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or not 1 <= n_jobs <= top:
        raise ValueError(f"n_jobs must be an int in [1, {top}] (at most one process per cell and per CPU), "
                         f"got {n_jobs!r}")
    n_jobs = int(n_jobs)
    found = _checkpoints_found(out) if out is not None else {}
    others = {path: k for path, k in found.items() if path not in _checkpoints(out, n_jobs)}
    if resume and others:
        splits = sorted(set(others.values()))
        raise ValueError(f"resume: checkpoints of {Path(out).name} were written with n_jobs={splits} "
                         f"({sorted(p.name for p in others)}); resume with that n_jobs (got n_jobs={n_jobs})")
    for path in others:  # a fresh run replaces the checkpoints of a run with another split
        path.unlink()
    run_args = dict(steps=steps, threshold=threshold, stop_when=stop_when, checkpoint_every=checkpoint_every,
                    resume=resume, compile=compile, tanh=tanh)
    if n_jobs == 1:
        ckpt = _checkpoints(out, 1)[0] if out is not None else None
        run = _train_cells(config, cells, cell_seeds, identity, ckpt=ckpt, callback=callback, **run_args)
    else:
        run = _train_parts(config, cells, cell_seeds, identity, n_jobs=n_jobs, out=out, callback=callback,
                           **run_args)
    steps_train, steps_val, steps_run, last, diverged = (run[k] for k in ("steps_train", "steps_val", "steps_run",
                                                                          "last", "diverged"))
    records = []
    for i in range(n):
        t_tr = int(steps_train[i]) if steps_train[i] >= 0 else None
        t_va = int(steps_val[i]) if steps_val[i] >= 0 else None
        records.append({**cells[i], "seed": cell_seeds[i], "steps_train": t_tr, "steps_val": t_va,
                        "phase": classify_phase(t_tr, t_va, budget=float(steps), gap=float(gap),
                                                val_without_train="confusion"),
                        "steps_run": int(steps_run[i]),
                        "train_acc": _num(last[i, 0]), "val_acc": _num(last[i, 1]), "train_loss": _num(last[i, 2]),
                        "diverged": bool(diverged[i])})
    meta = {**identity, "gap": float(gap), "val_without_train": "confusion", "seconds": run["seconds"],
            "cell_steps": run["cell_steps"], "compiled": run["compiled"], "torch_version": str(torch.__version__),
            "threads": run["threads"], "n_jobs": n_jobs}
    result = GridResult(records, meta)
    if out is not None:
        result.save(out)
        result.save(Path(out).with_suffix(".csv"))
        for ckpt in _checkpoints(out, n_jobs):
            if ckpt.exists():
                ckpt.unlink()
    return result


def _train_cells(config: ToyConfig, cells: list[dict[str, float]], cell_seeds: list[int], identity: dict, *,
                 steps: int, threshold: float, stop_when: str, ckpt: Path | None, checkpoint_every: int | None,
                 resume: bool, callback: Callable[[int, int], None] | None, compile: str, tanh: str
                 ) -> dict[str, Any]:
    """Train ``cells`` (one seed each) as one stack in this process; the
    per-cell arrays of :func:`train_grid`'s records, and the run's time,
    cell-steps, whether the step was compiled and the thread count."""
    n = len(cells)
    stack = _Stack(config, cells, cell_seeds)
    steps_train = np.full(n, -1, dtype=np.int64)
    steps_val = np.full(n, -1, dtype=np.int64)
    steps_run = np.zeros(n, dtype=np.int64)
    last = np.full((n, 3), np.nan)  # train_acc, val_acc, train_loss
    diverged = np.zeros(n, dtype=bool)
    start, elapsed = 0, 0.0
    cell_steps = [0]
    checkpoint = Checkpoint(ckpt, identity, kind="grid run",
                            same=lambda saved: {"tanh": TANH_BEFORE_OPTION, **saved} == identity)
    state = checkpoint.load() if resume else None
    if state is not None:
        stack.tensors = state["tensors"]
        if "incidence" not in stack.tensors:
            # a checkpoint written before the stack kept it (and before the embedding gradient and the
            # distance search moved into the step): resumes, but equals the old code's run only to rounding
            stack.tensors["incidence"] = _incidence(stack.tensors["train_pairs"], config.p,
                                                    stack.tensors["embedding"].dtype)
        steps_train, steps_val, steps_run = (state[k].numpy().copy() for k in ("steps_train", "steps_val",
                                                                               "steps_run"))
        last, diverged = state["last"].numpy().copy(), state["diverged"].numpy().copy()
        start, elapsed, cell_steps[0] = int(state["step"]), float(state["elapsed"]), int(state["cell_steps"])
    step_fn, update = compiled_or_plain(_decoder_step, compile), compiled_or_plain(adamw_update, compile)
    classification = config.task == "classification"
    additive = config.group != "permutation"
    dtype = DTYPES[config.dtype]
    names = _Stack.NAMES
    decoder = set(names[1:])

    def save(step: int) -> None:
        checkpoint.save({"tensors": stack.tensors, "step": step, "elapsed": elapsed + time.perf_counter() - t0,
                         "cell_steps": cell_steps[0], "steps_train": torch.from_numpy(steps_train),
                         "steps_val": torch.from_numpy(steps_val), "steps_run": torch.from_numpy(steps_run),
                         "last": torch.from_numpy(last), "diverged": torch.from_numpy(diverged)})

    def one_step(step: int, progress: Progress) -> None:
        tensors = stack.tensors
        embedding = tensors["embedding"].requires_grad_(not additive)
        x_train = toy_decoder_input(embedding, tensors["train_pairs"], config.group, config.d)
        with torch.no_grad():
            x_val = toy_decoder_input(embedding, tensors["val_pairs"], config.group, config.d)
            loss, train_acc, val_acc, *decoder_grads, g_x = step_fn(
                x_train.detach(), x_val, *(tensors[k] for k in names[1:]), tensors["train_labels"],
                tensors["val_labels"], tensors["targets"], classification, tanh == "fast",
                tensors["incidence"] if additive else None)
        if additive:
            g_embedding = g_x
        else:  # products of matrices: autograd through the gather
            (g_embedding,) = torch.autograd.grad(x_train, embedding, g_x)
        grads = [g_embedding, *decoder_grads]
        progress.consistent = False  # from here until the next step starts, the state is mid-update
        idx = tensors["index"].numpy()
        loss_np, tr_np, va_np = loss.detach().to(torch.float64).numpy(), train_acc.numpy(), val_acc.numpy()
        last[idx] = np.stack([tr_np, va_np, loss_np], axis=1)
        steps_run[idx] = step
        bad = ~np.isfinite(loss_np)
        diverged[idx[bad]] = True
        new_train = (steps_train[idx] < 0) & (tr_np >= threshold) & ~bad
        new_val = (steps_val[idx] < 0) & (va_np >= threshold) & ~bad
        steps_train[idx[new_train]] = step
        steps_val[idx[new_val]] = step
        stop = bad.copy()
        if stop_when == "decided":
            stop |= (steps_train[idx] >= 0) & (steps_val[idx] >= 0)
        cell_steps[0] += len(idx)
        with torch.no_grad():
            embedding.requires_grad_(False)
            decays, step_sizes = {}, {}
            for group, (lr_key, wd_key) in (("dec", ("decoder_lr", "decoder_weight_decay")),
                                            ("emb", ("embedding_lr", "embedding_weight_decay"))):
                decays[group], step_sizes[group], bc2s = adamw_scalars(tensors[lr_key], tensors[wd_key],
                                                                       step + 1, dtype)
            groups = ["dec" if k in decoder else "emb" for k in names]
            update([tensors[k] for k in names], list(grads), [tensors[f"m_{k}"] for k in names],
                   [tensors[f"v_{k}"] for k in names], [decays[g] for g in groups],
                   [step_sizes[g] for g in groups], bc2s)
        steps_run[idx[~stop]] = step + 1
        if stop.any():
            stack.select(torch.as_tensor(~stop))

    t0 = time.perf_counter()
    step = run_steps(start, steps, one_step, save=save if ckpt is not None else None,
                     checkpoint_every=checkpoint_every, callback=callback, running=lambda: len(stack) > 0)
    if callback is not None and step < steps:
        callback(steps, steps)  # every cell stopped early: the work is done
    if ckpt is not None and checkpoint_every and "parts" in identity:
        save(step)  # a finished part keeps its result until the whole grid is written
    return {"steps_train": steps_train, "steps_val": steps_val, "steps_run": steps_run, "last": last,
            "diverged": diverged, "seconds": elapsed + time.perf_counter() - t0, "cell_steps": int(cell_steps[0]),
            "compiled": bool(getattr(update, "is_compiled", False) and getattr(step_fn, "is_compiled", False)),
            "threads": torch.get_num_threads()}


def max_jobs(cells: int) -> int:
    """Largest ``n_jobs`` for a grid of ``cells`` cells: one process per
    cell and per CPU this process may run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cells, cpus))


def _checkpoints(out: str | os.PathLike, n_jobs: int) -> list[Path]:
    """The checkpoint files of a grid written to ``out`` with ``n_jobs``
    processes: ``<stem>.ckpt.pt``, or ``<stem>.part<k>of<n>.ckpt.pt``."""
    out = Path(out)
    if n_jobs == 1:
        return [checkpoint_path(out)]
    return [out.with_name(f"{out.stem}.part{k + 1}of{n_jobs}.ckpt.pt") for k in range(n_jobs)]


def _checkpoints_found(out: str | os.PathLike) -> dict[Path, int]:
    """Every checkpoint of ``out``'s stem on disk, with the ``n_jobs`` that wrote it."""
    out = Path(out)
    found = {}
    for path in out.parent.glob(f"{glob.escape(out.stem)}.*ckpt.pt"):
        match = re.fullmatch(r"(?:\.part\d+of(\d+))?\.ckpt\.pt", path.name[len(out.stem):])
        if match:
            found[path] = int(match[1]) if match[1] else 1
    return found


def _part_worker(threads: int, queue: Any, stop: str, part: int, config: ToyConfig, cells: list[dict[str, float]],
                 cell_seeds: list[int], identity: dict, ckpt: Path | None, run_args: dict) -> dict[str, Any]:
    """One part of a grid in a worker process. Reports its step to ``queue``
    (at most twice a second, and at its end) and stops like an interrupted
    run (checkpoint at the last whole step, if checkpointing) once the file
    ``stop`` exists or the calling process is gone, checked every 0.2 s.

    A Ctrl-C in a terminal reaches the whole process group; the worker
    ignores it from now on (the caller receives it and creates ``stop``), so
    a part always stops between two steps, where its checkpoint is
    consistent. It stays ignored after the part, while the worker idles: a
    Ctrl-C there would end the worker, and loky then kills the whole pool,
    parts still checkpointing included (an interrupted joblib caller kills
    its workers anyway)."""
    torch.set_num_threads(threads)
    caller = os.getppid()
    sent, checked = [-math.inf], [time.monotonic()]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - sent[0] >= 0.5:
            sent[0] = now
            queue.put((part, done))
        if now - checked[0] >= 0.2:
            checked[0] = now
            if os.path.exists(stop) or os.getppid() != caller:
                raise KeyboardInterrupt("the grid was interrupted")
    worker_sigint(ignore=True)
    result = _train_cells(config, cells, cell_seeds, identity, ckpt=ckpt, callback=report, **run_args)
    queue.put((part, run_args["steps"]))  # also when the part had finished before a resume
    return result


def _train_parts(config: ToyConfig, cells: list[dict[str, float]], cell_seeds: list[int], identity: dict, *,
                 n_jobs: int, out: str | os.PathLike | None, callback: Callable[[int, int], None] | None,
                 **run_args: Any) -> dict[str, Any]:
    """:func:`_train_cells` over ``n_jobs`` round-robin parts of ``cells``,
    each in a reusable loky worker; the per-cell arrays back in grid order.

    On an exception in this process (an interruption, or an error raised by
    ``callback``) or in one part, the other parts are asked to stop and get
    a grace period to write their checkpoints before their workers are
    killed. The stop signal is a file, not the manager's: a Ctrl-C during a
    read of the progress queue can leave the manager's connection unusable,
    and creating a file does not depend on it."""
    import shutil
    import tempfile
    from concurrent.futures import wait

    from joblib.executor import get_memmapping_executor
    from joblib.externals.loky.backend.context import get_context

    parts = [list(range(k, len(cells), n_jobs)) for k in range(n_jobs)]
    ckpts = _checkpoints(out, n_jobs) if out is not None else [None] * n_jobs
    threads = threads_per_job(n_jobs)
    steps = run_args["steps"]
    manager, futures, executor = None, [], None
    stop_dir = tempfile.mkdtemp(prefix="embdyn-grid-")
    stop = os.path.join(stop_dir, "stop")  # created to ask every part to stop
    try:
        manager = get_context("loky").Manager()  # loky's context: no re-run of the caller's __main__
        progress = manager.Queue()
        # joblib's own reusable executor (the one joblib.Parallel(backend="loky") uses and may take over);
        # idle workers stay 5 minutes, as joblib's
        executor = get_memmapping_executor(n_jobs, timeout=300)
        futures = [executor.submit(_part_worker, threads, progress, stop, k, config, [cells[i] for i in idx],
                                   [cell_seeds[i] for i in idx], {**identity, "part": k + 1, "parts": n_jobs},
                                   ckpts[k], run_args) for k, idx in enumerate(parts)]
        done, reported = [0] * n_jobs, 0
        while True:
            try:
                k, step = progress.get(timeout=0.2)
                done[k] = max(done[k], step)
            except queue_lib.Empty:
                if all(f.done() for f in futures) or any(f.done() and f.exception() is not None for f in futures):
                    break
                continue
            if callback is not None and min(done) > reported:
                reported = min(done)
                callback(reported, steps)
        for f in futures:  # a part's error, without waiting for the other parts to finish
            if f.done() and f.exception() is not None:
                raise f.exception()
        runs = [f.result() for f in futures]
        if callback is not None and reported < steps:
            callback(steps, steps)
    except BaseException:
        try:
            if futures:
                Path(stop).touch()
                wait(futures, timeout=60)  # the parts write their checkpoints at their last whole step
        except OSError:  # the stop file could not be made: the parts are killed below without a checkpoint
            pass
        finally:  # also after a second Ctrl-C during the wait
            if executor is not None:
                executor.shutdown(wait=True, kill_workers=True)  # no part keeps training after an interruption
        raise
    finally:
        if manager is not None:
            manager.shutdown()
        shutil.rmtree(stop_dir, ignore_errors=True)
    n = len(cells)
    merged: dict[str, Any] = {"steps_train": np.empty(n, dtype=np.int64), "steps_val": np.empty(n, dtype=np.int64),
                              "steps_run": np.empty(n, dtype=np.int64), "last": np.empty((n, 3)),
                              "diverged": np.empty(n, dtype=bool)}
    for idx, run in zip(parts, runs):
        for key, arr in merged.items():
            arr[idx] = run[key]
    merged.update(seconds=max(r["seconds"] for r in runs), cell_steps=sum(r["cell_steps"] for r in runs),
                  compiled=all(r["compiled"] for r in runs), threads=threads)
    return merged


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
