"""How a fitted ODE reads: its equations, named coefficients and sparsity
(:class:`EquationsMixin`, part of every :class:`~fitting.ode.ODEModel`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_float, check_int, describe

__all__ = ["EquationsMixin"]


class EquationsMixin:
    """The fitted system as text: variable and term names, the coefficients
    by name, one line per equation, and the share of zero coefficients.
    Needs ``coef_``, ``term_mask_``, ``library_`` and ``n_features_in_``."""

    @property
    def sparsity_(self) -> float:
        """Share of the allowed coefficients that are exactly zero."""
        check_is_fitted(self, "coef_")
        return float(np.mean(self.coef_[self.term_mask_] == 0))

    def variable_names(self, names: Sequence[str] | None = None) -> list[str]:
        """``names`` checked against the fitted K, or the fitted ``variables_`` when None."""
        if names is None:
            return list(getattr(self, "variables_", None) or [f"x{i + 1}" for i in range(self.n_features_in_)])
        return self._check_variable_names(names, self.n_features_in_)

    @staticmethod
    def _check_variable_names(names: Sequence[str] | None, K: int) -> list[str]:
        """``names`` as a list of K str (``x1 .. xK`` when None)."""
        if names is None:
            return [f"x{i + 1}" for i in range(K)]
        if isinstance(names, str) or not isinstance(names, (list, tuple)) \
                or not all(isinstance(n, str) for n in names):
            raise TypeError(f"names must be a list of {K} variable names (str), got {describe(names)}")
        names = list(names)
        if len(names) != K:
            raise ValueError(f"names must hold {K} entries, got {len(names)}")
        return names

    def feature_names(self, names: Sequence[str] | None = None) -> list[str]:
        """Names of the library terms (columns of ``coef_``)."""
        check_is_fitted(self, "coef_")
        return self.library_.feature_names(self.variable_names(names))

    def named_coefficients(self, names: Sequence[str] | None = None, threshold: float = 0.0
                           ) -> dict[str, dict[str, float]]:
        """Coefficients with |value| > threshold as {equation variable: {term: value}}."""
        threshold = check_float(threshold, "threshold", 0.0)
        variables = self.variable_names(names)
        terms = self.feature_names(variables)
        return {v: {terms[j]: float(self.coef_[i, j]) for j in np.flatnonzero(np.abs(self.coef_[i]) > threshold)}
                for i, v in enumerate(variables)}

    def equations(self, names: Sequence[str] | None = None, precision: int = 3, threshold: float = 0.0
                  ) -> list[str]:
        """The fitted system, one readable line per equation (terms with
        |coefficient| <= threshold left out), e.g. ``dx/dt = 1 x - 0.5 x y``."""
        precision = check_int(precision, "precision", 1, 17)
        out = []
        for var, terms in self.named_coefficients(names, threshold).items():
            parts = []
            for term, value in terms.items():
                mag = f"{abs(value):.{precision}g}"
                body = mag if term == "1" else f"{mag} {term}"
                parts.append(("- " if value < 0 else "+ ") + body)
            rhs = " ".join(parts).removeprefix("+ ") if parts else "0"
            out.append(f"d{var}/dt = {rhs}")
        return out

    def print(self, names: Sequence[str] | None = None, precision: int = 3, threshold: float = 0.0,
              file: Any = None) -> None:
        """Print :meth:`equations`, one per line (as ``pysindy.SINDy.print``)."""
        import sys

        stream = sys.stdout if file is None else file
        for line in self.equations(names, precision, threshold):
            stream.write(line + "\n")
