"""Figures for signals and ODE fits. Every function returns a matplotlib
Figure and leaves global state alone."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from sklearn.utils.validation import check_is_fitted
from matplotlib.figure import Figure

from particles.core.figures import save_figure

from .ode import BlowUpError, FiniteDifference, ODEModel, SavitzkyGolay
from .ode.flowmap import FlowMap
from .ode.derivatives import is_uniform
from .ode.data import as_runs, run_times

__all__ = ["plot_signals", "plot_fit", "plot_coefficients", "plot_phase_grid", "save_figure"]


def _figure(ax, figsize) -> tuple[Figure, Any]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


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
    fig, ax = _figure(ax, (6.5, 4))
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


def _flowmap_rows(model: ODEModel, run: np.ndarray, times: np.ndarray):
    """What a flow-map model was fitted on, for one run: (times of x(t),
    x(t), the fitted map applied to x(t - tau), H, tau), or None when the
    lag tau is not a whole number H of the run's uniform steps."""
    form = model.formulation_
    tau = float(form.lag)
    if len(times) < 2 or not is_uniform(times):
        return None
    dt = float(times[1] - times[0])
    H = int(round(tau / dt)) if dt > 0 else 0
    if H < 1 or H >= len(run) or abs(H * dt - tau) > 1e-6 * abs(tau):
        return None
    pred = model.predict_rows(model.library_.features(run[:-H]), form)
    return times[H:], run[H:], pred, H, tau


def _derivative_rows(model: ODEModel, run: np.ndarray, times: np.ndarray):
    """(times, estimated dx/dt, model dx/dt at the states, how they were
    estimated): the model's own estimator, or Savitzky-Golay (finite
    differences on non-uniform times) for a formulation that never
    estimates derivatives (weak form, flow map)."""
    form = model.formulation_
    source = ""
    if not form.pointwise or isinstance(form, FlowMap):
        w = min(11, len(run) if len(run) % 2 else len(run) - 1)
        form = SavitzkyGolay(w, min(3, w - 1)) if w >= 3 and is_uniform(times) else FiniteDifference(2)
        fitted = "the weak form" if not model.formulation_.pointwise else "the flow map"
        estimate = "Savitzky-Golay" if isinstance(form, SavitzkyGolay) else "central-difference"
        source = f" ({estimate} estimate; the fit used {fitted}, no derivatives)"
    states, rates = form.derivative(run, times)
    pred = model.predict(states)
    n_rate = len(rates)
    if isinstance(form, FiniteDifference):
        rate_times = times[:n_rate] if form.order == 1 else times[1 : 1 + n_rate]
    else:
        rate_times = times
    return rate_times, rates, pred, source


