"""Figures of particle runs. Every function returns a matplotlib Figure and
touches no global state (no pyplot, no show)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from .datasets import PairDataset
from .metrics import STRUCTURES, structure_metrics
from .trajectory import Trajectory

__all__ = ["plot_embedding", "plot_snapshots", "plot_energy", "plot_phase_diagram"]


def plot_embedding(E: np.ndarray, ax=None, *, dataset: PairDataset | None = None, title: str | None = None,
                   show_pair_sums: bool = True, connect: bool = False) -> Figure:
    """Tokens (labelled dots) and, if a dataset is given, its pair sums
    coloured by label, for a 2-D embedding (first two coordinates otherwise).

    Token labels sit on a white halo, each on the side of its dot that is
    farthest from the labels already placed. ``connect=True`` draws the
    segments k -> k + 1 (mod p): a circle shows as a ring and a grid as
    repeated equal steps, which makes the structure checkable by eye."""
    E = np.asarray(E, dtype=float)
    if E.ndim != 2 or E.shape[1] < 1:
        raise ValueError(f"E must have shape (p, d), got {E.shape}")
    xy = E[:, :2] if E.shape[1] >= 2 else np.c_[E[:, 0], np.zeros(len(E))]
    if ax is None:
        fig = Figure(figsize=(4, 4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    if dataset is not None and show_pair_sums:
        s = xy[dataset.pairs[:, 0]] + xy[dataset.pairs[:, 1]]
        ax.scatter(s[:, 0], s[:, 1], c=dataset.labels, cmap="hsv", s=8, alpha=0.35, linewidths=0)
    ax.scatter(xy[:, 0], xy[:, 1], c=np.arange(len(xy)), cmap="hsv", s=30, edgecolors="k", linewidths=0.5, zorder=3)
    if connect and len(xy) > 1:
        ring = np.r_[xy, xy[:1]]
        ax.plot(ring[:, 0], ring[:, 1], color="0.55", lw=0.6, zorder=2)
    _label_tokens(ax, xy)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("embedding dimension 1", fontsize=8)
    ax.set_ylabel("embedding dimension 2" if E.shape[1] >= 2 else "(d = 1)", fontsize=8)
    ax.axhline(0, color="0.85", lw=0.5, zorder=0)
    ax.axvline(0, color="0.85", lw=0.5, zorder=0)
    if title:
        ax.set_title(title, fontsize=9)
    return fig


def _label_tokens(ax, xy: np.ndarray) -> None:
    """Label each token next to its dot, on the side (of eight) whose label
    position is farthest from the labels placed so far, with a white halo."""
    from matplotlib import patheffects

    span = float(np.ptp(xy, axis=0).max()) or 1.0
    step = 0.035 * span  # about one label height at the usual figure sizes
    sides = [(1, 1), (-1, -1), (-1, 1), (1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
    placed: list[np.ndarray] = []
    halo = [patheffects.withStroke(linewidth=2, foreground="white")]
    for k, point in enumerate(xy):
        best, best_gap = sides[0], -1.0
        for side in sides:
            spot = point + step * np.asarray(side, dtype=float)
            gap = min((float(np.hypot(*(spot - q))) for q in placed), default=np.inf)
            if gap > best_gap:
                best, best_gap = side, gap
            if gap >= 1.5 * step:  # far enough: keep the first good side
                break
        placed.append(point + step * np.asarray(best, dtype=float))
        ax.annotate(str(k), tuple(point), textcoords="offset points", xytext=(5 * best[0], 5 * best[1]),
                    ha={1: "left", 0: "center", -1: "right"}[best[0]],
                    va={1: "bottom", 0: "center", -1: "top"}[best[1]], fontsize=7, zorder=4,
                    path_effects=halo)


def plot_snapshots(traj: Trajectory, *, n: int = 6, dataset: PairDataset | None = None,
                   title: str | None = None, connect: bool = False) -> Figure:
    """``n`` evenly spaced snapshots of a trajectory side by side; the last
    panel is annotated with its structure class (and, with ``connect``,
    joins tokens k -> k + 1 as in :func:`plot_embedding`)."""
    if len(traj) == 0:
        raise ValueError("the trajectory has no snapshots")
    idx = np.unique(np.linspace(0, len(traj) - 1, max(1, min(n, len(traj)))).round().astype(int))
    fig = Figure(figsize=(3.2 * len(idx), 3.5))
    axes = fig.subplots(1, len(idx), squeeze=False)[0]
    for ax, i in zip(axes, idx):
        label = f"step {traj.snapshot_steps[i]}"
        if i == idx[-1]:
            m = structure_metrics(traj.embeddings[i], dataset)
            label += f"\n{m['structure']}: circularity {m['circularity']:.2f}, accuracy {m['accuracy_euclidean']:.2f}"
        plot_embedding(traj.embeddings[i], ax, dataset=dataset, title=label, connect=connect and i == idx[-1])
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_energy(traj: Trajectory, ax=None) -> Figure:
    """Energy against step."""
    if ax is None:
        fig = Figure(figsize=(4, 3))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    ax.plot(traj.steps, traj.energy)
    ax.set_xlabel("step")
    ax.set_ylabel("energy U")
    fig.tight_layout()
    return fig


def plot_phase_diagram(rates: dict[tuple, dict[str, float]], x_values: Sequence, y_values: Sequence, *,
                       x_name: str = "lam", y_name: str = "wd", title: str | None = None) -> Figure:
    """Fraction of each structure over a 2-D parameter grid, one panel per
    structure. ``rates`` maps (x, y) to {structure: fraction} as returned by
    ``SweepTable.rates([x_name, y_name])``."""
    kinds = list(STRUCTURES)
    fig = Figure(figsize=(3.0 * len(kinds) + 1.0, 3.4), layout="constrained")
    axes = fig.subplots(1, len(kinds), squeeze=False, sharey=True)[0]
    for i_ax, (ax, kind) in enumerate(zip(axes, kinds)):
        grid = np.full((len(y_values), len(x_values)), np.nan)
        for i, y in enumerate(y_values):
            for j, x in enumerate(x_values):
                if (x, y) in rates:
                    grid[i, j] = rates[(x, y)][kind]
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
        ax.set_title(kind, fontsize=9)
    fig.colorbar(im, ax=list(axes), shrink=0.85, label="fraction of seeds")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def animate_trajectory(traj: Trajectory, *, dataset: PairDataset | None = None, frames: int = 40,
                       interval: int = 120, title: str | None = None):
    """An animation of the embedding snapshots (``matplotlib.animation.FuncAnimation``,
    at most ``frames`` evenly spaced snapshots, fixed axes). Save it with
    ``anim.save("run.gif", writer="pillow")``."""
    from matplotlib.animation import FuncAnimation

    if len(traj) == 0:
        raise ValueError("the trajectory has no snapshots")
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ValueError(f"frames must be an int >= 1, got {frames!r}")
    idx = np.unique(np.linspace(0, len(traj) - 1, min(frames, len(traj))).round().astype(int))
    xy = traj.embeddings[idx][..., :2]
    if dataset is not None:
        sums = xy[:, dataset.pairs[:, 0]] + xy[:, dataset.pairs[:, 1]]
        extent = np.concatenate([xy.reshape(-1, 2), sums.reshape(-1, 2)])
    else:
        extent = xy.reshape(-1, 2)
    lo, hi = extent.min(axis=0), extent.max(axis=0)
    pad = 0.05 * float(np.max(hi - lo) or 1.0)
    fig = Figure(figsize=(4.2, 4.2))
    ax = fig.add_subplot()

    def draw(frame: int):
        ax.clear()
        i = idx[frame]
        plot_embedding(traj.embeddings[i], ax, dataset=dataset,
                       title=f"{title + ', ' if title else ''}step {traj.snapshot_steps[i]}")
        # fixed limits for every frame: the equal aspect then adjusts the box,
        # not the limits (which matplotlib would warn about on every frame)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[1] - pad, hi[1] + pad)
        return []

    return FuncAnimation(fig, draw, frames=len(idx), interval=interval, blit=False)
