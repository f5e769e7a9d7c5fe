"""Optional torch backend: train the papers' networks and export their
embedding trajectories (docs/training.md, models).

The configurations import without torch; training needs the extra::

    pip install '.[torch]'      # in the repository root; torch==2.13.0, CPU build

Public API::

    SurvivalMLPConfig, ToyConfig, ConstantAttentionConfig, SparseModularConfig,
    config_for, MODEL_CONFIGS                       model configurations
    train                                           one run -> Trajectory (+ file, checkpoints)
    train_batched                                   B seeds of the survival MLP at once
    train_grid, GridResult                          a whole toy hyper-parameter grid as one stacked model
    toy_phase_setting, TOY_PHASE_SETTINGS           the paper's toy phase-diagram settings
    train_network_sweep, NetworkSweep               constant-attention runs over weight decays x seeds, to convergence
    compare_network, NetworkComparison              that network beside a particle preset over weight decay
    EmbeddingRecorder, load_checkpoints             bring your own run: record any torch model's embedding
                                                    while it trains, or load it from saved checkpoints
    check_device, available_devices                 the device= of every trainer ("cpu", "cuda:1", "mps";
                                                    default: $EMBDYN_DEVICE, else the CPU)
    TrainingDivergedError, TorchMissingError, CheckpointError (a checkpoint that cannot be used)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .configs import (MODEL_CONFIGS, TOY_PHASE_SETTINGS, ConstantAttentionConfig, SparseModularConfig,
                      SurvivalMLPConfig, ToyConfig, config_for, toy_phase_setting)

__all__ = ["MODEL_CONFIGS", "ConstantAttentionConfig", "SparseModularConfig", "SurvivalMLPConfig", "ToyConfig",
           "TorchMissingError", "TrainingDivergedError", "config_for", "torch_available", "train", "train_batched",
           "train_grid", "GridResult", "TOY_PHASE_SETTINGS", "toy_phase_setting", "train_network_sweep",
           "NetworkSweep", "compare_network", "NetworkComparison", "EmbeddingRecorder", "load_checkpoints",
           "CheckpointError", "check_device", "available_devices"]

INSTALL_HINT = ("the torch backend needs PyTorch: pip install '.[torch]' in the repository root "
                "(pins torch==2.13.0, the CPU build)")


class TorchMissingError(ImportError):
    """PyTorch is not installed; the message says how to install the extra."""


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _require_torch() -> None:
    if not torch_available():
        raise TorchMissingError(INSTALL_HINT)


def _needs_torch(module: str, name: str, doc: str):
    """A function that checks for torch, then calls ``fitting.training.<module>.<name>``."""

    def call(*args: Any, **kwargs: Any):
        _require_torch()
        return getattr(import_module(f"{__name__}.{module}"), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{doc}; see :func:`fitting.training.{module}.{name}`."
    return call


train = _needs_torch("trainer", "train", "Train one run")
train_batched = _needs_torch("batched", "train_batched",
                             "Train several survival-MLP seeds as one batched computation")
train_grid = _needs_torch("grid", "train_grid", "Train a whole toy hyper-parameter grid as one stacked model")
train_network_sweep = _needs_torch("network_sweep", "train_network_sweep",
                                   "Train the constant-attention network over weight decays and seeds as one "
                                   "stacked model")
compare_network = _needs_torch("compare", "compare_network",
                               "The network and a particle preset side by side over weight decay")
load_checkpoints = _needs_torch("recorder", "load_checkpoints",
                                "A Trajectory from a series of saved torch checkpoints")
check_device = _needs_torch("devices", "check_device", "A device name checked against this machine's devices")
available_devices = _needs_torch("devices", "available_devices", "The devices this machine can train on")

#: classes that need torch, imported on first access
_LAZY_CLASSES = {"GridResult": "grid_result", "TrainingDivergedError": "trainer", "NetworkSweep": "network_sweep",
                 "NetworkComparison": "compare", "EmbeddingRecorder": "recorder", "CheckpointError": "loop"}


def __getattr__(name: str):
    if name in _LAZY_CLASSES:
        _require_torch()
        return getattr(import_module(f"{__name__}.{_LAZY_CLASSES[name]}"), name)
    raise AttributeError(f"module 'fitting.training' has no attribute {name!r}")
