"""particles.plot: token labels and the k -> k+1 ring."""
import numpy as np


def test_token_labels_do_not_pile_up_and_connect_draws_the_ring():
    from matplotlib.figure import Figure

    from particles.plot import plot_embedding

    rng = np.random.default_rng(5)
    E = np.r_[rng.normal(0, 0.02, (6, 2)), rng.normal(0, 3, (10, 2))]  # six tokens in one clump
    fig = Figure()
    ax = fig.add_subplot()
    plot_embedding(E, ax, connect=True)
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert [t.get_text() for t in ax.texts] == [str(k) for k in range(len(E))]
    clump = boxes[:6]  # the clump's labels spread to different sides instead of one on top of another

    def overlap(a, b):
        w = min(a.x1, b.x1) - max(a.x0, b.x0)
        h = min(a.y1, b.y1) - max(a.y0, b.y0)
        return max(w, 0) * max(h, 0) / (a.width * a.height)

    worst = max(overlap(a, b) for i, a in enumerate(clump) for b in clump[i + 1:])
    assert worst < 0.5, worst
    ring = [line for line in ax.lines if len(line.get_xdata()) == len(E) + 1]
    assert len(ring) == 1 and np.allclose(ring[0].get_xydata()[-1], E[0])


# ------------------------------------------------------------------ readable figures
def _circle(p, radius, phase=0.0):
    angles = 2 * np.pi * np.arange(p) / p + phase
    return radius * np.column_stack([np.cos(angles), np.sin(angles)])


def test_frame_limits_follow_a_shrinking_structure_and_keep_every_token_inside():
    from particles.plot import frame_limits

    radii = np.r_[np.full(3, 6.0), np.geomspace(6.0, 0.5, 12), np.full(5, 0.5)]
    tokens = np.stack([_circle(17, r, 0.1 * f) + [0.3, -0.2] for f, r in enumerate(radii)])
    limits = frame_limits(tokens)
    width = limits[:, 1] - limits[:, 0]
    assert np.allclose(width, limits[:, 3] - limits[:, 2])  # square: equal aspect on a square box
    # shrinks with the structure (the turning polygon's bounding box wobbles by < 1 %)
    assert np.all(np.diff(width) <= 0.01 * width[:-1])
    assert width[-1] < 0.25 * width[0] and width[-1] < 3 * 2 * 0.5  # the last frame is zoomed onto radius 0.5
    for (x0, x1, y0, y1), pts in zip(limits, tokens):  # smoothing never cuts a token off
        assert np.all((pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1))
    # a sudden jump does not make the view jitter: the width changes gradually over neighbouring frames
    jump = np.stack([_circle(8, 4.0 if f < 10 else 1.0) for f in range(20)])
    w = np.diff(frame_limits(jump)[:, :2], axis=1)[:, 0]
    assert np.count_nonzero(np.abs(np.diff(w)) > 1e-9) >= 3
    # pair sums widen the view robustly: one far outlier among them does not
    sums = np.stack([np.r_[_circle(30, 2 * r), [[50.0, 50.0]]] for r in radii])
    with_sums = frame_limits(tokens, sums)
    assert np.all(with_sums[:, 1] - with_sums[:, 0] < 3 * 2 * 2 * radii + 1e-9)


def test_animation_frames_zoom_in_with_readable_size_and_a_legend(tmp_path):
    from particles import Trajectory, modular_addition
    from particles.plot import animate_trajectory

    p = 7
    radii = np.geomspace(6.0, 0.5, 10)
    traj = Trajectory(embeddings=np.stack([_circle(p, r) for r in radii]), snapshot_steps=np.arange(10) * 100)
    anim = animate_trajectory(traj, dataset=modular_addition(p), frames=10, title="test")
    fig = anim._fig
    width_px = fig.get_figwidth() * 100
    assert 480 <= width_px <= 640  # saved at dpi=100 as the demo does
    ax = fig.axes[0]
    spans = []
    for frame in (0, 9):
        anim._func(frame)
        spans.append(np.ptp(ax.get_xlim()))
        assert ax.get_xlabel() and ax.get_ylabel()
        assert min(t.get_fontsize() for t in ax.texts) >= 9
    assert spans[1] < 0.2 * spans[0]
    anim.save(tmp_path / "run.gif", writer="pillow", dpi=100)  # as the demo writes it
    from PIL import Image

    with Image.open(tmp_path / "run.gif") as gif:
        assert 480 <= gif.size[0] <= 640 and gif.n_frames == 10
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("token") for t in texts) and any(t.startswith("pair sum") for t in texts)


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
    from effective_theory.plot import (plot_digits_collapse, plot_grokking_rate_curve, plot_steps_comparison,
                                       plot_structure_probability)
    from fitting import LinearODE
    from fitting.plot import plot_coefficients, plot_fit, plot_phase_grid, plot_signals
    from particles import Trajectory, modular_addition
    from particles.plot import plot_embedding, plot_energy, plot_phase_diagram, plot_snapshots

    rng = np.random.default_rng(0)
    p = 7
    dataset = modular_addition(p)
    traj = Trajectory(embeddings=np.stack([_circle(p, r) + rng.normal(0, 0.05, (p, 2)) for r in (3, 1, 0.5)]),
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
