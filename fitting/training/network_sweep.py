"""Train the constant-attention network over weight decays and seeds as one
stacked model, each run until its validation accuracy has stopped changing
(needs torch).

Every run (weight decay x seed) keeps its own parameters, split and AdamW
state, stacked along a leading axis; each layer is one batched product and
the loss is the sum of the per-run losses, so each run receives exactly its
own gradient and update (the single-run ``train(config, seed)`` gives the
same numbers; tested). A run stops when it has *converged*: its validation
accuracy, measured every ``check_every`` steps, has stayed within
``tolerance`` validation pairs (max - min) at every check of the last
``window`` steps. With weight decay a run's last validation pair can flicker
for tens of thousands of steps while nothing else changes, so the default
tolerance is one pair. Runs that never converge stop at ``max_steps`` and are
flagged.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from particles.core.io import atomic_write_text

from .adamw import adamw_scalars, adamw_update
from particles.core.validation import check_float_list, check_int, check_seeds

from .configs import ConstantAttentionConfig
from .cluster import on_cluster
from .devices import STACK_FLOAT64, check_device, check_device_dtype, device_arg
from .models import ConstantAttentionTask
from .stacked import constant_attention_forward, loss_and_accuracy

__all__ = ["train_network_sweep", "NetworkSweep", "NetworkSweepFormatError"]

RECORD_KEYS = ("weight_decay", "seed", "steps_run", "converged", "train_acc", "val_acc", "train_loss", "embedding")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def _check_record(path: Any, i: int, rec: dict[str, Any]) -> None:
    """Types and ranges of one record; NetworkSweepFormatError naming the field."""
    def bad(key: str, expected: str) -> NetworkSweepFormatError:
        return NetworkSweepFormatError(f"{path}: records[{i}].{key} must be {expected}, got {rec.get(key)!r}")

    if not _is_number(rec["weight_decay"]) or rec["weight_decay"] < 0:
        raise bad("weight_decay", "a finite number >= 0")
    for key in ("seed", "steps_run"):
        if isinstance(rec[key], bool) or not isinstance(rec[key], int) or rec[key] < 0:
            raise bad(key, "an int >= 0")
    diverged = rec.get("diverged", False)
    for key in ("converged", "diverged"):
        if not isinstance(rec.get(key, False), bool):
            raise bad(key, "true or false")
    for key in ("train_acc", "val_acc"):
        if not _is_number(rec[key]) or not 0 <= rec[key] <= 1:
            raise bad(key, "a number in [0, 1]")
    if diverged:
        return
    if not _is_number(rec["train_loss"]):
        raise bad("train_loss", "a finite number")
    try:
        emb = np.asarray(rec["embedding"], dtype=float)
    except (TypeError, ValueError):
        emb = None
    if emb is None or emb.ndim != 2 or emb.shape[0] < 2 or not np.all(np.isfinite(emb)):
        raise bad("embedding", "a finite p x d array")


class NetworkSweepFormatError(ValueError):
    """A network-sweep file is damaged; the message names the field."""


@dataclass
class NetworkSweep:
    """Final state of every run of :func:`train_network_sweep`.

    ``records``: one dict per run with ``weight_decay``, ``seed``,
    ``steps_run``, ``converged`` (validation accuracy stopped changing before
    ``max_steps``), ``diverged`` (non-finite loss or parameters; the run
    stopped there), ``train_acc``, ``val_acc``, ``train_loss`` and
    ``embedding`` (the final p x d token embedding, nested lists; None when
    diverged).
    ``meta``: the config and the stopping rule.
    """

    records: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    def embeddings(self) -> np.ndarray:
        """Final token embeddings, shape (runs, p, d); NaN for diverged runs."""
        shape = np.shape(next((r["embedding"] for r in self.records if r["embedding"] is not None), []))
        return np.array([r["embedding"] if r["embedding"] is not None else np.full(shape, np.nan)
                         for r in self.records], dtype=float)

    def save(self, path: str | os.PathLike) -> Path:
        """Write JSON atomically."""
        text = json.dumps({"meta": self.meta, "records": self.records})
        return atomic_write_text(Path(path), text)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "NetworkSweep":
        """Read a file written by :meth:`save`; a damaged file raises
        :class:`NetworkSweepFormatError` naming the field."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise NetworkSweepFormatError(f"{path}: not a readable JSON network sweep ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise NetworkSweepFormatError(f"{path}: field 'records' is missing or not a list")
        if not isinstance(data.get("meta", {}), dict):
            raise NetworkSweepFormatError(f"{path}: field 'meta' must be an object")
        for i, rec in enumerate(data["records"]):
            if not isinstance(rec, dict):
                raise NetworkSweepFormatError(f"{path}: records[{i}] is not an object")
            for key in RECORD_KEYS:
                if key not in rec:
                    raise NetworkSweepFormatError(f"{path}: records[{i}] has no field {key!r}")
            _check_record(path, i, rec)
        return cls(data["records"], data.get("meta", {}))


