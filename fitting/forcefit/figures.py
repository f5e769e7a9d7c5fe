"""The force fit's figure: each term's share of the explained force and
the R^2 of the force field over training."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

__all__ = ["plot_force_shares"]


def plot_force_shares(fit, title: str | None = None) -> Figure:
    """A fitted :class:`fitting.ForceLawFit` over training: each term's
    share of the explained force and the R^2 of the force field, per window
    of training steps."""
    # a Figure without pyplot: the caller's backend and figure list are untouched

    windows = [w for w in fit.windows_ if w["snapshots"]]
    mids = np.array([(w["start"] + w["stop"]) / 2 for w in windows])
    value = lambda w, key: np.nan if w[key] is None else w[key]  # noqa: E731 (undefined: a gap)
    fig = Figure(figsize=(6.4, 5.2))
    ax1, ax2 = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    for name in fit.terms_:
        ax1.plot(mids, [np.nan if w["shares"] is None else w["shares"][name] for w in windows], marker="o",
                 label=name)
    ax1.set_ylim(-0.03, 1.03)
    ax1.set_ylabel("share of the window's\nexplained force")
    ax1.legend(fontsize=8, ncol=2)
    ax1.grid(alpha=0.3)
    ax2.plot(mids, [value(w, "r2") for w in windows], marker="o", color="k", label="law (strengths per window)")
    if any(w["null_r2"] is not None for w in windows):
        ax2.plot(mids, [value(w, "null_r2") for w in windows], marker="x", ls="--", color="0.5",
                 label="null (relabelled tokens)")
        ax2.legend(fontsize=8)
    ax2.set_ylabel("R$^2$ of the force")
    ax2.set_xlabel("training step (window centre)")
    ax2.grid(alpha=0.3)
    null = "" if fit.null_r2_ is None else f", null {fit.null_r2_:.3f}: {fit.verdict_}"
    ax1.set_title(title or f"force-law fit, gauge {fit.gauge_}, {fit.fit_info_['snapshots']} snapshots\n"
                  f"whole-run R$^2$ {fit.r2_:.3f}{null}", fontsize=10)  # two lines: it fits the figure's width
    fig.tight_layout()
    return fig
