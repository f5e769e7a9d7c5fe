"""Interop (optional pandas/xarray): Trajectory.to_xarray, SweepTable.to_pandas."""
import json
import os

import numpy as np
import pytest

from particles import Trajectory, preset, sweep

if os.environ.get("EMBDYN_REQUIRE_INTEROP"):  # the CI step that installed the extra: never skip
    import pandas as pd
    import xarray as xr
else:
    pd = pytest.importorskip("pandas", reason="needs the [interop] extra")
    xr = pytest.importorskip("xarray", reason="needs the [interop] extra")


def test_trajectory_to_xarray():
    rng = np.random.default_rng(0)
    traj = Trajectory(rng.standard_normal((3, 5, 2)), [0, 10, 20], steps=np.arange(21),
                      signals=rng.standard_normal((21, 4)), scalars={"energy": rng.standard_normal(21)},
                      snapshot_arrays={"extra": rng.standard_normal((3, 7))}, meta={"source": "test", "p": 5})
    ds = traj.to_xarray()
    assert isinstance(ds, xr.Dataset)
    assert ds["embeddings"].dims == ("snapshot_step", "token", "dim")
    np.testing.assert_array_equal(ds["embeddings"].sel(snapshot_step=10).values, traj.embeddings[1])
    np.testing.assert_array_equal(ds["signals"].sel(frequency=2).values, traj.signals[:, 1])
    np.testing.assert_array_equal(ds["energy"].values, traj.scalars["energy"])
    assert ds["extra"].shape == (3, 7)
    assert json.loads(ds.attrs["meta"]) == traj.meta
    plain = Trajectory(rng.standard_normal((2, 3, 1)), [0, 5]).to_xarray()
    assert "step" not in plain.coords  # no per-step series: only snapshot steps


def test_sweep_table_to_pandas():
    table = sweep({"lam": [0.0, 0.5]}, 2, base=preset("grids").replace(steps=40), n_jobs=1)
    df = table.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == table.columns and len(df) == 4
    assert df["seed"].tolist() == [0, 1, 0, 1]


def test_to_xarray_of_a_run_with_one_gradient_fewer_and_a_training_set():
    import particles as P

    rng = np.random.default_rng(1)
    train = P.modular_addition(5)
    traj = Trajectory(rng.standard_normal((3, 5, 2)), [0, 10, 20], gradients=rng.standard_normal((2, 5, 2)),
                      updates=rng.standard_normal((2, 5, 2))).with_train(train)
    ds = traj.to_xarray()
    assert ds["gradients"].dims == ("gradient_step", "token", "dim")
    assert ds["gradient_step"].values.tolist() == [0, 10]
    np.testing.assert_array_equal(ds["train_pairs"].values, train.pairs)
    np.testing.assert_array_equal(ds["train_labels"].values, train.labels)
