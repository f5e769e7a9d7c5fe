"""Pay the compilation cost of the kernels up front."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["warmup"]


def warmup(parallel: bool | None = None) -> float:
    """Compile (or load from the on-disk cache) the kernels for float64
    inputs by running each once on a tiny problem.

    Parameters
    ----------
    parallel : bool, optional
        ``False``: only the serial kernels (about 10 s the first time);
        ``True``: only the parallel ones (about 20 s); ``None``: all. Later
        calls, also in new processes, load them from Numba's cache in well
        under a second.

    Returns
    -------
    float
        Seconds taken.
    """
    from .datasets import modular_addition
    from .params import ForceParams
    from .simulate import minimize, simulate

    start = time.perf_counter()
    train = modular_addition(5)
    x0 = np.random.default_rng(0).standard_normal((5, 2))
    params = ForceParams(lam=1.0)
    for kind in ((False, True) if parallel is None else (parallel,)):
        simulate(x0, train, params, steps=2, dt=1e-3, temperature=1e-3, seed=0, parallel=kind)
    if not parallel:
        minimize(x0, train, params, max_steps=2)
        from .datasets import addition
        from .effective import simulate_effective

        simulate_effective(x0, addition(5), steps=2, dt=1e-3, project=True)
    return time.perf_counter() - start
