"""Integrators: overdamped (Langevin) Euler flow and an energy minimiser.

The whole step loop runs in compiled code. With a ``callback`` the run is cut
into chunks (about 100) so progress can be reported between them; the result
is identical either way.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from .datasets import PairDataset, make_rng
from .energy import check_inputs, Engine, check_repulsion_tol, compile_for, evaluate, pair_system
from .kernels import euler, status
from .kernels.forces import make_workspace
from .kernels.minimize import Descent
from .kernels.records import ExactLaw, Recording, Span
from .core.limits import MAX_STEPS, check_budget
from .pair_energy import PairEnergy
from .params import ForceParams
from .threads import kernel_choice, usable_threads
from .trajectory import Trajectory
from .core import version as _core_version
from .core.validation import check_int, check_nonnegative

__all__ = ["simulate", "minimize", "MinimizeResult", "NonFiniteStateError", "RunawayError", "MAX_GROWTH", "chunk_bounds"]


#: default growth bound of every integrator: a run stops once max |x| exceeds
#: MAX_GROWTH * max(1, max |x0|)
MAX_GROWTH = 1e6


class NonFiniteStateError(FloatingPointError):
    """The state became NaN or infinite; ``integrator`` names what stopped,
    ``step`` says when and ``trajectory`` holds the snapshots recorded
    before (None when there are none)."""

    def __init__(self, step: int, trajectory: Trajectory | None = None, integrator: str = "simulate",
                 detail: str | None = None):
        super().__init__(f"{integrator} stopped at step {step}: "
                         f"{detail or 'the state became non-finite (NaN or inf)'}; lower dt or check the "
                         "force parameters")
        self.step = step
        self.trajectory = trajectory
        self.integrator = integrator
        self.detail = detail

    def __reduce__(self):  # rebuilt from its fields, so a process pool re-raises it intact
        return (type(self), (self.step, self.trajectory, self.integrator, self.detail), self.__dict__)


class RunawayError(NonFiniteStateError):
    """The state grew past its bound, max |x| > max_growth * max(1, max |x0|),
    before turning non-finite (a NonFiniteStateError, so handlers of
    diverged runs catch both); ``bound`` is that limit."""

    def __init__(self, step: int, bound: float, trajectory: Trajectory | None = None,
                 integrator: str = "simulate"):
        super().__init__(step, trajectory, integrator,
                         f"runaway growth, max |x| exceeded {bound:.3g} (max_growth * max(1, max |x0|))")
        self.bound = bound

    def __reduce__(self):
        return (type(self), (self.step, self.bound, self.trajectory, self.integrator), self.__dict__)


#: the message when a custom law divides by zero inside compiled code (a
#: complex-step derivative: numba's complex division raises, whatever the
#: error model), which makes the state non-finite
ZERO_DIVISION = ("a custom law divided by zero between steps {start} and {stop} (in a complex-step derivative, "
                 "where 1/0 cannot give inf); the state is not finite there")


def growth_bound(x0: np.ndarray, max_growth: Any) -> float:
    """max_growth * max(1, max |x0|), with max_growth checked (> 1, finite)."""
    if isinstance(max_growth, bool) or not isinstance(max_growth, (int, float, np.floating, np.integer)):
        raise TypeError(f"max_growth must be a real number > 1, got {type(max_growth).__name__}")
    max_growth = float(max_growth)
    if not (math.isfinite(max_growth) and max_growth > 1.0):
        raise ValueError(f"max_growth must be > 1 and finite, got {max_growth}")
    return max_growth * max(1.0, float(np.max(np.abs(x0))))


def check_record_memory(n_records: int, p: int, d: int, extra_series: int = 1) -> None:
    """Refuse, before allocating, a run whose snapshots (n_records x p x d
    float64, plus ``extra_series`` per-record numbers, twice: the record
    buffer and the trajectory made from it) exceed the memory budget
    (:func:`particles.core.limits.memory_budget`); the message names
    ``steps`` and ``record_every``."""
    check_budget(16.0 * n_records * (p * d + extra_series), f"steps / record_every = {n_records} snapshots of {p} x {d}",
                 "raise record_every or lower steps")


def stopped(code: int, step: int, bound: float, trajectory: Trajectory | None, integrator: str) -> Exception:
    """The exception for a kernel status other than OK."""
    if code == status.RUNAWAY:
        return RunawayError(step, bound, trajectory, integrator)
    return NonFiniteStateError(step, trajectory, integrator)


#: longest compiled call without a callback, in steps: Python gets control
#: back between calls, so Ctrl-C (and signal handlers) stop a long run
#: within about a second whatever its length
MAX_CALL_STEPS = 100_000


def progress_reporter(callback: Callable[[int, int], Any] | None, steps: int) -> Callable[[int], None]:
    """``report(stop)`` for a run of ``steps`` steps done in chunks: calls
    ``callback(stop, steps)`` about 100 times whatever the chunk lengths (at
    the first chunk end past each hundredth of the run, and at the end)."""
    every = max(1, steps // 100)
    due = every

    def report(stop: int) -> None:
        nonlocal due
        if callback is not None and (stop >= due or stop == steps):
            callback(stop, steps)
            due = (stop // every + 1) * every

    return report


def chunk_bounds(steps: int, callback: Callable | None) -> list[int]:
    """Step boundaries of the compiled calls: at most MAX_CALL_STEPS steps
    per call without a callback, about 100 calls with one. The kernels
    record by the global step index (``i % record_every == 0``), so the
    boundaries need not be multiples of record_every."""
    chunk = MAX_CALL_STEPS if callback is None else min(MAX_CALL_STEPS, max(1, steps // 100))
    return list(range(0, steps, chunk)) + [steps]


#: a timed segment of an automatic (parallel=None) run is about this much
#: work, in pair-pair interactions (roughly 10-20 ms on one core)
PROBE_INTERACTIONS = 2_000_000
#: ordinary segments are this many times longer than timing probes
SEGMENT_PROBES = 30


def _segments(steps: int, engine: Engine, parallel: bool | None, callback: Callable | None
              ) -> Iterator[tuple[int, int, bool, bool]]:
    """Yield (start, stop, use_parallel, timed) segments of a run.

    A fixed choice (explicit ``parallel``, or work that does not split)
    runs in one segment, or about 100 with a callback. With ``parallel=None``
    short timed probes let :data:`kernel_choice` compare the kernels, and
    longer segments use the faster one.
    """
    report_every = max(1, steps // 100) if callback is not None else max(1, min(steps, MAX_CALL_STEPS))
    key, splittable = engine.key, engine.splittable
    if parallel is not None or not splittable or usable_threads() < 2:
        use = kernel_choice.choose(key, parallel, splittable)
        for start in range(0, steps, report_every):
            yield start, min(steps, start + report_every), use, False
        return
    n_pairs = len(engine.system.pairs)
    probe = max(1, math.ceil(PROBE_INTERACTIONS / (n_pairs * (n_pairs - 1) / 2)))
    start = 0
    while start < steps:
        use = kernel_choice.choose(key, None, splittable)
        timings = kernel_choice.timings(key)
        settled = timings["serial"] is not None and timings["parallel"] is not None and \
            use == (timings["parallel"] < timings["serial"])
        length = min(probe * SEGMENT_PROBES if settled else probe, report_every)
        stop = min(steps, start + length)
        yield start, stop, use, True
        start = stop


def _run_segments(x: np.ndarray, engine: Engine, sched: euler.EulerSchedule, rng: np.random.Generator,
                  rec: Recording, record_steps: list[int], parallel: bool | None, callback: Callable | None) -> int:
    """All steps of a run, segment by segment (:func:`_segments`), in place
    on x; the next free record slot. A stopped run raises with the records
    made so far."""
    steps = sched.total
    slot = 0
    report = progress_reporter(callback, steps)
    if parallel is None and engine.splittable and usable_threads() >= 2:  # the run may switch loops: compile both
        compile_for(*(engine.step_call(x, sched, Span(0, steps, 0), rng, rec, kind) for kind in (False, True)))
    for start, stop, use_parallel, timed in _segments(steps, engine, parallel, callback):
        began = time.perf_counter()
        try:
            code, reached, slot = engine.run_steps(x, sched, Span(start, stop, slot), rng, rec, use_parallel)
        except ZeroDivisionError:  # numba's complex division raises even under NumPy's error model
            raise NonFiniteStateError(start, None, "simulate", ZERO_DIVISION.format(start=start, stop=stop)) from None
        if timed:
            kernel_choice.report(engine.key, use_parallel, time.perf_counter() - began, stop - start)
        if code != status.OK:
            partial = Trajectory(rec.traj[:slot], np.asarray(record_steps[:slot], dtype=np.int64),
                                 scalars={"energy": rec.energies[:slot]}) if slot else None
            raise stopped(code, int(reached), sched.max_abs, partial, "simulate")
        report(stop)
    return slot


def simulate(
    x0: np.ndarray,
    train: PairDataset,
    params: ForceParams | PairEnergy,
    *,
    steps: int,
    dt: float,
    record_every: int | None = None,
    temperature: float = 0.0,
    final_temperature: float = 0.0,
    seed: int | np.random.Generator | None = None,
    parallel: bool | None = None,
    repulsion_tol: float | None = None,
    path: str = "auto",
    max_growth: float = MAX_GROWTH,
    callback: Callable[[int, int], None] | None = None,
    meta: dict[str, Any] | None = None,
) -> Trajectory:
    """Integrate the overdamped flow dx/dt = F(x) with explicit Euler.

    With ``temperature > 0`` each step adds Langevin noise sqrt(2 T dt) xi,
    xi ~ N(0, 1), with T falling linearly from ``temperature`` at step 0 to
    ``final_temperature`` (default 0: annealing) at the last step.

    Parameters
    ----------
    x0 : ndarray, shape (p, d)
        Initial positions; not modified.
    train : PairDataset
        Training pairs.
    params : ForceParams or PairEnergy
        The force law: the built-in one, or a custom pair energy.
    steps : int in [1, MAX_STEPS = 10**9]
    dt : float > 0
        Time step.
    record_every : int >= 1, optional
        Snapshot stride (default ``max(1, steps // 100)``). Snapshots are the
        states at steps 0, r, 2r, ... and the final state (a stride longer
        than the run records the start and the final state).
    temperature, final_temperature : float >= 0
        Langevin temperature schedule.
    seed : int or numpy.random.Generator, optional
        Source of the Langevin noise (unused without noise).
    parallel : bool, optional
        ``True``/``False`` forces the multi-threaded or single-threaded force
        kernel. By default small systems run serially and larger ones time
        both kernels in short segments and use the faster (re-checked as the
        run goes, since other work on the machine changes the answer). All
        choices give bit-identical results.
    repulsion_tol, path
        The repulsion cut-off (None: exact sums) and the pair loop
        (``"auto"``, ``"direct"``, ``"gram"``): see :func:`particles.energy_and_forces`.
    max_growth : float > 1
        Stop with :class:`RunawayError` once max |x| exceeds
        max_growth * max(1, max |x0|) (default :data:`MAX_GROWTH` = 1e6).
    callback : callable(step, steps), optional
        Called about 100 times with progress.
    meta : dict, optional
        Extra JSON-serialisable entries for the trajectory's ``meta``.

    Returns
    -------
    Trajectory
        ``embeddings`` (S, p, d) and ``energy`` per snapshot.

    Raises
    ------
    NonFiniteStateError
        When the state turns NaN or infinite (names the step).
    RunawayError
        When the state grows past its bound (a NonFiniteStateError).
    """
    x, bound, run = _check_run(x0, train, params, steps, dt, record_every, temperature, final_temperature,
                               max_growth, callback, repulsion_tol)
    engine = Engine(x.shape[1], pair_system(train), params, run["repulsion_tol"], path, x.shape[0], x)  # checks path
    rng = make_rng(seed)
    traj, energies, record_steps = _record_buffers(x.shape, run["steps"], run["record_every"])
    sched = euler.EulerSchedule(run["dt"], run["record_every"], run["temperature"], run["final_temperature"],
                                run["steps"], bound)
    slot = _run_segments(x, engine, sched, rng, Recording(traj, energies), record_steps, parallel, callback)
    _record_final_state(x, engine, traj, energies, slot, run["steps"])
    return Trajectory(traj, np.asarray(record_steps, dtype=np.int64), scalars={"energy": energies},
                      meta=_run_meta(x, train, params, seed, run, meta))


def _check_run(x0: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, steps: Any, dt: Any,
               record_every: Any, temperature: Any, final_temperature: Any, max_growth: Any,
               callback: Any, repulsion_tol: Any) -> tuple[np.ndarray, float, dict[str, Any]]:
    """The arguments of :func:`simulate` checked, in order: a copy of x0 to
    integrate, the growth bound and the run's settings (``steps``, ``dt``,
    ``record_every``, ``temperature``, ``final_temperature`` and
    ``repulsion_tol``, as the trajectory's meta carries them)."""
    x = check_inputs(x0, train, params, name="x0").copy()
    bound = growth_bound(x, max_growth)
    steps = check_int(steps, "steps", 1, MAX_STEPS)
    dt = check_nonnegative(dt, "dt", strict=True)
    record_every = max(1, steps // 100) if record_every is None else check_int(record_every, "record_every", 1)
    temperature = check_nonnegative(temperature, "temperature")
    final_temperature = check_nonnegative(final_temperature, "final_temperature")
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    tol = check_repulsion_tol(repulsion_tol, x.shape[1], params)
    return x, bound, {"steps": steps, "dt": dt, "record_every": record_every, "temperature": temperature,
                      "final_temperature": final_temperature, "repulsion_tol": tol}


def _record_buffers(shape: tuple[int, int], steps: int, record_every: int
                    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The snapshot and energy buffers of a run of ``steps`` steps of a
    ``shape`` (p, d) state, recording every ``record_every`` steps and at
    the end (refused first when they exceed the memory budget), and the
    steps they record."""
    n_records = steps // record_every + 1 + (1 if steps % record_every else 0)
    check_record_memory(n_records, shape[0], shape[1])
    traj, energies = np.empty((n_records, shape[0], shape[1])), np.empty(n_records)
    return traj, energies, list(range(0, steps, record_every)) + [steps]


def _record_final_state(x: np.ndarray, engine: Engine, traj: np.ndarray, energies: np.ndarray, slot: int,
                        steps: int) -> None:
    """The state after the last step and its energy, into record ``slot``;
    a non-finite one raises :class:`NonFiniteStateError` at ``steps``."""
    final_energy, _ = evaluate(x, engine, False)
    if not (math.isfinite(final_energy) and np.all(np.isfinite(x))):
        raise NonFiniteStateError(steps, None, "simulate")
    traj[slot] = x
    energies[slot] = final_energy


def _run_meta(x: np.ndarray, train: PairDataset, params, seed, run: dict, meta: dict | None) -> dict:
    """A simulate run's meta: the source, sizes and law, the ``run``'s settings, the seed and dataset, then
    the caller's ``meta`` (which may override any of them)."""
    return {"source": "particles.simulate", "p": int(x.shape[0]), "d": int(x.shape[1]), "params": params.to_dict(),
            **run, "seed": seed if isinstance(seed, (int, np.integer)) else None, "dataset": train.name,
            "train_indices": train.indices.tolist(), "version": _core_version.package_version(), **(meta or {})}


@dataclass(frozen=True)
class MinimizeResult:
    """Result of :func:`minimize`."""

    x: np.ndarray
    energy: float
    steps: int
    converged: bool
    max_force: float


def minimize(x0: np.ndarray, train: PairDataset, params: ForceParams | PairEnergy, *, max_steps: int = 10_000,
             gtol: float = 1e-6, step: float = 1e-2, max_growth: float = MAX_GROWTH) -> MinimizeResult:
    """Minimise U by gradient descent with Armijo backtracking.

    Every accepted step lowers U. Converged when the largest force component
    is below ``gtol``. Needs gradient forces (``alignment="gradient"`` or
    ``lam = 0``). Raises :class:`NonFiniteStateError` on a non-finite state
    and :class:`RunawayError` once max |x| exceeds
    max_growth * max(1, max |x0|) (an energy that keeps falling as particles
    fly apart).
    """
    x = check_inputs(x0, train, params, name="x0").copy()
    bound = growth_bound(x, max_growth)
    if not params.is_gradient:
        raise ValueError("minimize needs gradient forces: alignment='gradient' or lam=0 "
                         f"(got alignment={params.alignment!r}, lam={params.lam})")
    max_steps = check_int(max_steps, "max_steps", 1, MAX_STEPS)
    gtol = check_nonnegative(gtol, "gtol", strict=True)
    step = check_nonnegative(step, "step", strict=True)
    force = np.empty_like(x)
    system = pair_system(train)
    ws = make_workspace(x.shape[1], system, 1)
    kernel = params.kernels().minimize
    try:
        code, n, energy, fmax = kernel(x, ExactLaw(system, params.kernel_params(), ws),
                                       Descent(max_steps, step, gtol, bound), force)
    except ZeroDivisionError:
        raise NonFiniteStateError(0, None, "minimize", ZERO_DIVISION.format(start=0, stop=max_steps)) from None
    if code in (status.NONFINITE, status.RUNAWAY):
        raise stopped(code, int(n), bound, None, "minimize")
    return MinimizeResult(x=x, energy=float(energy), steps=int(n), converged=bool(fmax < gtol), max_force=float(fmax))
