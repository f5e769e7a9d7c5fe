"""Helpers shared by test modules (public names: imported across modules)."""
import numpy as np


def circle(p, radius, phase=0.0):
    angles = 2 * np.pi * np.arange(p) / p + phase
    return radius * np.column_stack([np.cos(angles), np.sin(angles)])
