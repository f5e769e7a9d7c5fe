"""Readable figures across the distribution: every plot function of particles,
effective_theory and fitting labels its axes and explains its marks."""
import numpy as np

from .particles.helpers import circle


def _unlabelled_axes(fig):
    """The x-y axes of ``fig`` missing an x or y label (colour bars are
    skipped; an axes sharing its y axis with a labelled one may leave it)."""
    missing = []
    plots = [ax for ax in fig.axes if not hasattr(ax, "_colorbar")]
    for ax in plots:
        shared_y = [o for o in ax.get_shared_y_axes().get_siblings(ax) if o is not ax]
        shared_x = [o for o in ax.get_shared_x_axes().get_siblings(ax) if o is not ax]  # twinx
        ylabel = ax.get_ylabel() or any(o.get_ylabel() for o in shared_y)
        xlabel = ax.get_xlabel() or any(o.get_xlabel() for o in shared_x)
        if not xlabel or not ylabel:
            missing.append((ax.get_title() or fig._suptitle and fig._suptitle.get_text(), ax.get_xlabel(),
                            ax.get_ylabel()))
    return missing


def test_every_plot_function_labels_its_axes_and_explains_its_marks():
    from matplotlib.figure import Figure

    from effective_theory.montecarlo import GrokkingRateCurve, StructureProbability
    from effective_theory.figures import (plot_digits_collapse, plot_grokking_rate_curve, plot_steps_comparison,
                                       plot_structure_probability)
    from fitting import LinearODE
    from fitting.ode.figures import plot_coefficients, plot_fit
    from fitting.signals.figures import plot_signals
    from fitting.training.figures import plot_phase_grid
    from particles import Trajectory, modular_addition
    from particles.figures import plot_embedding, plot_energy, plot_phase_diagram, plot_snapshots

    rng = np.random.default_rng(0)
    p = 7
    dataset = modular_addition(p)
    traj = Trajectory(embeddings=np.stack([circle(p, r) + rng.normal(0, 0.05, (p, 2)) for r in (3, 1, 0.5)]),
                      snapshot_steps=np.array([0, 50, 100]), steps=np.arange(3),
                      scalars={"energy": np.array([3.0, 2.0, 1.0]), "Z": np.array([1.0, 1.0, 1.0])})
    t = np.linspace(0, 4, 81)
    x = np.column_stack([np.exp(-t), 2 + np.sin(t), 1 + 0.5 * t])
    model = LinearODE("ols", derivative="central").fit(x, t)
    fractions = np.linspace(0.2, 1.0, 5)
    digits = type("Digits", (), {"trajectory": traj, "labels": np.arange(p) % 3,
                                 "within_share": np.array([1.0, 0.1, 0.01])})()
    records = [{"decoder_lr": lr, "decoder_weight_decay": wd, "phase": "grokking", "steps_val": 2000}
               for lr in (1e-3, 1e-2) for wd in (0.0, 1.0)]
    figures = {
        "plot_embedding": plot_embedding(traj.final, dataset=dataset),
        "plot_snapshots": plot_snapshots(traj, dataset=dataset, connect=True),
        "plot_energy": plot_energy(traj),
        "plot_phase_diagram": plot_phase_diagram({(1, 2): {k: 0.2 for k in
                                                           ("circle", "grid", "line", "imperfect grid",
                                                            "unstructured")}}, [1], [2]),
        "plot_signals": plot_signals(x, survivors=np.array([False, True, True])),
        "plot_fit": plot_fit(model, x, t, window=(0, 2)),
        "plot_coefficients": plot_coefficients(model),
        "plot_phase_grid": plot_phase_grid(records),
        "plot_structure_probability": plot_structure_probability(StructureProbability(
            10, np.arange(5), fractions, np.linspace(0, 1, 5), np.linspace(0, 0.9, 5), np.linspace(0.1, 1, 5), 50,
            0.6, (0.55, 0.65), 0.02)),
        "plot_grokking_rate_curve": plot_grokking_rate_curve(GrokkingRateCurve(10, fractions,
                                                                               rng.uniform(0, 1, (5, 4)))),
        "plot_steps_comparison": plot_steps_comparison(np.array([10.0, 100.0]), np.array([12.0, 90.0])),
        "plot_digits_collapse": plot_digits_collapse(digits),
    }
    for name, fig in figures.items():
        assert isinstance(fig, Figure), name
        assert not _unlabelled_axes(fig), (name, _unlabelled_axes(fig))
    # marks with a meaning beyond the axes are explained by a legend
    for name in ("plot_embedding", "plot_snapshots"):
        texts = [t.get_text() for legend in figures[name].legends for t in legend.get_texts()]
        assert any("pair sum E_a + E_b" in t and "(a + b) mod 7" in t for t in texts), (name, texts)
        assert any(t.startswith("token k") for t in texts), (name, texts)
    assert "tokens k -> k + 1 (mod p) joined" in [t.get_text() for t in figures["plot_snapshots"].legends[0].texts]
    for name in ("plot_signals", "plot_fit", "plot_phase_grid", "plot_structure_probability",
                 "plot_grokking_rate_curve", "plot_steps_comparison", "plot_digits_collapse"):
        assert any(ax.get_legend() is not None for ax in figures[name].axes), name
    digit_legend = [t.get_text() for t in figures["plot_digits_collapse"].axes[2].get_legend().get_texts()]
    assert digit_legend == ["0", "1", "2"]
    signals_legend = [t.get_text() for t in figures["plot_signals"].axes[0].get_legend().get_texts()]
    assert signals_legend == ["k = 2", "k = 3", "other frequencies"]
    fit_styles = [t.get_text() for t in figures["plot_fit"].axes[0].get_legend().get_texts()]
    assert fit_styles == ["data", "model dx/dt", "fitting window"]
