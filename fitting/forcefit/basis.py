"""The law whose terms are fitted (:func:`resolve_law`: a shortcut name or
a law object) and its unit term forces on the runs' snapshots
(:class:`Basis`), cached per term on the ranges it depends on."""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.law_terms import check_force_law, range_dependencies, taken_path, unit_term_forces, with_ranges
from particles.params import ForceParams

from .data import ForceRun
from .gauge import projector

__all__ = ["resolve_law", "Basis", "CACHE_DEPTH"]

#: values kept per term and snapshot set: the last CACHE_DEPTH range values used. Two, so that a
#: finite-difference Jacobian (one range moved at a time, back to the base point for the next) finds
#: every term it did not move at the base point; with one, each range's step evicted the base value
#: of the terms the step before moved, and those were computed again
CACHE_DEPTH = 2


def resolve_law(law: Any) -> Any:
    if isinstance(law, str) and law != "effective":
        if law == "builtin":
            return ForceParams(lam=1.0)
        from particles.presets import preset, preset_names

        if law in preset_names():
            return preset(law).params
        raise ValueError(f"law must be 'builtin', 'effective', a preset name {tuple(preset_names())}, or a law object, "
                         f"got {law!r}")
    return check_force_law(law)


class Basis:
    """Unit term forces of the runs' snapshots, cached per term on the
    values of the ranges that term depends on; ``path`` is the pair
    kernels' (:mod:`particles.pair_path`), ``evaluations`` and
    ``snapshot_evaluations`` count the calls of the term forces and the
    snapshots they evaluated."""

    def __init__(self, law: Any, groups: dict[str, tuple[str, ...]], ranges: tuple[str, ...], runs: list[ForceRun],
                 *, path: str = "auto", progress: Any = None, gauge: str | None = None):
        self.law = law
        self.path = path
        self.gauge = gauge  # the columns come out with the gauge's directions projected off
        self.progress = progress  # called with the snapshots evaluated by each call of the term forces
        self.groups = groups
        self.terms = tuple(t for members in groups.values() for t in members)
        self.ranges = ranges
        self.runs = runs
        self.deps = {t: tuple(r for r in range_dependencies(law, t) if r in ranges) for t in self.terms}
        self.cache: dict[tuple, list[tuple[tuple, np.ndarray]]] = {}  # most recently used last
        self.evaluations = 0
        self.snapshot_evaluations = 0
        self.taken: set[str] = set()  # the paths the term forces took ("gram", "direct")
        # the path taken per snapshot set, decided once ("auto" checks the snapshots' offset, a pass over them)
        self.paths: dict[tuple, str] = {}

    @property
    def path_taken(self) -> str | None:
        """"gram", "direct", or "direct+gram" when the snapshot sets took
        different paths; None before any term forces were computed."""
        return "+".join(sorted(self.taken)) or None

    def columns(self, theta: np.ndarray, run: int, rows: np.ndarray | None = None) -> np.ndarray:
        """(K, T, N, d) unit forces of run ``run`` (its snapshots ``rows``) at
        ranges theta, term-major (each column's forces contiguous: the
        design's transpose, made in one copy from the cached terms)."""
        values = dict(zip(self.ranges, theta))
        tag = None if rows is None else rows.tobytes()
        missing = []
        out = {}
        for term in self.terms:
            key = tuple(values[r] for r in self.deps[term])
            kept = self.cache.setdefault((run, tag, term), [])
            hit = next((i for i, (k, _) in enumerate(kept) if k == key), None)
            if hit is None:
                missing.append(term)
            else:
                kept.append(kept.pop(hit))
                out[term] = kept[-1][1]
        X = self.runs[run].X
        shape = X.shape if rows is None else (len(rows),) + X.shape[1:]
        if missing or self.gauge is not None:
            X = X if rows is None else X[rows]
        if missing:
            law = with_ranges(self.law, self.ranges, theta)
            path = self.paths.get((run, tag))
            if path is None:
                path = self.paths[(run, tag)] = taken_path(law, self.path, X, self.runs[run].train)
            self.taken.add(path)
            fresh = unit_term_forces(law, X, self.runs[run].train, missing, path=self.path if path == "own" else path)
            self.evaluations += 1
            self.snapshot_evaluations += len(X)
            if self.progress is not None:
                self.progress(len(X))
            for k, term in enumerate(missing):
                key = tuple(values[r] for r in self.deps[term])
                kept = self.cache[(run, tag, term)]
                # a view pins the whole call's array: a term no range moves (decay) is kept for the
                # whole fit, so it keeps a copy of its own
                value = fresh[:, k] if self.deps[term] else fresh[:, k].copy()
                kept.append((key, value))
                del kept[:-CACHE_DEPTH]
                out[term] = value
        cols = np.empty((len(self.groups),) + shape)
        proj = projector(X, self.gauge) if self.gauge is not None else None
        for k, members in enumerate(self.groups.values()):
            np.copyto(cols[k], out[members[0]])
            for term in members[1:]:
                cols[k] += out[term]
            if proj is not None:
                cols[k] = proj(cols[k])
        return cols
