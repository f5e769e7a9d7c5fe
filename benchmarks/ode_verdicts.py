"""Do the ODE fits say when they failed? A benchmark on systems of our choosing.

What it measures
----------------
For each system below (43: textbook polynomial flows and seeded random
sparse polynomial systems, right-hand sides of degree 1-5 in 1-4
variables), each noise level and seed:

* data: one trajectory from the system's first initial condition,
  integrated by ``scipy.integrate.solve_ivp`` (LSODA, rtol 1e-5, atol 1e-8:
  the data carry the solver's error, as a solver-made data set does), 512
  samples on a uniform grid over the system's span, plus Gaussian noise of
  standard deviation ``level`` times each column's RMS (seeded);
* fit: ``ODEModel(library=true_degree)`` with its defaults (``--degree
  auto``: ``ODEModel(library="auto")``, recorded as "unsupported" where
  that does not exist); every :class:`~fitting.ode.FitQualityWarning` that
  ``fit`` issues is recorded (``warnings``; other categories, such as
  ``LinearRelationWarning``, in ``other_warnings``), with the model's
  ``fit_quality_`` where the estimator has it, the fit's time, and the
  coefficient error ||xi - xi*|| / ||xi*|| against the true coefficients;
* judge: the fitted model simulated (``ODEModel.simulate``) from the
  system's SECOND initial condition over the same span and grid, against the
  true trajectory from there (DOP853, rtol 1e-10); R^2 from
  ``sklearn.metrics.r2_score`` (uniform average over the variables),
  clipped below at -10; a ``BlowUpError``, another simulation error or a
  non-finite result scores -10. For the chaotic flows the judge covers the
  first quarter of the span only (``judge_span`` in the JSON; each such
  span is about 6 Lyapunov times, so the judge covers about 1.5). A fit is a
  SUCCESS when the judge's R^2 >= 0.9. ``judge_r2_first_quarter`` (the
  same over the first quarter of the span) tells a model that is wrong from
  the start from one whose phase drifts.

The second initial condition is chosen so that the judge's true trajectory
stays near the data's region of state space (within its bounding box
widened by 10 % per side); the few where it does not (chaotic flows whose
short data do not cover their attractor, ...) say so with
``judge_inside_data`` = false, and the summary is split on it.

The verdict rates, per noise level, pooled, and split on
``judge_inside_data``: the share of failures that warned (a
FitQualityWarning from ``fit``; we want it high), the share of successes
that warned (we want it low), the success share, each with its counts and a
Wilson 95 % interval; the same with any warning from ``fit``
(``*_warned_any``), and with ``fit_quality_["trusted"]`` is False
(``*_untrusted``) where every case has ``fit_quality_``. ``failures``
lists the failed cases.

At noise 0 the data do not depend on the seed, so that level runs seed 0
only (copies of one case would narrow the intervals for nothing).

Every system's equations are checked when the script starts: its
right-hand side, evaluated on 400 random states, equals a polynomial of its
stated degree (least squares over ``PolynomialLibrary(degree)``, relative
residual < 1e-10) and is not one of lower degree (residual > 1e-6).

The random systems: K in {2, 3}, degree in {2, 3, 4}, per equation a
stabilising term (-c x_i for degree 2, -c x_i^3 above) and 1-3 monomials of
degree 0..degree with coefficients of magnitude 0.2-2 (at least one monomial
of the full degree in the system), first state uniform in [-1, 1]^K; a draw
whose trajectory blows up (or fails to integrate), settles to a fixed point
within the first 10 % of the span, or is chaotic (a 1e-8 perturbation grows
by more than 1e4) is redrawn from the same seeded stream. The judging state:
a data state from the first half of the span moved by up to 20 % of each
variable's range, redrawn until its trajectory stays near the data's region
and moves each variable over at least a quarter of its range in the data
(R^2 on a nearly constant column would measure nothing but its tiny
variance).

Usage
-----
    python benchmarks/ode_verdicts.py --out docs/figures/fitting/ode_verdicts/ode_verdicts.json \\
        [--quick] [--noise 0 0.01 0.05] [--seeds 3] [--degree fixed|auto] [--systems lorenz sir ...]

``--quick``: 6 systems, noise 0 and 0.05, one seed (for CI; a few seconds).
The full run (301 fits) takes well under a minute. One progress line per
system goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shlex
import subprocess
import sys
import time
import warnings
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from sklearn.metrics import r2_score

from effective_theory.montecarlo import wilson_interval
from fitting import ODEModel, PolynomialLibrary
from fitting.ode import BlowUpError, FitQualityWarning

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = 512
NOISE = (0.0, 0.01, 0.05)
SEEDS = 3
SUCCESS_R2 = 0.9       # a fit is a success when its judge R^2 is at least this
FAILED_R2 = -10.0      # the judge's score of a blow-up or non-finite simulation (and its floor)
DATA_TOL = {"method": "LSODA", "rtol": 1e-5, "atol": 1e-8}       # the data: a solver-made data set
TRUTH_TOL = {"method": "DOP853", "rtol": 1e-10, "atol": 1e-12}  # the judge's reference
CHAOTIC_JUDGE_SHARE = 0.25
QUICK_SYSTEMS = ("logistic", "van_der_pol", "lotka_volterra", "lorenz", "quartic_small_terms", "random_00")
N_RANDOM = 10


# ----------------------------------------------------------------- systems
@dataclass(frozen=True)
class System:
    """A polynomial ODE written as text: ``equations[i]`` is d(variables[i])/dt,
    an expression in the variables and ``params`` (evaluated with numpy
    arithmetic, so the same text is the right-hand side and its record)."""

    name: str
    degree: int
    variables: tuple[str, ...]
    equations: tuple[str, ...]
    x0: tuple[float, ...]
    x0_judge: tuple[float, ...]
    span: float
    params: dict = field(default_factory=dict)
    lyapunov: float | None = None  # largest Lyapunov exponent (our estimate) of a chaotic flow; None otherwise
    source: str = "textbook"

    def __post_init__(self):
        K = len(self.variables)
        if not (len(self.equations) == len(self.x0) == len(self.x0_judge) == K):
            raise ValueError(f"{self.name}: variables, equations and initial conditions differ in length")
        object.__setattr__(self, "_code", tuple(compile(e, f"<{self.name}>", "eval") for e in self.equations))

    @property
    def K(self) -> int:
        return len(self.variables)

    @property
    def chaotic(self) -> bool:
        return self.lyapunov is not None

    @property
    def judge_span(self) -> float:
        return self.span * (CHAOTIC_JUDGE_SHARE if self.chaotic else 1.0)

    def rhs(self, x: np.ndarray) -> np.ndarray:
        """dx/dt at state(s) x, shape (K,) or (K, n)."""
        scope = dict(self.params)
        scope.update(zip(self.variables, x))
        out = [eval(code, {"__builtins__": {}}, scope) for code in self._code]  # our own text
        return np.stack(np.broadcast_arrays(*[np.asarray(o, dtype=float) for o in out]))

    def integrate(self, x0, t: np.ndarray, tol: dict) -> np.ndarray | None:
        """(len(t), K) trajectory, or None when the solver fails or the state leaves |x| < 1e6."""
        def escape(_t, y):
            return 1e6 - np.max(np.abs(y))
        escape.terminal = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sol = solve_ivp(lambda _t, y: self.rhs(y), (t[0], t[-1]), np.asarray(x0, dtype=float), t_eval=t,
                            events=escape, **tol)
        if sol.status != 0 or sol.y.shape[1] != len(t) or not np.all(np.isfinite(sol.y)):
            return None
        return sol.y.T

    def grid(self) -> np.ndarray:
        return np.linspace(0.0, self.span, SAMPLES)

    def record(self) -> dict:
        return {"name": self.name, "K": self.K, "degree": self.degree, "source": self.source,
                "equations": {f"d{v}/dt": e for v, e in zip(self.variables, self.equations)},
                "params": self.params, "x0": list(self.x0), "x0_judge": list(self.x0_judge), "span": self.span,
                "chaotic": self.chaotic, "lyapunov": self.lyapunov, "judge_span": self.judge_span}


def S(name, degree, variables, equations, x0, x0_judge, span, params=None, lyapunov=None):
    return System(name, degree, tuple(variables.split()), tuple(equations), tuple(map(float, x0)),
                  tuple(map(float, x0_judge)), float(span), dict(params or {}), lyapunov)


def _lotka_volterra_competition(r, a) -> list[str]:
    """dx_i/dt = r_i x_i (1 - sum_j a_ij x_j) over variables x1..xK."""
    K = len(r)
    return [f"{r[i]}*x{i + 1}*(1 - " + " - ".join(f"{a[i][j]}*x{j + 1}" for j in range(K) if a[i][j]) + ")"
            for i in range(K)]


#: the textbook systems: (equations, parameters) as usually written; initial conditions and spans chosen to
#: show each one's dynamics (chaotic flows start on their attractor and run for many characteristic times)
TEXTBOOK = [
    # ---- one variable
    S("linear_decay", 1, "x", ["-k*x"], [2.0], [1.0], 10, {"k": 0.5}),
    S("logistic", 2, "x", ["r*x*(1 - x/cap)"], [0.05], [0.2], 10, {"r": 1.0, "cap": 1.0}),
    S("allee", 3, "x", ["r*x*(x/A - 1)*(1 - x/cap)"], [0.3], [0.6], 5, {"r": 1.0, "A": 0.2, "cap": 1.0}),
    S("richards", 4, "x", ["r*x*(1 - (x/cap)**3)"], [0.05], [0.2], 7, {"r": 1.0, "cap": 1.0}),
    S("quintic", 5, "x", ["x - x**5/5"], [0.05], [0.3], 7),
    # ---- linear
    S("damped_oscillator", 1, "x v", ["v", "-w**2*x - 2*zeta*w*v"], [1, 0], [0, 1.5], 20, {"w": 2.0, "zeta": 0.1}),
    S("linear_3d", 1, "x y z", ["-0.1*x + 2*y", "-2*x - 0.1*y", "0.5*x - 0.3*z"], [1, 0, 0.5], [0, 0.8, 0.3], 30),
    # ---- oscillators
    S("van_der_pol", 3, "x y", ["y", "mu*(1 - x**2)*y - x"], [2, 0], [0.5, 0.5], 30, {"mu": 1.0}),
    S("duffing", 3, "x y", ["y", "-delta*y - alpha*x - beta*x**3"], [1.5, 0], [-0.3, 0.6], 40,
      {"delta": 0.1, "alpha": -1.0, "beta": 1.0}),
    S("pendulum_quintic", 5, "x y", ["y", "-g*(x - x**3/6 + x**5/120) - c*y"], [2, 0], [-1.5, 0.5], 40,
      {"g": 1.0, "c": 0.1}),  # sin x to fifth order
    S("hopf", 3, "x y", ["mu*x - omega*y - x*(x**2 + y**2)", "omega*x + mu*y - y*(x**2 + y**2)"],
      [0.1, 0], [0.5, -0.5], 15, {"mu": 1.0, "omega": 2.0}),
    S("brusselator", 3, "x y", ["A + x**2*y - (B + 1)*x", "B*x - x**2*y"], [1, 1], [2, 1], 30,
      {"A": 1.0, "B": 2.5}),
    S("selkov", 3, "x y", ["-x + a*y + x**2*y", "b - a*y - x**2*y"], [1, 1], [0.5, 2], 60, {"a": 0.08, "b": 0.6}),
    S("fitzhugh_nagumo", 3, "v w", ["v - v**3/3 - w + I", "eps*(v + a - b*w)"], [-1, 1], [1, 0], 200,
      {"I": 0.5, "a": 0.7, "b": 0.8, "eps": 0.08}),
    # ---- populations and epidemics
    S("lotka_volterra", 2, "x y", ["a*x - b*x*y", "d*x*y - c*y"], [2, 1], [3, 1], 30,
      {"a": 1.0, "b": 0.5, "c": 1.0, "d": 0.25}),
    S("competitive_lv2", 2, "x1 x2", _lotka_volterra_competition([1.0, 0.8], [[1, 0.5], [0.6, 1]]),
      [0.05, 0.1], [0.5, 0.2], 20),
    S("competitive_lv3", 2, "x1 x2 x3",
      _lotka_volterra_competition([1.0, 0.8, 1.2], [[1, 0.5, 0.3], [0.4, 1, 0.5], [0.3, 0.4, 1]]),
      [0.05, 0.1, 0.08], [0.4, 0.3, 0.2], 20),
    S("sir", 2, "S I R", ["-beta*S*I", "beta*S*I - gamma*I", "gamma*I"], [0.99, 0.01, 0], [0.95, 0.04, 0.01], 60,
      {"beta": 0.5, "gamma": 0.1}),
    S("sis", 2, "S I", ["-beta*S*I + gamma*I", "beta*S*I - gamma*I"], [0.99, 0.01], [0.9, 0.1], 25,
      {"beta": 0.8, "gamma": 0.3}),
    S("seir", 2, "S E I R", ["-beta*S*I", "beta*S*I - sigma*E", "sigma*E - gamma*I", "gamma*I"],
      [0.99, 0.01, 0, 0], [0.95, 0.02, 0.03, 0], 80, {"beta": 0.8, "sigma": 0.3, "gamma": 0.2}),
    # ---- a quartic with small high-order terms: a Van der Pol oscillator nudged by x2 <= 0
    S("quartic_small_terms", 4, "x0 x1 x2",
      ["x1 + 0.1*x0**3*x2 - 0.25*x0**2*x2", "(1 - x0**2)*x1 - x0", "-x2 - 0.5*x0**2"],
      [2, 0, 0], [-1, 1, -0.3], 30),
    # ---- chaotic flows: both initial conditions on the attractor; the span about 6 Lyapunov times (several
    # characteristic periods), so that the judged first quarter is about 1.5 of them
    S("lorenz", 2, "x y z", ["sigma*(y - x)", "x*(rho - z) - y", "x*y - beta*z"],
      [0.044, 0.225, 14.388], [-3.941, -2.337, 24.499], 6, {"sigma": 10.0, "rho": 28.0, "beta": 8 / 3},
      lyapunov=0.88),
    S("rossler", 2, "x y z", ["-y - z", "x + a*y", "b + z*(x - c)"],
      [-1.927, 3.615, 0.372], [0.426, -3.274, 0.035], 80, {"a": 0.2, "b": 0.2, "c": 5.7}, lyapunov=0.06),
    S("chen", 2, "x y z", ["a*(y - x)", "(c - a)*x - x*z + c*y", "x*y - b*z"],
      [6.14, -0.354, 30.084], [-17.773, -25.232, 17.408], 3, {"a": 35.0, "b": 3.0, "c": 28.0}, lyapunov=1.8),
    S("lorenz84", 2, "x y z", ["-y**2 - z**2 - a*x + a*F", "x*y - b*x*z - y + G", "b*x*y + x*z - z"],
      [1.907, 1.523, 0.25], [0.673, -0.074, -1.168], 30, {"a": 0.25, "b": 4.0, "F": 8.0, "G": 1.0}, lyapunov=0.2),
    S("halvorsen", 2, "x y z", ["-a*x - 4*y - 4*z - y**2", "-a*y - 4*z - 4*x - z**2", "-a*z - 4*x - 4*y - x**2"],
      [-5.831, -5.808, 3.653], [-2.726, 0.018, -8.855], 10, {"a": 1.4}, lyapunov=0.66),  # periodic at a = 1.89
    S("genesio_tesi", 2, "x y z", ["y", "z", "-c*x - b*y - a*z + x**2"],
      [-0.283, -0.328, 0.526], [-0.378, -0.362, 0.516], 60, {"a": 0.44, "b": 1.1, "c": 1.0}, lyapunov=0.094),
    S("sprott_a", 2, "x y z", ["y", "-x + y*z", "1 - y**2"],
      [0.565, 0.746, 1.321], [0.777, -0.243, -2.544], 100, lyapunov=0.014),
    S("sprott_b", 2, "x y z", ["y*z", "x - y", "1 - x*y"],
      [1.229, 0.872, 0.773], [0.912, 0.495, 1.933], 30, lyapunov=0.21),
    S("sprott_c", 2, "x y z", ["y*z", "x - y", "1 - x**2"],
      [-0.437, -0.289, 1.622], [-0.138, -0.062, 2.574], 36, lyapunov=0.17),
    S("sprott_d", 2, "x y z", ["-y", "x + z", "x*z + 3*y**2"],
      [-2.821, 1.701, 3.022], [-1.355, 0.814, 1.409], 60, lyapunov=0.105),
    S("sprott_e", 2, "x y z", ["y*z", "x**2 - y", "1 - 4*x"],
      [0.333, 0.363, 2.64], [1.039, 0.382, 2.536], 70, lyapunov=0.083),
    S("vano_lv4", 2, "x1 x2 x3 x4",
      _lotka_volterra_competition([1, 0.72, 1.53, 1.27], [[1, 1.09, 1.52, 0], [0, 1, 0.44, 1.36],
                                                          [2.33, 0, 1, 0.47], [1.21, 0.51, 0.35, 1]]),
      [0.348, 0.65, 0.015, 0.224], [0.306, 0.542, 0.087, 0.311], 300, lyapunov=0.022),
]


def _monomial(variables: tuple[str, ...], powers: tuple[int, ...]) -> str:
    """``x0*x1**2`` for the index tuple (0, 1, 1); "1" for ()."""
    counts = [(v, powers.count(i)) for i, v in enumerate(variables) if powers.count(i)]
    return "*".join(v if n == 1 else f"{v}**{n}" for v, n in counts) or "1"


def _settles_early(x: np.ndarray) -> bool:
    """Whether the trajectory stays within 1 % of its range of its final state from 10 % of the span on."""
    scale = max(float(np.max(np.ptp(x, axis=0))), 1e-12)
    tail = x[SAMPLES // 10:]
    return bool(np.max(np.abs(tail - x[-1])) < 0.01 * scale)


def _grows(system: System, x: np.ndarray, t: np.ndarray) -> bool:
    """Whether a 1e-8 perturbation of the initial state grows by more than 1e4 over the span (chaos)."""
    y = system.integrate(np.asarray(system.x0) + 1e-8, t, TRUTH_TOL)
    return y is None or float(np.max(np.abs(y[-SAMPLES // 10:] - x[-SAMPLES // 10:]))) > 1e-4


def random_system(index: int, span: float = 10.0) -> System:
    """The index-th random sparse polynomial system (seeded; redrawn until its trajectory is bounded, still
    moving after 10 % of the span and not chaotic). Its judging state is a data state from the first half of
    the span moved by up to 20 % of each variable's range, drawn (up to 50 times, else the system is redrawn)
    until the judge's trajectory is bounded, stays near the data's region (:func:`inside`) and moves each
    variable over at least a quarter of its range in the data."""
    rng = np.random.default_rng([20261127, index])
    for attempt in itertools.count():
        K = int(rng.integers(2, 4))
        degree = int(rng.integers(2, 5))
        variables = tuple(f"x{i}" for i in range(K))
        monomials = PolynomialLibrary(degree).powers(K)
        equations, top = [], False
        for i in range(K):
            stabiliser = (i,) if degree == 2 else (i, i, i)
            c = round(float(rng.uniform(0.5, 1.5)), 2)
            terms = [f"-{c}*{_monomial(variables, stabiliser)}"]
            others = [m for m in monomials if m != stabiliser]
            for j in rng.choice(len(others), size=int(rng.integers(1, 4)), replace=False):
                m = others[j]
                top |= len(m) == degree
                c = round(float(rng.uniform(0.2, 2.0)) * rng.choice([-1.0, 1.0]), 2)
                terms.append(f"{c:+}" if not m else f"{c:+}*{_monomial(variables, m)}")
            equations.append(" ".join(terms).replace("+", "+ ").replace(" -", " - "))
        x0 = tuple(float(v) for v in rng.uniform(-1, 1, size=K).round(2))
        if not top:
            continue
        system = System(f"random_{index:02d}", degree, variables, tuple(equations), x0, x0, span,
                        source=f"random (draw {attempt} of stream [20261127, {index}])")
        t = system.grid()
        x = system.integrate(x0, t, TRUTH_TOL)
        if x is None or np.max(np.abs(x)) > 50 or _settles_early(x) or _grows(system, x, t):
            continue
        for _ in range(50):
            start = x[rng.integers(0, SAMPLES // 2)] + rng.uniform(-0.2, 0.2, size=K) * np.ptp(x, axis=0)
            x0_judge = tuple(float(v) for v in start.round(2))
            judged = system.integrate(x0_judge, t, TRUTH_TOL)
            # every variable must move over the judge's span (R^2 of a nearly constant column is all noise)
            if judged is not None and inside(x, judged) and np.all(np.ptp(judged, axis=0) >= 0.25 * np.ptp(x, axis=0)):
                return replace(system, x0_judge=x0_judge)
    raise AssertionError("unreachable")


def all_systems(names: list[str] | None = None) -> list[System]:
    randoms = [f"random_{i:02d}" for i in range(N_RANDOM)]
    wanted = names or [s.name for s in TEXTBOOK] + randoms
    known = {s.name: s for s in TEXTBOOK}
    unknown = [n for n in wanted if n not in known and n not in randoms]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; known: {list(known) + randoms}")
    return [known[n] if n in known else random_system(int(n.split("_")[1])) for n in wanted]


def true_coefficients(system: System, n: int = 400) -> tuple[np.ndarray, float, float]:
    """The rhs as coefficients (K, F) over PolynomialLibrary(degree) (least squares on random states, entries
    below 1e-9 of the largest set to 0), the relative residual of that fit, and that of the fit at degree - 1
    (inf for degree 1, whose lower degree would be constants only)."""
    rng = np.random.default_rng(zlib.crc32(system.name.encode()))
    X = rng.uniform(-2, 2, size=(n, system.K))
    Y = system.rhs(X.T).T
    coefs, residuals = [], []
    for degree in (system.degree, system.degree - 1):
        if degree < 1:
            residuals.append(math.inf)
            continue
        T = PolynomialLibrary(degree).transform(X)
        coef = np.linalg.lstsq(T, Y, rcond=None)[0]
        coefs.append(coef.T)
        residuals.append(float(np.linalg.norm(T @ coef - Y) / np.linalg.norm(Y)))
    coef = coefs[0]
    coef[np.abs(coef) < 1e-9 * np.abs(coef).max()] = 0.0
    return coef, residuals[0], residuals[1]


def check_degrees(systems: list[System]) -> dict[str, tuple[np.ndarray, float, float]]:
    """Each system's :func:`true_coefficients`; refuses a system whose rhs is not a polynomial of exactly its
    stated degree."""
    out = {}
    for s in systems:
        _, exact, lower = out[s.name] = true_coefficients(s)
        if not (exact < 1e-10 and lower > 1e-6):
            raise SystemExit(f"{s.name}: rhs is not of degree {s.degree} (residual {exact:.2g} at that degree, "
                             f"{lower:.2g} at degree {s.degree - 1})")
    return out


# -------------------------------------------------------------------- cases
def jsonable(value):
    """``value`` with numpy scalars and arrays as Python numbers and lists (repr for anything else)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else str(float(value))
    if value is None or isinstance(value, str):
        return value
    return repr(value)


