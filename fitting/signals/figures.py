"""The signals' figure: every frequency's signal over training, the
selected ones coloured (:func:`plot_signals`). Returns a matplotlib Figure
and leaves global state alone."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from particles.core.figures import figure_and_axes, line_points

__all__ = ["plot_signals", "stages_figure", "draw_stages", "STAGE_COLOURS"]


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
    fig, ax = figure_and_axes(ax, (6.5, 4))
    for j in np.flatnonzero(~alive):
        ax.plot(*line_points(steps, S[:, j]), color="0.75", lw=0.8)
    chosen = np.flatnonzero(alive)
    palette = None
    if len(chosen) > 10:  # the default cycle repeats after 10 colours
        from matplotlib import colormaps

        palette = colormaps["tab20"].colors
    for i, j in enumerate(chosen):
        ax.plot(*line_points(steps, S[:, j]), lw=1.8, label=f"k = {j + 1}",
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


STAGE_COLOURS = {"memorisation": "tab:orange", "circuit formation": "tab:blue", "cleanup": "tab:purple",
                 "generalisation": "tab:green"}


def draw_stages(ax, run_stages, labels: bool = False) -> None:
    """Shade each placed stage of ``run_stages`` (:class:`fitting.RunStages`) over the step axis of ``ax``."""
    for stage in run_stages.stages:
        if stage.found:
            colour = STAGE_COLOURS.get(stage.name, "0.5")
            ax.axvspan(stage.start, stage.stop, color=colour, alpha=0.12, lw=0)
            ax.axvline(stage.stop, color=colour, lw=0.8, ls="--")
            if labels:
                ax.text(stage.stop, 1.0, f" {stage.name} ends", transform=ax.get_xaxis_transform(), rotation=90,
                        va="top", ha="right", fontsize="x-small", color=colour)


def stages_figure(run_stages) -> Figure:
    """The stages of a run (:func:`fitting.stages`): the key frequencies'
    share of the Fourier power and the concentration of the spectrum; the
    power outside the key frequencies; the network's own accuracy and loss
    when recorded; every stage shaded on every panel, with the stage's end
    dashed."""
    from matplotlib.patches import Patch

    s = run_stages.series
    steps = np.asarray(s["steps"])
    curves = run_stages.curves
    has_curves = any(n in curves for n in ("train_acc", "val_acc", "train_loss", "val_loss"))
    fig = Figure(figsize=(7.5, 7.2 if has_curves else 5.2), layout="constrained")
    axes = fig.subplots(3 if has_curves else 2, 1, sharex=True)
    ax = axes[0]
    key = run_stages.share_frequencies
    listed = f"{len(key)} frequencies: {', '.join(map(str, key[:6]))}{', ...' if len(key) > 6 else ''}"
    label = (f"circuit share ({listed})" if run_stages.circuit_frequencies else
             f"share of the {listed} (no circuit formed)")
    ax.plot(steps, s["circuit_share"], color="tab:blue", lw=1.5, label=label)
    ax.set_ylabel("circuit frequencies' share\nof Fourier power" if run_stages.circuit_frequencies else
                  "candidate frequencies' share\nof Fourier power")
    ax.set_ylim(0, 1.02)
    twin = ax.twinx()
    twin.plot(steps, s["concentration"], color="tab:red", lw=1.0, alpha=0.8, label="concentration (K x IPR)")
    twin.set_ylabel("concentration K x IPR", color="tab:red")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.set_zorder(twin.get_zorder() + 1)  # the share's axes (and its legend) over the concentration's line
    ax.patch.set_visible(False)
    ax.legend(h1 + h2, l1 + l2, fontsize="small", loc="center right", framealpha=0.9)
    ax = axes[1]
    ax.plot(steps, s["outside_power"], color="tab:purple", lw=1.5)
    ax.set_ylabel("power outside the circuit\n(1: its peak from the\ncircuit's start)", fontsize="small")
    if np.all(np.asarray(s["outside_power"]) > 0):
        ax.set_yscale("log")
    if has_curves:
        ax = axes[2]
        for name, colour, style in (("train_acc", "tab:orange", "-"), ("val_acc", "tab:green", "-")):
            if name in curves:
                ax.plot(*curves[name], color=colour, ls=style, lw=1.5, label=name.replace("_", " "))
        ax.set_ylabel("accuracy")
        ax.set_ylim(-0.02, 1.02)
        loss = ax.twinx()
        for name, colour in (("train_loss", "tab:orange"), ("val_loss", "tab:green")):
            if name in curves and np.all(curves[name][1] > 0):
                loss.plot(*curves[name], color=colour, ls=":", lw=1.2, label=name.replace("_", " "))
        loss.set_yscale("log")
        loss.set_ylabel("loss (dotted, log)")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = loss.get_legend_handles_labels()
        ax.set_zorder(twin.get_zorder() + 1)  # the share's axes (and its legend) over the concentration's line
    ax.patch.set_visible(False)
    ax.legend(h1 + h2, l1 + l2, fontsize="small", loc="center right", framealpha=0.9)
    for i, ax in enumerate(axes):
        draw_stages(ax, run_stages, labels=False)
    axes[-1].set_xlabel("training step")
    placed = [st.name for st in run_stages.stages if st.found]
    if placed:
        fig.legend([Patch(color=STAGE_COLOURS[n], alpha=0.3) for n in placed], placed, loc="outside upper center",
                   ncol=len(placed), fontsize="small", title="stages (shaded; dashed: end)")
    else:
        fig.suptitle("no stage placed", fontsize="small")
    return fig
