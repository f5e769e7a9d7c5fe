"""The snapshot schedule (fitting.training.schedule): every N steps, or the
geometric schedule that keeps the formation step by step. Plain Python; the
trainers' and the recorder's use of it are in test_trainer / test_recorder."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from fitting.training.configs import ConstantAttentionConfig, ToyConfig
from fitting.training.schedule import GEOMETRIC_DENSE, check_snapshot_every, geometric_spacing, snapshot_due


def test_geometric_schedule_is_dense_early_and_ninety_a_decade():
    kept = [t for t in range(100_001) if snapshot_due(t, "geometric")]
    assert kept[:GEOMETRIC_DENSE] == list(range(GEOMETRIC_DENSE))
    for low in (100, 1000, 10_000):
        decade = [t for t in kept if low <= t < 10 * low]
        assert len(decade) == 90 and np.all(np.diff(decade) == low // 10)
    assert len(kept) == 100 + 3 * 90 + 1


@given(t=st.integers(0, 10**9))
def test_geometric_spacing_grows_in_proportion_to_the_step(t):
    h = geometric_spacing(t)
    assert h == 1 if t < GEOMETRIC_DENSE else t / 100 < h <= t / 10
    assert snapshot_due(t, "geometric") == (t % h == 0)


@given(every=st.integers(1, 50), t=st.integers(0, 10**6))
def test_every_n_steps(every, t):
    assert snapshot_due(t, every) == (t % every == 0)


def test_configs_take_the_schedule_and_refuse_others():
    assert ToyConfig(snapshot_every="geometric").to_dict()["snapshot_every"] == "geometric"
    for bad, kind in (("log", ValueError), (0, ValueError), (2.5, TypeError), (None, TypeError)):
        with pytest.raises(kind, match="snapshot_every must be an int >= 1"):
            ConstantAttentionConfig(snapshot_every=bad)
    assert check_snapshot_every(7) == 7


def test_auto_is_geometric_with_gradients_and_the_models_spacing_without():
    from fitting.training.schedule import resolve_schedule

    config = ConstantAttentionConfig()
    assert config.snapshot_every == "auto"
    assert resolve_schedule(config.snapshot_every, config.spacing, True) == "geometric"
    assert resolve_schedule(config.snapshot_every, config.spacing, False) == 50
    assert resolve_schedule(7, config.spacing, True) == 7  # a spacing given is kept
    with pytest.raises(ValueError, match="'geometric'"):
        check_snapshot_every("auto")  # the recorder's own schedule has no "auto"
