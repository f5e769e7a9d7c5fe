"""Energy and forces of the clustering-and-alignment model (compiled)."""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections import OrderedDict

import numba
import numpy as np

from .datasets import PairDataset
from .kernels import cells as _cells
from .kernels import forces as _forces
from .parallelograms import same_label_pairs
from .kernels import euler as _euler
from .kernels import gram as _gram
from .kernels.records import CellLaw, ExactLaw, GramLaw, Recording, Span, Threaded
from .pair_path import use_gram
from .kernels.bundle import BUILTIN_KERNELS
from .pair_energy import PairEnergy
from .params import ForceParams
from .threads import dynamic_schedule, kernel_choice, usable_threads
from .core.validation import MAX_ABS, check_array, check_magnitude

__all__ = ["energy", "forces", "energy_and_forces", "same_class_partners", "PARALLEL_MIN_PAIRS", "compile_for", "Engine",
           "check_inputs", "engine_for", "ENGINES_PER_SYSTEM",
           "KEPT_ENGINE_MAX_BYTES", "engine_bytes", "kept_engines"]

#: below this many training pairs the rows form one block and the serial
#: kernel is always used (thread start-up would dominate); measured in
#: benchmarks/
PARALLEL_MIN_PAIRS = _forces.MIN_BLOCKED_PAIRS


def check_embedding(x: np.ndarray, p: int, name: str = "x", allow_1d: bool = False) -> np.ndarray:
    """``x`` as a C-contiguous float64 (p, d) array, or a clear error naming
    ``name``: wrong shape, not real, or not finite. ``allow_1d`` reads a (p,)
    array as (p, 1)."""
    x = check_array(x, name, dtype="float", finite=False)
    if allow_1d and x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (p, d) = ({p}, d), got {x.shape}")
    if x.shape[0] != p:
        raise ValueError(f"{name} must have p = {p} rows (one per token), got {x.shape[0]}")
    if x.shape[1] < 1:
        raise ValueError(f"{name} must have dimension d >= 1, got {x.shape[1]}")
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.size and not max(float(x.max()), -float(x.min())) <= MAX_ABS:  # NaN, inf or too large: which, below
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains non-finite values (NaN or inf)")
        check_magnitude(x, name)
    return x




def check_law(params) -> ForceParams | PairEnergy:
    """``params`` if it is a force law the engine runs (a ForceParams, a
    PairEnergy: ``simulates`` in :mod:`particles.law_protocol`), else a TypeError."""
    if not getattr(params, "simulates", False) or isinstance(params, type):
        raise TypeError(f"params must be a ForceParams or a PairEnergy, got {type(params).__name__}")
    return params


def check_inputs(x: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, name: str = "x"
                  ) -> np.ndarray:
    if not isinstance(train, PairDataset):
        raise TypeError(f"train must be a PairDataset, got {type(train).__name__}")
    check_law(params)
    x = check_embedding(x, train.p, name)
    params.active_terms(x.shape[1])  # the law's own refusal of a dimension too low for its terms
    if len(train) == 0:
        raise ValueError("train holds no pairs")
    return x


