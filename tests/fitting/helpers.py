"""Helpers shared by the fitting test modules (public names: imported across modules)."""
import numpy as np

from particles import Trajectory


def growing_circle_trajectory(p=13, T=60, seed=0):
    """Embeddings whose frequency-3 circle grows while the rest decays."""
    rng = np.random.default_rng(seed)
    n = np.arange(p)
    circle = np.column_stack([np.cos(2 * np.pi * 3 * n / p), np.sin(2 * np.pi * 3 * n / p), np.zeros(p)])
    noise = rng.normal(size=(p, 3))
    t = np.arange(T)
    E = np.stack([(1 - np.exp(-0.05 * s)) * circle + np.exp(-0.03 * s) * noise for s in t])
    return Trajectory(embeddings=E, snapshot_steps=t * 10, meta={"source": "test"})


class Interrupt:
    """A progress callback that raises KeyboardInterrupt (Ctrl-C) when ``done`` reaches ``at``."""

    def __init__(self, at):
        self.at = at

    def __call__(self, done, total):
        if done == self.at:
            raise KeyboardInterrupt
