"""Figures of particle runs. Every function returns a matplotlib Figure and
touches no global state (no pyplot, no show).

Marks used by the embedding figures (each figure carries a legend saying so):

* large dots with a number: the tokens k = 0..p-1 (first two embedding
  coordinates), coloured by k on a cyclic colour map;
* faint small dots: the pair sums E_a + E_b of the dataset's (training)
  pairs, coloured by the pair's label on the same colour map, so a pair sum
  has the colour of the token whose number is its label (modular addition:
  (a + b) mod p);
* grey polyline (``connect=True``): tokens k -> k + 1 (mod p).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from .datasets import PairDataset
from .metrics import STRUCTURES, UNDEFINED, structure_metrics
from .trajectory import Trajectory

__all__ = ["plot_embedding", "plot_snapshots", "plot_energy", "plot_phase_diagram", "animate_trajectory",
           "frame_limits"]

_CMAP = "hsv"


def _colour_norm(p: int, dataset: PairDataset | None) -> Normalize:
    """One cyclic scale for token numbers and pair labels: a pair sum gets the
    colour of the token whose number is its label."""
    top = p
    if dataset is not None and len(dataset.labels):
        top = max(top, int(dataset.labels.max()) + 1)
    return Normalize(0, max(top, 1))


def _label_rule(dataset: PairDataset) -> str:
    if dataset.name == "modular_addition":
        return f"label (a + b) mod {dataset.p}"
    if dataset.name == "addition":
        return "label a + b"
    return "its label"


def legend_handles(dataset: PairDataset | None = None, *, show_pair_sums: bool = True,
                   connect: bool = False) -> list:
    """Legend entries for the marks of :func:`plot_embedding` (tokens, pair
    sums, k -> k + 1 ring), for a figure-level legend."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="", marker="o", ms=6, mfc="#3fbf3f", mec="k", mew=0.5,
                      label="token k (number k; colour by k)")]
    if dataset is not None and show_pair_sums:
        handles.append(Line2D([], [], ls="", marker="o", ms=3.5, mfc="#3fbf3f", mec="none", alpha=0.45,
                              label=f"pair sum E_a + E_b of a dataset pair (colour by {_label_rule(dataset)})"))
    if connect:
        handles.append(Line2D([], [], color="0.55", lw=0.8, label="tokens k -> k + 1 (mod p) joined"))
    return handles


