"""The clustering-head paper's remarks as sparse-modular options (issue 71, item 5): the initialisation's
scale, token embeddings started apart, a curriculum over the number of summed tokens; all off by default."""

import math
import os

import numpy as np
import pytest

from fitting.training import config_for

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")

from fitting.training import train  # noqa: E402
from fitting.training.models import make_task  # noqa: E402
from fitting.training.trainer import same_config_dict  # noqa: E402


def test_options_are_checked_before_any_work():
    with pytest.raises(ValueError, match="init_scale"):
        config_for("sparse-modular", init_scale=0.0)
    with pytest.raises(ValueError, match="init"):
        config_for("sparse-modular", init="uniform")
    with pytest.raises(ValueError, match="needs d >= 2"):
        config_for("sparse-modular", init="apart", d=1)
    with pytest.raises(ValueError, match=r"curriculum must be in \[0, steps=100\]"):
        config_for("sparse-modular", steps=100, curriculum=101)
    with pytest.raises(ValueError, match="curriculum"):
        config_for("sparse-modular", curriculum=-1)
    with pytest.raises(ValueError, match="curriculum needs k >= 2"):
        config_for("sparse-modular", k=1, steps=100, curriculum=50)


def test_apart_changes_only_the_token_embedding_and_spaces_it_evenly():
    for p, d in ((2, 2), (3, 2), (5, 4)):
        normal = make_task(config_for("sparse-modular", p=p, d=d), 7).model.state_dict()
        apart = make_task(config_for("sparse-modular", p=p, d=d, init="apart"), 7).model.state_dict()
        for name in normal:
            if name != "embedding":
                assert torch.equal(normal[name], apart[name]), name
        E = apart["embedding"].numpy()
        np.testing.assert_allclose(np.linalg.norm(E, axis=1), math.sqrt(d), rtol=1e-12)
        gaps = np.linalg.norm(E[:, None] - E[None], axis=2)[~np.eye(p, dtype=bool)]
        np.testing.assert_allclose(gaps.min(), 2 * math.sqrt(d) * math.sin(math.pi / p), rtol=1e-9)
        assert np.allclose(E.sum(axis=0), 0, atol=1e-12)  # evenly spaced around the centre


def test_init_scale_scales_the_token_and_position_embeddings_only():
    one = make_task(config_for("sparse-modular"), 3).model.state_dict()
    small = make_task(config_for("sparse-modular", init_scale=0.25), 3).model.state_dict()
    for name in one:
        factor = 0.25 if name in ("embedding", "position") else 1.0
        torch.testing.assert_close(small[name], one[name] * factor, rtol=0, atol=0)


def test_the_curriculum_sums_fewer_tokens_first_then_the_task():
    cfg = config_for("sparse-modular", k=5, steps=400, curriculum=200)
    task = make_task(cfg, 0)
    toks = task.train_tokens.numpy()
    for step, summed in ((0, 1), (49, 1), (50, 2), (120, 3), (150, 4), (199, 4), (200, 5), (399, 5)):
        np.testing.assert_array_equal(task.batch_labels(step).numpy(), toks[:, :summed].sum(axis=1) % cfg.p)
    # the recorded losses are on the task's labels; the run resumes on the curriculum's clock
    plain = train(cfg.replace(curriculum=0), 0)
    curr = train(cfg, 0)
    assert not np.array_equal(plain.scalars["batch_loss"], curr.scalars["batch_loss"])
    # the same parameters at step 0, measured on the task's labels by both
    assert plain.scalars["train_loss"][0] == curr.scalars["train_loss"][0]
    assert plain.scalars["batch_loss"][0] != curr.scalars["batch_loss"][0]  # one token summed, not five


def test_a_curriculum_run_resumes_to_the_bits_of_an_uninterrupted_one(tmp_path):
    cfg = config_for("sparse-modular", steps=300, curriculum=200)
    whole = train(cfg, 1)
    out = tmp_path / "run.npz"
    def stop(done, total):
        if done == 130:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, 1, out, checkpoint_every=50, callback=stop)
    resumed = train(cfg, 1, out, checkpoint_every=50, resume=True)
    np.testing.assert_array_equal(whole.embeddings, resumed.embeddings)
    np.testing.assert_array_equal(whole.scalars["batch_loss"], resumed.scalars["batch_loss"])


def test_a_file_from_before_the_options_counts_as_the_default_run():
    cfg = config_for("sparse-modular", steps=50)
    old = {k: v for k, v in cfg.to_dict().items() if k not in ("init_scale", "init", "curriculum")}
    assert same_config_dict(old, cfg)
    assert not same_config_dict(old, cfg.replace(init="apart"))
    assert not same_config_dict({**old, "lr": 1.0}, cfg)


def test_an_interruption_inside_a_step_resumes_to_the_same_bits(tmp_path, monkeypatch):
    """Ctrl-C while a step is under way (here in its validation pass, after the minibatch was drawn and the
    curriculum's clock moved) keeps the last periodic checkpoint, not one a step ahead of its count."""
    from fitting.training.models import SparseModularTask

    cfg = config_for("sparse-modular", steps=200, curriculum=120)
    whole = train(cfg, 2)
    out = tmp_path / "run.npz"
    calls = {"n": 0}
    evaluate = SparseModularTask.evaluate

    def interrupted(self):
        calls["n"] += 1
        if calls["n"] == 131:
            raise KeyboardInterrupt
        return evaluate(self)

    monkeypatch.setattr(SparseModularTask, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, 2, out, checkpoint_every=50)
    monkeypatch.setattr(SparseModularTask, "evaluate", evaluate)
    resumed = train(cfg, 2, out, checkpoint_every=50, resume=True)
    np.testing.assert_array_equal(whole.embeddings, resumed.embeddings)
    np.testing.assert_array_equal(whole.scalars["batch_loss"], resumed.scalars["batch_loss"])


def test_a_checkpoint_from_before_the_options_resumes(tmp_path):
    from fitting.training.trainer import checkpoint_path

    cfg = config_for("sparse-modular", steps=150)
    whole = train(cfg, 4)
    out = tmp_path / "run.npz"

    def stop(done, total):
        if done == 60:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, 4, out, checkpoint_every=50, callback=stop)
    ckpt = checkpoint_path(out)
    state = torch.load(ckpt, weights_only=False)
    for name in ("init_scale", "init", "curriculum"):  # written before these fields existed
        del state["identity"]["config"][name]
    del state["task"]["extra"]["steps_done"]
    torch.save(state, ckpt)
    resumed = train(cfg, 4, out, checkpoint_every=50, resume=True)
    np.testing.assert_array_equal(whole.embeddings, resumed.embeddings)
    with pytest.raises(ValueError, match="belongs to another run"):  # another option is another run
        torch.save(state, ckpt)
        train(cfg.replace(init="apart"), 4, out, checkpoint_every=50, resume=True)
