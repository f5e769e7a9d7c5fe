"""Candidate terms of the right-hand side: named feature libraries.

A library maps states X of shape (n, K) to features Theta of shape (n, F)
and names its F columns. Libraries combine with ``+``.

* :class:`PolynomialLibrary` (degree >= 1): 1, x_j, x_j x_k (j <= k), ...
* :class:`FourierLibrary`: sin(f x_j), cos(f x_j) for f = 1..n_frequencies.
* :class:`CustomLibrary`: any functions of one state column, with names.
"""

from __future__ import annotations

import functools
import itertools
from typing import Callable, Sequence

import numpy as np

from particles.core.validation import check_array, describe

from particles.core.validation import check_bool, check_int


def _check_X(X) -> np.ndarray:
    """States (n, K), real and finite."""
    return check_array(X, "X", ndim=2, min_size=1)


#: most columns a library may have (K state columns times the library's
#: terms per column); a larger library is refused before it is built, since
#: the regression would need (samples x columns) floats and as many unknowns
MAX_FEATURES = 100_000


def _check_K(K) -> int:
    return check_int(K, "K", 1, MAX_FEATURES)


def _check_size(library: "Library", K, count: int, parameter: str) -> int:
    """K checked, and the column count of ``library`` on K columns checked
    against MAX_FEATURES (the error names ``parameter`` and K)."""
    if count > MAX_FEATURES:
        value = getattr(library, parameter)
        raise ValueError(f"{type(library).__name__}({parameter}={value}) on K={K} state columns has "
                         f"at least {count} columns, more than MAX_FEATURES = {MAX_FEATURES}; "
                         f"lower {parameter} or K")
    return K


def _check_names(names) -> list[str]:
    if isinstance(names, str) or not isinstance(names, (list, tuple)) \
            or not all(isinstance(n, str) for n in names) or not names:
        raise TypeError(f"names must be a non-empty list of variable names (str), got {describe(names)}")
    return list(names)

__all__ = ["MAX_FEATURES", "Library", "PolynomialLibrary", "FourierLibrary", "CustomLibrary", "ConcatLibrary", "as_library"]