def plot_fit(model: ODEModel, x: np.ndarray, t: Any = None, columns: Sequence[int] | None = None,
             method: str = "auto", window: tuple[float, float] | None = None,
             names: Sequence[str] | None = None, title: str | None = None) -> Figure:
    """What the model was fitted on (left) and the data against the simulated
    trajectory (right) for a few columns of one run.

    Left panel: the data's dx/dt against the model's at the samples (the
    model's own derivative estimate; a Savitzky-Golay estimate for the weak
    form, which never estimates derivatives). A flow-map model
    (``derivative="flowmap"``) was fitted on the state one lag tau ahead,
    not on derivatives: its left panel shows x(t) against the fitted map
    applied to x(t - tau) (a derivative estimate when the plotted samples do
    not have tau as a whole number of steps); the panel title says which.

    ``columns`` defaults to the four largest at the end of the run.
    ``window`` shades the fitting window. A simulation that blows up is
    drawn up to the blow-up and marked. ``title`` goes above both panels.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    check_is_fitted(model, "coef_")
    run = as_runs(x)[0]
    times = run_times(model.time_values(t), [run])[0]
    K = run.shape[1]
    labels = model.variable_names(names)
    largest = columns is None
    if columns is None:
        columns = list(np.argsort(run[-1])[::-1][: min(4, K)])
    lagged = _flowmap_rows(model, run, times) if isinstance(model.formulation_, FlowMap) else None
    if lagged is not None:
        left_times, left_data, left_model, H, tau = lagged
        left_title = (f"flow map (fitted without derivatives), lag τ = {tau:g} ({H} samples):\n"
                      f"x(t): data (solid) vs fitted map applied to x(t - τ) (dashed)")
        left_ylabel, model_name = "x(t)", "fitted map, one lag ahead"
    else:
        left_times, left_data, left_model, source = _derivative_rows(model, run, times)
        left_title = "dx/dt: data (solid) vs model (dashed)" + (f"\n{source.strip()}" if source else "")
        left_ylabel, model_name = "dx/dt", "model dx/dt"
    blew = None
    try:
        sim = model.simulate(run[0], times, method=method)
    except BlowUpError as exc:
        sim, blew = exc.partial, exc.time
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_d, ax_x = fig.subplots(1, 2)
    for c in columns:
        line, = ax_d.plot(left_times, left_data[:, c], lw=1, alpha=0.6)
        ax_d.plot(left_times, left_model[:, c], "--", color=line.get_color(), lw=1.2)
        ax_x.plot(times, run[:, c], lw=1, alpha=0.6, color=line.get_color(), label=labels[c])
        ax_x.plot(times[: len(sim)], sim[:, c], "--", color=line.get_color(), lw=1.2)
    for ax in (ax_d, ax_x):
        if window is not None:
            ax.axvspan(max(window[0], times[0]), min(window[1], times[-1]), color="0.92", zorder=0)
        ax.set_xlabel("t")
    ax_d.set_ylabel(left_ylabel)
    ax_x.set_ylabel("x(t)")
    # the axes keep the data's range: a model or simulation far outside it would flatten the data to a line
    _keep_data_range(ax_d, left_data[:, columns], left_model[:, columns])
    left_at = _keep_data_range(ax_x, run[:, columns], sim[:, columns], times[: len(sim)])
    if left_at is not None and (blew is None or left_at < blew):
        ax_x.axvline(left_at, color="darkorange", lw=1, ls=":")
        ax_x.text(left_at, ax_x.get_ylim()[0], " simulation leaves\n the data's range", color="darkorange",
                  va="bottom", fontsize="small", bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    if blew is not None:
        ax_x.axvline(blew, color="red", lw=1)
        ax_x.text(blew, ax_x.get_ylim()[1], " blow-up", color="red", va="top")
    ax_d.set_title(left_title, fontsize="small")
    shown = "" if len(columns) == K else \
        f"\n{len(columns)} of the {K} variables" + (" (the largest at the end)" if largest else "")
    ax_x.set_title("x(t): data (solid) vs simulation from x(t0) (dashed)" + shown, fontsize="small")
    styles = [Line2D([], [], color="0.4", lw=1, alpha=0.6, label="data"),
              Line2D([], [], color="0.4", lw=1.2, ls="--", label=model_name)]
    if window is not None:
        styles.append(Patch(color="0.92", label="fitting window"))
    ax_d.legend(handles=styles, fontsize="small")
    ax_x.legend(fontsize="small", title="colour: variable", title_fontsize="small")
    if title:
        fig.suptitle(title, fontsize="medium")
    return fig


def _keep_data_range(ax, data: np.ndarray, other: np.ndarray, times: np.ndarray | None = None) -> float | None:
    """Limit ``ax``'s y axis to the data's range (10 % margin) when ``other``
    (the model's curves) goes beyond it; returns the first time in ``times``
    at which ``other`` leaves that range (None if it never does)."""
    data = np.asarray(data, dtype=float)
    other = np.asarray(other, dtype=float)
    finite = data[np.isfinite(data)]
    if finite.size == 0:
        return None
    lo, hi = float(finite.min()), float(finite.max())
    pad = 0.1 * (hi - lo) if hi > lo else 0.1 * max(abs(hi), 1e-12)
    lo, hi = lo - pad, hi + pad
    outside = ~np.all((other >= lo) & (other <= hi), axis=tuple(range(1, other.ndim))) if other.size else \
        np.zeros(0, dtype=bool)
    if not outside.any():
        return None
    ax.set_ylim(lo, hi)
    if times is None:
        return None
    return float(np.asarray(times)[int(np.argmax(outside))])


def _symmetric_limit(C: np.ndarray) -> float:
    """max |C|, or 1 when C is empty or all zero (a diverging scale needs a range)."""
    top = float(np.max(np.abs(C))) if C.size else 0.0
    return top if top > 0 and np.isfinite(top) else 1.0


def plot_coefficients(model: ODEModel, names: Sequence[str] | None = None, ax=None,
                      max_terms: int = 60) -> Figure:
    """Heat map of the fitted coefficients (equations x terms), zero white.

    The colour scale is diverging and symmetric (``RdBu_r``, vmin = -vmax)
    with vmax the largest |coefficient| of the terms other than the
    constant: a large intercept does not wash the rest out. The constant
    term's coefficients are drawn in a narrow panel of their own on the left
    (own symmetric scale, values written in the cells); with ``ax`` given
    they are written next to the equation names instead.

    With more than ``max_terms`` library terms only the terms that are
    non-zero somewhere are drawn (at most ``max_terms``).
    """
    check_is_fitted(model, "coef_")
    coef = np.asarray(model.coef_, dtype=float)
    K, F = coef.shape
    terms = model.feature_names(names)
    variables = model.variable_names(names)
    bias = model.library_.bias_column(K) if hasattr(model, "library_") else None
    keep = np.array([j for j in range(F) if j != bias], dtype=int)
    if F > max_terms:
        nonzero = keep[np.any(coef[:, keep] != 0, axis=0)]
        keep = (nonzero if nonzero.size else keep)[:max_terms]  # all zero: the first terms, all white
    C = coef[:, keep]
    vmax = _symmetric_limit(C)
    note = "white: exactly zero"
    if bias is not None and not np.any(coef[:, bias]):  # nothing to show in a panel of its own
        note += f"; constant term '{terms[bias]}': all zero"
        bias = None
    title = f"coefficients: {np.count_nonzero(coef)} non-zero of {coef.size}\n({note})"
    own = ax is None
    row_labels = list(variables)
    if own:
        width = max(4.0, 0.28 * len(keep) + 2.6 + (0.7 if bias is not None else 0.0))
        fig = Figure(figsize=(width, max(3.2, 0.28 * K + 1.9)), layout="constrained")
        if bias is not None:
            ax_b, ax = fig.subplots(1, 2, sharey=True, width_ratios=[2.5, max(len(keep), 1)])
        else:
            ax_b, ax = None, fig.add_subplot()
    else:
        fig, ax_b = ax.figure, None
        if bias is not None:
            row_labels = [f"{v} (const {coef[i, bias]:+.2g})" for i, v in enumerate(variables)]
    from matplotlib import colormaps

    cmap = colormaps["RdBu_r"].with_extremes(bad="white")  # exact zeros masked: white, not the scale's grey
    im = ax.imshow(np.ma.masked_equal(C, 0.0), cmap=cmap, vmin=-vmax, vmax=vmax, aspect="auto",
                   interpolation="nearest")
    ax.set_xticks(range(len(keep)), [terms[k] for k in keep], rotation=90, fontsize="x-small")
    ax.set_yticks(range(K), row_labels, fontsize="x-small")
    ax.set_xlabel("term")
    if ax_b is not None:
        b = coef[:, [bias]]
        bmax = _symmetric_limit(b)
        ax_b.imshow(np.ma.masked_equal(b, 0.0), cmap=cmap, vmin=-bmax, vmax=bmax, aspect="auto",
                    interpolation="nearest")
        for i, v in enumerate(b[:, 0]):
            ax_b.text(0, i, f"{v:.2g}", ha="center", va="center", fontsize=6 if K > 40 else 7,
                      color="white" if abs(v) > 0.6 * bmax else "black")
        ax_b.set_xticks([0], [terms[bias]], fontsize="x-small")
        ax_b.set_xlabel("constant\n(own scale)", fontsize="small")
        ax_b.set_ylabel("equation (d/dt of)")
        ax_b.tick_params(axis="y", labelsize="x-small")
        ax.tick_params(axis="y", labelleft=False)
        fig.suptitle(title, fontsize="medium")
    else:
        ax.set_ylabel("equation (d/dt of)")
        ax.set_title(title, fontsize="medium" if own else "small")
    scale = "\n(colour scale: terms other than the constant)" if bias is not None else ""
    fig.colorbar(im, ax=ax, shrink=0.8 if K > 4 else 1.0, label=f"coefficient{scale}")
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
