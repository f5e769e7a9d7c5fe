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