class Library:
    """Base class: ``transform(X) -> (n, F)`` and ``feature_names(names) -> F names``."""

    def _checked_K(self, K) -> int:
        """K checked (and, where the library knows its size, its column
        count against MAX_FEATURES)."""
        return _check_K(K)

    def n_features(self, K: int) -> int:
        return len(self.feature_names([f"x{i + 1}" for i in range(self._checked_K(K))]))

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Features (n, F) of states X (n, K), checked real and finite."""
        return self._transform(_check_X(X))

    def features(self, X: np.ndarray) -> np.ndarray:
        """Features (n, F) of states X (n, K) the caller has checked (the
        estimators' inner loops: regression rows, Jacobians, every step of a
        simulation), without :meth:`transform`'s checks; a state that has
        grown past what the checks allow is then the simulation's to judge
        (a blow-up), not an argument error."""
        return self._transform(X)

    def _transform(self, X: np.ndarray) -> np.ndarray:
        """Features of states the caller has checked (the estimators' inner
        loops); a user library that only defines ``transform`` is called
        through it."""
        if type(self).transform is Library.transform:  # pragma: no cover - abstract
            raise NotImplementedError(f"{type(self).__name__} must define transform or _transform")
        return self.transform(X)

    def jacobian(self, X: np.ndarray) -> np.ndarray:
        """d Theta / d x_j at every state: (K, n, F) for states X (n, K) the
        caller has checked (as :meth:`features`).

        Central differences with a step of 1e-6 times each column's largest
        |x| (the covariance-weighted refit's error propagation, where a
        relative error of ~1e-10 does not matter); libraries with a closed
        form (:class:`PolynomialLibrary`) give it exactly."""
        X = np.asarray(X, dtype=float)
        out = []
        for j in range(X.shape[1]):
            h = 1e-6 * max(float(np.max(np.abs(X[:, j]))), 1e-12)
            up, down = X.copy(), X.copy()
            up[:, j] += h
            down[:, j] -= h
            out.append((self.features(up) - self.features(down)) / (2 * h))
        return np.stack(out)

    def feature_names(self, names: Sequence[str]) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def bias_column(self, K: int) -> int | None:
        """Index of the constant column, or None."""
        self._checked_K(K)
        return None

    def degrees(self, K: int) -> np.ndarray:
        """Polynomial degree of each column (how it scales with x), or -1 when it does not scale."""
        return np.full(self.n_features(self._checked_K(K)), -1)

    def product_plan(self, K: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The columns as products, for compiled code that evaluates the
        library (the fit's verdict simulates through it, :mod:`.verdict`):
        ``(parent, variable)`` int arrays of length F, column c being
        column ``parent[c]`` times x_``variable[c]`` (parent -1: the
        variable alone; variable -1: the constant 1). None (the default)
        when the columns are not such products; the caller then calls
        :meth:`features`."""
        self._checked_K(K)
        return None

    def __add__(self, other: "Library") -> "ConcatLibrary":
        if not isinstance(other, Library):
            return NotImplemented
        return ConcatLibrary([self, other])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class PolynomialLibrary(Library):
    """Monomials of the state up to ``degree`` (graded, lexicographic).

    Parameters
    ----------
    degree : int >= 1
    include_bias : bool
        Start with the constant column ``1``.

    Columns for K = 2, degree = 2: ``1, x1, x2, x1^2, x1 x2, x2^2``.
    """

    def __init__(self, degree: int = 2, include_bias: bool = True):
        self.degree = check_int(degree, "degree", 1, MAX_FEATURES)
        self.include_bias = check_bool(include_bias, "include_bias")

    def _checked_K(self, K) -> int:
        K = _check_K(K)
        count, per_degree = int(self.include_bias), 1
        for d in range(1, self.degree + 1):  # C(K + d - 1, d) monomials of degree d; stop once too many
            per_degree = per_degree * (K + d - 1) // d
            count += per_degree
            if count > MAX_FEATURES:
                break
        return _check_size(self, K, count, "degree")

    def powers(self, K: int) -> list[tuple[int, ...]]:
        """Index tuples of the monomials (empty tuple = the constant)."""
        K = self._checked_K(K)
        out: list[tuple[int, ...]] = [()] if self.include_bias else []
        for d in range(1, self.degree + 1):
            out += list(itertools.combinations_with_replacement(range(K), d))
        return out

    def _transform(self, X: np.ndarray) -> np.ndarray:
        # each monomial is its parent (the same without its last factor) times one column,
        # the products np.prod forms, in the same order
        plan = _monomial_plan(self.degree, self.include_bias, X.shape[1])
        out = np.empty((len(plan), X.shape[0]))
        Xt = np.ascontiguousarray(X.T, dtype=float)
        for c, (parent, var, _) in enumerate(plan):
            if var < 0:
                out[c] = 1.0
            elif parent < 0:
                out[c] = Xt[var]
            else:
                np.multiply(out[parent], Xt[var], out=out[c])
        return np.ascontiguousarray(out.T)

    def product_plan(self, K: int) -> tuple[np.ndarray, np.ndarray] | None:
        if type(self)._transform is not PolynomialLibrary._transform or type(self).powers is not \
                PolynomialLibrary.powers:  # a subclass with other columns: not known to be these products
            return None
        plan = _monomial_plan(self.degree, self.include_bias, self._checked_K(K))
        return (np.array([c[0] for c in plan], dtype=np.int64), np.array([c[1] for c in plan], dtype=np.int64))

    def jacobian(self, X: np.ndarray) -> np.ndarray:
        """d Theta / d x_j, (K, n, F), exactly: d/dx_j of a monomial with x_j
        to the power e is e times the monomial with one factor x_j less."""
        if type(self)._transform is not PolynomialLibrary._transform or type(self).powers is not \
                PolynomialLibrary.powers:  # a subclass with other columns: the generic derivative
            return Library.jacobian(self, X)
        X = np.asarray(X, dtype=float)
        n, K = X.shape
        plan = _monomial_plan(self.degree, self.include_bias, K)
        theta = self._transform(X)
        out = np.zeros((K, n, len(plan)))
        for c, (_, _, lower) in enumerate(plan):
            for j, e, base in lower:  # (variable, its power, the column of the monomial divided by x_j)
                out[j, :, c] = e * (theta[:, base] if base >= 0 else 1.0)
        return out

    def feature_names(self, names: Sequence[str]) -> list[str]:
        names = _check_names(names)
        out = []
        for p in self.powers(len(names)):
            if not p:
                out.append("1")
                continue
            parts = []
            for j in sorted(set(p)):
                e = p.count(j)
                parts.append(names[j] if e == 1 else f"{names[j]}^{e}")
            out.append(" ".join(parts))
        return out

    def bias_column(self, K: int) -> int | None:
        self._checked_K(K)
        return 0 if self.include_bias else None

    def degrees(self, K: int) -> np.ndarray:
        return np.array([len(p) for p in self.powers(K)])


@functools.lru_cache(maxsize=64)
def _monomial_plan(degree: int, include_bias: bool, K: int) -> tuple:
    """For each column of ``PolynomialLibrary(degree, include_bias)`` on K
    states: (parent column, variable, derivatives). The column is the
    parent times x_variable (parent -1: x_variable alone; variable -1: the
    constant); derivatives lists (j, power of x_j, column of the monomial
    with one x_j less, -1 for the constant 1)."""
    powers = PolynomialLibrary(degree, include_bias).powers(K)
    index = {p: c for c, p in enumerate(powers)}
    plan = []
    for p in powers:
        lower = []
        for j in sorted(set(p)):
            rest = list(p)
            rest.remove(j)
            lower.append((j, p.count(j), index.get(tuple(rest), -1)))
        if not p:
            plan.append((-1, -1, ()))
        elif len(p) == 1:
            plan.append((-1, p[0], tuple(lower)))
        else:
            plan.append((index[p[:-1]], p[-1], tuple(lower)))
    return tuple(plan)