def same_class_partners(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each pair u, the pairs v > u with the same label, in CSR form.

    Returns ``(ptr, idx)``: the partners of u are ``idx[ptr[u]:ptr[u+1]]``.
    """
    par = same_label_pairs(labels)
    n = len(labels)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(par[:, 0], minlength=n), out=ptr[1:])
    return ptr, np.ascontiguousarray(par[:, 1])


class _Kept:
    """What the kernels keep for one training set: its :func:`pair_system`
    and the engines :func:`engine_for` keeps (law, dimension, path and
    cut-off -> engine, least recently used first)."""

    __slots__ = ("system", "engines")

    def __init__(self, system: _forces.PairSystem):
        self.system = system
        self.engines: OrderedDict = OrderedDict()


#: training set -> its :class:`_Kept`, beside the frozen :class:`PairDataset`
#: rather than on it (a dataset hashes by identity): an entry goes with its
#: dataset, a copy or pickle of a dataset is another object and starts without
#: one, and nothing in an entry holds the dataset
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: guards the additions to ``_KEPT`` and every entry's engines
_ENGINES_LOCK = threading.Lock()


def _kept(train: PairDataset) -> _Kept:
    """``train``'s entry in ``_KEPT``, made on its first use."""
    kept = _KEPT.get(train)  # one dictionary read: no lock needed
    if kept is None:  # built outside the lock; the first entry kept serves every caller
        ptr, idx = same_class_partners(train.labels)
        made = _Kept(_forces.make_system(train.pairs, ptr, idx))
        with _ENGINES_LOCK:
            kept = _KEPT.setdefault(train, made)
    return kept


def pair_system(train: PairDataset) -> _forces.PairSystem:
    """The kernels' view of ``train`` (pairs, same-class partner lists, row
    blocks), built once per dataset object and kept beside it (a table
    keyed weakly by the dataset, not an attribute of it)."""
    return _kept(train).system


def check_repulsion_tol(repulsion_tol, d: int, params=None) -> float | None:
    """``repulsion_tol`` checked: None (exact sums) or a float in (0, 0.5],
    which needs d = 2 and the built-in law."""
    if repulsion_tol is None:
        return None
    if params is not None and not params.cell_lists:
        raise ValueError("repulsion_tol (the cell-list cut-off of the built-in repulsion) needs a ForceParams; "
                         "a PairEnergy runs the exact sums (repulsion_tol=None)")
    if isinstance(repulsion_tol, bool) or not isinstance(repulsion_tol, (int, float, np.floating)):
        raise TypeError(f"repulsion_tol must be None or a float in (0, 0.5], got {type(repulsion_tol).__name__}")
    tol = float(repulsion_tol)
    if not 0.0 < tol <= 0.5:
        raise ValueError(f"repulsion_tol must be in (0, 0.5] (a relative weight, e.g. 1e-16), got {repulsion_tol}")
    if d != 2:
        raise ValueError(f"repulsion_tol (the cell-list cut-off) works in d = 2, got d = {d}; use None for the "
                         "exact sums")
    return tol


#: kernel -> the argument fingerprints :func:`compile_for` has seen compiled for it
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


try:  # Numba's own type fingerprints (what its dispatcher keys compiled code on)
    from numba._dispatcher import compute_fingerprint as _compute_fingerprint
except ImportError:  # an older or newer Numba: every call is typed in full
    _compute_fingerprint = None


def _fingerprints(args: tuple):
    """The fingerprints of ``args`` and their top-level types (a record's
    fingerprint names its class but is not the class), or None where Numba
    has none for a value."""
    if _compute_fingerprint is None:
        return None
    try:
        return tuple(_compute_fingerprint(a) for a in args) + tuple(type(a) for a in args)
    except Exception:  # a value without a fingerprint (a Generator): type it in full
        return None


def compile_for(*calls) -> None:
    """Compile (or load from Numba's cache) each ``(kernel, args)`` for the
    types of its arguments, without running it.

    A run that lets :data:`particles.threads.kernel_choice` switch between
    the serial and the parallel kernel calls this first, so that the first
    call of the other kernel does not stall in the middle of the run while
    it compiles. Kernels that are not Numba dispatchers are skipped. A call
    seen before (by Numba's type fingerprints, a few microseconds) skips
    the full typing of a law record, which takes about 0.3 ms. (Two nested
    record classes of one name and fields share a fingerprint, as do a
    Python int below and one above 2**63; such a second call is then
    compiled on its first run instead: the same results, later.)"""
    for kernel, args in calls:
        key = _fingerprints(args)
        try:  # looked up first: a dispatcher's ``signatures`` hashes every compiled signature (tens of µs)
            seen = key is not None and key in _COMPILED.get(kernel, ())
        except TypeError:  # a kernel that cannot be a weak key: typed in full every time
            key, seen = None, False
        if seen or not (hasattr(kernel, "compile") and hasattr(kernel, "signatures")):
            continue
        signature = tuple(numba.typeof(a) for a in args)
        if signature not in kernel.signatures:
            kernel.compile(signature)
        if key is not None:
            _COMPILED.setdefault(kernel, set()).add(key)


class Engine:
    """The force law on one system for a run, and the one place that picks
    its compiled code: exact sums or the cell-list cut-off (chosen here,
    once) times the serial or the parallel kernel (chosen per call, see
    :data:`particles.threads.kernel_choice`).

    Attributes
    ----------
    law : ExactLaw or CellLaw
        The record every kernel of this engine takes.
    splittable : bool
        Whether the parallel kernel has work to split.
    key : tuple
        What the kernel chooser keeps timings for.
    lock : threading.Lock
        Held by the call running on the engine's workspace, when the engine
        is one a dataset keeps (:func:`engine_for`).
    """

    def __init__(self, d: int, system: _forces.PairSystem, params: ForceParams | PairEnergy,
                 repulsion_tol: float | None, path: str = "auto", p: int | None = None, x: np.ndarray | None = None,
                 gram: bool | None = None):
        prm = params.kernel_params()
        kernels = params.kernels()
        self.system = system
        n_blocks = len(system.block_ptr) - 1
        cells = None
        cell_lists = uses_cells(params, repulsion_tol)
        p = int(system.pairs.max()) + 1 if p is None else p  # the tokens (those in no pair too)
        if gram is None:  # else the caller's :func:`use_gram` for these arguments
            gram = use_gram(path, d, cell_lists=cell_lists, pairs=len(system.pairs), tokens=p, X=x)
        self.gram = gram
        self.lock = threading.Lock()  # held by the call that runs on the workspace (:func:`engine_for`)
        if self.gram and getattr(kernels, "gram_forces_serial", None) is None:  # a law whose kernels have none
            if path == "gram":
                raise ValueError("path='gram': this law's kernels have no Gram path (Kernels.gram_forces_serial is "
                                 "None); give path='direct' or 'auto'")
            self.gram = False
        if self.gram:
            ws = _gram.make_gram_workspace(p, system.pairs, n_blocks, numba.config.NUMBA_NUM_THREADS,
                                           polar=bool(prm.polar))
            self.splittable = n_blocks > 1
            self.law = GramLaw(system, prm, ws)
            self._forces = (kernels.gram_forces_serial, kernels.gram_forces_parallel)
            self._loops = (kernels.gram_euler_serial, kernels.gram_euler_parallel)
            self._laws = (self.law, Threaded(self.law) if kernels is BUILTIN_KERNELS else self.law)
            self.key = (len(system.pairs), d, "gram", id(kernels))
            return
        ws = _forces.make_workspace(d, system, numba.config.NUMBA_NUM_THREADS)
        self.splittable = n_blocks > 1 or _forces.splits_by_term(n_blocks, prm)
        if cell_lists:
            cells = _cells.make_cells(len(system.pairs), _cells.cutoff_radius(params.sig_r, repulsion_tol), n_blocks)
            self.splittable = n_blocks > 1  # the cell path splits by blocks only
            self.law = CellLaw(system, prm, prm._replace(k_a=0.0, k_r=0.0), ws, cells)
            self._forces = (_forces.forces_serial_cells, _forces.forces_parallel_cells)
        else:
            self.law = ExactLaw(system, prm, ws)
            self._forces = (kernels.forces_serial, kernels.forces_parallel)
        self._loops = (kernels.euler_serial, kernels.euler_parallel)
        # the built-in loop picks its kernel by the record's type; a custom law's loops have theirs built in
        self._laws = (self.law, Threaded(self.law) if kernels is BUILTIN_KERNELS else self.law)
        self.key = (len(system.pairs), d, cells is not None, id(kernels))

    def force_call(self, x: np.ndarray, force: np.ndarray, parallel: bool):
        """The force kernel (serial or parallel) and its arguments."""
        return self._forces[bool(parallel)], (x, self.law, force)

    def step_call(self, x: np.ndarray, sched: _euler.EulerSchedule, span: Span, rng: np.random.Generator,
                  rec: Recording, parallel: bool):
        """The Euler step loop (serial or parallel) and its arguments."""
        return self._loops[bool(parallel)], (x, self._laws[bool(parallel)], sched, span, rng, rec)

    def forces(self, x: np.ndarray, force: np.ndarray, parallel: bool) -> float:
        """U(x), with the forces into ``force``."""
        return _call(*self.force_call(x, force, parallel), parallel)

    def run_steps(self, x: np.ndarray, sched: _euler.EulerSchedule, span: Span, rng: np.random.Generator,
                  rec: Recording, parallel: bool) -> tuple[int, int, int]:
        """Euler steps of ``span`` in place on x: (status, step reached, next slot)."""
        return _call(*self.step_call(x, sched, span, rng, rec, parallel), parallel)


def uses_cells(params: ForceParams | PairEnergy, repulsion_tol: float | None) -> bool:
    """Whether the law runs the cell-list cut-off (a tolerance and a repulsion to cut)."""
    return repulsion_tol is not None and params.k_r > 0


#: the engines a training set keeps for repeated calls (its law, dimension, path and cut-off); at most this many
ENGINES_PER_SYSTEM = 4
#: an engine whose buffers take more bytes than this is not kept (the direct path's grow with d: 170 MB at p = 113,
#: d = 256); the Gram path's take O(p^2 + p n)
KEPT_ENGINE_MAX_BYTES = 16 * 2**20


def engine_bytes(engine: Engine) -> int:
    """The bytes of the arrays in ``engine``'s workspace (and cell lists)."""
    return sum(getattr(a, "nbytes", 0) for part in (engine.law.ws, getattr(engine.law, "cells", ()))
               for a in part)


def kept_engines(train: PairDataset) -> dict:
    """A copy of the engines kept for ``train`` (:func:`engine_for`'s key ->
    :class:`Engine`, least recently used first; empty before any call)."""
    kept = _KEPT.get(train)
    with _ENGINES_LOCK:
        return dict(kept.engines) if kept is not None else {}


def engine_for(x: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, repulsion_tol: float | None,
               path: str) -> Engine:
    """An :class:`Engine` for checked inputs, with its lock held: the one
    an earlier call on ``train`` with the same law, dimension, path,
    cut-off and path choice left (its workspace and record reused, some
    40 µs a call at p = 41), or a new one, kept for the next call (unless
    its buffers exceed :data:`KEPT_ENGINE_MAX_BYTES`). A call releases
    ``engine.lock`` when done; an engine that another thread holds is not
    shared (a new one serves this call). The engines are kept beside
    ``train`` (a table keyed weakly by it), not on it: a copy or pickle of
    ``train`` starts without them, and they go when ``train`` does."""
    kept = _kept(train)
    system, engines = kept.system, kept.engines
    d = x.shape[1]
    gram = use_gram(path, d, cell_lists=uses_cells(params, repulsion_tol), pairs=len(system.pairs),
                    tokens=x.shape[0], X=x)
    try:
        key = (params, d, repulsion_tol, path, gram)
        hash(key)
    except TypeError:  # a law that cannot be a key: a new engine each call
        key = None
    with _ENGINES_LOCK:
        engine = engines.get(key) if key is not None else None
        if engine is not None and engine.lock.acquire(blocking=False):
            engines.move_to_end(key)
            return engine
    engine = Engine(d, system, params, repulsion_tol, path, x.shape[0], x, gram=gram)
    engine.lock.acquire()
    if key is not None and engine_bytes(engine) <= KEPT_ENGINE_MAX_BYTES:
        with _ENGINES_LOCK:
            engines[key] = engine
            while len(engines) > ENGINES_PER_SYSTEM:
                engines.popitem(last=False)
    return engine


def _call(kernel, args: tuple, parallel: bool):
    """``kernel(*args)``, with blocks handed to threads one at a time when parallel."""
    if parallel:
        with dynamic_schedule():
            return kernel(*args)
    return kernel(*args)


def energy_and_forces(x: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, *,
                      parallel: bool | None = None, repulsion_tol: float | None = None,
                      path: str = "auto") -> tuple[float, np.ndarray]:
    """U(x) and the forces on every particle.

    Parameters
    ----------
    x : ndarray, shape (p, d)
        Particle positions (token embeddings).
    train : PairDataset
        Training pairs; pair sums interact by their labels.
    params : ForceParams or PairEnergy
        The built-in force law, or a custom one.
    parallel : bool, optional
        ``True``/``False`` forces the multi-threaded or the single-threaded
        kernel; by default the faster one as measured on this machine (see
        :mod:`particles.threads`). Both give bit-identical results.
    repulsion_tol : float in (0, 0.5], optional
        Cut the repulsion off where its weight exp(-r^2 / 2 sig_r^2) drops
        below this (r_cut = sig_r sqrt(2 ln(1 / tol)), 8.6 sig_r for 1e-16)
        and sum it over a cell list: near-linear cost for spread-out pair
        sums in d = 2, error bounded as in :mod:`particles.kernels.cells`.
        None (default): the exact sums.
    path : {"auto", "direct", "gram"}
        The direct pair loop, whose cost grows with d, or the Gram path
        (:mod:`particles.kernels.gram`), whose pair loop does not: the same
        forces to rounding. ``"auto"`` (default) takes the Gram path from
        d = :data:`particles.pair_path.GRAM_MIN_DIMENSION` on (and never
        with ``repulsion_tol``; ``"gram"`` with it is refused).

    Returns
    -------
    energy : float
    force : ndarray, shape (p, d)
        -grad U for the ``"gradient"`` alignment; the torque-driven alignment
        force for ``"polar"``.

    Notes
    -----
    ``train`` keeps the compiled kernels' buffers of its last
    :data:`ENGINES_PER_SYSTEM` laws, dimensions and paths
    (:func:`engine_for`), so that a repeated call does not build them again;
    calls from several threads at once each get their own buffers.
    """
    x = check_inputs(x, train, params)
    tol = check_repulsion_tol(repulsion_tol, x.shape[1], params)
    engine = engine_for(x, train, params, tol, path)
    try:
        return evaluate(x, engine, parallel)
    finally:
        engine.lock.release()


def evaluate(x: np.ndarray, engine: Engine, parallel: bool | None) -> tuple[float, np.ndarray]:
    """One force evaluation on checked inputs (the kernel chosen by
    :data:`particles.threads.kernel_choice` when ``parallel`` is None)."""
    force = np.empty_like(x)
    if parallel is None and engine.splittable and usable_threads() >= 2:  # the chooser may switch: compile both
        compile_for(*(engine.force_call(x, force, kind) for kind in (False, True)))
    use_parallel = kernel_choice.choose(engine.key, parallel, engine.splittable)
    start = time.perf_counter()
    try:
        u = engine.forces(x, force, use_parallel)
    except ZeroDivisionError:  # a custom law's complex-step derivative (numba's complex division raises)
        u, force[:] = math.nan, math.nan
    if parallel is None and engine.splittable:
        kernel_choice.report(engine.key, use_parallel, time.perf_counter() - start)
    return float(u), force


def energy(x: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, *, parallel: bool | None = None,
           repulsion_tol: float | None = None, path: str = "auto") -> float:
    """U(x) = U_clu + lam U_ali + (wd/2) sum_a |x_a|^2 (docs/particles.md, the energy); see
    :func:`energy_and_forces`."""
    return energy_and_forces(x, train, params, parallel=parallel, repulsion_tol=repulsion_tol, path=path)[0]


def forces(x: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, *, parallel: bool | None = None,
           repulsion_tol: float | None = None, path: str = "auto") -> np.ndarray:
    """Force on every particle, shape (p, d); see :func:`energy_and_forces`."""
    return energy_and_forces(x, train, params, parallel=parallel, repulsion_tol=repulsion_tol, path=path)[1]
