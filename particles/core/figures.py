"""The one way every package writes a figure: atomically, so an interrupted
write leaves any earlier file whole (matplotlib is the caller's; nothing
here imports it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .io import atomic_write

__all__ = ["save_figure", "figure_and_axes"]


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
