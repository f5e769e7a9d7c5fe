"""Linear relations among the states (a conserved total such as S + I + R = 1).

When the sampled states satisfy c . x = constant to within the measurement
noise, a polynomial library is degenerate on the data: the constant column
equals c . x (up to scale), and with products every monomial m equals
m (c . x) / constant. The regression then has no unique solution and
selects an arbitrary member of a family of equivalent systems.
:func:`linear_relation` finds such a relation; ``ODEModel.fit`` warns with
:class:`LinearRelationWarning` and records it in ``fit_info_``.
"""

from __future__ import annotations

import numpy as np

from .noise import noise_level

__all__ = ["LinearRelationWarning", "linear_relation", "degenerates", "warning_text"]

#: a direction counts as constant when the states' RMS along it is at most
#: this many times the noise's standard deviation along it. Measured ratio
#: (docs/fitting.md): 0.98-1.03 for SIR's S + I + R = 1 at 1 and 5 % noise;
#: 1.37 and above for 12 systems without a relation at 5 % noise (they approach
#: 1 as the noise grows: then the data do not excite that direction either)
NOISE_FACTOR = 1.2


class LinearRelationWarning(UserWarning):
    """The fitted states satisfy a linear relation, so the library's columns
    are linearly dependent on the data and the coefficients are not unique."""


def linear_relation(samples: list[tuple[np.ndarray, np.ndarray]], sigma: np.ndarray | None = None) -> dict | None:
    """The direction along which the states vary least against the noise, if
    they vary no more than the noise does along it.

    Parameters
    ----------
    samples : list of (x, t)
        Each run's states (T_r, K) and times (T_r,).
    sigma : ndarray, shape (K,), optional
        Noise level per column; :func:`fitting.ode.noise.noise_level`
        of the samples when None.

    Returns
    -------
    dict or None
        ``combination`` (c, scaled so that its largest entry is 1), ``value``
        (mean of c . x), ``rms`` (RMS of c . x about it) and ``noise_sd``
        (the white noise's standard deviation along c, from
        :func:`fitting.ode.noise.noise_level`), when K >= 2, there are
        more samples than columns and rms <= 1.2 noise_sd + 1e-9 max|x|;
        None otherwise. The direction minimises rms / noise_sd: the states
        are scaled by each column's noise level before the smallest singular
        direction is taken (a column without measurable noise by 1e-9 of
        its largest |x|), so a relation among noisy columns is found next to
        a quiet one.
    """
    runs = [np.asarray(x, dtype=float) for x, _ in samples]
    X = np.vstack(runs)
    K = X.shape[1]
    if K < 2 or X.shape[0] <= K:
        return None
    sigma = noise_level(runs, [t for _, t in samples]) if sigma is None else np.asarray(sigma, dtype=float)
    floor = 1e-9 * np.maximum(np.max(np.abs(X), axis=0), np.finfo(float).tiny)
    unit = np.maximum(sigma, floor)
    centred = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(centred / unit, full_matrices=False)
    c = vt[-1] / unit
    c = c / np.max(np.abs(c))  # largest entry 1 (up to sign): S + I + R = 1, not 0.577 (S + I + R)
    c = c if c[np.argmax(np.abs(c))] > 0 else -c
    rms = float(np.sqrt(np.mean((centred @ c) ** 2)))
    noise_sd = float(np.sqrt(np.sum((c * sigma) ** 2)))
    if rms > NOISE_FACTOR * noise_sd + 1e-9 * float(np.max(np.abs(X))):
        return None
    return {"combination": c.tolist(), "value": float(X.mean(axis=0) @ c), "rms": rms, "noise_sd": noise_sd}


def degenerates(library, K: int, relation: dict) -> bool:
    """Whether ``relation`` makes ``library``'s columns linearly dependent on
    the data: always when c . x is about 0 (the linear columns themselves), a
    constant column or products present (1 = c . x / value, m = m c . x /
    value), or columns that are not polynomials (cannot tell: assume so);
    not for a library of the K linear terms only."""
    degrees = np.asarray(library.degrees(K))
    small = abs(relation["value"]) <= NOISE_FACTOR * relation["noise_sd"] + 1e-12
    return bool(small or not np.all(degrees == 1))


#: largest components of a relation named in the warning
SHOWN_TERMS = 6


def warning_text(relation: dict, names: list[str] | None = None) -> str:
    """The one-line sentence ``ODEModel.fit`` warns with, in the variables'
    ``names`` (default x1 .. xK)."""
    c = np.asarray(relation["combination"], dtype=float)
    names = names or [f"x{j + 1}" for j in range(len(c))]
    shown = sorted(np.argsort(-np.abs(c))[:SHOWN_TERMS].tolist())  # the largest, in variable order
    shown = [j for j in shown if abs(c[j]) > 1e-3]
    terms = " ".join(f"{'-' if c[j] < 0 else '+'} {abs(c[j]):.3g} {names[j]}" for j in shown).lstrip("+ ")
    rest = int(np.sum(np.abs(c) > 1e-3)) - len(shown)
    if rest > 0:
        terms += f" (and {rest} smaller terms)"
    return (f"the states vary along {terms} no more than the noise does (RMS {relation['rms']:.2g}, noise "
            f"{relation['noise_sd']:.2g}), so the library's columns are nearly dependent and the coefficients are "
            f"not determined along that direction; fit one variable fewer or give more varied runs "
            f"(fit_info_['linear_relation'] has the numbers)")
