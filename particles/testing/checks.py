"""Checks of the particle model's invariants (docs/particles.md and docs/effective_theory.md).

Each check computes a property on the inputs it is given and raises an
``AssertionError`` that names the property and says by how much it failed
(measured value, allowed value) when it does not hold; it returns the
measured value otherwise. A check that does not apply to a force law (the
centroid of a law with weight decay, say) raises a ``ValueError`` saying why,
so a test never passes by checking nothing.

Force-law checks take a ``law`` (a :class:`~particles.ForceParams` or a
:class:`~particles.PairEnergy`), positions ``x`` (p, d) and the training
pairs. By default they test the package's compiled path; pass ``forces=`` /
``energy=`` (callables ``(x, train, law)``) to test another implementation,
for example your own NumPy code.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..datasets import PairDataset
from ..effective import centroid_sum, effective_loss, simulate_effective, spread
from ..energy import Engine, check_law, pair_system
from ..energy import energy as _energy
from ..energy import energy_and_forces as _energy_and_forces
from ..energy import forces as _forces
from ..simulate import simulate

__all__ = ["check_forces_are_gradient", "check_total_force_vanishes", "check_centroid_conserved",
           "check_zero_torque", "check_energy_decreases", "check_relabelling_equivariance",
           "check_same_seed_same_trajectory", "check_effective_loss_invariance",
           "check_effective_centroid_conserved", "check_effective_spread_conserved", "translation_invariant",
           "rotation_invariant"]

ForceFn = Callable[[np.ndarray, PairDataset, Any], np.ndarray]
EnergyFn = Callable[[np.ndarray, PairDataset, Any], float]


def translation_invariant(law) -> bool:
    """U(x + t) = U(x): no alignment (or cosine) term and no decay on the
    particles, so sum_a F_a = 0 and Euler keeps the centroid."""
    return check_law(law).translation_invariant


def rotation_invariant(law) -> bool:
    """The forces are -grad of a rotation-invariant U (every built-in energy
    and every PairEnergy is; the ``"polar"`` alignment is not a gradient), so
    the total torque vanishes in d = 2."""
    check_law(law)
    return bool(law.is_gradient)


def _fail(prop: str, measured: float, allowed: float, detail: str = "") -> AssertionError:
    tail = f"; {detail}" if detail else ""
    return AssertionError(f"{prop}: measured {measured:.3e}, allowed {allowed:.3e}{tail}")


def _force_fn(forces: ForceFn | None) -> ForceFn:
    return forces if forces is not None else (lambda x, train, law: _forces(x, train, law))


def _energy_fn(energy: EnergyFn | None) -> EnergyFn:
    return energy if energy is not None else (lambda x, train, law: _energy(x, train, law))


def _as_array(x: Any) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (p, d), got {x.shape}")
    return x


def check_forces_are_gradient(law, x: np.ndarray, train: PairDataset, *, h: float | None = None,
                              rtol: float = 1e-5, forces: ForceFn | None = None,
                              energy: EnergyFn | None = None) -> float:
    """F = -grad U, against central finite differences of U.

    Parameters
    ----------
    law : ForceParams or PairEnergy
        Must be a gradient law (``law.is_gradient``).
    x : ndarray, shape (p, d)
    train : PairDataset
    h : float, optional
        Difference step (default 1e-6 * max(1, max |x|)).
    rtol : float
        Allowed max |F + dU/dx| relative to max(1, max |F|).
    forces, energy : callable (x, train, law), optional
        The implementation under test (default the compiled one).

    Returns
    -------
    float
        The measured max |F + dU/dx| / max(1, max |F|).
    """
    check_law(law)
    if not law.is_gradient:
        raise ValueError("check_forces_are_gradient needs a gradient law (the 'polar' alignment is not -grad U)")
    x = _as_array(x)
    rtol = _check_tolerance("rtol", rtol)
    h = 1e-6 * max(1.0, float(np.abs(x).max())) if h is None else _check_tolerance("h", h)
    f = np.asarray(_force_fn(forces)(x, train, law), dtype=float)
    u = _energy_fn(energy)
    grad = np.zeros_like(x)
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            xp, xm = x.copy(), x.copy()
            xp[a, k] += h
            xm[a, k] -= h
            grad[a, k] = (u(xp, train, law) - u(xm, train, law)) / (2 * h)
    err = np.abs(f + grad)
    scale = max(1.0, float(np.abs(f).max()))
    worst = np.unravel_index(int(np.argmax(err)), err.shape)
    measured = float(err.max()) / scale
    if not measured <= rtol:
        raise _fail("forces are not -grad U (max |F + dU/dx| / max(1, max |F|))", measured, rtol,
                    f"worst at particle {worst[0]}, component {worst[1]}: F = {f[worst]:.6g}, "
                    f"-dU/dx by central differences (h = {h:.1e}) = {-grad[worst]:.6g}")
    return measured


def check_total_force_vanishes(law, x: np.ndarray, train: PairDataset, *, rtol: float = 1e-10,
                               forces: ForceFn | None = None) -> float:
    """sum_a F_a = 0 for a translation-invariant law (lam = 0, wd = 0).

    Returns the measured max_k |sum_a F_ak| / max(1, max |F|).
    """
    if not translation_invariant(law):
        raise ValueError(f"the total force vanishes only for a translation-invariant law (no alignment or "
                         f"cosine term, no particle decay); got {law!r}")
    x = _as_array(x)
    f = np.asarray(_force_fn(forces)(x, train, law), dtype=float)
    total = f.sum(axis=0)
    measured = float(np.abs(total).max()) / max(1.0, float(np.abs(f).max()))
    if not measured <= rtol:
        raise _fail("the total force sum_a F_a is not 0 (max |sum| / max(1, max |F|))", measured, rtol,
                    f"sum_a F_a = {np.array2string(total, precision=3)}")
    return measured


def check_centroid_conserved(law, x: np.ndarray, train: PairDataset, *, steps: int = 50, dt: float = 1e-2,
                             atol: float = 1e-10) -> float:
    """Euler keeps the centroid of a translation-invariant law.

    Returns the measured max drift of the centroid over the run.
    """
    if not translation_invariant(law):
        raise ValueError(f"the centroid is conserved only for a translation-invariant law; got {law!r}")
    x = _as_array(x)
    traj = simulate(x, train, law, steps=steps, dt=dt, record_every=max(1, steps // 10))
    centroids = traj.embeddings.mean(axis=1)
    drift = float(np.abs(centroids - x.mean(axis=0)).max())
    allowed = atol * max(1.0, float(np.abs(x).max()))
    if not drift <= allowed:
        raise _fail(f"the centroid moved under Euler ({steps} steps of dt = {dt})", drift, allowed)
    return drift


def check_zero_torque(law, x: np.ndarray, train: PairDataset, *, rtol: float = 1e-9,
                      forces: ForceFn | None = None) -> float:
    """sum_a x_a ^ F_a = 0 in d = 2 for a rotation-invariant gradient law.

    Returns the measured |torque| / max(1, max |x| max |F|).
    """
    if not rotation_invariant(law):
        raise ValueError("the total torque vanishes for gradient laws; the 'polar' alignment is not one")
    x = _as_array(x)
    if x.shape[1] != 2:
        raise ValueError(f"the torque check works in d = 2, got d = {x.shape[1]}")
    f = np.asarray(_force_fn(forces)(x, train, law), dtype=float)
    torque = float(np.sum(x[:, 0] * f[:, 1] - x[:, 1] * f[:, 0]))
    measured = abs(torque) / max(1.0, float(np.abs(x).max()) * float(np.abs(f).max()))
    if not measured <= rtol:
        raise _fail("the total torque sum_a x_a ^ F_a is not 0 (relative to max |x| max |F|)", measured, rtol,
                    f"torque = {torque:.6g}")
    return measured


def check_energy_decreases(law, x: np.ndarray, train: PairDataset, *, steps: int = 200, dt: float | None = None,
                           rtol: float = 1e-10) -> float:
    """U does not increase along the Euler flow for a small step.

    ``dt`` defaults to 1e-3 / max(1, max |F(x)|). Returns the largest
    increase of U between records relative to max(1, max |U|) (<= 0 when U
    only falls).
    """
    check_law(law)
    if not law.is_gradient:
        raise ValueError("U decreases along the flow of gradient laws only (not the 'polar' alignment)")
    x = _as_array(x)
    if dt is None:
        _, f0 = _energy_and_forces(x, train, law)
        dt = 1e-3 / max(1.0, float(np.abs(f0).max()))
    traj = simulate(x, train, law, steps=steps, dt=dt, record_every=1)
    inc = np.diff(traj.energy)
    measured = float(inc.max()) / max(1.0, float(np.abs(traj.energy).max()))
    if not measured <= rtol:
        i = int(np.argmax(inc))
        raise _fail(f"U increased along the flow (largest rise / max(1, max |U|), dt = {dt:.2e})", measured, rtol,
                    f"U went from {traj.energy[i]:.10g} to {traj.energy[i + 1]:.10g} at step {i}")
    return measured


def check_relabelling_equivariance(law, x: np.ndarray, train: PairDataset, g: int, *, rtol: float = 1e-10,
                                   forces: ForceFn | None = None, energy: EnergyFn | None = None) -> float:
    """Relabelling tokens k -> g k mod p (g coprime to p), the pairs and
    their labels with them, permutes the forces and keeps U.

    ``train`` must be modular-addition pairs (labels (a + b) mod p), so
    that the relabelled set is again one. Returns the measured max force
    difference relative to max(1, max |F|).
    """
    check_law(law)
    x = _as_array(x)
    p = x.shape[0]
    if not isinstance(g, (int, np.integer)) or isinstance(g, bool) or math.gcd(int(g), p) != 1:
        raise ValueError(f"g must be an int coprime to p = {p}, got {g!r}")
    if int(g) % p == 1:
        raise ValueError(f"g = {g} is 1 mod p = {p}: the identity relabelling checks nothing; take g in 2 .. p-1")
    if not np.array_equal(train.labels, (train.pairs[:, 0] + train.pairs[:, 1]) % p):
        raise ValueError("relabelling equivariance needs modular-addition pairs (label = (a + b) mod p)")
    perm = (int(g) * np.arange(p)) % p
    x_new = np.empty_like(x)
    x_new[perm] = x
    train_new = PairDataset((int(g) * train.pairs) % p, (int(g) * train.labels) % p, p)
    ff, uu = _force_fn(forces), _energy_fn(energy)
    f, f_new = np.asarray(ff(x, train, law)), np.asarray(ff(x_new, train_new, law))
    scale = max(1.0, float(np.abs(f).max()))
    measured = float(np.abs(f_new[perm] - f).max()) / scale
    if not measured <= rtol:
        raise _fail(f"forces are not permuted by the relabelling k -> {g} k mod {p} (max |F'[g k] - F[k]| / "
                    "max(1, max |F|))", measured, rtol)
    u, u_new = float(uu(x, train, law)), float(uu(x_new, train_new, law))
    du = abs(u_new - u) / max(1.0, abs(u))
    if not du <= rtol:
        raise _fail(f"U changed under the relabelling k -> {g} k mod {p} (relative)", du, rtol,
                    f"U = {u:.12g}, relabelled {u_new:.12g}")
    return measured


def check_same_seed_same_trajectory(law, x: np.ndarray, train: PairDataset, *, seed: int = 0, steps: int = 50,
                                    dt: float = 1e-2, temperature: float = 0.01) -> float:
    """Same seed, same trajectory, bit for bit: two Langevin runs with the
    same seed agree, and the serial and the parallel force kernels give the
    same forces and energy at every recorded state (the parallel kernel is
    called directly, also for small systems that a run would give to the
    serial kernel).

    Returns the largest difference found (0.0 when it holds).
    """
    check_law(law)
    x = _as_array(x)
    _check_positive_int("steps", steps)
    runs = [simulate(x, train, law, steps=steps, dt=dt, temperature=temperature, seed=seed, parallel=par)
            for par in (False, None)]
    diff = float(np.abs(runs[1].embeddings - runs[0].embeddings).max())
    if diff != 0.0:
        raise _fail(f"two runs with seed {seed} differ (max |x - x'|)", diff, 0.0)
    engine = Engine(x.shape[1], pair_system(train), law, None, "auto", x.shape[0])
    for state in runs[0].embeddings:
        state = np.ascontiguousarray(state)
        f_serial, f_parallel = np.empty_like(state), np.empty_like(state)
        u_serial = engine.forces(state, f_serial, False)
        u_parallel = engine.forces(state, f_parallel, True)
        diff = max(float(np.abs(f_parallel - f_serial).max()), abs(u_parallel - u_serial))
        if diff != 0.0:
            raise _fail("the serial and the parallel force kernels differ (max |F - F'| or |U - U'|)", diff, 0.0)
    return 0.0


def _check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def _check_tolerance(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


# --- the effective loss (docs/effective_theory.md) ---------------------------------


def check_effective_loss_invariance(E: np.ndarray, system, *, shift: float = 1.7, scale: float = 2.3,
                                    rtol: float = 1e-9) -> float:
    """l_eff(scale E + shift) = l_eff(E). Returns the measured relative change."""
    E = _as_array(E)
    base = effective_loss(E, system)
    moved = effective_loss(scale * E + shift, system)
    measured = abs(moved - base) / max(abs(base), 1e-300)
    if not measured <= rtol:
        raise _fail(f"l_eff changed under E -> {scale} E + {shift} (relative)", measured, rtol,
                    f"l_eff = {base:.12g}, moved {moved:.12g}")
    return measured


def check_effective_centroid_conserved(E0: np.ndarray, system, *, steps: int = 50, dt: float = 0.2,
                                       atol: float = 1e-12) -> float:
    """C = sum_k E_k is conserved exactly by the centred flow under Euler.
    Returns the measured max |C(t) - C(0)|."""
    E0 = _as_array(E0)
    traj = simulate_effective(E0, system, steps=steps, dt=dt, record_every=max(1, steps // 10))
    C = np.stack([traj.scalars[f"C{c}"] for c in range(E0.shape[1])], axis=1)
    drift = float(np.abs(C - centroid_sum(E0)).max())
    allowed = atol * max(1.0, float(np.abs(E0).max()))
    if not drift <= allowed:
        raise _fail(f"C = sum_k E_k moved under the centred Euler flow ({steps} steps of dt = {dt})", drift,
                    allowed)
    return drift


def check_effective_spread_conserved(E0: np.ndarray, system, *, dt: float = 0.02, order_ratio: float = 3.5,
                                     rtol: float = 1e-12) -> float:
    """Z drifts O(dt^2) per Euler step (halving dt divides the one-step
    drift by at least ``order_ratio``; 4 for exactly second order), and the
    projected flow keeps Z to ``rtol``. Returns the measured drift ratio."""
    E0 = _as_array(E0)
    drifts = []
    for step in (dt, dt / 2):
        traj = simulate_effective(E0, system, steps=1, dt=step)
        drifts.append(abs(float(traj.scalars["Z"][-1]) - float(traj.scalars["Z"][0])))
    ratio = drifts[0] / drifts[1] if drifts[1] > 0 else math.inf
    z0 = spread(E0)
    if not (ratio >= order_ratio or drifts[0] <= 1e-15 * z0):
        raise _fail(f"Z drift is not second order in dt (one-step drift at dt = {dt} over drift at dt/2)", ratio,
                    order_ratio, f"drifts {drifts[0]:.3e} and {drifts[1]:.3e}; this is a lower bound")
    traj = simulate_effective(E0, system, steps=200, dt=25 * dt, project=True, record_every=20)
    rel = float(np.abs(traj.scalars["Z"] - z0).max()) / z0
    if not rel <= rtol:
        raise _fail("the projected flow did not keep Z (relative)", rel, rtol)
    return ratio
