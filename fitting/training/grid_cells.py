"""Train a stack of grid cells in this process (:func:`train_cells`): the
step loop on :func:`fitting.training.loop.run_steps`, with checkpoints."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch


from .adamw import adamw_scalars, adamw_update
from .compiling import compiled_or_plain
from .configs import ToyConfig
from .devices import STACK_FLOAT64, check_device, check_device_dtype
from .grid_result import TANH_BEFORE_OPTION
from .grid_stack import CellStack
from .loop import Checkpoint, Progress, run_steps
from .models import DTYPES, toy_decoder_input
from .stacked import decoder_step, pair_incidence

__all__ = ["train_cells", "grid_checkpoint", "CHECKPOINT_KEYS"]


def _adamw_step(update, tensors: dict, grads: list, step: int, dtype) -> None:
    """AdamW step ``step + 1`` of every cell, in place: the decoder and the
    embedding with their own rates and decays (``update``: the plain or the
    compiled :func:`~fitting.training.adamw.adamw_update`)."""
    names = CellStack.NAMES
    decoder = set(names[1:])
    decays, step_sizes = {}, {}
    for group, (lr_key, wd_key) in (("dec", ("decoder_lr", "decoder_weight_decay")),
                                    ("emb", ("embedding_lr", "embedding_weight_decay"))):
        decays[group], step_sizes[group], bc2s = adamw_scalars(tensors[lr_key], tensors[wd_key], step + 1, dtype)
    groups = ["dec" if k in decoder else "emb" for k in names]
    update([tensors[k] for k in names], list(grads), [tensors[f"m_{k}"] for k in names],
           [tensors[f"v_{k}"] for k in names], [decays[g] for g in groups], [step_sizes[g] for g in groups], bc2s)


#: the entries of a grid checkpoint
CHECKPOINT_KEYS = ("tensors", "step", "elapsed", "cell_steps", "steps_train", "steps_val", "steps_run", "last",
                   "diverged")


def grid_checkpoint(ckpt: Path | None, identity: dict) -> Checkpoint:
    """The checkpoint of a grid run (or of one part of it) with its identity."""
    return Checkpoint(ckpt, identity, kind="grid run", keys=CHECKPOINT_KEYS,
                      same=lambda saved: {"tanh": TANH_BEFORE_OPTION, **saved} == identity)


def _restore(stack: CellStack, state: dict, config: ToyConfig, n: int, device: torch.device) -> tuple:
    """The stack's tensors and the per-cell arrays from a checkpoint's state, checked against a fresh stack:
    (step, elapsed, steps_train, steps_val, steps_run, last, diverged)."""
    tensors = state["tensors"]
    if not isinstance(tensors, dict) or any(not isinstance(tensors.get(k), torch.Tensor) for k in stack.tensors
                                            if k != "incidence"):
        raise ValueError(f"tensors must hold {sorted(stack.tensors)}")
    arrays = [state[k].numpy().copy() for k in ("steps_train", "steps_val", "steps_run", "last", "diverged")]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"per-cell arrays of {[a.shape[0] for a in arrays]} cells for {n}")
    stack.tensors = tensors  # read on the CPU: moved to the run's device below
    stack.to(device)
    if "incidence" not in stack.tensors:
        # a checkpoint written before the stack kept it (and before the embedding gradient and the
        # distance search moved into the step): resumes, but equals the old code's run only to rounding
        stack.tensors["incidence"] = pair_incidence(stack.tensors["train_pairs"], config.p,
                                                    stack.tensors["embedding"].dtype)
    return (int(state["step"]), float(state["elapsed"]), *arrays)


def train_cells(config: ToyConfig, cells: list[dict[str, float]], cell_seeds: list[int], identity: dict, *,
                 steps: int, threshold: float, stop_when: str, ckpt: Path | None, checkpoint_every: int | None,
                 resume: bool, callback: Callable[[int, int], None] | None, compile: str, tanh: str,
                 device: str | torch.device | None = None) -> dict[str, Any]:
    """Train ``cells`` (one seed each) as one stack in this process, on
    ``device`` (None: this process's ``EMBDYN_DEVICE``, else the CPU;
    :func:`~fitting.training.devices.check_device`); the per-cell arrays of
    :func:`train_grid`'s records, and the run's time, cell-steps, whether the
    step was compiled and the thread count."""
    n = len(cells)
    device = check_device(device)
    check_device_dtype(device, "float64", why=STACK_FLOAT64)
    stack = CellStack(config, cells, cell_seeds, device)
    steps_train = np.full(n, -1, dtype=np.int64)
    steps_val = np.full(n, -1, dtype=np.int64)
    steps_run = np.zeros(n, dtype=np.int64)
    last = np.full((n, 3), np.nan)  # train_acc, val_acc, train_loss
    diverged = np.zeros(n, dtype=bool)
    start, elapsed = 0, 0.0
    cell_steps = [0]
    checkpoint = grid_checkpoint(ckpt, identity)
    state = checkpoint.load() if resume else None
    if state is not None:
        start, elapsed, steps_train, steps_val, steps_run, last, diverged = checkpoint.restore(
            lambda st: _restore(stack, st, config, n, device), state)
        cell_steps[0] = int(state["cell_steps"])
    step_fn, update = compiled_or_plain(decoder_step, compile), compiled_or_plain(adamw_update, compile)
    classification = config.task == "classification"
    additive = config.group != "permutation"
    dtype = DTYPES[config.dtype]
    names = CellStack.NAMES

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
        idx = tensors["index"].cpu().numpy()  # the per-cell values copied off the device
        loss_np = loss.detach().to(torch.float64).cpu().numpy()
        tr_np, va_np = train_acc.cpu().numpy(), val_acc.cpu().numpy()
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
            _adamw_step(update, tensors, grads, step, dtype)
        steps_run[idx[~stop]] = step + 1
        if stop.any():
            stack.select(torch.as_tensor(~stop))

    t0 = time.perf_counter()
    def finish(step: int) -> None:
        if callback is not None and step < steps:
            callback(steps, steps)  # every cell stopped early: the work is done

    step = run_steps(start, steps, one_step, save=save if ckpt is not None else None,
                     checkpoint_every=checkpoint_every, callback=callback, running=lambda: len(stack) > 0,
                     finish=finish)
    if ckpt is not None and checkpoint_every and "parts" in identity:
        save(step)  # a finished part keeps its result until the whole grid is written
    return {"steps_train": steps_train, "steps_val": steps_val, "steps_run": steps_run, "last": last,
            "diverged": diverged, "seconds": elapsed + time.perf_counter() - t0, "cell_steps": int(cell_steps[0]),
            "compiled": bool(getattr(update, "is_compiled", False) and getattr(step_fn, "is_compiled", False)),
            "threads": torch.get_num_threads()}
