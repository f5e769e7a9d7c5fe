"""The one way every package writes a figure: atomically, so an interrupted
write leaves any earlier file whole (matplotlib is the caller's; nothing
here imports it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .io import atomic_write

__all__ = ["save_figure", "figure_and_axes", "line_points", "MAX_LINE_POINTS"]

#: the most points a figure draws of one line (:func:`line_points`)
MAX_LINE_POINTS = 4000


def save_figure(fig: Any, path: str | os.PathLike, dpi: int = 110, **options: Any) -> Path:
    """Write the matplotlib figure ``fig`` to ``path`` atomically, in the
    format its suffix names (``.png``, ``.svg``, ...), at ``dpi`` dots per
    inch; ``options`` pass to ``Figure.savefig`` (e.g. ``bbox_inches``).
    Returns the path written."""
    path = Path(path)
    if not path.suffix:
        raise ValueError(f"path must end in a figure format such as .png, got {str(path)!r}")
    return atomic_write(path, lambda fh: fig.savefig(fh, format=path.suffix[1:], dpi=dpi, **options))


def figure_and_axes(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
    """The figure and axes a plotting function draws on: ``ax`` and its
    figure when given, else a new constrained-layout Figure of ``figsize``
    inches with one subplot (no pyplot state touched)."""
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def line_points(x: Any, y: Any, limit: int = MAX_LINE_POINTS) -> tuple[Any, Any]:
    """A long line's points as drawn at a figure's size: ``(x, y)`` unchanged
    when it has at most ``limit`` points, else the smallest and the largest
    ``y`` of each of ``limit // 2`` consecutive stretches, in their order
    (first and last points kept), so spikes and the envelope stay visible
    while the figure holds ``limit`` points instead of millions. NaN and
    infinite values are kept where they fall (a stretch with one draws it)."""
    import numpy as np

    x, y = np.asarray(x), np.asarray(y)
    n = len(y)
    if n <= limit:
        return x, y
    edges = np.linspace(0, n, limit // 2 + 1).astype(int)
    keep = [0, n - 1]
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            seg = y[a:b]
            bad = np.flatnonzero(~np.isfinite(seg))
            if bad.size:
                keep.append(a + int(bad[0]))
                continue
            keep.extend((a + int(np.argmin(seg)), a + int(np.argmax(seg))))
    idx = np.unique(keep)
    return x[idx], y[idx]
