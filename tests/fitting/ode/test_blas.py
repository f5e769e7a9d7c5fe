"""BLAS threads sized to the fit (fitting.ode.blas)."""

from __future__ import annotations

from fitting import ODEModel

from .helpers import CASES, data


def test_a_fit_runs_its_blas_on_one_thread(monkeypatch):
    from threadpoolctl import threadpool_info

    from fitting.ode import blas
    from fitting.ode.library import PolynomialLibrary as Lib

    seen = []

    class Watching(Lib):
        def _transform(self, X):
            seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
            return super()._transform(X)

        def product_plan(self, K):  # the same columns as products: the fit's verdict simulates without _transform
            return Lib(self.degree).product_plan(K)  # (threadpool_info at each of its thousands of steps: 99 s)

    coef, degree, x0s, t = CASES["driven"]
    runs = data(coef, degree, x0s, t, 0.01, 1)
    outside = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    ODEModel(library=Watching(1)).fit(runs, t)
    assert seen and set(seen) == {1}
    seen.clear()
    monkeypatch.setattr(blas, "ONE_THREAD_SIZE", 0)  # every fit counts as large: the library's own setting
    ODEModel(library=Watching(1)).fit(runs, t)
    assert set(seen) == {outside}


def test_overlapping_fits_share_the_blas_limit_and_restore_it():
    """Two fits in two threads overlap: the setting is 1 while either runs and the
    library's own after both (threadpoolctl alone restored the first's 1)."""
    from threadpoolctl import threadpool_info

    from fitting.ode.blas import blas_threads_for

    def threads():
        return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

    before = threads()
    a, b = blas_threads_for(10), blas_threads_for(10)
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    assert threads() == 1  # b still runs
    b.__exit__(None, None, None)
    assert threads() == before
    with blas_threads_for(10**12):  # a large fit keeps the library's setting
        assert threads() == before
