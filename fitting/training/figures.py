"""The phase grid's figure (:func:`plot_phase_grid`): each cell of a
grid of training settings coloured by its majority phase."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from particles.core.figures import figure_and_axes

__all__ = ["plot_phase_grid", "PHASE_COLORS"]


PHASE_COLORS = {"comprehension": "#2a9d8f", "grokking": "#e9c46a", "memorization": "#e76f51", "confusion": "#6c757d"}


def plot_phase_grid(records: Sequence[dict], x: str = "decoder_lr", y: str = "decoder_weight_decay",
                    title: str | None = None, ax=None) -> Figure:
    """Phase diagram of a grid result: one square per cell coloured by its
    majority phase over seeds (more than half of its seeds; a cell without
    a majority is white and hatched), the grid values as equally spaced
    categories, and the median step to 90 % validation accuracy of the
    majority's seeds written in generalising cells (in thousands).

    Parameters
    ----------
    records : list of dict
        ``GridResult.records`` (or the ``records`` of its JSON file).
    x, y : str
        Record fields on the two axes.
    """
    phases = tuple(PHASE_COLORS)
    xs = sorted({r[x] for r in records})
    ys = sorted({r[y] for r in records})
    votes: dict[tuple, list] = {}
    for r in records:
        votes.setdefault((r[x], r[y]), []).append(r)
    fig, ax = figure_and_axes(ax, (7.5, 4.8))
    from matplotlib.patches import Patch, Rectangle

    for (vx, vy), rs in votes.items():
        names = [r["phase"] for r in rs]
        phase = max(phases, key=lambda ph: (names.count(ph), -phases.index(ph)))
        i, j = xs.index(vx), ys.index(vy)
        if 2 * names.count(phase) <= len(names):  # no majority: say so rather than break the tie
            ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, facecolor="white", edgecolor="0.6", hatch="///",
                                   lw=0))
            continue
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, color=PHASE_COLORS[phase], lw=0))
        vals = [r["steps_val"] for r in rs if r["phase"] == phase and r["steps_val"] is not None]
        if vals and phase in ("comprehension", "grokking"):
            ax.text(i, j, f"{np.median(vals) / 1000:.0f}" if np.median(vals) >= 1000 else "<1", ha="center",
                    va="center", fontsize=6)
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(-0.5, len(ys) - 0.5)
    step = max(1, len(xs) // 8)
    ax.set_xticks(range(0, len(xs), step), [f"{v:.0e}" for v in xs[::step]], rotation=45)
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
    ax.set_xlabel(x.replace("_", " "))
    ax.set_ylabel(y.replace("_", " "))
    handles = [Patch(color=PHASE_COLORS[ph], label=ph) for ph in phases]
    if any(len(rs) > 1 for rs in votes.values()):
        handles.append(Patch(facecolor="white", edgecolor="0.6", hatch="///", label="no majority"))
    ax.legend(handles=handles, loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize=8, title="phase (number: k steps to 90 % val)", title_fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return fig
