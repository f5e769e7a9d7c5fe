"""Custom pair energies: your own force law between pair sums, compiled.

A :class:`PairEnergy` is built from scalar functions of one variable q
between two pair sums s_u, s_v (u != v), one for pairs of one class
(``same``) and one for different classes (``other``):

- ``"distance"`` terms: q = |s_u - s_v|^2 (translation and rotation
  invariant, like the clustering forces);
- ``"cosine"`` terms: q = c = U_u . U_v with U = s / sqrt(|s|^2 + eps^2)
  (rotation invariant, like the alignment forces).

The energy is U(x) = sum_{u<v} phi(q_uv) over the training pairs, summed over
the terms, plus (wd/2) sum_a |x_a|^2, and the forces are -grad U. A function
takes ``(q, params)`` and returns a float; its derivative in q is either
supplied or derived by complex-step differentiation (exact to rounding for
functions written with analytic operations: arithmetic, exp, log, sqrt,
powers; no abs, min/max or comparisons on q). Give the derivative when your
function branches on q (a cut-off) or uses :func:`fast_exp`.

The compiled path runs the package's own kernels (the built-in law's loops,
serial and parallel, the Euler/Langevin loops and the minimiser) with your
functions in the force-law slots (see :mod:`particles.kernels.rebind`); the
first call in a process compiles them (a few seconds). The NumPy path
(:func:`particles.energy_reference`, :func:`particles.forces_reference`)
calls the same functions on arrays of q, for prototyping without compiling:
write them with NumPy operations (``np.where`` rather than ``if``) to use it.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from .kernels.bundle import Kernels
from .pair_functions import (COMPLEX_STEP, check_callable, check_params_fit, check_term_params, compiled_function,
                             python_function, scaled_function)
from .kernels.law import PAIR_TERMS, TERM_AT
from .core.validation import check_array, check_nonnegative, check_replace

__all__ = ["PairTerm", "PairEnergy", "VARIABLES"]

#: what a term's functions take as q
VARIABLES = ("distance", "cosine")
class _Immutable:
    """Attributes fixed once built (like the frozen ForceParams): change a
    law with ``replace`` / ``with_params``, which validate again."""

    _frozen = False

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is immutable; make a changed copy with "
                                 f"{'with_params' if isinstance(self, PairTerm) else 'replace'}()")
        object.__setattr__(self, name, value)


class PairTerm(_Immutable):
    """One term of a :class:`PairEnergy`: phi_same(q) for pairs of one class,
    phi_other(q) for different classes.

    Parameters
    ----------
    same, other : callable (q, params) -> float, or None
        The pair energy as a function of q; None for no interaction. Plain
        Python functions are compiled with ``numba.njit`` when the compiled
        path first needs them.
    variable : {"distance", "cosine"}
        q = |s_u - s_v|^2, or the softened cosine U_u . U_v.
    params : tuple or NamedTuple of real numbers
        Passed as the second argument of every function (values can change
        between runs without recompiling). The compiled path passes every
        value as a float64.
    same_derivative, other_derivative : callable (q, params) -> float, optional
        d phi / dq; by default derived by complex step.
    """

    def __init__(self, same: Callable | None = None, other: Callable | None = None, *, variable: str = "distance",
                 params: tuple = (), same_derivative: Callable | None = None,
                 other_derivative: Callable | None = None) -> None:
        self.same = check_callable("same", same)
        self.other = check_callable("other", other)
        self.same_derivative = check_callable("same_derivative", same_derivative)
        self.other_derivative = check_callable("other_derivative", other_derivative)
        if same is None and same_derivative is not None:
            raise ValueError("same_derivative given without same")
        if other is None and other_derivative is not None:
            raise ValueError("other_derivative given without other")
        if same is None and other is None:
            raise ValueError("a PairTerm needs at least one of same and other")
        if variable not in VARIABLES:
            raise ValueError(f"variable must be one of {VARIABLES}, got {variable!r}")
        self.variable = variable
        self.params = check_term_params(params)
        check_params_fit({"same": same, "other": other, "same_derivative": same_derivative,
                           "other_derivative": other_derivative}, self.params, 0.5)
        self._frozen = True

    def functions(self) -> tuple:
        """The functions, the part of the term that needs compiling."""
        return (self.same, self.other, self.same_derivative, self.other_derivative)

    def with_params(self, params: tuple) -> "PairTerm":
        """The same functions with other parameters (no recompilation): as
        many values as the current ``params``."""
        if isinstance(params, tuple) and len(params) != len(self.params):
            raise ValueError(f"params must hold {len(self.params)} values like the current ones, got {len(params)}")
        return PairTerm(self.same, self.other, variable=self.variable, params=params,
                        same_derivative=self.same_derivative, other_derivative=self.other_derivative)

    def values(self, q: np.ndarray, same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """NumPy path: phi(q) and d phi / dq on arrays, by class relation
        (each function only where it applies; 0 elsewhere). ``q``: real
        array; ``same``: boolean array of the same shape."""
        q = check_array(q, "q", bounded=False)  # q = r^2 of valid inputs may exceed MAX_ABS
        same = check_array(same, "same", dtype="bool")
        if same.shape != q.shape:
            raise ValueError(f"same must have the shape of q, {q.shape}, got {same.shape}")
        phi = np.zeros(q.shape)
        dphi = np.zeros(q.shape)
        for mask, fn, dfn in ((same, self.same, self.same_derivative), (~same, self.other, self.other_derivative)):
            if fn is None or not np.any(mask):
                continue
            f = python_function(fn)
            qm = q[mask]
            with np.errstate(all="ignore"):
                phi[mask] = np.broadcast_to(np.asarray(f(qm, self.params), dtype=float), qm.shape)
                if dfn is None:
                    deriv = np.imag(np.asarray(f(qm + 1j * COMPLEX_STEP, self.params))) / COMPLEX_STEP
                else:
                    deriv = np.asarray(python_function(dfn)(qm, self.params), dtype=float)
            dphi[mask] = np.broadcast_to(deriv, qm.shape)
        return phi, dphi

    def scaled(self, same: float, other: float) -> "PairTerm | None":
        """The term with its parts multiplied by ``same`` and ``other``; None
        when both parts vanish (a part at factor 0 is left out, so a law
        infinite somewhere adds no NaN)."""
        if (self.same is None or same == 0.0) and (self.other is None or other == 0.0):
            return None
        return PairTerm(scaled_function(self.same, same), scaled_function(self.other, other), variable=self.variable,
                        params=self.params, same_derivative=scaled_function(self.same_derivative, same),
                        other_derivative=scaled_function(self.other_derivative, other))

    def describe(self) -> dict[str, Any]:
        names = {k: getattr(python_function(f), "__qualname__", repr(f)) if f is not None else None
                 for k, f in zip(("same", "other", "same_derivative", "other_derivative"), self.functions())}
        params = self.params._asdict() if hasattr(self.params, "_asdict") else list(self.params)
        return {"variable": self.variable, **names, "params": params}


#: compiled kernels per set of functions (parameters are runtime data)
_COMPILED: dict[tuple, Kernels] = {}
#: each law's kernel record and kernels, kept beside the law (not in it: a law is an immutable value) while it lives
_LAW_RECORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LAW_KERNELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _unpack(kind: type, lo: int, hi: int) -> CPUDispatcher:
    """The parameter slot: a term's parameters from the record, as ``kind``
    (a NamedTuple class, or tuple). The record holds every term's numbers in
    one flat array ``prm.user`` (the parallel kernels pass arrays to their
    threads, not tuples); the kernels read them once per block, so the loops
    see plain numbers."""
    items = ", ".join(f"prm.user[{i}]" for i in range(lo, hi))
    if kind is tuple:
        source = f"def unpack(prm):\n    return ({items}{',' if hi - lo == 1 else ''})\n"
    else:
        source = f"def unpack(prm):\n    return kind({items})\n"
    namespace = {"kind": kind}
    exec(source, namespace)
    return numba.njit(namespace["unpack"])


def _slot(value: Callable | None, derivative: Callable | None) -> CPUDispatcher:
    """A force-law slot (q, params) -> (phi, dphi/dq)."""
    if value is None:
        return numba.njit(lambda q, p: (0.0, 0.0))
    fn = compiled_function(value)
    h = COMPLEX_STEP
    if derivative is None:
        def slot(q, p):
            return fn(q, p) * 1.0, fn(q + 1j * h, p).imag / h
    else:
        dfn = compiled_function(derivative)

        def slot(q, p):
            return fn(q, p) * 1.0, dfn(q, p) * 1.0
    return numba.njit(slot)


@numba.njit
def _no_clustering_block(rows, S, system, prm, F, scratch):
    """Stands in for the clustering block of a law with no distance term."""
    return 0.0


@numba.njit
def _no_alignment_block(rows, U, system, prm, cos, scratch):
    """Stands in for the alignment block of a law with no cosine term."""
    return 0.0


@numba.njit
def _no_term(task, system, prm, ws, scratch):
    """Stands in for the split of one block by term, for a one-term law."""
    return None


class PairEnergy(_Immutable):
    """A custom force law: a distance term, a cosine term, or both, plus
    weight decay on the particles.

    Use it wherever a :class:`ForceParams` goes (``energy``, ``forces``,
    ``energy_and_forces``, ``simulate``, ``minimize``, the references and
    :mod:`particles.testing`).

    Parameters
    ----------
    distance : PairTerm, optional
        A term in q = |s_u - s_v|^2.
    cosine : PairTerm, optional
        A term in q = U_u . U_v, U = s / sqrt(|s|^2 + eps^2); needs d >= 2.
    eps : float > 0
        Softening of the cosine term (default 1).
    wd : float >= 0
        Weight decay on the particles, energy (wd/2) sum |x|^2 (default 0).
    name : str
        Stored in a trajectory's ``meta["params"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from particles import PairEnergy, PairTerm
    >>> def well(r2, prm):
    ...     return -prm[0] * np.exp(-r2 / 2)
    >>> law = PairEnergy(distance=PairTerm(same=well, params=(3.0,)), wd=0.1)
    """

    def __init__(self, distance: PairTerm | None = None, cosine: PairTerm | None = None, *, eps: float = 1.0,
                 wd: float = 0.0, name: str = "custom") -> None:
        for label, term, variable in (("distance", distance, "distance"), ("cosine", cosine, "cosine")):
            if term is not None and not isinstance(term, PairTerm):
                raise TypeError(f"{label} must be a PairTerm or None, got {type(term).__name__}")
            if term is not None and term.variable != variable:
                raise ValueError(f"{label} must be a PairTerm with variable={variable!r}, got {term.variable!r}")
        if distance is None and cosine is None:
            raise ValueError("a PairEnergy needs a distance term, a cosine term or both")
        check_nonnegative(eps, "PairEnergy.eps", strict=True)
        check_nonnegative(wd, "PairEnergy.wd")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        self.distance = distance
        self.cosine = cosine
        self.eps = float(eps)
        self.wd = float(wd)
        self.name = name
        self._frozen = True

    # what the engine and the checks ask of a force law
    is_gradient = True

    @property
    def effective_lam(self) -> float:
        """1 with a cosine term (it needs d >= 2), else 0."""
        return 1.0 if self.cosine is not None else 0.0

    @property
    def effective_wd(self) -> float:
        return self.wd

    @property
    def translation_invariant(self) -> bool:
        """True when U(x + t) = U(x): no cosine term and no weight decay."""
        return self.cosine is None and self.wd == 0.0

    def __add__(self, other: "PairEnergy") -> "PairEnergy":
        """One law with the terms of both (at most one term of each variable;
        weight decays add)."""
        if not isinstance(other, PairEnergy):
            return NotImplemented
        for label in ("distance", "cosine"):
            if getattr(self, label) is not None and getattr(other, label) is not None:
                raise ValueError(f"both laws have a {label} term; write them as one function")
        if self.cosine is not None and other.cosine is None:
            eps = self.eps
        else:
            eps = other.eps if other.cosine is not None else self.eps
        return PairEnergy(self.distance or other.distance, self.cosine or other.cosine, eps=eps,
                          wd=self.wd + other.wd, name=f"{self.name}+{other.name}")

    def replace(self, **changes: Any) -> "PairEnergy":
        """A copy with ``distance``, ``cosine``, ``eps``, ``wd`` or ``name`` changed."""
        fields = {"distance": self.distance, "cosine": self.cosine, "eps": self.eps, "wd": self.wd,
                  "name": self.name}
        check_replace(changes, fields, "PairEnergy field(s)")
        fields.update(changes)
        return PairEnergy(fields.pop("distance"), fields.pop("cosine"), **fields)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "PairEnergy", "name": self.name, "eps": self.eps, "wd": self.wd,
                "distance": self.distance.describe() if self.distance else None,
                "cosine": self.cosine.describe() if self.cosine else None}

    def __repr__(self) -> str:
        terms = [t for t in ("distance", "cosine") if getattr(self, t) is not None]
        return f"PairEnergy(name={self.name!r}, terms={terms}, eps={self.eps}, wd={self.wd})"

    # ------------------------------------------- the force-law protocol (particles.law_protocol)
    pair_terms = PAIR_TERMS
    tied_terms = {}
    #: a distance term's forces are central (they sum to zero); a cosine term's and the decay are not
    term_invariances = {"attraction": ("translation",), "repulsion": ("translation",)}
    simulates = True
    cell_lists = False

    def unit_record(self):
        """The kernel record as written (a custom term's strength is its own factor), no decay."""
        return self.kernel_params()._replace(wd=0.0)

    def term_names(self) -> tuple[str, ...]:
        names = []
        for prefix, term in (("distance", self.distance), ("cosine", self.cosine)):
            if term is not None:
                names += [TERM_AT[prefix, part] for part, fn in (("same", term.same), ("other", term.other))
                          if fn is not None]
        return tuple(names) + ("wd",)

    def strengths(self) -> dict[str, float]:
        return {**{n: 1.0 for n in self.term_names()}, "wd": self.wd}

    def active_terms(self, d: int) -> tuple[str, ...]:
        self.check_dimension(d)
        return self.term_names()

    def check_dimension(self, d: int) -> None:
        if self.cosine is not None and d < 2:
            raise ValueError(f"a cosine term needs dimension d >= 2, got d = {d}")

    def range_names(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        """``eps`` when a cosine term is named: a custom law's other
        parameters may be strengths (degenerate with the fitted factor) or
        ranges, so they are searched only when named (:meth:`range_fields`)."""
        return ("eps",) if any(TERM_AT["cosine", part] in terms for part in ("same", "other")) else ()

    def range_fields(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        """eps and the fields of the named terms' params, as
        ``distance.<field>`` / ``cosine.<field>`` (index numbers for plain tuples)."""
        out = []
        for prefix, term in (("distance", self.distance), ("cosine", self.cosine)):
            if term is not None and any(TERM_AT[prefix, part] in terms for part in ("same", "other")):
                fields = getattr(term.params, "_fields", None) or [str(i) for i in range(len(term.params))]
                out += [f"{prefix}.{f}" for f in fields]
        if any(TERM_AT["cosine", part] in terms for part in ("same", "other")):
            out.append("eps")
        return tuple(out)

    def range_dependencies(self, term: str) -> tuple[str, ...]:
        return self.range_fields((term,))

    def range_values(self, names) -> list[float]:
        values = []
        for name in names:
            if name == "eps":
                values.append(self.eps)
            else:
                prefix, field = name.split(".", 1)
                params = getattr(self, prefix).params
                values.append(params[int(field)] if field.isdigit() else getattr(params, field))
        return values

    def with_ranges(self, names, values) -> "PairEnergy":
        changes = {n: float(v) for n, v in zip(names, values)}
        if not changes:
            return self
        new = {}
        if "eps" in changes:
            new["eps"] = changes.pop("eps")
        for prefix in ("distance", "cosine"):
            mine = {k.split(".", 1)[1]: v for k, v in changes.items() if k.startswith(prefix + ".")}
            if mine:
                term = getattr(self, prefix)
                params = list(term.params)
                fields = getattr(term.params, "_fields", None)
                for field, value in mine.items():
                    params[int(field) if field.isdigit() else fields.index(field)] = value
                params = type(term.params)(*params) if fields else tuple(params)
                new[prefix] = term.with_params(params)
        return self.replace(**new)

    def with_strengths(self, s: dict[str, float]) -> "PairEnergy":
        """Each term's functions multiplied by its strength in ``s``, the decay set."""
        new = {"wd": s["wd"]}
        for prefix in ("distance", "cosine"):
            term = getattr(self, prefix)
            if term is not None:
                new[prefix] = term.scaled(s.get(TERM_AT[prefix, "same"], 1.0), s.get(TERM_AT[prefix, "other"], 1.0))
        if new.get("distance", self.distance) is None and new.get("cosine", self.cosine) is None:
            raise ValueError("every pair term of the law has strength 0: there is no PairEnergy left to build")
        return self.replace(**new)

    def kernel_params(self):
        """The record the kernels take: switches for the terms, eps, the decay and
        the terms' parameters in ``user``."""
        cached = _LAW_RECORDS.get(self)
        if cached is not None:  # a law is immutable: built once
            return cached
        from .kernels.kernel_params import KernelParams

        on_d = 1.0 if self.distance is not None else 0.0
        on_c = 1.0 if self.cosine is not None else 0.0
        user = np.array([float(v) for t in (self.distance, self.cosine) if t is not None for v in t.params])
        record = KernelParams(on_d, 1.0, on_d, 1.0, on_c, 1.0, self.eps, self.wd, False, False, user)
        _LAW_RECORDS[self] = record
        return record

    def kernels(self) -> Kernels:
        """The compiled force kernels, step loops and minimiser of this law
        (made once per set of functions and process)."""
        mine = _LAW_KERNELS.get(self)
        if mine is not None:
            return mine
        layout = []
        start = 0
        for t in (self.distance, self.cosine):
            size = len(t.params) if t is not None else 0
            kind = type(t.params) if t is not None and hasattr(t.params, "_fields") else tuple
            layout.append((kind, start, start + size))
            start += size
        key = (tuple(t.functions() if t else None for t in (self.distance, self.cosine)), tuple(layout))
        cached = _COMPILED.get(key)
        if cached is None:
            from .kernels import euler, forces, gram, gram_terms, minimize, terms
            from .kernels.rebind import rebind

            slots: dict[str, Any] = {"EXACT_SAME": True, "GAUSSIAN_REPULSION": False}
            # a law without one of the terms never runs its block (its strength
            # in the record is 0): an empty block in its place is not compiled
            # (nor the parallel kernel's split of one block by term, which
            # needs both)
            if self.distance is None:
                slots["clustering_block"] = _no_clustering_block
            if self.cosine is None:
                slots["alignment_block"] = _no_alignment_block
            if self.distance is None or self.cosine is None:
                slots["run_term"] = _no_term
            for term, (kind, lo, hi), prefix in zip((self.distance, self.cosine), layout, ("distance", "cosine")):
                same, other, dsame, dother = term.functions() if term else (None, None, None, None)
                slots[f"{prefix}_params"] = _unpack(kind, lo, hi)
                slots[TERM_AT[prefix, "same"]] = _slot(same, dsame)
                slots[TERM_AT[prefix, "other"]] = _slot(other, dother)
            memo: dict = {}
            serial, parallel = rebind(forces.forces_serial, slots, memo), rebind(forces.forces_parallel, slots, memo)
            # the step loop with this law's force kernel in its law_forces slot, once per kernel
            loops = [rebind(loop, {**slots, "law_forces": kernel}, {})
                     for loop, kernel in ((euler.run_euler_serial, serial), (euler.run_euler, parallel))]
            # the Gram path (particles.kernels.gram, .gram_terms): its force kernels, their step loops and term forces
            gram_kernels = (rebind(gram.gram_forces_serial, slots, memo), rebind(gram.gram_forces_parallel, slots, memo))
            gram_loops = [rebind(loop, {**slots, "law_forces": kernel}, {})
                          for loop, kernel in zip((euler.run_euler_serial, euler.run_euler), gram_kernels)]
            cached = Kernels(serial, parallel, *loops, rebind(minimize.minimize_serial, slots, memo),
                             rebind(terms.term_forces_many, slots, memo), rebind(terms.term_forces_serial, slots, memo),
                             *gram_kernels, *gram_loops, rebind(gram_terms.gram_term_forces_many, slots, memo),
                             rebind(gram_terms.gram_term_forces_serial, slots, memo))
            _COMPILED[key] = cached
        _LAW_KERNELS[self] = cached
        return cached

    def pair_forces_reference(self, s: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, float]:
        """NumPy path: forces -dU/ds_u on the pair sums (n, d) and the pair
        interaction energy, from dense u x v matrices. ``s``: (n, d) real
        and finite; ``labels``: (n,) integer class ids."""
        s = check_array(s, "s", ndim=2)
        labels = check_array(labels, "labels", dtype="int", shape=(s.shape[0],))
        n = s.shape[0]
        off = ~np.eye(n, dtype=bool)
        same = labels[:, None] == labels[None, :]
        f = np.zeros_like(s, dtype=float)
        energy = 0.0
        if self.distance is not None:
            delta = s[:, None, :] - s[None, :, :]
            r2 = np.sum(delta ** 2, axis=-1)
            phi, dphi = self.distance.values(r2, same)
            # the diagonal (u = v) is no pair: masked with where, as inf * 0 would be NaN
            phi, dphi = np.where(off, phi, 0.0), np.where(off, dphi, 0.0)
            f -= 2.0 * np.einsum("uv,uvk->uk", dphi, delta)
            energy += 0.5 * float(np.sum(phi))
        if self.cosine is not None:
            if s.shape[1] < 2:
                raise ValueError("a cosine term needs dimension d >= 2")
            rho = np.hypot(np.linalg.norm(s, axis=1), self.eps)
            unit = s / rho[:, None]
            c = unit @ unit.T
            h, dh = self.cosine.values(c, same)
            h, dh = np.where(off, h, 0.0), np.where(off, dh, 0.0)
            grad = (dh @ unit - np.sum(dh * c, axis=1)[:, None] * unit) / rho[:, None]
            f -= grad
            energy += 0.5 * float(np.sum(h))
        return f, energy
