"""Figures of the effective theory; each function returns a matplotlib Figure."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .montecarlo import GrokkingRateCurve, StructureProbability

__all__ = ["plot_structure_probability", "plot_grokking_rate_curve", "plot_steps_comparison", "plot_digits_collapse"]


def plot_structure_probability(result: StructureProbability) -> Figure:
    """P(n0 = 2) against training fraction with 95 % intervals and the
    critical fraction."""
    fig = Figure(figsize=(5, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.fill_between(result.fractions, result.low, result.high, alpha=0.3, label="95 % Wilson interval")
    ax.plot(result.fractions, result.probability, ".-", label=f"P(n0 = 2), {result.samples} sets a size")
    ax.axhline(0.5, color="0.6", lw=0.8, label="P = 1/2")
    if result.critical_fraction is not None:
        interval = result.critical_fraction_interval
        shown = "" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]"
        ax.axvline(result.critical_fraction, color="C3", lw=1,
                   label=f"critical fraction {result.critical_fraction:.3f}{shown}")
    ax.set_xlabel("training fraction")
    ax.set_ylabel("P(unique linear structure)")
    ax.set_title(f"addition, p = {result.p}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def plot_grokking_rate_curve(curve: GrokkingRateCurve) -> Figure:
    """l3 against training fraction: mean, 10-90 % band, and the share of
    sets with a unique structure."""
    fig = Figure(figsize=(5, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.fill_between(curve.fractions, curve.quantiles(0.1), curve.quantiles(0.9), alpha=0.3, label="10-90 % of sets")
    ax.plot(curve.fractions, curve.mean, ".-", label="mean l3 (0 when n0 > 2)")
    ax.set_xlabel("training fraction")
    ax.set_ylabel("grokking rate l3 of H0")
    twin = ax.twinx()
    twin.plot(curve.fractions, curve.unique_share, "--", color="C2", label="share with n0 = 2")
    twin.set_ylabel("share with n0 = 2")
    twin.set_ylim(0, 1.05)
    ax.set_title(f"addition, p = {curve.p}, {curve.rates.shape[1]} sets a fraction", fontsize=9)
    lines = ax.get_legend_handles_labels()
    lines2 = twin.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, loc="upper left")
    return fig


def plot_steps_comparison(predicted: np.ndarray, measured: np.ndarray) -> Figure:
    """Measured steps to RQI > 0.95 against the predicted 1 / (l3 eta)."""
    predicted = np.asarray(predicted, float)
    measured = np.asarray(measured, float)
    fig = Figure(figsize=(4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.loglog(predicted, measured, "o", alpha=0.6, label="one run")
    lim = [min(predicted.min(), measured.min()) * 0.8, max(predicted.max(), measured.max()) * 1.2]
    ax.plot(lim, lim, "k-", lw=0.8, label="measured = predicted")
    ratio = np.median(measured / predicted)
    ax.plot(lim, [ratio * v for v in lim], "C3--", lw=0.8, label=f"median ratio {ratio:.2f}")
    ax.set_xlabel("predicted steps 1 / (l3 eta)")
    ax.set_ylabel("measured steps to RQI > 0.95")
    ax.legend(fontsize=7)
    return fig


def plot_digits_collapse(result) -> Figure:
    """Digits embedded in 2-D at the start, midway and at the end of the
    classification flow, one dot per sample coloured by its label (legend in
    the third panel), with the within-class share and the drift of Z."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    traj = result.trajectory
    idx = [0, len(traj) // 8, len(traj) - 1]
    fig = Figure(figsize=(12, 3.8), layout="constrained")
    axes = fig.subplots(1, 4)
    classes, codes = np.unique(np.asarray(result.labels), return_inverse=True)
    n_colours = 10 if len(classes) <= 10 else 20
    cmap = colormaps["tab10" if n_colours == 10 else "tab20"]
    for ax, i in zip(axes[:3], idx):
        E = traj.embeddings[i]
        ax.scatter(E[:, 0], E[:, 1], c=codes % n_colours, cmap=cmap, vmin=-0.5, vmax=n_colours - 0.5, s=4)
        ax.set_title(f"step {traj.snapshot_steps[i]}: within-class share {result.within_share[i]:.2g}", fontsize=8)
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("embedding dimension 1", fontsize=8)
        ax.set_ylabel("embedding dimension 2", fontsize=8)
    handles = [Line2D([], [], ls="", marker="o", ms=4, color=cmap((k % n_colours + 0.5) / n_colours), label=str(c))
               for k, c in enumerate(classes)]
    axes[2].legend(handles=handles, title="label (one dot per sample)", fontsize=6, title_fontsize=6, ncols=2,
                   loc="best")
    axes[3].semilogy(traj.snapshot_steps, np.maximum(result.within_share, 1e-300), label="within-class / Z")
    z = traj.scalars["Z"]
    axes[3].semilogy(traj.snapshot_steps, np.abs(z / z[0] - 1) + 1e-17, label="|Z / Z(0) - 1|")
    axes[3].set_xlabel("step")
    axes[3].set_ylabel("relative size")
    axes[3].legend(fontsize=7)
    return fig
