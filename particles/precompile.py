"""Pay the compilation cost of the kernels up front."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["warmup"]


#: what :func:`warmup` can compile
WARMUP_PARTS = ("simulate", "minimize", "effective", "terms")


def warmup(parallel: bool | None = None, parts: tuple[str, ...] = ("simulate",), d: int = 2,
           pairs: int | None = None, law=None) -> float:
    """Compile (or load from Numba's on-disk cache) the particle kernels a
    run will call, for float64 inputs, by running each once on a tiny
    problem; what it does not compile compiles on first use (and is cached
    on disk then).

    Parameters
    ----------
    parallel : bool, optional
        ``False``: the serial kernels only; ``True``: the parallel ones only;
        ``None`` (default): the serial kernels, and the parallel ones when
        the run will call them: ``pairs`` >= ``PARALLEL_MIN_PAIRS`` training
        pairs on a machine with 2 or more threads (smaller systems, such as
        every N = 17 preset, and the minimiser run serially). Measured
        cold-start costs are in docs/particles.md; later calls, also in new
        processes, load the kernels from the cache in well under a second.
    parts : tuple of str
        Which serial integrators: ``"simulate"`` (Euler/Langevin, the
        default), ``"minimize"``, ``"effective"`` (the effective-loss flow),
        ``"terms"`` (the force law split into its terms, for the force-law
        fit); :data:`WARMUP_PARTS` is all of them. Each costs seconds the
        first time.
    d : int >= 1
        The dimension the runs will have: from
        :data:`particles.pair_path.GRAM_MIN_DIMENSION` on, the Gram path's
        kernels (what ``path="auto"`` calls there) instead of the direct
        ones (default 2, the direct kernels).
    pairs : int >= 1, optional
        The run's training pairs (decides the parallel kernels with
        ``parallel=None``).
    law : ForceParams or PairEnergy, optional
        The run's law (default the built-in ``ForceParams(lam=1)``); a
        PairEnergy's kernels are compiled once per process.

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
    from .energy import PARALLEL_MIN_PAIRS, check_law
    from .threads import usable_threads

    d = check_int(d, "d", 1)
    pairs = check_int(pairs, "pairs", 1, allow_none=True)
    params = ForceParams(lam=1.0) if law is None else check_law(law)
    if parallel is None:
        run_parallel = pairs is not None and pairs >= PARALLEL_MIN_PAIRS and usable_threads() >= 2
    else:
        run_parallel = bool(parallel)
    start = time.perf_counter()
    if parallel is not True:
        train = modular_addition(5)
        x0 = np.random.default_rng(0).standard_normal((5, max(d, 2)))
        if "simulate" in parts:
            _quietly(simulate, x0, train, params, steps=2, dt=1e-3, temperature=1e-3, seed=0, parallel=False)
        if "minimize" in parts and getattr(params, "alignment", "gradient") == "gradient":  # gradient forces only
            _quietly(minimize, x0, train, params, max_steps=2)
        if "effective" in parts:
            simulate_effective(x0, addition(5), steps=2, dt=1e-3, project=True)
        if "terms" in parts:
            from .law_terms import unit_term_forces

            unit_term_forces(params, x0[None], train)
    if run_parallel:
        train = modular_addition(23)  # 276 pairs: a blocked system, so the parallel kernel runs
        x0 = np.random.default_rng(0).standard_normal((23, max(d, 2)))
        _quietly(simulate, x0, train, params, steps=2, dt=1e-3, temperature=1e-3, seed=0, parallel=True)
    return time.perf_counter() - start


def _quietly(run, *args, **kwargs) -> None:
    """``run(*args, **kwargs)`` for its compilation: a given law that blows
    up on the tiny random problem has compiled all the same."""
    from .simulate import NonFiniteStateError

    try:
        run(*args, **kwargs)
    except NonFiniteStateError:
        pass
