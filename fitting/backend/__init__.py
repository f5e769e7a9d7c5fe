"""Optional torch backend: train the papers' networks and export their
embedding trajectories (SPEC section 5).

The configurations import without torch; training needs the extra::

    pip install 'embedding-dynamics[torch]'      # torch==2.13.0, CPU build

Public API::

    SurvivalMLPConfig, ToyConfig, ConstantAttentionConfig, SparseModularConfig,
    config_for, MODEL_CONFIGS                       model configurations
    train                                           one run -> Trajectory (+ file, checkpoints)
    train_batched                                   B seeds of the survival MLP at once
    train_grid, GridResult                          a whole toy hyper-parameter grid as one stacked model
    toy_phase_setting, TOY_PHASE_SETTINGS           the paper's toy phase-diagram settings
    train_network_sweep, NetworkSweep               constant-attention runs over weight decays x seeds, to convergence
    compare_network, NetworkComparison              that network beside a particle preset over weight decay
    TrainingDivergedError, TorchMissingError
"""

from __future__ import annotations

from typing import Any

from .configs import (MODEL_CONFIGS, TOY_PHASE_SETTINGS, ConstantAttentionConfig, SparseModularConfig,
                      SurvivalMLPConfig, ToyConfig, config_for, toy_phase_setting)

__all__ = ["MODEL_CONFIGS", "ConstantAttentionConfig", "SparseModularConfig", "SurvivalMLPConfig", "ToyConfig",
           "TorchMissingError", "TrainingDivergedError", "config_for", "torch_available", "train", "train_batched",
           "train_grid", "GridResult", "TOY_PHASE_SETTINGS", "toy_phase_setting", "train_network_sweep",
           "NetworkSweep", "compare_network", "NetworkComparison"]

INSTALL_HINT = ("the torch backend needs PyTorch: pip install 'embedding-dynamics[torch]' "
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


def train(*args: Any, **kwargs: Any):
    """Train one run; see :func:`fitting.backend.trainer.train`."""
    _require_torch()
    from .trainer import train as _train

    return _train(*args, **kwargs)


def train_batched(*args: Any, **kwargs: Any):
    """Train several survival-MLP seeds as one batched computation; see
    :func:`fitting.backend.batched.train_batched`."""
    _require_torch()
    from .batched import train_batched as _train_batched

    return _train_batched(*args, **kwargs)


def train_grid(*args: Any, **kwargs: Any):
    """Train a whole toy hyper-parameter grid as one stacked model; see
    :func:`fitting.backend.grid.train_grid`."""
    _require_torch()
    from .grid import train_grid as _train_grid

    return _train_grid(*args, **kwargs)


def train_network_sweep(*args: Any, **kwargs: Any):
    """Train the constant-attention network over weight decays and seeds as
    one stacked model; see :func:`fitting.backend.network_sweep.train_network_sweep`."""
    _require_torch()
    from .network_sweep import train_network_sweep as _sweep

    return _sweep(*args, **kwargs)


def compare_network(*args: Any, **kwargs: Any):
    """The network and a particle preset side by side over weight decay; see
    :func:`fitting.backend.compare.compare_network`."""
    _require_torch()
    from .compare import compare_network as _compare

    return _compare(*args, **kwargs)


def __getattr__(name: str):
    if name == "GridResult":
        _require_torch()
        from .grid import GridResult

        return GridResult
    if name == "TrainingDivergedError":
        _require_torch()
        from .trainer import TrainingDivergedError

        return TrainingDivergedError
    if name == "NetworkSweep":
        _require_torch()
        from .network_sweep import NetworkSweep

        return NetworkSweep
    if name == "NetworkComparison":
        _require_torch()
        from .compare import NetworkComparison

        return NetworkComparison
    raise AttributeError(f"module 'fitting.backend' has no attribute {name!r}")
