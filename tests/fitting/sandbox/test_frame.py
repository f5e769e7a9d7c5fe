"""The sandbox's frame (fitting.sandbox.frame): its panels, labels, class
colours and region shading, on synthetic layer states (no torch)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from fitting.sandbox import load_layers
from fitting.sandbox.frame import (CURVE_TITLES, PAIR_SUM_TITLE, PANEL_TITLES, REGION_ALPHA, class_colors, draw_frame,
                                   frame_panels)
from particles.trajectory import Trajectory

FULL = ("token_embedding", "position", "query", "value_map", "inputs", "normed_inputs", "values", "attention",
        "sequence", "normed_sequence", "mlp", "residual", "logits", "regions_sequence", "regions_residual")
CONSTANT = ("token_embedding", "sequence", "logits", "regions_sequence")


def synthetic_layers(p: int = 2, T: int = 12, B: int = 24, S: int = 4, states=FULL, every: int = 10,
                     model: str = "sparse-modular", curves: bool = True, grid: int = 8):
    """LayerStates of a made-up run: S records ``every`` steps apart, through a Trajectory and load_layers."""
    rng = np.random.default_rng(0)
    steps = np.arange(S) * every
    tokens = rng.integers(0, p, size=(B, T))
    labels = np.arange(B) % p
    split = ["train" if b < B * 3 // 4 else "val" for b in range(B)]
    shapes = {"token_embedding": (p, 2), "position": (T, 2), "query": (2,), "value_map": (2, 3),
              "inputs": (p, T, 2), "normed_inputs": (p, T, 2), "values": (p, T, 2), "attention": (B, T),
              "sequence": (B, 2), "normed_sequence": (B, 2), "mlp": (B, 2), "residual": (B, 2), "logits": (B, p)}
    arrays = {}
    for name in states:
        if name.startswith("regions_"):
            plane = name[len("regions_"):]
            arrays[f"layer_{name}"] = rng.integers(0, p, size=(S, grid, grid)).astype(float)
            arrays[f"layer_extent_{plane}"] = np.tile([-2.0, 3.0, -1.5, 2.5], (S, 1)) + np.arange(S)[:, None]
        elif name == "attention":
            w = rng.random((S, B, T))
            arrays["layer_attention"] = w / w.sum(axis=2, keepdims=True)
        else:
            arrays[f"layer_{name}"] = rng.normal(size=(S,) + shapes[name])
    scalars = {}
    if curves:
        n = int(steps[-1]) + 1
        decay = np.exp(-np.arange(n) / max(n, 1))
        scalars = {"train_loss": 0.7 * decay, "val_loss": 0.75 * decay, "batch_loss": 0.7 * decay + 0.01,
                   "train_acc": 1 - 0.5 * decay, "val_acc": 1 - 0.55 * decay,
                   "grad_norm_embedding": 0.1 * decay, "grad_norm_query": 0.05 * decay + 1e-3}
    traj = Trajectory(embeddings=rng.normal(size=(S, p, 2)), snapshot_steps=steps,
                      steps=np.arange(int(steps[-1]) + 1) if curves else None, scalars=scalars,
                      snapshot_arrays=arrays,
                      meta={"model": model, "seed": 0, "layers": {
                          "probe_tokens": tokens.tolist(), "probe_labels": labels.tolist(), "probe_split": split,
                          "p": p, "grid": grid}})
    return load_layers(traj)


def _titled(fig: Figure) -> dict:
    return {ax.get_title(): ax for ax in fig.axes if ax.get_title()}


def _panel(fig: Figure, title: str):
    return _titled(fig)[title]


def test_full_run_has_every_panel_and_labels():
    layers = synthetic_layers()
    fig = draw_frame(layers, 20)
    assert isinstance(fig, Figure)
    titles = set(_titled(fig))
    assert set(PANEL_TITLES.values()) | set(CURVE_TITLES.values()) | {"Key"} == titles
    assert frame_panels(layers) == list(PANEL_TITLES)
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            assert ax.get_ylabel()
            continue
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
        for text in (ax.title, ax.xaxis.label, ax.yaxis.label):
            assert text.get_fontsize() >= 8
    assert "step 20" in fig._suptitle.get_text()
    # the cursor of every curve panel stands at the step
    for title in CURVE_TITLES.values():
        cursors = [ln for ln in _panel(fig, title).lines if ln.get_gid() == "cursor"]
        assert len(cursors) == 1 and list(cursors[0].get_xdata()) == [20, 20]


def test_constant_attention_run_has_its_few_panels():
    layers = synthetic_layers(p=17, T=2, B=40, states=CONSTANT, model="constant-attention")
    fig = draw_frame(layers, 0)
    titles = set(_titled(fig))
    assert titles == {PANEL_TITLES["token_embedding"], PAIR_SUM_TITLE, PANEL_TITLES["logits"], "Key",
                      *CURVE_TITLES.values()}
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()


def test_run_without_curves_draws_states_only():
    fig = draw_frame(synthetic_layers(states=("sequence", "logits"), curves=False), 10)
    assert set(_titled(fig)) == {PANEL_TITLES["sequence"], PANEL_TITLES["logits"], "Key"}


@pytest.mark.parametrize("p", [2, 3, 5])
def test_class_colours_are_shared_across_panels(p):
    layers = synthetic_layers(p=p, T=4, B=30)
    colors = class_colors(p)
    assert colors.shape == (p, 4) and len({tuple(c) for c in colors}) == p
    fig = draw_frame(layers, 10)
    train = layers.probe_split == "train"
    for name in ("sequence", "normed_sequence", "mlp", "residual", "logits"):
        ax = _panel(fig, PANEL_TITLES[name])
        filled = [c for c in ax.collections if c.get_gid() == "train-points"]
        hollow = [c for c in ax.collections if c.get_gid() == "val-points"]
        assert len(filled) == 1 and len(hollow) == 1, name
        np.testing.assert_allclose(filled[0].get_facecolors(), colors[layers.probe_labels[train]])
        np.testing.assert_allclose(hollow[0].get_edgecolors(), colors[layers.probe_labels[~train]])
        assert len(hollow[0].get_facecolors()) == 0 or np.all(hollow[0].get_facecolors()[:, 3] == 0)
    tokens = [c for c in _panel(fig, PANEL_TITLES["token_embedding"]).collections if c.get_gid() == "tokens"]
    np.testing.assert_allclose(tokens[0].get_facecolors(), colors)
    for name in ("inputs", "normed_inputs", "values"):
        marks = [c for c in _panel(fig, PANEL_TITLES[name]).collections if c.get_gid() == "positions"]
        assert len(marks) == 1, name
        # point i * T + t: token i (its class's colour) at position t (T = 4 here)
        np.testing.assert_allclose(marks[0].get_facecolors(), np.repeat(colors, 4, axis=0))
        np.testing.assert_allclose(marks[0].get_offsets(), layers.states[name][layers.index(10)].reshape(-1, 2))
    # the regions use the same colours, by class index
    for name in ("sequence", "residual"):
        im = [a for a in _panel(fig, PANEL_TITLES[name]).images if a.get_gid() == "regions"][0]
        np.testing.assert_allclose(im.cmap(im.norm(np.arange(p)))[:, :3], colors[:, :3])


def test_region_shading_is_drawn_at_the_stored_extent():
    layers = synthetic_layers()
    i = layers.index(30)
    fig = draw_frame(layers, 30)
    for plane in ("sequence", "residual"):
        ax = _panel(fig, PANEL_TITLES[plane])
        images = [a for a in ax.images if isinstance(a, AxesImage) and a.get_gid() == "regions"]
        assert len(images) == 1
        im = images[0]
        ext = layers.states[f"extent_{plane}"][i]
        np.testing.assert_allclose(im.get_extent(), ext)
        assert im.origin == "lower" and im.get_alpha() == REGION_ALPHA
        np.testing.assert_array_equal(np.asarray(im.get_array()), layers.states[f"regions_{plane}"][i])
        np.testing.assert_allclose(ax.get_xlim(), ext[:2])
        np.testing.assert_allclose(ax.get_ylim(), ext[2:])


def test_step_not_recorded_names_the_nearest_steps():
    layers = synthetic_layers()
    with pytest.raises(ValueError, match=r"step 14 was not recorded.*nearest recorded steps are 10, 20"):
        draw_frame(layers, 14)
    with pytest.raises(TypeError, match="layers must be"):
        draw_frame({"steps": [0]}, 0)
    with pytest.raises(TypeError, match="fig must be"):
        draw_frame(layers, 0, fig="figure")


def test_drawing_into_a_figure_clears_it():
    layers = synthetic_layers(states=("sequence", "logits", "token_embedding"))
    fig = Figure(figsize=(8, 5))
    fig.add_subplot().set_title("old")
    out = draw_frame(layers, 0, fig=fig)
    assert out is fig and "old" not in _titled(fig)
    n = len(fig.axes)
    draw_frame(layers, 30, fig=fig)
    assert len(fig.axes) == n


def test_class_colors_checks_p():
    with pytest.raises(ValueError, match="p must be an int >= 1"):
        class_colors(0)
    assert class_colors(25).shape == (25, 4)
