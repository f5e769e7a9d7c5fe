"""Figures for signals and ODE fits. Every function returns a matplotlib
Figure and leaves global state alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from sklearn.utils.validation import check_is_fitted
from matplotlib.figure import Figure

from .ode import BlowUpError, FiniteDifference, ODEModel, SavitzkyGolay
from .derivatives import is_uniform
from .ode.data import as_runs, run_times

__all__ = ["plot_signals", "plot_fit", "plot_coefficients", "plot_phase_grid", "save_figure"]


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` atomically (format from the suffix, e.g.
    ``.png`` or ``.svg``): an interrupted write leaves any earlier file whole."""
    from particles.trajectory import atomic_write

    path = Path(path)
    if not path.suffix:
        raise ValueError(f"path must end in a figure format such as .png, got {str(path)!r}")
    return atomic_write(path, lambda fh: fig.savefig(fh, format=path.suffix[1:], dpi=dpi))


def _figure(ax, figsize) -> tuple[Figure, Any]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def plot_signals(signals: np.ndarray, steps: np.ndarray | None = None, survivors: np.ndarray | None = None,
                 ax=None, log: bool = True, title: str | None = None) -> Figure:
    """Signal of every frequency over time; survivors coloured and labelled,
    the others grey.

    Parameters
    ----------
    signals : ndarray, shape (T, K)   column j is frequency k = j + 1
    steps : ndarray, shape (T,), optional
    survivors : ndarray of bool, shape (K,), optional
    """
    S = np.asarray(signals, dtype=float)
    if S.ndim != 2:
        raise ValueError(f"signals must have shape (T, K), got {S.shape}")
    steps = np.arange(S.shape[0]) if steps is None else np.asarray(steps)
    alive = np.zeros(S.shape[1], dtype=bool) if survivors is None else np.asarray(survivors, dtype=bool)
    if alive.shape != (S.shape[1],):
        raise ValueError(f"survivors must have shape ({S.shape[1]},), got {alive.shape}")
    fig, ax = _figure(ax, (6.5, 4))
    for j in np.flatnonzero(~alive):
        ax.plot(steps, S[:, j], color="0.75", lw=0.8)
    for j in np.flatnonzero(alive):
        ax.plot(steps, S[:, j], lw=1.8, label=f"k = {j + 1}")
    if log and np.all(S > 0):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("signal |F_k|")
    if alive.any():
        ax.legend(title="survivors", fontsize="small")
    ax.set_title(title or f"Fourier signals ({int(alive.sum())} of {S.shape[1]} frequencies survive)")
    return fig


def plot_fit(model: ODEModel, x: np.ndarray, t: Any = None, columns: Sequence[int] | None = None,
             method: str = "auto", window: tuple[float, float] | None = None,
             names: Sequence[str] | None = None, title: str | None = None) -> Figure:
    """Data against the fitted derivatives (left) and against the simulated
    trajectory (right) for a few columns of one run.

    ``columns`` defaults to the four largest at the end of the run.
    ``window`` shades the fitting window. A simulation that blows up is
    drawn up to the blow-up and marked. ``title`` goes above both panels.
    """
    run = as_runs(x)[0]
    times = run_times(model._time_arg(t), [run])[0]
    K = run.shape[1]
    labels = model._variable_names(names)
    if columns is None:
        columns = list(np.argsort(run[-1])[::-1][: min(4, K)])
    # derivatives at the samples: the model's own estimator, or Savitzky-Golay
    # for the weak form (which never estimates them)
    form = model.formulation_
    if not form.pointwise:
        w = min(11, len(run) if len(run) % 2 else len(run) - 1)
        form = SavitzkyGolay(w, min(3, w - 1)) if w >= 3 and is_uniform(times) else FiniteDifference(2)
    states, rates = form.derivative(run, times)
    pred = model.predict(states)
    n_rate = len(rates)
    if isinstance(form, FiniteDifference):
        rate_times = times[:n_rate] if form.order == 1 else times[1 : 1 + n_rate]
    else:
        rate_times = times
    blew = None
    try:
        sim = model.simulate(run[0], times, method=method)
    except BlowUpError as exc:
        sim, blew = exc.partial, exc.time
    fig = Figure(figsize=(11, 4), layout="constrained")
    ax_d, ax_x = fig.subplots(1, 2)
    for c in columns:
        line, = ax_d.plot(rate_times, rates[:, c], lw=1, alpha=0.6)
        ax_d.plot(rate_times, pred[:, c], "--", color=line.get_color(), lw=1.2)
        ax_x.plot(times, run[:, c], lw=1, alpha=0.6, color=line.get_color(), label=labels[c])
        ax_x.plot(times[: len(sim)], sim[:, c], "--", color=line.get_color(), lw=1.2)
    for ax in (ax_d, ax_x):
        if window is not None:
            ax.axvspan(max(window[0], times[0]), min(window[1], times[-1]), color="0.92", zorder=0)
        ax.set_xlabel("t")
    if blew is not None:
        ax_x.axvline(blew, color="red", lw=1)
        ax_x.text(blew, ax_x.get_ylim()[1], " blow-up", color="red", va="top")
    source = "" if model.formulation_.pointwise else " (Savitzky-Golay estimate; the fit used the weak form)"
    ax_d.set_title(f"dx/dt: data{source} (solid) vs model (dashed)", fontsize="small")
    ax_x.set_title("x(t): data (solid) vs simulation (dashed)")
    ax_x.legend(fontsize="small")
    if title:
        fig.suptitle(title, fontsize="medium")
    return fig


def plot_coefficients(model: ODEModel, names: Sequence[str] | None = None, ax=None,
                      max_terms: int = 60) -> Figure:
    """Heat map of the fitted coefficients (equations x terms), zero white.

    With more than ``max_terms`` library terms only the terms that are
    non-zero somewhere are drawn.
    """
    check_is_fitted(model, "coef_")
    coef = model.coef_
    terms = model.feature_names(names)
    variables = model._variable_names(names)
    keep = np.arange(coef.shape[1])
    if coef.shape[1] > max_terms:
        keep = np.flatnonzero(np.any(coef != 0, axis=0))[:max_terms]
    C = coef[:, keep]
    fig, ax = _figure(ax, (max(4.0, 0.28 * len(keep) + 2), max(3.0, 0.28 * len(variables) + 1.5)))
    vmax = float(np.max(np.abs(C))) if C.size and np.any(C) else 1.0
    im = ax.imshow(C, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(keep)), [terms[k] for k in keep], rotation=90, fontsize="x-small")
    ax.set_yticks(range(len(variables)), [f"d{v}/dt" for v in variables], fontsize="x-small")
    ax.set_title(f"coefficients ({np.count_nonzero(coef)} non-zero of {coef.size})")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


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
    fig, ax = _figure(ax, (7.5, 4.8))
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
