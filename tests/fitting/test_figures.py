"""The fitting figures (fitting.signals.figures, fitting.ode.figures, fitting.training.figures and
particles.core.figures.save_figure)."""

import os

import numpy as np
import pytest
from matplotlib.figure import Figure

from fitting import LinearODE, LotkaVolterra, fourier_signals, surviving_frequencies
from fitting.ode.figures import plot_coefficients, plot_fit
from fitting.signals.figures import plot_signals
from particles.core.figures import save_figure

from .helpers import growing_circle_trajectory


def test_plots_return_figures():
    traj = growing_circle_trajectory()
    S = fourier_signals(traj)
    alive = surviving_frequencies(traj)
    fig = plot_signals(S, traj.snapshot_steps, alive)
    assert isinstance(fig, Figure)
    assert [line.get_label() for line in fig.axes[0].lines if not line.get_label().startswith("_")] == ["k = 3"]
    t = traj.snapshot_steps.astype(float)
    model = LinearODE("ols", derivative="central").fit(S, t)
    fig = plot_fit(model, S, t, columns=[2], window=(0, 300))
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    heat = plot_coefficients(model)
    main_image = [im for ax in heat.axes for im in ax.images if ax.get_xlabel() == "term"][0]
    np.testing.assert_array_equal(np.asarray(main_image.get_array()), model.coef_[:, 1:])  # without the constant
    lv = LotkaVolterra("general", "lasso", alpha=1.0, derivative="central").fit(S, t)
    assert isinstance(plot_coefficients(lv, max_terms=10), Figure)
    with pytest.raises(ValueError, match="survivors"):
        plot_signals(S, survivors=np.ones(3, dtype=bool))


def test_plot_fit_marks_a_blow_up():
    t = np.arange(0, 2, 0.01)
    x = np.exp(t)[:, None] * np.array([1.0, 2.0])
    model = LinearODE("ols", derivative="central").fit(x, 0.01)
    long_t = np.arange(0, 40, 0.01)
    long_x = np.exp(np.minimum(long_t, 2))[:, None] * np.array([1.0, 2.0])
    fig = plot_fit(model, long_x, long_t)
    assert any(text.get_text().strip() == "blow-up" for text in fig.axes[1].texts)