def r2(truth: np.ndarray, sim: np.ndarray) -> float:
    return max(float(r2_score(truth, sim, multioutput="uniform_average")), FAILED_R2)


def judge(model, system: System, truth: np.ndarray, t: np.ndarray) -> dict:
    """The judge's R^2 of the fitted model's simulation from the judging state (over ``t``; and over the first
    quarter of the span, which for a chaotic flow is the same), its error text and the warnings it issued."""
    error, sim = None, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sim = model.simulate(np.asarray(system.x0_judge), t)
        except BlowUpError as e:
            error = f"BlowUpError: {e}"
        except Exception as e:  # noqa: BLE001 - any failure to simulate scores as a blow-up
            error = f"{type(e).__name__}: {e}"
    if error is None and (sim.shape != truth.shape or not np.all(np.isfinite(sim))):
        error = "non-finite simulation"
    quarter = round(SAMPLES * CHAOTIC_JUDGE_SHARE)
    return {"judge_r2": FAILED_R2 if error else r2(truth, sim),
            "judge_r2_first_quarter": FAILED_R2 if error else r2(truth[:quarter], sim[:quarter]),
            "judge_error": error, "judge_warnings": [str(w.message) for w in caught]}


def run_case(system: System, x: np.ndarray, t: np.ndarray, truth: np.ndarray, coef: np.ndarray, level: float,
             seed: int, library) -> dict:
    """One fit on noisy data ``x`` (clean; noise added here) and its judge against ``truth``."""
    case = {"system": system.name, "degree": library, "true_degree": system.degree, "K": system.K,
            "noise": level, "seed": seed}
    rng = np.random.default_rng([seed, zlib.crc32(system.name.encode()), round(level * 1e6)])
    data = x + rng.normal(size=x.shape) * level * np.sqrt(np.mean(x ** 2, axis=0))
    model = ODEModel(library=library)
    try:
        model.check_params()
    except (TypeError, ValueError) as e:
        return case | {"status": "unsupported", "error": f"{type(e).__name__}: {e}", "judge_r2": None,
                       "success": None, "warned": None, "warnings": [], "fit_quality_": None, "fit_seconds": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            model.fit(data, t)
            error = None
        except Exception as e:  # noqa: BLE001 - a fit that raises is recorded, and fails
            error = f"{type(e).__name__}: {e}"
        seconds = time.perf_counter() - start
    quality = [str(w.message) for w in caught if issubclass(w.category, FitQualityWarning)]
    others = [f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, FitQualityWarning)]
    if error is None:
        verdict = judge(model, system, truth, t[:len(truth)])
    else:
        verdict = {"judge_r2": FAILED_R2, "judge_r2_first_quarter": FAILED_R2, "judge_error": None,
                   "judge_warnings": []}
    fitted = getattr(model, "coef_", None)
    fit_quality = getattr(model, "fit_quality_", None)
    return case | verdict | {
        "status": "fit error" if error else "ok", "fit_error": error,
        "success": bool(verdict["judge_r2"] >= SUCCESS_R2), "warned": bool(quality), "warned_any": bool(caught),
        "warnings": quality, "other_warnings": others, "fit_quality_": jsonable(fit_quality),
        "untrusted": (None if not isinstance(fit_quality, dict) or "trusted" not in fit_quality
                      else not bool(fit_quality["trusted"])),
        # ||xi - xi*|| / ||xi*|| over the true degree's library (None when the fitted library is another)
        "coef_error": (float(np.linalg.norm(fitted - coef) / np.linalg.norm(coef))
                       if fitted is not None and np.shape(fitted) == coef.shape else None),
        "fit_seconds": seconds,
        # library="auto": the degree the fit chose (fit_info_["degree"]), None for a fixed library
        "chosen_degree": (getattr(model, "fit_info_", {}) or {}).get("degree", {}).get("chosen")}


