"""particles.figures: token labels and the k -> k+1 ring; frames that follow the
structure; the animation's frames."""
import numpy as np
import pytest

from .helpers import circle


def test_token_labels_do_not_pile_up_and_connect_draws_the_ring():
    from matplotlib.figure import Figure

    from particles.figures import plot_embedding

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


def test_frame_limits_follow_a_shrinking_structure_and_keep_every_token_inside():
    from particles.figures import frame_limits

    radii = np.r_[np.full(3, 6.0), np.geomspace(6.0, 0.5, 12), np.full(5, 0.5)]
    tokens = np.stack([circle(17, r, 0.1 * f) + [0.3, -0.2] for f, r in enumerate(radii)])
    limits = frame_limits(tokens)
    width = limits[:, 1] - limits[:, 0]
    assert np.allclose(width, limits[:, 3] - limits[:, 2])  # square: equal aspect on a square box
    # shrinks with the structure (the turning polygon's bounding box wobbles by < 1 %)
    assert np.all(np.diff(width) <= 0.01 * width[:-1])
    assert width[-1] < 0.25 * width[0] and width[-1] < 3 * 2 * 0.5  # the last frame is zoomed onto radius 0.5
    for (x0, x1, y0, y1), pts in zip(limits, tokens):  # smoothing never cuts a token off
        assert np.all((pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1))
    # a sudden jump does not make the view jitter: the width changes gradually over neighbouring frames
    jump = np.stack([circle(8, 4.0 if f < 10 else 1.0) for f in range(20)])
    w = np.diff(frame_limits(jump)[:, :2], axis=1)[:, 0]
    assert np.count_nonzero(np.abs(np.diff(w)) > 1e-9) >= 3
    # pair sums widen the view robustly: one far outlier among them does not
    sums = np.stack([np.r_[circle(30, 2 * r), [[50.0, 50.0]]] for r in radii])
    with_sums = frame_limits(tokens, sums)
    assert np.all(with_sums[:, 1] - with_sums[:, 0] < 3 * 2 * 2 * radii + 1e-9)


@pytest.mark.slow
def test_animation_frames_zoom_in_with_readable_size_and_a_legend(tmp_path):
    from particles import Trajectory, modular_addition
    from particles.figures import animate_trajectory

    p = 7
    radii = np.geomspace(6.0, 0.5, 10)
    traj = Trajectory(embeddings=np.stack([circle(p, r) for r in radii]), snapshot_steps=np.arange(10) * 100)
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
