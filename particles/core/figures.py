"""The one way every package writes a figure: atomically, so an interrupted
write leaves any earlier file whole (matplotlib is the caller's; nothing
here imports it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .io import atomic_write

__all__ = ["save_figure"]


def save_figure(fig: Any, path: str | os.PathLike, dpi: int = 110, **options: Any) -> Path:
    """Write the matplotlib figure ``fig`` to ``path`` atomically, in the
    format its suffix names (``.png``, ``.svg``, ...), at ``dpi`` dots per
    inch; ``options`` pass to ``Figure.savefig`` (e.g. ``bbox_inches``).
    Returns the path written."""
    path = Path(path)
    if not path.suffix:
        raise ValueError(f"path must end in a figure format such as .png, got {str(path)!r}")
    return atomic_write(path, lambda fh: fig.savefig(fh, format=path.suffix[1:], dpi=dpi, **options))