def run_system(system: System, coef: np.ndarray, noise: list[float], seeds: int, library) -> list[dict]:
    t = system.grid()
    x = system.integrate(system.x0, t, DATA_TOL)
    n_judge = round(SAMPLES * system.judge_span / system.span)
    truth = system.integrate(system.x0_judge, t[:n_judge], TRUTH_TOL)
    if x is None or truth is None:
        raise SystemExit(f"{system.name}: the true system does not integrate from its initial conditions")
    cases = []
    for level in noise:
        for seed in range(1 if level == 0 else seeds):
            cases.append(run_case(system, x, t, truth, coef, level, seed, library))
    return cases


# ------------------------------------------------------------------ summary
def inside(x: np.ndarray, truth: np.ndarray) -> bool:
    """Whether trajectory ``truth`` stays inside the bounding box of ``x`` widened by 10 % of its extent per
    side (False: the judge asks the fit to extrapolate in state space)."""
    lo, hi = x.min(axis=0), x.max(axis=0)
    margin = 0.1 * (hi - lo)
    return bool(np.all(truth >= lo - margin) and np.all(truth <= hi + margin))


def judge_inside_data(system: System) -> bool:
    """:func:`inside` for the system's clean data and its judge's true trajectory."""
    t = system.grid()
    truth = system.integrate(system.x0_judge, t[:round(SAMPLES * system.judge_span / system.span)], TRUTH_TOL)
    return inside(system.integrate(system.x0, t, TRUTH_TOL), truth)