NAMES = ("embedding", "w1", "b1", "w2", "b2")


def _stacked_state(config: ConstantAttentionConfig, runs: list[tuple[float, int]],
                   device: torch.device | None = None) -> tuple[dict[str, torch.Tensor], torch.dtype]:
    """Every run's parameters, AdamW moments, data and rates as stacked
    tensors (leading axis: the run), built on the CPU (each run's task draws
    its parameters there) and moved to ``device`` (None: the CPU), and the
    parameters' dtype."""
    tasks = [ConstantAttentionTask(config.replace(weight_decay=w), s) for w, s in runs]
    dtype = tasks[0].model.embedding.dtype
    t: dict[str, torch.Tensor] = {
        "embedding": torch.stack([k.model.embedding.detach() for k in tasks]).clone(),
        "w1": torch.stack([k.model.hidden.weight.detach().T for k in tasks]).contiguous(),
        "b1": torch.stack([k.model.hidden.bias.detach() for k in tasks]).clone(),
        "w2": torch.stack([k.model.output.weight.detach().T for k in tasks]).contiguous(),
        "b2": torch.stack([k.model.output.bias.detach() for k in tasks]).clone(),
    }
    for name in NAMES:
        t[f"m_{name}"] = torch.zeros_like(t[name])
        t[f"v_{name}"] = torch.zeros_like(t[name])
    t["train_pairs"] = torch.stack([k.train_pairs for k in tasks])
    t["train_labels"] = torch.stack([k.train_labels for k in tasks])
    t["val_pairs"] = torch.stack([k.val_pairs for k in tasks])
    t["val_labels"] = torch.stack([k.val_labels for k in tasks])
    t["lr"] = torch.full((len(runs),), float(config.lr), dtype=torch.float64)
    t["wd"] = torch.tensor([w for w, _ in runs], dtype=torch.float64)
    t["emb_wd"] = torch.tensor([k.config.embedding_decay for k in tasks], dtype=torch.float64)
    t["index"] = torch.arange(len(runs))
    if device is not None and device.type != "cpu":
        t = {k: v.to(device) for k, v in t.items()}
    return t, dtype