def test_phase_grid_marks_cells_without_a_majority():
    from fitting.training.figures import PHASE_COLORS, plot_phase_grid

    def rec(lr, seed, phase):
        return {"decoder_lr": lr, "decoder_weight_decay": 0.0, "seed": seed, "phase": phase,
                "steps_val": 500 if phase in ("comprehension", "grokking") else None}

    records = [rec(1e-3, 0, "comprehension"), rec(1e-3, 1, "memorization"), rec(1e-3, 2, "grokking"),
               rec(1e-2, 0, "confusion"), rec(1e-2, 1, "confusion"), rec(1e-2, 2, "grokking")]
    ax = plot_phase_grid(records).axes[0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    coloured = [p for p in ax.patches if not p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_x() == -0.5  # the 1e-3 cell: three seeds, three phases
    assert len(coloured) == 1 and coloured[0].get_x() == 0.5
    from matplotlib.colors import to_hex

    assert to_hex(coloured[0].get_facecolor()) == PHASE_COLORS["confusion"]
    assert "no majority" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_save_figure_is_atomic(tmp_path):
    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "a.png")
    good = path.read_bytes()
    assert good[:8] == b"\x89PNG\r\n\x1a\n"

    def broken(*args, **kwargs):
        raise OSError("disk full")

    fig.savefig = broken  # an interrupted write leaves the earlier file whole and no temporary behind
    with pytest.raises(OSError, match="disk full"):
        save_figure(fig, tmp_path / "a.png")
    assert (tmp_path / "a.png").read_bytes() == good
    assert os.listdir(tmp_path) == ["a.png"]
    with pytest.raises(ValueError, match="path must end in a figure format"):
        save_figure(fig, tmp_path / "noext")


def _heat_maps(fig):
    """(main image, constant-term image or None) of a plot_coefficients figure."""
    main = [im for ax in fig.axes for im in ax.images if ax.get_xlabel() == "term"]
    const = [im for ax in fig.axes for im in ax.images if ax.get_xlabel().startswith("constant")]
    assert len(main) == 1 and len(const) <= 1
    return main[0], (const[0] if const else None)


def test_coefficient_colours_are_symmetric_and_not_set_by_the_intercept():
    t = np.linspace(0, 5, 101)
    x = np.column_stack([np.exp(-0.5 * t), 1 + 0.2 * np.sin(t), 2 - np.exp(-t)])
    model = LinearODE("ols", derivative="central").fit(x, t)
    model.coef_ = model.coef_.copy()
    model.coef_[:, 0] = [1e4, -3e3, 5e2]  # a huge intercept
    fig = plot_coefficients(model, ["a", "b", "c"])
    main, const = _heat_maps(fig)
    top = np.max(np.abs(model.coef_[:, 1:]))
    assert main.norm.vmax == pytest.approx(top) and main.norm.vmin == pytest.approx(-top)
    assert main.get_cmap().name.startswith("RdBu_r")
    # the intercept has a panel of its own, its own symmetric scale, and its values written out
    assert const is not None and const.norm.vmax == pytest.approx(1e4) and const.norm.vmin == pytest.approx(-1e4)
    assert "1e+04" in [t.get_text() for t in const.axes.texts]
    # labelled axes and colour bar
    assert main.axes.get_xlabel() == "term" and const.axes.get_ylabel() == "equation (d/dt of)"
    colorbar = [ax for ax in fig.axes if hasattr(ax, "_colorbar")]
    assert len(colorbar) == 1 and colorbar[0].get_ylabel().startswith("coefficient")
    # on a given Axes: one heat map, the constants written next to the equation names
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    plot_coefficients(model, ["a", "b", "c"], ax=ax)
    assert ax.images[0].norm.vmax == pytest.approx(top)
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "a (const +1e+04)"
    assert ax.get_xlabel() == "term" and ax.get_ylabel() == "equation (d/dt of)"
    # all-zero coefficients still give a usable symmetric scale
    model.coef_[:] = 0.0
    main, const = _heat_maps(plot_coefficients(model))
    assert const is None and main.norm.vmax == 1.0 and main.norm.vmin == -1.0


def test_plot_fit_and_coefficients_work_for_every_derivative_formulation():
    import warnings

    traj = growing_circle_trajectory()
    S = fourier_signals(traj)
    t = traj.snapshot_steps.astype(float)
    for derivative in ("forward", "central", "savgol", "weak", "flowmap"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the test signals have a conserved total
            model = LinearODE("ols", derivative=derivative).fit(S, t)
        fig = plot_fit(model, S, t, window=(0, 300))
        assert len(fig.axes) == 2, derivative
        assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes), derivative
        assert isinstance(plot_coefficients(model), Figure)
        title = fig.axes[0].get_title()
        if derivative == "flowmap":  # fitted on the state one lag ahead: that is what the left panel shows
            lag = model.formulation_.lag
            assert title.startswith("flow map") and f"τ = {lag:g}" in title, title
            assert fig.axes[0].get_ylabel() == "x(t)"
            data = fig.axes[0].lines[0]
            assert data.get_xdata()[0] == pytest.approx(t[0] + lag)  # x(t) from t0 + tau on
        elif derivative == "weak":
            assert "the fit used the weak form" in title, title
        else:
            assert title.startswith("dx/dt"), title
    # plotted on samples whose step does not divide the lag: a derivative estimate, said so in the title
    fig = plot_fit(model, S, np.arange(len(S)) * 7.0)
    assert "the fit used the flow map" in fig.axes[0].get_title()
