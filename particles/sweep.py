"""Parameter sweeps over seeds, run in parallel with joblib."""

from __future__ import annotations

import csv
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from joblib import Parallel, delayed

from .metrics import STRUCTURES, structure_metrics
from .presets import Preset, preset
from .simulate import NonFiniteStateError

__all__ = ["sweep", "SweepTable", "grid_points"]

DIVERGED = "diverged"


@dataclass
class SweepTable:
    """Rows of a sweep: the parameters of each run and its final metrics.

    Each row is a dict with the swept parameters, ``seed``, ``circularity``,
    ``frequency``, ``accuracy_euclidean``, ``accuracy_angular``,
    ``grid_defects``, ``structure`` (one of STRUCTURES, or ``"diverged"``)
    and ``final_energy``.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    parameters: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    @property
    def columns(self) -> list[str]:
        return list(self.rows[0]) if self.rows else []

    def column(self, name: str) -> np.ndarray:
        if self.rows and name not in self.rows[0]:
            raise KeyError(f"no column {name!r}; columns are {self.columns}")
        return np.array([row[name] for row in self.rows])

    def rates(self, by: Sequence[str] | None = None) -> dict[tuple, dict[str, float]]:
        """Fraction of runs of each structure, grouped by the ``by`` columns
        (default: the swept parameters)."""
        by = list(self.parameters if by is None else by)
        groups: dict[tuple, list[str]] = {}
        for row in self.rows:
            groups.setdefault(tuple(row[k] for k in by), []).append(row["structure"])
        kinds = list(STRUCTURES) + [DIVERGED]
        return {key: {k: structures.count(k) / len(structures) for k in kinds} for key, structures in groups.items()}

    @classmethod
    def from_csv(cls, path: str | os.PathLike, parameters: Sequence[str] | None = None) -> "SweepTable":
        """Read a table written by :meth:`to_csv`; numbers are parsed back.
        ``parameters`` defaults to the columns before ``seed``."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path (str or os.PathLike), got {type(path).__name__}")
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            columns = list(reader.fieldnames or [])
            rows = [{k: _parse_cell(v) for k, v in row.items()} for row in reader]
        if parameters is None:
            parameters = columns[: columns.index("seed")] if "seed" in columns else []
        return cls(rows=rows, parameters=list(parameters))

    def to_csv(self, path: str | os.PathLike) -> Path:
        """Write the rows as CSV (atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        os.replace(tmp, path)
        return path


def _parse_cell(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def grid_points(grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a dict of value lists, or a list of dicts as given."""
    if isinstance(grid, Mapping):
        names = list(grid)
        values = [list(grid[n]) for n in names]
        for n, v in zip(names, values):
            if not v:
                raise ValueError(f"grid entry {n!r} has no values")
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    points = [dict(point) for point in grid]
    if not points:
        raise ValueError("grid holds no points")
    return points


def _run_one(base: Preset, overrides: dict[str, Any], seed: int) -> dict[str, Any]:
    config = base.replace(**overrides)
    row: dict[str, Any] = dict(overrides)
    row["seed"] = seed
    try:
        traj = config.run(seed, parallel=False)
    except NonFiniteStateError as exc:
        row.update(circularity=np.nan, frequency=0, accuracy_euclidean=np.nan, accuracy_angular=np.nan,
                   grid_defects=-1, line_ratio=np.nan, structure=DIVERGED, final_energy=np.nan,
                   diverged_at=exc.step)
        return row
    row.update(structure_metrics(traj.final, config.dataset()))
    row["final_energy"] = float(traj.energy[-1])
    row["diverged_at"] = -1
    return row


def sweep(grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]], seeds: int | Iterable[int] = 10, *,
          base: Preset | str = "grids", n_jobs: int | None = None, backend: str = "loky",
          callback: Callable[[int, int], None] | None = None) -> SweepTable:
    """Run every (grid point, seed) combination and tabulate final structure.

    Parameters
    ----------
    grid : dict of name -> values, or list of dicts
        Overrides of the base preset: any ForceParams field (``lam``,
        ``wd``, ``sig_t``, ``alignment``, ...) or run setting (``steps``,
        ``dt``, ``temperature``, ...). A dict is expanded as a Cartesian product.
    seeds : int or iterable of int
        ``range(seeds)`` or the given seeds.
    base : Preset or preset name
    n_jobs : int, optional
        joblib workers (default: all cores). Each run uses the serial kernel.
    backend : str
        joblib backend, ``"loky"`` (local processes) by default.
    callback : callable(done, total), optional
        Called after each finished run.

    Returns
    -------
    SweepTable
    """
    base = preset(base) if isinstance(base, str) else base
    if not isinstance(base, Preset):
        raise TypeError(f"base must be a Preset or a preset name, got {type(base).__name__}")
    points = grid_points(grid)
    for point in points:  # validate every point before any work starts
        base.replace(**point)
    if isinstance(seeds, (str, bytes, bool)) or not (isinstance(seeds, (int, np.integer)) or hasattr(seeds, "__iter__")):
        raise TypeError(f"seeds must be an int or an iterable of ints, got {type(seeds).__name__}")
    seed_list = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else list(seeds)
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in seed_list):
        raise TypeError("seeds must be ints")
    seed_list = [int(s) for s in seed_list]
    if not seed_list:
        raise ValueError("seeds must name at least one seed")
    if any(s < 0 for s in seed_list):
        raise ValueError("seeds must be >= 0")
    tasks = [(point, seed) for point in points for seed in seed_list]
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else n_jobs
    runner = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator")
    rows = []
    for done, row in enumerate(runner(delayed(_run_one)(base, point, seed) for point, seed in tasks), start=1):
        rows.append(row)
        if callback is not None:
            callback(done, len(tasks))
    names = list(dict.fromkeys(name for point in points for name in point))
    return SweepTable(rows=rows, parameters=names)