def share(k: int, n: int) -> dict:
    """k of n, the share and its Wilson 95 % interval (None when n = 0)."""
    if n == 0:
        return {"k": 0, "n": 0, "share": None, "wilson95": None}
    lo, hi = wilson_interval(np.array(k), n)
    return {"k": int(k), "n": int(n), "share": k / n, "wilson95": [float(lo), float(hi)]}


def summarise(cases: list[dict]) -> dict:
    """Success share and the verdict rates of ``cases`` (those with a judge; "unsupported" ones only counted)."""
    unsupported = sum(c["success"] is None for c in cases)
    cases = [c for c in cases if c["success"] is not None]
    ok = [c for c in cases if c["success"]]
    bad = [c for c in cases if not c["success"]]
    out = {"cases": len(cases), "unsupported": unsupported, "success_share": share(len(ok), len(cases)),
           "failures_warned": share(sum(c["warned"] for c in bad), len(bad)),
           "successes_warned": share(sum(c["warned"] for c in ok), len(ok)),
           "failures_warned_any": share(sum(c["warned_any"] for c in bad), len(bad)),
           "successes_warned_any": share(sum(c["warned_any"] for c in ok), len(ok)),
           "fit_errors": sum(c["status"] == "fit error" for c in cases)}
    chosen = [c for c in cases if c.get("chosen_degree") is not None]
    if chosen:  # library="auto": how often the true degree was chosen, and the choices
        out["true_degree_chosen"] = share(sum(c["chosen_degree"] == c["true_degree"] for c in chosen), len(chosen))
        out["degree_below_true"] = share(sum(c["chosen_degree"] < c["true_degree"] for c in chosen), len(chosen))
        out["degree_above_true"] = share(sum(c["chosen_degree"] > c["true_degree"] for c in chosen), len(chosen))
    if cases and all(c["untrusted"] is not None for c in cases):
        out["failures_untrusted"] = share(sum(c["untrusted"] for c in bad), len(bad))
        out["successes_untrusted"] = share(sum(c["untrusted"] for c in ok), len(ok))
    return out