def check_network_memory(config: ConstantAttentionConfig, runs: int, max_steps: int, check_every: int,
                         name: str = "seeds") -> None:
    """Refuse, before any run is built, ``runs`` stacked runs whose tensors
    (one run's, measured), forward activations (hidden x pairs, with their
    gradients) and accuracy histories exceed the memory budget
    (:func:`particles.core.limits.memory_budget`)."""
    from particles.core.limits import check_budget

    one, _ = _stacked_state(config, [(0.0, 0)])
    tensors = sum(v.numel() * v.element_size() for v in one.values())
    pairs = int(one["train_pairs"].shape[1] + one["val_pairs"].shape[1])
    activations = 3 * 8 * pairs * (config.hidden + config.p)
    history = 32 * (max_steps // check_every + 1)
    per_run = 2 * tensors + activations + history + 1024  # the final record
    check_budget(runs * per_run, f"{runs} network runs (weight decays x {name}) of about {per_run} bytes each",
                 f"use fewer {name} or weight decays")


def _settled(history: list[list[float]], index: list[int], val_acc: np.ndarray, bad: np.ndarray, due: bool,
             n_checks: int, tolerance: float) -> np.ndarray:
    """Append each active run's validation accuracy to its history; True
    where the last ``n_checks + 1`` checks stay within ``tolerance`` (a
    share of the validation pairs) and the window is ``due``."""
    settled = np.zeros(len(val_acc), dtype=bool)
    for j, i in enumerate(index):
        history[i].append(float(val_acc[j]))
        recent = history[i][-(n_checks + 1):]
        settled[j] = due and len(recent) == n_checks + 1 and not bad[j] and max(recent) - min(recent) <= tolerance
    return settled


def _check_sweep_args(config, weight_decays, seeds, callback) -> tuple[ConstantAttentionConfig, list, list]:
    """(config, weight decays, seeds) of :func:`train_network_sweep` checked."""
    config = ConstantAttentionConfig() if config is None else config
    if not isinstance(config, ConstantAttentionConfig):
        raise TypeError(f"config must be a ConstantAttentionConfig, got {type(config).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    return config, check_float_list(weight_decays, "weight_decays", 0.0, distinct=True), check_seeds(seeds)


def _adamw_step(t: dict[str, torch.Tensor], grads, step: int, dtype: torch.dtype) -> None:
    """AdamW step ``step + 1`` of every stacked run, in place (the embedding with its own decay)."""
    with torch.no_grad():
        for k in NAMES:
            t[k].requires_grad_(False)
        decay, step_size, bc2s = adamw_scalars(t["lr"], t["wd"], step + 1, dtype)
        emb_decay, _, _ = adamw_scalars(t["lr"], t["emb_wd"], step + 1, dtype)
        adamw_update([t[k] for k in NAMES], list(grads), [t[f"m_{k}"] for k in NAMES],
                     [t[f"v_{k}"] for k in NAMES], [emb_decay] + [decay] * (len(NAMES) - 1),
                     [step_size] * len(NAMES), bc2s)


def train_network_sweep(config: ConstantAttentionConfig | None = None, weight_decays: Sequence[float] = (0.0, 0.3, 0.6, 1.0),
                        seeds: Sequence[int] = tuple(range(100)), *, max_steps: int = 50_000,
                        check_every: int = 250, window: int = 5000, tolerance: int = 1,
                        callback: Callable[[int, int], None] | None = None,
                        device: str | torch.device | None = None, n_jobs: int | None = None,
                        scheduler=None) -> NetworkSweep:
    """Train the constant-attention network for every weight decay and seed.

    Parameters
    ----------
    config : ConstantAttentionConfig, optional
        Everything but the weight decay (default ``ConstantAttentionConfig()``:
        N = 17, 80/20 split, hidden ReLU 64, AdamW lr 0.01, full batch,
        float64); ``steps`` is ignored (see ``max_steps``).
    weight_decays : sequence of float >= 0
        AdamW weight decay of each group of runs: on all parameters, or on
        the classifier only when ``config.embedding_weight_decay`` is set.
    seeds : sequence of distinct ints >= 0
        Run seeds; run (w, s) starts from ``train(config.replace(weight_decay=w), s)``'s
        parameters and split.
    max_steps : int >= 1
        Budget of full-batch steps per run.
    check_every : int >= 1
        Validation accuracy is measured every this many steps.
    window : int >= check_every
        A run has converged once its validation accuracy stayed within
        ``tolerance`` validation pairs over the checks of the last ``window``
        steps; it then stops.
    tolerance : int >= 0
        Validation pairs the accuracy may move within the window (0: exactly
        constant).
    callback : callable(done, total), optional
        Progress after every check: the steps done of ``max_steps`` (runs that converged stop early).
    device : str or torch.device, optional
        Where the stack trains: ``"cpu"``, ``"cuda"``, ``"cuda:1"``
        (:func:`fitting.training.devices.check_device`; ``"mps"`` is refused:
        the stack keeps float64 rates). None: ``EMBDYN_DEVICE``, else the
        CPU. Checked before any work; the runs start from the parameters
        drawn on the CPU, and a check copies the per-run values (and a
        stopped run's embedding) to the CPU. ``meta["device"]`` says where.
    n_jobs : int >= 1, optional
        Split the seeds into this many contiguous groups (every weight decay
        each), each a stack of its own in a local process (1 by default) or a
        unit on a cluster (default there: one per worker thread); one split
        gives the same bits locally and on a cluster, and agrees with one
        stack to float rounding (1e-15 measured: the stacked AdamW rounds a
        run's slice by where it lies). ``callback`` reports the slowest group's step.
    scheduler : None, dask.distributed.Client, "local:N" or address, optional
        The groups as tasks on a Dask cluster, as :func:`fitting.training.train_grid`.

    Returns
    -------
    NetworkSweep
    """
    config, wds, seeds = _check_sweep_args(config, weight_decays, seeds, callback)
    max_steps, check_every, window, tolerance = _check_stopping(max_steps, check_every, window, tolerance)
    cluster = on_cluster(scheduler)
    if n_jobs is not None or cluster:
        n_jobs = None if n_jobs is None else check_int(n_jobs, "n_jobs", 1, len(seeds))
        device = device_arg(device, here=not cluster, dtype="float64", why=STACK_FLOAT64)
        check_network_memory(config, len(wds) * len(seeds), max_steps, check_every)
        stopping = {"max_steps": max_steps, "check_every": check_every, "window": window, "tolerance": tolerance,
                    "device": device}
        return _sweep_in_groups(config, wds, seeds, stopping, n_jobs, scheduler, callback)
    device = check_device(device)
    check_device_dtype(device, "float64", why=STACK_FLOAT64)
    check_network_memory(config, len(wds) * len(seeds), max_steps, check_every)  # before any run is built

    runs = [(w, s) for w in wds for s in seeds]
    t, dtype = _stacked_state(config, runs, device)
    t0 = time.perf_counter()
    final = _train_until_settled(t, dtype, runs, max_steps, check_every, window, tolerance, callback)
    meta = {"config": config.to_dict(), "weight_decays": wds, "seeds": seeds, "max_steps": max_steps,
            "check_every": check_every, "window": window, "tolerance": tolerance, "seconds": time.perf_counter() - t0,
            "torch_version": str(torch.__version__), "threads": torch.get_num_threads(), "device": str(device),
            "rule": "converged: validation accuracy within `tolerance` validation pairs over the checks of the "
                    "last `window` steps"}
    return NetworkSweep([r for r in final if r is not None], meta)


def _sweep_in_groups(config: ConstantAttentionConfig, wds: list[float], seeds: list[int], stopping: dict,
                     n_jobs: int | None, scheduler, callback) -> NetworkSweep:
    """The sweep's seeds in ``n_jobs`` contiguous groups, each trained by
    :func:`train_network_sweep` in a local process or on a cluster; one
    sweep back, its records in the order of one stack's."""
    from .cluster import cluster_client, cluster_slots, run_units
    from .processes import run_parts

    with cluster_client(scheduler) as client:
        if n_jobs is None:
            n_jobs = 1 if client is None else max(1, min(len(seeds), sum(cluster_slots(client).values())))
        groups = [[int(s) for s in g] for g in np.array_split(np.array(seeds), n_jobs)]
        jobs = [((config, wds, group), dict(stopping)) for group in groups]
        if client is None and n_jobs == 1:
            parts = [train_network_sweep(*jobs[0][0], callback=callback, **jobs[0][1])]
        elif client is None:
            parts = run_parts(train_network_sweep, jobs, stopping["max_steps"], callback=callback)
        else:
            parts = run_units(client, train_network_sweep, jobs, stopping["max_steps"], callback=callback)
    by_run = {(r["weight_decay"], r["seed"]): r for part in parts for r in part.records}
    records = [by_run[(w, s)] for w in wds for s in seeds if (w, s) in by_run]
    meta = {**parts[0].meta, "seeds": seeds, "seconds": max(part.meta["seconds"] for part in parts),
            "threads": min(part.meta["threads"] for part in parts), "n_jobs": n_jobs}
    return NetworkSweep(records, meta)


def _check_stopping(max_steps: Any, check_every: Any, window: Any, tolerance: Any) -> tuple[int, int, int, int]:
    """The stopping rule of :func:`train_network_sweep` checked: (max_steps, check_every, window, tolerance)."""
    max_steps = check_int(max_steps, "max_steps", 1)
    check_every = check_int(check_every, "check_every", 1)
    window = check_int(window, "window", check_every)
    tolerance = check_int(tolerance, "tolerance", 0)
    return max_steps, check_every, window, tolerance


def _train_until_settled(t: dict[str, torch.Tensor], dtype: torch.dtype, runs: list[tuple[float, int]],
                         max_steps: int, check_every: int, window: int, tolerance: int,
                         callback: Callable[[int, int], None] | None) -> list[dict[str, Any] | None]:
    """Train the stacked runs ``t`` full-batch step by step, checking them at
    every ``check_every``-th step and at ``max_steps``; runs that stop
    (converged, diverged or out of steps) leave the stack. Every run's final
    record, in the order of ``runs``."""
    history: list[list[float]] = [[] for _ in runs]
    final: list[dict[str, Any] | None] = [None] * len(runs)
    step = 0
    while True:
        params = [t[k].requires_grad_() for k in NAMES]
        loss, train_acc = loss_and_accuracy(constant_attention_forward(*params, t["train_pairs"]), t["train_labels"])
        if step % check_every == 0 or step == max_steps:
            done = _check_runs(t, params, loss, train_acc, step, history, final, runs,
                               max_steps=max_steps, check_every=check_every, window=window, tolerance=tolerance)
            if callback is not None:
                callback(step, max_steps)
            if done.all():
                break
            if done.any():
                keep = torch.as_tensor(~done, device=t["index"].device)
                t = {k: v.detach()[keep].contiguous() for k, v in t.items()}
                params = [t[k].requires_grad_() for k in NAMES]
                loss, _ = loss_and_accuracy(constant_attention_forward(*params, t["train_pairs"]), t["train_labels"])
        _adamw_step(t, torch.autograd.grad(loss.sum(), params), step, dtype)
        step += 1
    return final


def _check_runs(t: dict[str, torch.Tensor], params: list[torch.Tensor], loss: torch.Tensor, train_acc: torch.Tensor,
                step: int, history: list[list[float]], final: list[dict[str, Any] | None],
                runs: list[tuple[float, int]], *, max_steps: int, check_every: int, window: int, tolerance: int
                ) -> np.ndarray:
    """A check of the stacked runs at ``step``: measure the validation
    accuracy, find the runs that stop (converged at a regular check,
    non-finite loss, or ``max_steps`` reached) and put their final records
    into ``final``. True for each run of the stack that stops."""
    with torch.no_grad():
        _, val_acc = loss_and_accuracy(constant_attention_forward(*params, t["val_pairs"]), t["val_labels"])
    va, tr, lo = val_acc.cpu().numpy(), train_acc.cpu().numpy(), loss.detach().to(torch.float64).cpu().numpy()
    done = np.zeros(len(va), dtype=bool)
    conv = np.zeros(len(va), dtype=bool)
    bad = ~np.isfinite(lo)
    if step % check_every == 0:  # the window is made of regular checks only
        n_val = int(t["val_labels"].shape[1])
        conv[:] = _settled(history, t["index"].tolist(), va, bad, step >= window, window // check_every,
                           (tolerance + 1e-9) / n_val)
        done |= conv
    done |= bad
    if step >= max_steps:
        done[:] = True
    if done.any():
        _finish(final, runs, t, np.flatnonzero(done & conv), step, True, tr, va, lo, bad)
        _finish(final, runs, t, np.flatnonzero(done & ~conv), step, False, tr, va, lo, bad)
    return done


def _finish(final: list[dict[str, Any] | None], runs: list[tuple[float, int]], t: dict[str, torch.Tensor],
            rows: np.ndarray, step: int, converged: bool, tr_acc: np.ndarray, va_acc: np.ndarray,
            tr_loss: np.ndarray, bad: np.ndarray) -> None:
    """The final records of the stopped runs at ``rows`` of the stack, put
    into ``final`` at each run's index (no loss nor embedding when diverged)."""
    for j in rows:
        i = int(t["index"][j])
        w, s = runs[i]
        emb = t["embedding"][j].detach().cpu().to(torch.float64)  # this run's token rows, off the device
        diverged = bool(bad[j]) or not bool(torch.isfinite(emb).all())
        final[i] = {"weight_decay": w, "seed": s, "steps_run": step, "converged": converged and not diverged,
                    "diverged": diverged, "train_acc": float(tr_acc[j]), "val_acc": float(va_acc[j]),
                    "train_loss": float(tr_loss[j]) if not diverged else None,
                    "embedding": None if diverged else emb.tolist()}
