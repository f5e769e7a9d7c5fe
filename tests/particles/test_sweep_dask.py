"""A sweep on a Dask cluster (the optional [cluster] extra): joblib's dask
backend runs the sweep on a LocalCluster with 2 workers, the way a real
cluster is used, and gets the same table as one local process."""
import os

import joblib
import numpy as np
import pytest

from particles import preset, sweep

if os.environ.get("EMBDYN_REQUIRE_DASK"):  # the CI step that installed the extra: never skip
    import dask.distributed as dd
else:
    dd = pytest.importorskip("dask.distributed", reason="needs the [cluster] extra")


def test_sweep_on_a_local_dask_cluster_equals_one_process():
    base = preset("grids").replace(steps=60)
    grid = {"lam": [0.0, 0.5], "wd": [1.0, 4.0]}
    local = sweep(grid, 2, base=base, n_jobs=1)
    with dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            dd.Client(cluster):
        with joblib.parallel_config(backend="dask"):
            remote = sweep(grid, 2, base=base)
    assert remote.parameters == local.parameters
    for a, b in zip(remote.rows, local.rows):
        assert a.keys() == b.keys()
        for k in a:
            assert (a[k] == b[k]) or (isinstance(a[k], float) and np.isnan(a[k]) and np.isnan(b[k])), k
