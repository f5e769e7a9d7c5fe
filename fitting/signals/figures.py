"""The signals' figure: every frequency's signal over training, the
selected ones coloured (:func:`plot_signals`). Returns a matplotlib Figure
and leaves global state alone."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from particles.core.figures import figure_and_axes

__all__ = ["plot_signals"]


def plot_signals(signals: np.ndarray, steps: np.ndarray | None = None, survivors: np.ndarray | None = None,
                 ax=None, log: bool = True, title: str | None = None, rule: str = "survivors") -> Figure:
    """Signal of every frequency over time; the selected frequencies coloured
    and labelled, the others grey.

    Parameters
    ----------
    signals : ndarray, shape (T, K)   column j is frequency k = j + 1
    steps : ndarray, shape (T,), optional
    survivors : ndarray of bool, shape (K,), optional
        The frequencies to highlight (the survivors, or another selection).
    rule : str
        What the highlighted frequencies are, for the legend and the title
        (``"survivors"``, ``"key frequencies"``, ``"fitted frequencies"``).
    """
    S = np.asarray(signals, dtype=float)
    if S.ndim != 2:
        raise ValueError(f"signals must have shape (T, K), got {S.shape}")
    steps = np.arange(S.shape[0]) if steps is None else np.asarray(steps)
    alive = np.zeros(S.shape[1], dtype=bool) if survivors is None else np.asarray(survivors, dtype=bool)
    if alive.shape != (S.shape[1],):
        raise ValueError(f"survivors must have shape ({S.shape[1]},), got {alive.shape}")
    fig, ax = figure_and_axes(ax, (6.5, 4))
    for j in np.flatnonzero(~alive):
        ax.plot(steps, S[:, j], color="0.75", lw=0.8)
    chosen = np.flatnonzero(alive)
    palette = None
    if len(chosen) > 10:  # the default cycle repeats after 10 colours
        from matplotlib import colormaps

        palette = colormaps["tab20"].colors
    for i, j in enumerate(chosen):
        ax.plot(steps, S[:, j], lw=1.8, label=f"k = {j + 1}",
                **({"color": palette[i % len(palette)]} if palette is not None else {}))
    if log and np.all(S > 0):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("signal |F_k|")
    handles, names = ax.get_legend_handles_labels()
    if (~alive).any():  # the grey lines: a legend entry of their own, after the highlighted ones
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.75", lw=0.8))
        names.append("other frequencies" if alive.any() else f"frequencies (no {rule})")
    ax.legend(handles, names, title=rule if alive.any() else None, fontsize="small",
              ncol=2 if len(handles) > 8 else 1)
    ax.set_title(title or f"Fourier signals ({int(alive.sum())} of {S.shape[1]} frequencies: {rule})")
    return fig
