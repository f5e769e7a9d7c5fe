"""Data shipped with the package (no downloads at run time)."""

from __future__ import annotations

from importlib import resources

from particles.trajectory import Trajectory

__all__ = ["example_trajectory"]


def example_trajectory() -> Trajectory:
    """A survival-MLP run exported by the torch backend, cut to 0.8 MB.

    p = 59, d = 128, seed 0 with ``embedding_seed=0``, 3000 steps of AdamW
    (lr 0.01, weight decay 0.5): signals, losses, accuracies and the DC
    signal at every step; embeddings at steps 0 and 3000. Made by
    ``embdyn train survival-mlp --steps 3000 --set embedding_seed=0`` and
    keeping those series.
    """
    path = resources.files("fitting.survival") / "data" / "survival_mlp_seed0.npz"
    with resources.as_file(path) as file:
        return Trajectory.load(file)
