"""Pay the compilation cost of the kernels up front."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["warmup"]


#: what :func:`warmup` can compile
WARMUP_PARTS = ("simulate", "minimize", "effective", "terms")


def warmup(parallel: bool | None = None, parts: tuple[str, ...] = WARMUP_PARTS, d: int = 2) -> float:
    """Compile (or load from Numba's on-disk cache) every particle kernel
    for float64 inputs by running each once on a tiny problem.

    Parameters
    ----------
    parallel : bool, optional
        ``False``: the serial kernels (what systems below
        ``PARALLEL_MIN_PAIRS`` training pairs, such as every N = 17 preset,
        and the minimiser use); ``True``: only the parallel ones; ``None``:
        all. Measured cold-start costs are in docs/particles.md; later calls,
        also in new processes, load the kernels from the cache in well under
        a second.
    parts : tuple of str
        Which serial integrators: ``"simulate"`` (Euler/Langevin),
        ``"minimize"``, ``"effective"`` (the effective-loss flow),
        ``"terms"`` (the force law split into its terms, for the force-law
        fit); default all. Compile only what you use: each costs seconds the first time.

    Returns
    -------
    float
        Seconds taken.
    """
    from .datasets import addition, modular_addition
    from .effective import simulate_effective
    from .params import ForceParams
    from .simulate import minimize, simulate

    if parallel is not None and not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be True, False or None, got {type(parallel).__name__}")
    if isinstance(parts, str) or not isinstance(parts, (tuple, list)):
        raise TypeError(f"parts must be a tuple of names from {WARMUP_PARTS}, got {type(parts).__name__}")
    unknown = {p for p in parts if p not in WARMUP_PARTS}
    if unknown:
        raise ValueError(f"parts must be a tuple of names from {WARMUP_PARTS}, got {parts!r}")
    from .core.validation import check_int

    d = check_int(d, "d", 1)
    start = time.perf_counter()
    params = ForceParams(lam=1.0)
    if parallel is not True:
        train = modular_addition(5)
        x0 = np.random.default_rng(0).standard_normal((5, max(d, 2)))
        if "simulate" in parts:
            simulate(x0, train, params, steps=2, dt=1e-3, temperature=1e-3, seed=0, parallel=False)
        if "minimize" in parts:
            minimize(x0, train, params, max_steps=2)
        if "effective" in parts:
            simulate_effective(x0, addition(5), steps=2, dt=1e-3, project=True)
        if "terms" in parts:
            from .law_terms import unit_term_forces

            unit_term_forces(params, x0[None], train)
    if parallel is not False:
        train = modular_addition(23)  # 276 pairs: a blocked system, so the parallel kernel runs
        x0 = np.random.default_rng(0).standard_normal((23, max(d, 2)))
        simulate(x0, train, params, steps=2, dt=1e-3, temperature=1e-3, seed=0, parallel=True)
    return time.perf_counter() - start