class FourierLibrary(Library):
    """sin(f x_j) and cos(f x_j) for f = 1..n_frequencies and every column j."""

    def __init__(self, n_frequencies: int = 1):
        self.n_frequencies = check_int(n_frequencies, "n_frequencies", 1, MAX_FEATURES)

    def _checked_K(self, K) -> int:
        K = _check_K(K)
        return _check_size(self, K, 2 * self.n_frequencies * K, "n_frequencies")

    def _transform(self, X: np.ndarray) -> np.ndarray:
        self._checked_K(X.shape[1])
        cols = []
        for f in range(1, self.n_frequencies + 1):
            for j in range(X.shape[1]):
                cols += [np.sin(f * X[:, j]), np.cos(f * X[:, j])]
        return np.column_stack(cols)

    def feature_names(self, names: Sequence[str]) -> list[str]:
        names = _check_names(names)
        self._checked_K(len(names))
        out = []
        for f in range(1, self.n_frequencies + 1):
            fx = [n if f == 1 else f"{f} {n}" for n in names]
            for n in fx:
                out += [f"sin({n})", f"cos({n})"]
        return out


class CustomLibrary(Library):
    """User functions applied to every state column.

    Parameters
    ----------
    functions : sequence of callables
        Each maps an array of shape (n,) to shape (n,).
    names : sequence of callables or str, optional
        Either format strings with ``{}`` for the variable name
        (e.g. ``"exp({})"``) or callables ``name -> str``; default
        ``f0(x1)``, ``f1(x1)``, ...
    """

    def __init__(self, functions: Sequence[Callable[[np.ndarray], np.ndarray]],
                 names: Sequence[str | Callable[[str], str]] | None = None):
        functions = list(functions) if isinstance(functions, (list, tuple)) else functions
        if not isinstance(functions, list) or not functions or not all(callable(f) for f in functions):
            raise TypeError("functions must be a non-empty list of callables")
        if names is not None:
            if isinstance(names, str) or not isinstance(names, (list, tuple)):
                raise TypeError(f"names must be a list of format strings or callables, got {describe(names)}")
            names = list(names)
            if len(names) != len(functions):
                raise ValueError(f"names must hold {len(functions)} entries (one per function), got {len(names)}")
            if not all(isinstance(n, str) or callable(n) for n in names):
                raise TypeError("names must be format strings or callables")
        self.functions = functions
        self.names = names

    def _transform(self, X: np.ndarray) -> np.ndarray:
        cols = []
        for f in self.functions:
            for j in range(X.shape[1]):
                col = np.asarray(f(X[:, j]), dtype=float)
                if col.shape != (X.shape[0],):
                    raise ValueError(f"a custom library function returned shape {col.shape}, "
                                     f"expected ({X.shape[0]},)")
                cols.append(col)
        return np.column_stack(cols)

    def feature_names(self, names: Sequence[str]) -> list[str]:
        names = _check_names(names)
        out = []
        for i in range(len(self.functions)):
            fmt = None if self.names is None else self.names[i]
            for n in names:
                if fmt is None:
                    out.append(f"f{i}({n})")
                elif callable(fmt):
                    out.append(str(fmt(n)))
                else:
                    out.append(fmt.format(n))
        return out


class ConcatLibrary(Library):
    """Columns of several libraries side by side (built by ``lib1 + lib2``)."""

    def __init__(self, libraries: Sequence[Library]):
        self.libraries = []
        for lib in libraries:
            self.libraries += lib.libraries if isinstance(lib, ConcatLibrary) else [lib]

    def _transform(self, X: np.ndarray) -> np.ndarray:
        return np.hstack([lib._transform(X) for lib in self.libraries])

    def jacobian(self, X: np.ndarray) -> np.ndarray:
        return np.concatenate([lib.jacobian(X) for lib in self.libraries], axis=2)

    def feature_names(self, names: Sequence[str]) -> list[str]:
        return [n for lib in self.libraries for n in lib.feature_names(names)]

    def bias_column(self, K: int) -> int | None:
        offset = 0
        for lib in self.libraries:
            col = lib.bias_column(K)
            if col is not None:
                return offset + col
            offset += lib.n_features(K)
        return None

    def degrees(self, K: int) -> np.ndarray:
        return np.concatenate([lib.degrees(K) for lib in self.libraries])


def as_library(library: Library | int | str) -> Library:
    """A library from an object, a polynomial degree, or "linear"/"quadratic"/"cubic"; an object with
    ``candidates`` (:class:`~fitting.ode.degree.AutoDegree`, what the estimators make of "auto") stands
    for libraries of which the fit chooses one."""
    if isinstance(library, Library) or callable(getattr(library, "candidates", None)):
        return library
    if isinstance(library, str):
        shortcuts = {"linear": 1, "quadratic": 2, "cubic": 3}
        if library not in shortcuts:
            raise ValueError(f"library must be a Library, a degree >= 1, 'auto' or one of {tuple(shortcuts)}, "
                             f"got {library!r}")
        return PolynomialLibrary(shortcuts[library])
    if isinstance(library, (int, np.integer)) and not isinstance(library, bool):
        return PolynomialLibrary(int(library))
    raise TypeError(f"library must be a Library, a polynomial degree or a string, got {type(library).__name__}")