def git_state() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    status = git("status", "--porcelain", "--", "fitting/ode")
    return {"commit": git("rev-parse", "HEAD"), "fitting_ode_uncommitted": None if status is None else bool(status)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/figures/fitting/ode_verdicts/ode_verdicts.json")
    parser.add_argument("--quick", action="store_true", help="6 systems, noise 0 and 0.05, one seed")
    parser.add_argument("--noise", type=float, nargs="+", default=None, help=f"noise levels (default {NOISE})")
    parser.add_argument("--seeds", type=int, default=None, help=f"seeds per noise level > 0 (default {SEEDS})")
    parser.add_argument("--degree", choices=("fixed", "auto", "default"), default="fixed",
                        help="library: the system's true degree, 'auto', or ODEModel's default (quadratic)")
    parser.add_argument("--systems", nargs="+", default=None, help="only these systems (names as in the JSON)")
    parser.add_argument("--note", default=None, help="a note stored in the JSON (what code was measured)")
    args = parser.parse_args(argv)
    noise = args.noise if args.noise is not None else ([0.0, 0.05] if args.quick else list(NOISE))
    seeds = args.seeds if args.seeds is not None else (1 if args.quick else SEEDS)
    if seeds < 1 or any(level < 0 for level in noise):
        parser.error("--seeds must be >= 1 and noise levels >= 0")
    names = args.systems or (list(QUICK_SYSTEMS) if args.quick else None)

    started = time.perf_counter()
    systems = all_systems(names)
    truths = check_degrees(systems)
    cases = []
    for system in systems:
        t0 = time.perf_counter()
        done = run_system(system, truths[system.name][0], noise, seeds,
                          {"fixed": system.degree, "auto": "auto", "default": "quadratic"}[args.degree])
        region = judge_inside_data(system)
        for case in done:
            case["judge_inside_data"] = region
        cases += done
        scored = [c for c in done if c["success"] is not None]
        print(f"{system.name:22s} K={system.K} deg={system.degree}  success {sum(c['success'] for c in scored)}"
              f"/{len(scored)}  warned {sum(c['warned'] for c in scored)}  "
              f"R2 min {min((c['judge_r2'] for c in scored), default=math.nan):.3g}  "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    result = {
        "benchmark": "ode_verdicts",
        "command": shlex.join(["python", "benchmarks/ode_verdicts.py", *(sys.argv[1:] if argv is None else argv)]),
        "git": git_state(),
        "note": args.note,
        "settings": {"samples": SAMPLES, "noise": noise, "seeds": seeds, "seeds_at_noise_0": 1,
                     "library": args.degree, "success_r2": SUCCESS_R2, "failed_r2": FAILED_R2,
                     "data_solver": DATA_TOL, "truth_solver": TRUTH_TOL,
                     "chaotic_judge_share": CHAOTIC_JUDGE_SHARE,
                     "warned": "a FitQualityWarning from fit", "warned_any": "any warning from fit",
                     "noise_model": "Gaussian, sd = level * the column's RMS"},
        "fit_quality_attribute": any(c.get("fit_quality_") is not None for c in cases),
        "systems": [s.record() | {"degree_residuals": list(truths[s.name][1:]),
                                  "judge_inside_data": judge_inside_data(s)} for s in systems],
        "summary": {"by_noise": {str(level): summarise([c for c in cases if c["noise"] == level]) for level in noise},
                    "all": summarise(cases),
                    "judge_inside_data": summarise([c for c in cases if c["judge_inside_data"]]),
                    "judge_outside_data": summarise([c for c in cases if not c["judge_inside_data"]])},
        "failures": [{k: c[k] for k in ("system", "noise", "seed", "judge_r2", "judge_r2_first_quarter",
                                        "coef_error", "warned", "untrusted")}
                     for c in cases if c["success"] is False],
        "cases": cases,
        "seconds": time.perf_counter() - started,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(jsonable(result), indent=1) + "\n")
    print(f"wrote {out} ({len(cases)} cases, {result['seconds']:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
