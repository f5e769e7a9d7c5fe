"""The sandbox's animation (:func:`animate`): the frame of
:func:`fitting.sandbox.frame.draw_frame` at each recorded step, written as
a GIF (Pillow) or an MP4 (ffmpeg, when present).

One figure is drawn once and redrawn at each step (the state panels, the
key, the step cursors of the curves and the title); its layout is fixed
after the first frame, so the panels stay in place from frame to frame.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable

from matplotlib import animation
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from particles.core.validation import check_int

from .data import LayerStates
from .data import check_layer_states
from .frame import FRAME_DPI, FRAME_SIZE, FrameDrawer

__all__ = ["animate", "check_encoder", "ANIMATION_SUFFIXES", "GIF_WRITER", "MP4_WRITER"]

#: the file suffixes an animation can be written to
ANIMATION_SUFFIXES = (".gif", ".mp4")
#: what :func:`animate` returns for each writer
GIF_WRITER, MP4_WRITER = "gif (Pillow)", "mp4 (ffmpeg)"
#: the extra padding (inches) around the panels of an animation, so tick labels that widen in later frames fit
_PAD_W, _PAD_H = 0.1, 0.06


def _check_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike ending in .gif or .mp4, got {type(path).__name__}")
    out = Path(path)
    if out.suffix.lower() not in ANIMATION_SUFFIXES:
        raise ValueError(f"path {str(path)!r} must end in .gif or .mp4 (an animation), got suffix "
                         f"{out.suffix or 'none'!r}")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"path {str(path)!r}: its folder {str(parent)!r} does not exist (create it first)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"path {str(path)!r}: its folder {str(parent)!r} is not writable")
    if out.is_dir():
        raise ValueError(f"path {str(path)!r} is a folder, not an animation file")
    return out


def _check_steps(layers: LayerStates, steps: Iterable[int] | None) -> list[int]:
    if steps is None:
        return [int(s) for s in layers.steps]
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
        raise TypeError(f"steps must be None or a sequence of recorded steps, got {type(steps).__name__}")
    chosen = list(steps)
    if not chosen:
        raise ValueError(f"steps must hold at least one recorded step (recorded: {int(layers.steps[0])} to "
                         f"{int(layers.steps[-1])}), got none")
    return [int(layers.steps[layers.index(s)]) for s in chosen]


def check_encoder(path: str | os.PathLike) -> str:
    """The writer an animation at ``path`` is written with: ``"gif (Pillow)"``
    for a .gif, ``"mp4 (ffmpeg)"`` for an .mp4 when an ffmpeg encoder is
    present (:func:`matplotlib.animation.writers.is_available`).

    Raises
    ------
    ValueError
        naming ``path`` when it ends in neither .gif nor .mp4, or when it
        asks for an .mp4 and no ffmpeg encoder is present (saying to write a
        .gif instead).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike ending in .gif or .mp4, got {type(path).__name__}")
    suffix = Path(path).suffix.lower()
    if suffix not in ANIMATION_SUFFIXES:
        raise ValueError(f"path {str(path)!r} must end in .gif or .mp4 (an animation), got suffix "
                         f"{Path(path).suffix or 'none'!r}")
    if suffix == ".gif":
        return GIF_WRITER
    if not animation.writers.is_available("ffmpeg"):
        raise ValueError(f"path {str(path)!r}: no MP4 encoder is present (ffmpeg was not found); write a .gif "
                         f"instead (Pillow)")
    return MP4_WRITER


def animate(layers: LayerStates, path: str | os.PathLike, *, steps: Iterable[int] | None = None, fps: int = 8,
            progress: Callable[[int, int], Any] | None = None) -> str:
    """Write an animation of the run's frames over its recorded steps.

    Parameters
    ----------
    layers : LayerStates
        The run's layer states (:func:`fitting.sandbox.load_layers`).
    path : str or os.PathLike
        The file to write: ``.gif`` (Pillow) or ``.mp4`` (ffmpeg, when an
        ffmpeg encoder is present); its folder must exist and be writable.
    steps : sequence of int, optional
        The recorded steps to draw, in order (default every recorded step).
    fps : int in 1..60
        Frames per second.
    progress : callable, optional
        Called as ``progress(done, total)`` after each frame.

    Returns
    -------
    str
        The writer used: ``"gif (Pillow)"`` or ``"mp4 (ffmpeg)"``.

    Raises
    ------
    TypeError
        when ``layers`` is not a LayerStates, ``path`` not a path, ``fps``
        not an int, ``steps`` not a sequence or ``progress`` not callable.
    ValueError
        before any drawing: when ``path`` does not end in .gif or .mp4, its
        folder is missing or not writable, ``fps`` is outside 1..60, a step
        was not recorded (naming the nearest recorded steps), or an .mp4 is
        asked for and no ffmpeg encoder is present.

    Notes
    -----
    Each frame is :func:`fitting.sandbox.frame.draw_frame` at its step
    (:data:`~fitting.sandbox.frame.FRAME_SIZE` at
    :data:`~fitting.sandbox.frame.FRAME_DPI`), redrawn into one figure whose
    layout is fixed after the first frame.
    """
    check_layer_states(layers)
    out = _check_path(path)
    fps = check_int(fps, "fps", 1, 60)
    chosen = _check_steps(layers, steps)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be None or a function progress(done, total), got {type(progress).__name__}")
    used = check_encoder(out)
    writer = animation.FFMpegWriter(fps=fps) if used == MP4_WRITER else animation.PillowWriter(fps=fps)

    fig = Figure(figsize=FRAME_SIZE, dpi=FRAME_DPI)
    FigureCanvasAgg(fig)
    frame = FrameDrawer(layers, fig)
    fig.get_layout_engine().set(w_pad=_PAD_W, h_pad=_PAD_H)
    total = len(chosen)
    with writer.saving(fig, str(out), FRAME_DPI):
        for done, step in enumerate(chosen, start=1):
            frame.draw(step)
            if done == 1:
                fig.draw_without_rendering()  # the constrained layout, once; then the panels stay where they are
                fig.set_layout_engine("none")  # no layout engine: a frame is drawn once (not twice) when grabbed
            writer.grab_frame()
            if progress is not None:
                progress(done, total)
    return used
