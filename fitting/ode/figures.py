"""Figures of an ODE fit: the data against the model, in rows and in
simulation (:func:`plot_fit`), and the coefficient matrix
(:func:`plot_coefficients`). Each returns a matplotlib Figure and leaves
global state alone."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.figure import Figure
from particles.core.figures import line_points
from sklearn.utils.validation import check_is_fitted

from .data import as_runs, run_times
from .derivatives import is_uniform
from .differentiation import FiniteDifference, SavitzkyGolay
from .integrate import BlowUpError
from .base import ODEModel

__all__ = ["plot_fit", "plot_coefficients"]


def flowmap_rows(model: ODEModel, run: np.ndarray, times: np.ndarray):
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
    if not form.estimates_derivatives:
        w = min(11, len(run) if len(run) % 2 else len(run) - 1)
        form = SavitzkyGolay(w, min(3, w - 1)) if w >= 3 and is_uniform(times) else FiniteDifference(2)
        fitted = {"weak": "the weak form", "flowmap": "the flow map"}.get(model.formulation_.kind,
                                                                         repr(model.formulation_))
        source = f" ({form.estimate_name} estimate; the fit used {fitted}, no derivatives)"
    states, rates = form.derivative(run, times)
    pred = model.predict(states)
    n_rate = len(rates)
    rate_times = form.rate_times(times, n_rate)
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
    lagged = flowmap_rows(model, run, times) if model.formulation_.maps_states else None
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
        line, = ax_d.plot(*line_points(left_times, left_data[:, c]), lw=1, alpha=0.6)
        ax_d.plot(*line_points(left_times, left_model[:, c]), "--", color=line.get_color(), lw=1.2)
        ax_x.plot(*line_points(times, run[:, c]), lw=1, alpha=0.6, color=line.get_color(), label=labels[c])
        ax_x.plot(*line_points(times[: len(sim)], sim[:, c]), "--", color=line.get_color(), lw=1.2)
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
