"""Every layer's state (fitting.training.layers, issue 71): the recorded panels against a NumPy recomputation
from the saved weights, the decision regions against the model's own classification of the grid, a user's
own model through hooks, shapes that do not match, the budget, the file round trip and older files."""

import math
import os

import numpy as np
import pytest

from fitting.training import config_for
from particles import Trajectory

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from fitting.sandbox import NoLayersError, load_layers  # noqa: E402
from fitting.training import train  # noqa: E402
from fitting.training.layers import LAYER_BUDGET, LayerRecorder, check_layer_budget  # noqa: E402
from fitting.training.models import make_task  # noqa: E402


def _trained_task(model, steps, seed=0, **changes):
    task = make_task(config_for(model, steps=steps, **changes), seed)
    task.record_layers()
    for _ in range(steps):
        task.step()
        task.apply_update()
    return task


def _saved_weights(task, tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(task.model.state_dict(), path)
    return {k: v.numpy().astype(np.float64) for k, v in torch.load(path, weights_only=True).items()}


def grid_points(extent, n):
    """The documented grid (fitting.training.layers): row r is y = y0 + r (y1 - y0) / (n - 1), column c is
    x = x0 + c (x1 - x0) / (n - 1); points row by row."""
    x0, x1, y0, y1 = extent
    return np.array([(x0 + c * (x1 - x0) / (n - 1), y0 + r * (y1 - y0) / (n - 1)) for r in range(n) for c in range(n)])


def _rms(x):
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + 1e-8)


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _sparse_forward(w, tokens):
    """The sparse-modular transformer in NumPy: every intermediate state of ``tokens`` (B, T)."""
    E, P, q = w["embedding"], w["position"], w["query"]
    x = E[tokens] + P
    h = _rms(x)
    z = h @ q / math.sqrt(2)
    a = np.exp(z - z.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    v = h @ w["value.weight"].T + w["value.bias"]
    s = np.einsum("bt,btd->bd", a, v)
    head = _sparse_head(w)
    n = _rms(s)
    m = _gelu(n @ w["mlp_in.weight"].T + w["mlp_in.bias"]) @ w["mlp_out.weight"].T + w["mlp_out.bias"]
    r = s + m
    return {"inputs": x, "normed_inputs": h, "attention": a, "values": v, "sequence": s, "normed_sequence": n,
            "mlp": m, "residual": r, "logits": r @ E.T, "head": head}


def _sparse_head(w):
    def head(s):
        n = _rms(s)
        m = _gelu(n @ w["mlp_in.weight"].T + w["mlp_in.bias"]) @ w["mlp_out.weight"].T + w["mlp_out.bias"]
        return (s + m) @ w["embedding"].T
    return head


def _per_token(states, tokens, p):
    """A (B, T, d) state as the recorder keeps it: (p, T, d), token i at position t from its first sequence."""
    B, T = tokens.shape
    out = np.full((p, T, states.shape[-1]), np.nan)
    for t in range(T):
        for i in range(p):
            hits = np.flatnonzero(tokens[:, t] == i)
            if hits.size:
                out[i, t] = states[hits[0], t]
    return out


def _same_classes(recorded, logits):
    """The recorded region classes equal the arg max of ``logits`` (n, p) wherever the top two differ by more
    than rounding (a grid point on a boundary may go either way)."""
    top2 = np.sort(logits, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 1e-9
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(recorded.ravel()[clear], logits.argmax(axis=1)[clear])


def test_sparse_modular_panels_match_a_recomputation_from_the_saved_weights(tmp_path):
    task = _trained_task("sparse-modular", 60, seed=4)
    got = task.layers.read()
    w = _saved_weights(task, tmp_path)
    tokens = task.layers.tokens
    ref = _sparse_forward(w, tokens)
    for name in ("attention", "sequence", "normed_sequence", "mlp", "residual", "logits"):
        np.testing.assert_allclose(got["layer_" + name], ref[name], rtol=0, atol=1e-6, err_msg=name)
    for name in ("inputs", "normed_inputs", "values"):
        np.testing.assert_allclose(got["layer_" + name], _per_token(ref[name], tokens, 2), atol=1e-6, err_msg=name)
    np.testing.assert_allclose(got["layer_token_embedding"], w["embedding"], atol=1e-12)
    np.testing.assert_allclose(got["layer_position"], w["position"], atol=1e-12)
    np.testing.assert_allclose(got["layer_query"], w["query"], atol=1e-12)
    np.testing.assert_allclose(got["layer_value_map"],
                               np.hstack([w["value.weight"], w["value.bias"][:, None]]), atol=1e-12)
    # the regions: the class the rest of the network gives each grid point of the sequence plane, and the
    # output's class of each grid point of the residual plane
    G = task.layers.grid
    pts = grid_points(got["layer_extent_sequence"], G)
    _same_classes(got["layer_regions_sequence"], ref["head"](pts))
    pts = grid_points(got["layer_extent_residual"], G)
    _same_classes(got["layer_regions_residual"], pts @ w["embedding"].T)
    # the grid covers the recorded points and the origin
    for plane in ("sequence", "residual"):
        x0, x1, y0, y1 = got[f"layer_extent_{plane}"]
        pts = got[f"layer_{plane}"]
        assert x0 <= min(pts[:, 0].min(), 0) and x1 >= max(pts[:, 0].max(), 0)
        assert y0 <= min(pts[:, 1].min(), 0) and y1 >= max(pts[:, 1].max(), 0)


def test_constant_attention_panels_match_a_recomputation(tmp_path):
    task = _trained_task("constant-attention", 40, seed=1)
    got = task.layers.read()
    w = _saved_weights(task, tmp_path)
    pairs = task.layers.tokens
    s = w["embedding"][pairs[:, 0]] + w["embedding"][pairs[:, 1]]

    def head(x):
        return np.maximum(x @ w["hidden.weight"].T + w["hidden.bias"], 0) @ w["output.weight"].T + w["output.bias"]

    np.testing.assert_allclose(got["layer_sequence"], s, atol=1e-6)
    np.testing.assert_allclose(got["layer_logits"], head(s), atol=1e-6)
    _same_classes(got["layer_regions_sequence"], head(grid_points(got["layer_extent_sequence"], task.layers.grid)))
    assert set(task.layers.split) == {"train", "val"}


class _PlainBlock(nn.Module):
    """A user's own one-block model of the sandbox's shape, with its own module names."""

    def __init__(self, p=3, T=6):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.tok = nn.Embedding(p, 2)
        self.pos = nn.Parameter(torch.randn(T, 2, generator=g))
        self.q = nn.Parameter(torch.randn(2, generator=g))
        self.v = nn.Linear(2, 2)
        self.ff = nn.Sequential(nn.Linear(2, 16), nn.GELU(), nn.Linear(16, 2))
        self.seq_out = nn.Identity()
        self.out = nn.Identity()

    def forward(self, tokens):
        h = self.tok(tokens) + self.pos
        h = h / h.norm(dim=-1, keepdim=True)
        a = torch.softmax(h @ self.q, dim=-1)
        s = self.seq_out(torch.einsum("bt,btd->bd", a, self.v(h)))
        return self.out((s + self.ff(s)) @ self.tok.weight.T)


def _plain_recorder(model, **kw):
    g = np.random.default_rng(0)
    tokens = g.integers(0, 3, size=(40, 6))
    return LayerRecorder(model, tokens, tokens[:, :2].sum(1) % 3, p=3,
                         taps={"sequence": model.seq_out, "logits": model.out, "values": model.v, "mlp": model.ff},
                         parameters={"token_embedding": lambda: model.tok.weight, "position": lambda: model.pos},
                         regions={"sequence": lambda x: (x + model.ff(x)) @ model.tok.weight.T}, **kw)


def test_a_users_own_model_through_hooks_round_trips_a_file(tmp_path):
    model = _PlainBlock()
    rec = _plain_recorder(model, split=["train"] * 30 + ["val"] * 10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens = torch.as_tensor(rec.tokens)
    labels = torch.as_tensor(rec.labels)
    for step in range(30):
        loss = nn.functional.cross_entropy(model(tokens), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.log(step, train_loss=float(loss.detach()))
        if step % 10 == 0:
            rec.record(step)
    with torch.no_grad():
        logits_now = model(tokens).numpy()
    rec.record(30)
    path = rec.trajectory().save(tmp_path / "mine.npz")
    layers = load_layers(path)
    assert list(layers.steps) == [0, 10, 20, 30]
    np.testing.assert_allclose(layers.at(30)["logits"], logits_now, atol=1e-6)
    assert layers.states["values"].shape == (4, 3, 6, 2)  # kept once per (token, position)
    assert layers.states["token_embedding"].shape == (4, 3, 2)
    assert list(layers.probe_split).count("val") == 10
    steps, values = layers.curve("train_loss")
    assert len(steps) == 30 and values[-1] < values[0]
    with pytest.raises(ValueError, match="nearest recorded steps are 10, 20"):
        layers.index(15)


def test_hooks_whose_shapes_do_not_match_name_the_module_and_the_shape():
    model = _PlainBlock()
    g = np.random.default_rng(0)
    tokens = g.integers(0, 3, size=(8, 6))
    # the value map's output (B, T, d) named as the sequence embedding (B, d)
    rec = LayerRecorder(model, tokens, tokens[:, 0], p=3, taps={"sequence": model.v, "logits": model.out})
    with pytest.raises(ValueError, match=r"sequence: module v gives shape \(8, 6, 2\), expected \(8, 2\)"):
        rec.check()
    with pytest.raises(ValueError, match="taps must name the module whose output is 'logits'"):
        LayerRecorder(model, tokens, tokens[:, 0], p=3, taps={"sequence": model.seq_out})
    with pytest.raises(ValueError, match="taps names 'hidden'; the taps are inputs"):
        LayerRecorder(model, tokens, tokens[:, 0], p=3, taps={"sequence": model.seq_out, "logits": model.out,
                                                              "hidden": model.ff})
    with pytest.raises(TypeError, match=r"taps\['logits'\] must be a torch.nn.Module"):
        LayerRecorder(model, tokens, tokens[:, 0], p=3, taps={"sequence": model.seq_out, "logits": lambda x: x})
    with pytest.raises(ValueError, match=r"tokens must be in 0..1"):
        LayerRecorder(model, tokens, tokens[:, 0] % 2, p=2, taps={"sequence": model.seq_out, "logits": model.out})
    twice = nn.Identity()
    model.seq_out = twice
    model.out = twice  # one module used for two states: refused, its hook would see the last call only
    with pytest.raises(ValueError, match=r"taps\['sequence'\] \(module seq_out\) runs 2 times in one forward pass"):
        LayerRecorder(model, tokens, tokens[:, 0], p=3, taps={"sequence": model.seq_out, "logits": model.out}).check()
    model = _PlainBlock()
    bad = LayerRecorder(model, tokens, tokens[:, 0], p=3, taps={"sequence": model.seq_out, "logits": model.out},
                        regions={"sequence": lambda x: x})
    with pytest.raises(ValueError, match=r"regions\['sequence'\] must map points \(n, 2\) of the plane to logits "
                                         r"\(n, 3\), got \(2304, 2\)"):
        bad.check()


def test_the_budget_refuses_before_any_step(tmp_path):
    with pytest.raises(ValueError, match="over the layer-state budget of 256 MiB"):
        check_layer_budget(10_000, 80_000, "a run", "use fewer steps")
    check_layer_budget(100, 80_000, "a run", "use fewer steps")
    assert LAYER_BUDGET == 256 * 2 ** 20
    out = tmp_path / "sub" / "run.npz"
    with pytest.raises(ValueError, match="snapshot_every=10.*sparser snapshot_every"):
        train(config_for("sparse-modular", steps=100_000, snapshot_every=10), 0, out, layers=True)
    assert not out.parent.exists()
    with pytest.raises(ValueError, match="not for toy"):
        train(config_for("toy", steps=5), 0, layers=True)
    with pytest.raises(ValueError, match="need d = 2"):
        train(config_for("sparse-modular", steps=5, d=3), 0, layers=True)


def test_a_run_with_layers_trains_the_same_bits_and_its_file_round_trips(tmp_path):
    config = config_for("sparse-modular", steps=120)
    plain = train(config, 2)
    out = tmp_path / "run.npz"
    with_layers = train(config, 2, out, layers=True)
    for name in plain.scalars:
        np.testing.assert_array_equal(plain.scalars[name], with_layers.scalars[name])
    np.testing.assert_array_equal(plain.embeddings, with_layers.embeddings)
    layers = load_layers(out)
    np.testing.assert_array_equal(layers.steps, plain.snapshot_steps)
    assert layers.states["attention"].shape == (len(layers.steps), 256, 12)
    assert list(layers.probe_split).count("train") == 128
    assert sorted(set(layers.probe_labels.tolist())) == [0, 1]
    np.testing.assert_allclose(layers.states["token_embedding"], plain.embeddings)
    assert "grad_norm_value" in layers.curves and "val_acc" in layers.curves
    # an older file, or a run without layer states, loads and says how to record them
    with pytest.raises(NoLayersError, match="--layers"):
        load_layers(plain)
    old = tmp_path / "old.npz"
    Trajectory(plain.embeddings, plain.snapshot_steps).save(old)
    with pytest.raises(NoLayersError, match="has no layer states"):
        load_layers(old)


def test_the_documented_plain_torch_example_records_a_run_the_sandbox_reads(tmp_path, monkeypatch):
    """docs/examples/sandbox_own_model.py (docs/sandbox.md, your own model), run short."""
    import runpy
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[3] / "docs" / "examples" / "sandbox_own_model.py"
    out = tmp_path / "mine.npz"
    monkeypatch.setattr(sys, "argv", [str(example), "--steps", "100", "--out", str(out)])
    runpy.run_path(str(example), run_name="__main__")
    layers = load_layers(out)
    assert list(layers.steps) == [0, 50, 100]
    assert {"sequence", "normed_sequence", "mlp", "residual", "attention", "values", "normed_inputs", "logits",
            "regions_sequence", "regions_residual", "token_embedding", "position", "query"} <= set(layers.states)
    assert len(layers.curve("train_loss")[0]) == 101