def plot_embedding(E: np.ndarray, ax=None, *, dataset: PairDataset | None = None, title: str | None = None,
                   show_pair_sums: bool = True, connect: bool = False, legend: bool = True,
                   fontsize: float = 7) -> Figure:
    """Tokens (labelled dots) and, if a dataset is given, its pair sums
    E_a + E_b (faint dots) coloured by label, for a 2-D embedding (first two
    coordinates otherwise). Tokens and pair labels share one cyclic colour
    scale: a pair sum has the colour of the token whose number is its label.

    Token labels sit on a white halo, each on the side of its dot that is
    farthest from the labels already placed. ``connect=True`` draws the
    segments k -> k + 1 (mod p): a circle shows as a ring and a grid as
    repeated equal steps, which makes the structure checkable by eye.
    ``legend`` explains the marks (below the axes when the function makes
    the figure, inside them otherwise); ``fontsize`` is that of the token
    numbers (axis labels are a point larger)."""
    E = np.asarray(E, dtype=float)
    if E.ndim != 2 or E.shape[1] < 1:
        raise ValueError(f"E must have shape (p, d), got {E.shape}")
    xy = E[:, :2] if E.shape[1] >= 2 else np.c_[E[:, 0], np.zeros(len(E))]
    own = ax is None
    if own:
        fig = Figure(figsize=(4.4, 4.8), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    norm = _colour_norm(len(xy), dataset)
    if dataset is not None and show_pair_sums:
        s = xy[dataset.pairs[:, 0]] + xy[dataset.pairs[:, 1]]
        ax.scatter(s[:, 0], s[:, 1], c=dataset.labels, cmap=_CMAP, norm=norm, s=8, alpha=0.35, linewidths=0)
    ax.scatter(xy[:, 0], xy[:, 1], c=np.arange(len(xy)), cmap=_CMAP, norm=norm, s=30 * (fontsize / 7) ** 2,
               edgecolors="k", linewidths=0.5, zorder=3)
    if connect and len(xy) > 1:
        ring = np.r_[xy, xy[:1]]
        ax.plot(ring[:, 0], ring[:, 1], color="0.55", lw=0.6, zorder=2)
    _label_tokens(ax, xy, fontsize=fontsize)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("embedding dimension 1", fontsize=fontsize + 1)
    ax.set_ylabel("embedding dimension 2" if E.shape[1] >= 2 else "(d = 1)", fontsize=fontsize + 1)
    ax.tick_params(labelsize=fontsize + 1)
    ax.axhline(0, color="0.85", lw=0.5, zorder=0)
    ax.axvline(0, color="0.85", lw=0.5, zorder=0)
    if title:
        ax.set_title(title, fontsize=fontsize + 2)
    if legend:
        handles = legend_handles(dataset, show_pair_sums=show_pair_sums, connect=connect)
        if own:
            fig.legend(handles=handles, loc="outside lower center", fontsize=fontsize, frameon=False)
        else:
            ax.legend(handles=handles, loc="best", fontsize=fontsize, framealpha=0.8)
    return fig


def _label_tokens(ax, xy: np.ndarray, fontsize: float = 7) -> None:
    """Label each token next to its dot, on the side (of eight) whose label
    position is farthest from the labels placed so far and from the other
    tokens' dots, with a white halo."""
    from matplotlib import patheffects

    # the label size in data units follows the drawn extent (pair sums included)
    # and the font: about one label height at the usual figure sizes
    data = ax.dataLim
    span = max(float(np.ptp(xy, axis=0).max()), data.width if np.isfinite(data.width) else 0.0,
               data.height if np.isfinite(data.height) else 0.0) or 1.0
    step = 0.035 * span * fontsize / 7
    sides = [(1, 1), (-1, -1), (-1, 1), (1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
    placed: list[np.ndarray] = []
    halo = [patheffects.withStroke(linewidth=2, foreground="white")]
    offset = 5 * fontsize / 7
    centre = xy.mean(axis=0)
    for k, point in enumerate(xy):
        others = np.delete(xy, k, axis=0)
        # outward sides first: on a ring the labels sit outside it
        out = point - centre
        order = sorted(sides, key=lambda side: -float(np.dot(side, out)) / np.hypot(*side))
        best, best_gap = order[0], -1.0
        for side in order:
            spot = point + 1.2 * step * np.asarray(side, dtype=float)  # about the label's centre
            # clearance in label heights: ~1.3 from another label, ~0.9 from a dot
            gap = min((float(np.hypot(*(spot - q))) / 1.3 for q in placed), default=np.inf)
            if len(others):
                gap = min(gap, float(np.hypot(*(others - spot).T).min()) / 0.9)
            if gap > best_gap:
                best, best_gap = side, gap
            if gap >= step:  # far enough: keep the first good side
                break
        placed.append(point + 1.2 * step * np.asarray(best, dtype=float))
        ax.annotate(str(k), tuple(point), textcoords="offset points",
                    xytext=(offset * best[0], offset * best[1]),
                    ha={1: "left", 0: "center", -1: "right"}[best[0]],
                    va={1: "bottom", 0: "center", -1: "top"}[best[1]], fontsize=fontsize, zorder=4,
                    path_effects=halo)


def plot_snapshots(traj: Trajectory, *, n: int = 6, dataset: PairDataset | None = None,
                   title: str | None = None, connect: bool = False) -> Figure:
    """``n`` evenly spaced snapshots of a trajectory side by side; the last
    panel is annotated with its structure class (and, with ``connect``,
    joins tokens k -> k + 1 as in :func:`plot_embedding`). Each panel has its
    own axis limits; a legend below the panels explains the marks."""
    if len(traj) == 0:
        raise ValueError("the trajectory has no snapshots")
    idx = np.unique(np.linspace(0, len(traj) - 1, max(1, min(n, len(traj)))).round().astype(int))
    fig = Figure(figsize=(max(3.6 * len(idx), 6.0), 4.3), layout="constrained")
    axes = fig.subplots(1, len(idx), squeeze=False)[0]
    for ax, i in zip(axes, idx):
        label = f"step {traj.snapshot_steps[i]}"
        if i == idx[-1]:
            m = structure_metrics(traj.embeddings[i], dataset)
            label += f"\n{m['structure']}: circularity {m['circularity']:.2f}, accuracy {m['accuracy_euclidean']:.2f}"
        plot_embedding(traj.embeddings[i], ax, dataset=dataset, title=label, connect=connect and i == idx[-1],
                       legend=False, fontsize=8)
    handles = legend_handles(dataset, connect=connect)
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_energy(traj: Trajectory, ax=None) -> Figure:
    """Energy against step."""
    if ax is None:
        fig = Figure(figsize=(4, 3), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    ax.plot(traj.steps, traj.energy)
    ax.set_xlabel("step")
    ax.set_ylabel("energy U")
    return fig


def plot_phase_diagram(rates: dict[tuple, dict[str, float]], x_values: Sequence, y_values: Sequence, *,
                       x_name: str = "lam", y_name: str = "wd", title: str | None = None) -> Figure:
    """Fraction of each structure over a 2-D parameter grid, one panel per
    structure. ``rates`` maps (x, y) to {structure: fraction} as returned by
    ``SweepTable.rates([x_name, y_name])``."""
    # "undefined" (d > 2 only) gets a panel when some cell has it
    kinds = [k for k in STRUCTURES if k != UNDEFINED or any(r.get(k, 0) for r in rates.values())]
    fig = Figure(figsize=(3.0 * len(kinds) + 1.0, 3.4), layout="constrained")
    axes = fig.subplots(1, len(kinds), squeeze=False, sharey=True)[0]
    for i_ax, (ax, kind) in enumerate(zip(axes, kinds)):
        grid = np.full((len(y_values), len(x_values)), np.nan)
        for i, y in enumerate(y_values):
            for j, x in enumerate(x_values):
                if (x, y) in rates:
                    grid[i, j] = rates[(x, y)].get(kind, 0.0)
        im = ax.imshow(grid, origin="lower", vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i in range(len(y_values)):
            for j in range(len(x_values)):
                if np.isfinite(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7,
                            color="w" if grid[i, j] < 0.6 else "k")
        ax.set_xticks(range(len(x_values)), [f"{v:g}" for v in x_values], fontsize=7)
        ax.set_yticks(range(len(y_values)), [f"{v:g}" for v in y_values], fontsize=7)
        ax.set_xlabel(x_name)
        if i_ax == 0:
            ax.set_ylabel(y_name)
        ax.set_title(f"{kind} (numbers: fraction)", fontsize=9)
    fig.colorbar(im, ax=list(axes), shrink=0.85, label="fraction of seeds")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def frame_limits(tokens: np.ndarray, extra: np.ndarray | None = None, *, pad: float = 0.15,
                 quantile: float = 0.02, smooth: int = 2) -> np.ndarray:
    """Square axis limits per frame that follow the current spread of the points.

    Parameters
    ----------
    tokens : ndarray, shape (F, p, 2)
        Points that must stay inside every frame (the tokens).
    extra : ndarray, shape (F, m, 2), optional
        Points framed robustly (per-axis ``quantile`` .. 1 - ``quantile``),
        e.g. the pair sums: a few outliers do not widen the view.
    pad : float
        Margin around the framed box, as a fraction of its half-width.
    smooth : int
        Half-width in frames of the centred triangular smoothing applied to
        the box centre and the logarithm of its half-width (no jitter, no
        lag); the box is then widened where needed so the tokens stay inside.

    Returns
    -------
    ndarray, shape (F, 4): ``xmin, xmax, ymin, ymax`` of each frame, with
    ``xmax - xmin == ymax - ymin`` (equal aspect on a square axes box).
    """
    tokens = np.asarray(tokens, dtype=float)
    if tokens.ndim != 3 or tokens.shape[2] != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens must have shape (F, p, 2) with p >= 1, got {tokens.shape}")
    lo, hi = tokens.min(axis=1), tokens.max(axis=1)
    if extra is not None:
        extra = np.asarray(extra, dtype=float)
        if extra.ndim != 3 or extra.shape[0] != tokens.shape[0] or extra.shape[2] != 2:
            raise ValueError(f"extra must have shape ({tokens.shape[0]}, m, 2), got {extra.shape}")
        if extra.shape[1]:
            # no interpolation towards an outlier: the nearest sample on the inside
            lo = np.minimum(lo, np.quantile(extra, quantile, axis=1, method="higher"))
            hi = np.maximum(hi, np.quantile(extra, 1 - quantile, axis=1, method="lower"))
    centre = (lo + hi) / 2
    half = (hi - lo).max(axis=1) / 2
    scale = float(np.abs(tokens).max()) or 1.0
    half = np.maximum(half, 1e-6 * scale)
    F = len(half)
    if smooth > 0 and F > 1:
        offsets = np.arange(-smooth, smooth + 1)
        weights = (smooth + 1 - np.abs(offsets)).astype(float)
        log_half = np.log(half)
        new_centre, new_log = np.empty_like(centre), np.empty_like(log_half)
        for f in range(F):
            j = f + offsets
            ok = (j >= 0) & (j < F)
            w = weights[ok] / weights[ok].sum()
            new_centre[f] = w @ centre[j[ok]]
            new_log[f] = w @ log_half[j[ok]]
        # widen where smoothing would cut the framed points off
        need = np.maximum(np.abs(hi - new_centre), np.abs(lo - new_centre)).max(axis=1)
        centre, half = new_centre, np.maximum(np.exp(new_log), need)
    half = half * (1 + pad)
    return np.column_stack([centre[:, 0] - half, centre[:, 0] + half, centre[:, 1] - half, centre[:, 1] + half])


def animate_trajectory(traj: Trajectory, *, dataset: PairDataset | None = None, frames: int = 40,
                       interval: int = 120, title: str | None = None, fontsize: float = 10,
                       size: float = 5.6):
    """An animation of the embedding snapshots (``matplotlib.animation.FuncAnimation``,
    at most ``frames`` evenly spaced snapshots).

    The axes follow the structure's scale frame by frame (:func:`frame_limits`:
    all tokens and the bulk of the pair sums, smoothed over neighbouring
    frames), so a structure that contracts stays readable; each frame's title
    gives the width of the view. ``size`` is the figure width in inches (the
    height is a little larger, for the legend below the axes); save at
    ``dpi=100`` for a ~560 px wide GIF: ``anim.save("run.gif", writer="pillow", dpi=100)``.
    """
    from matplotlib.animation import FuncAnimation

    if len(traj) == 0:
        raise ValueError("the trajectory has no snapshots")
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ValueError(f"frames must be an int >= 1, got {frames!r}")
    idx = np.unique(np.linspace(0, len(traj) - 1, min(frames, len(traj))).round().astype(int))
    E = traj.embeddings[idx]
    xy = E[..., :2] if E.shape[2] >= 2 else np.concatenate([E[..., :1], np.zeros_like(E[..., :1])], axis=2)
    sums = xy[:, dataset.pairs[:, 0]] + xy[:, dataset.pairs[:, 1]] if dataset is not None else None
    limits = frame_limits(xy, sums)
    # a fixed square axes box (no layout engine: the box must not move between frames)
    inch = size / 5.6
    left, right, bottom, top = 0.95 * inch, 0.3 * inch, 1.15 * inch, 0.75 * inch
    side = size - left - right
    height = bottom + side + top
    fig = Figure(figsize=(size, height))
    ax = fig.add_axes((left / size, bottom / height, side / size, side / height))
    handles = legend_handles(dataset)
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=1, fontsize=fontsize - 1,
               frameon=False)
    first_width = limits[0, 1] - limits[0, 0]

    def draw(frame: int):
        ax.clear()
        i = idx[frame]
        x0, x1, y0, y1 = limits[frame]
        zoom = first_width / (x1 - x0)
        plot_embedding(traj.embeddings[i], ax, dataset=dataset, legend=False, fontsize=fontsize,
                       title=f"{title + ', ' if title else ''}step {traj.snapshot_steps[i]}\n"
                             f"axes follow the structure: view width {x1 - x0:.2g}"
                             + (f" ({zoom:.1f}x zoom on step {traj.snapshot_steps[idx[0]]})" if zoom > 1.05 else ""))
        ax.title.set_fontsize(fontsize)
        # square limits on a square box: equal aspect without matplotlib moving either
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        return []

    return FuncAnimation(fig, draw, frames=len(idx), interval=interval, blit=False)
