"""Parameter sweeps over seeds, run in parallel with joblib.

Runs go wherever ``joblib.parallel_config`` sends them (local processes by
default, a Dask cluster with ``parallel_config(backend="dask")``). A sweep can
keep a *journal*, a JSON Lines file to which each finished run is appended:
a killed sweep started again with the same journal runs only what is
missing, and a sweep split into shards (``shard=(i, n)``, one per machine)
is put back together with :func:`merge_journals`.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from joblib import Parallel, delayed

from .metrics import STRUCTURES, structure_metrics
from .presets import Preset, preset
from .simulate import NonFiniteStateError
from .core.io import atomic_write, json_default
from .core.limits import check_budget
from .core.workers import exit_with_parent
from .core.validation import check_path, check_seeds, describe

__all__ = ["sweep", "SweepTable", "grid_points", "merge_journals", "JournalError", "parse_shard", "check_sweep_size",
           "SWEEP_RUN_BYTES", "SWEEP_TASK_BYTES"]

#: first line of a journal names the format
JOURNAL_FORMAT = "embdyn-sweep-journal/1"


class JournalError(ValueError):
    """A sweep journal that cannot be used: damaged, or from another sweep."""

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

    def __post_init__(self) -> None:
        if not isinstance(self.rows, list) or not all(isinstance(r, dict) for r in self.rows):
            raise TypeError(f"rows must be a list of dicts (one per run), got {describe(self.rows)}")
        if isinstance(self.parameters, str) or not isinstance(self.parameters, (list, tuple)) \
                or not all(isinstance(k, str) for k in self.parameters):
            raise TypeError(f"parameters must be a list of column names, got {describe(self.parameters)}")
        self.parameters = list(self.parameters)
        if self.rows:
            columns = set(self.rows[0])
            missing = [k for k in self.parameters if k not in columns]
            if missing:
                raise ValueError(f"parameters must name columns of the rows, got {missing} not among {sorted(columns)}")

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    @property
    def columns(self) -> list[str]:
        return list(self.rows[0]) if self.rows else []

    def column(self, name: str) -> np.ndarray:
        """The values of one column over the rows."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a column name (a str), got {describe(name)}")
        if self.rows and name not in self.rows[0]:
            raise ValueError(f"name must be one of the columns {self.columns}, got {name!r}")
        return np.array([row[name] for row in self.rows])

    def rates(self, by: Sequence[str] | None = None) -> dict[tuple, dict[str, float]]:
        """Fraction of runs of each structure, grouped by the ``by`` columns
        (default: the swept parameters)."""
        if by is not None and (isinstance(by, str) or not isinstance(by, (list, tuple))):
            raise TypeError(f"by must be a list of column names, got {describe(by)}")
        by = list(self.parameters if by is None else by)
        for key in by:
            if self.rows and key not in self.rows[0]:
                raise ValueError(f"by must name columns of the table {self.columns}, got {key!r}")
        groups: dict[tuple, list[str]] = {}
        for row in self.rows:
            groups.setdefault(tuple(row[k] for k in by), []).append(row["structure"])
        kinds = list(STRUCTURES) + [DIVERGED]
        return {key: {k: structures.count(k) / len(structures) for k in kinds} for key, structures in groups.items()}

    #: rows shown by ``repr`` (the first and the last half of them)
    REPR_ROWS = 10

    def __repr__(self) -> str:
        """A readable summary: the size, the structure shares per setting
        and the first and last rows as an aligned table."""
        n = len(self.rows)
        head = (f"SweepTable: {n} run{'s' if n != 1 else ''}, parameters "
                f"{', '.join(self.parameters) if self.parameters else '(none)'}")
        if not n:
            return head
        lines = [head]
        if all("structure" in row for row in self.rows):
            lines.append("structure shares per setting:")
        for key, shares in (self.rates().items() if len(lines) > 1 else ()):
            setting = ", ".join(f"{k}={v}" for k, v in zip(self.parameters, key)) or "all runs"
            lines.append(f"  {setting}: " + ", ".join(f"{k} {v:.2f}" for k, v in shares.items() if v > 0))
        columns = self.columns
        shown = list(range(n)) if n <= self.REPR_ROWS else \
            list(range(self.REPR_ROWS // 2)) + [-1] + list(range(n - self.REPR_ROWS // 2, n))

        def cell(value: Any) -> str:
            return f"{value:.4g}" if isinstance(value, float) else str(value)

        table = [[cell(self.rows[i].get(c, "")) if i >= 0 else "..." for c in columns] for i in shown]
        widths = [max(len(c), *(len(r[j]) for r in table)) for j, c in enumerate(columns)]
        lines.append("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in table]
        return "\n".join(lines)

    @classmethod
    def from_csv(cls, path: str | os.PathLike, parameters: Sequence[str] | None = None) -> "SweepTable":
        """Read a table written by :meth:`to_csv`; numbers are parsed back.
        ``parameters`` defaults to the columns before ``seed``."""
        path = check_path(path, "path")
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            columns = list(reader.fieldnames or [])
            rows = [{k: _parse_cell(v) for k, v in row.items()} for row in reader]
        if parameters is None:
            parameters = columns[: columns.index("seed")] if "seed" in columns else []
        return cls(rows=rows, parameters=parameters)

    def to_pandas(self):
        """The rows as a ``pandas.DataFrame`` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("SweepTable.to_pandas needs pandas: pip install '.[interop]' in the repository root (or pip install pandas)") from exc
        columns = list(dict.fromkeys(k for row in self.rows for k in row))  # every row's keys, in order
        return pd.DataFrame(self.rows, columns=columns or None)

    def to_csv(self, path: str | os.PathLike) -> Path:
        """Write the rows as CSV (atomically; missing parent folders are created)."""
        path = check_path(path, "path")

        def write(fh) -> None:
            text = io.StringIO(newline="")
            writer = csv.DictWriter(text, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
            fh.write(text.getvalue().encode())

        return atomic_write(path, write)


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
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"grid must be keyed by parameter names (str), got the key {describe(n)}")
        values = [list(grid[n]) for n in names]
        for n, v in zip(names, values):
            if not v:
                raise ValueError(f"grid entry {n!r} has no values")
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    points = []
    for i, point in enumerate(grid):
        if not isinstance(point, Mapping) or not all(isinstance(k, str) for k in point):
            raise TypeError(f"grid must be a dict of value lists or a list of dicts of parameter name -> value, "
                            f"got {describe(point)} at index {i}")
        points.append(dict(point))
    if not points:
        raise ValueError("grid holds no points")
    return points


#: memory a sweep keeps for each of its runs until the table is written: the row (14 values), its
#: journal key, and the CSV text (about 0.9 KiB measured with tracemalloc, doubled for the summaries)
SWEEP_RUN_BYTES = 2048
#: memory for each run of the whole sweep, also those of other shards: its task and seed in the task
#: list and the journal header (about 0.15 KiB measured)
SWEEP_TASK_BYTES = 256


def _count(values: Any, name: str) -> int:
    """How many values ``values`` holds, without expanding a range (a generator is listed)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list of values, got {describe(values)}")
    return len(values) if hasattr(values, "__len__") else len(list(values))


def check_sweep_size(grid: Any, seeds: Any, shard: Any = None, *, names: tuple[str, str] = ("grid", "seeds")
                     ) -> int:
    """The number of runs of a sweep (grid points x seeds), refused with a
    ValueError naming ``names`` before anything is expanded or allocated when
    the rows and the task list it keeps (:data:`SWEEP_RUN_BYTES` a run of
    this shard, :data:`SWEEP_TASK_BYTES` a run of the whole sweep) exceed
    the memory budget (:func:`particles.core.limits.memory_budget`: a
    quarter of the machine's memory, or ``EMBDYN_MEMORY_BUDGET``)."""
    grid_name, seeds_name = names
    if isinstance(grid, Mapping):
        points = 1
        for key in grid:
            points *= _count(grid[key], f"{grid_name} entry {key!r}")
    elif isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__"):
        raise TypeError(f"{grid_name} must be a dict of value lists or a list of dicts, got {describe(grid)}")
    else:
        points = _count(grid, grid_name)
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, (bool, np.bool_)):
        n_seeds = max(int(seeds), 1)
    elif isinstance(seeds, (str, bytes, dict)) or not hasattr(seeds, "__iter__"):
        n_seeds = 1  # check_seeds names the mistake
    else:
        n_seeds = _count(seeds, seeds_name)
    runs = points * n_seeds
    shards = parse_shard(shard)[1] if shard is not None else 1
    mine = -(-runs // shards)
    need = runs * SWEEP_TASK_BYTES + mine * SWEEP_RUN_BYTES
    what = (f"{seeds_name} {n_seeds} x {points} {grid_name} point{'s' if points != 1 else ''} = {runs} runs"
            + (f" ({mine} in this shard)" if shards > 1 else ""))
    check_budget(need, what, f"use fewer {seeds_name} or {grid_name} points, or split the sweep into shards "
                             f"(shard=(i, n); embdyn sweep --shard i/n)")
    return runs


def _run_one(base: Preset, overrides: dict[str, Any], seed: int, caller: int | None = None) -> dict[str, Any]:
    if caller is not None:  # a local worker process ends with the sweep that started it
        exit_with_parent(caller)
    config = base.replace(**overrides)
    row: dict[str, Any] = dict(overrides)
    row["seed"] = seed
    try:
        traj = config.run(seed, parallel=False)
    except NonFiniteStateError as exc:
        row.update(circularity=np.nan, frequency=0, plane_share=np.nan, accuracy_euclidean=np.nan,
                   accuracy_angular=np.nan, accuracy_pairs="", grid_defects=-1, line_ratio=np.nan,
                   structure=DIVERGED, final_energy=np.nan, diverged_at=exc.step)
        return row
    row.update(structure_metrics(traj.final, config.dataset()))
    row["final_energy"] = float(traj.energy[-1])
    row["diverged_at"] = -1
    return row


def parse_shard(shard: Any) -> tuple[int, int] | None:
    """``shard`` as ``(i, n)`` with 0 <= i < n, from a pair or a string
    ``"i/n"``; None stays None."""
    if shard is None:
        return None
    if isinstance(shard, str):
        parts = shard.split("/")
        try:
            if len(parts) != 2:
                raise ValueError
            shard = (int(parts[0]), int(parts[1]))
        except ValueError:
            raise ValueError(f"shard must look like i/n with integers 0 <= i < n, got {shard!r}") from None
    if (not isinstance(shard, (tuple, list)) or len(shard) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in shard)):
        raise TypeError(f"shard must be a pair (i, n) of ints or a string 'i/n', got {shard!r}")
    i, n = int(shard[0]), int(shard[1])
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"shard must satisfy 0 <= i < n with n >= 1, got {i}/{n}")
    return i, n


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds; anything else as is."""
    return value.item() if isinstance(value, np.generic) else value


def _task_key(point: Mapping[str, Any], seed: int) -> str:
    return json.dumps([sorted((k, _plain(v)) for k, v in point.items()), int(seed)], default=json_default)


def _journal_header(base: Preset, points: list[dict[str, Any]], seeds: list[int],
                    shard: tuple[int, int] | None) -> dict[str, Any]:
    return {"format": JOURNAL_FORMAT, "base": base.to_dict(), "grid": points, "seeds": seeds,
            "shard": list(shard) if shard is not None else None}


def read_journal(path: str | os.PathLike) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the rows of a journal. A last line cut short (a run
    killed while writing) is dropped; any other damage raises JournalError
    naming the line."""
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    complete = lines[:-1]  # every finished record ends with a newline
    if not complete:
        raise JournalError(f"journal {path}: no header line (empty or cut short)")
    try:
        header = json.loads(complete[0])
    except ValueError:
        raise JournalError(f"journal {path}, line 1: not a JSON header") from None
    if not isinstance(header, dict) or header.get("format") != JOURNAL_FORMAT:
        raise JournalError(f"journal {path}, line 1: not a sweep journal (format {JOURNAL_FORMAT!r} expected)")
    for field_name in ("base", "grid", "seeds"):
        if field_name not in header:
            raise JournalError(f"journal {path}, line 1: header field {field_name!r} missing")
    rows = []
    for number, line in enumerate(complete[1:], start=2):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise JournalError(f"journal {path}, line {number}: damaged record") from None
        if not isinstance(record, dict) or not isinstance(record.get("row"), dict) or "seed" not in record["row"]:
            raise JournalError(f"journal {path}, line {number}: record without a 'row' holding a 'seed'")
        rows.append(record["row"])
    return header, rows


def _refuse_linked_journal(path: Path) -> None:
    if path.is_symlink():
        raise JournalError(f"journal {str(path)!r} is a symbolic link (to {os.readlink(path)!r}), which is not "
                           "followed; remove the link or choose another journal (with embdyn sweep: another --out)")


def _open_journal(path: Path) -> int:
    """The journal opened for reading and appending, never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        _refuse_linked_journal(path)
        raise type(exc)(exc.errno, f"cannot open the journal {str(path)!r}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise JournalError(f"journal {str(path)!r} is not a regular file")
    return fd


class _Journal:
    """Appends finished rows to a journal, one complete line per write."""

    def __init__(self, path: Path, header: dict[str, Any]):
        self.path = path
        if not path.exists() or path.stat().st_size == 0:
            line = (json.dumps(header, default=json_default) + "\n").encode()
            atomic_write(path, lambda fh: fh.write(line))
        self.fh = os.fdopen(_open_journal(path), "r+b")
        self._truncate_partial_line()
        self.fh.seek(0, os.SEEK_END)

    def _truncate_partial_line(self) -> None:
        data = self.fh.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            self.fh.truncate(end)

    def append(self, row: dict[str, Any]) -> None:
        self.fh.write((json.dumps({"row": row}, default=json_default) + "\n").encode())
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _same_sweep(a: dict[str, Any], b: dict[str, Any], shard: bool = False) -> bool:
    keys = ("base", "grid", "seeds") + (("shard",) if shard else ())
    return json.dumps([a.get(k) for k in keys], sort_keys=True, default=json_default) == \
        json.dumps([b.get(k) for k in keys], sort_keys=True, default=json_default)


def _check_sweep_args(grid, seeds, base, n_jobs, backend, shard) -> tuple[Preset, list, list[int], Any]:
    """The arguments of :func:`sweep` checked before any work: (base, points, seeds, shard)."""
    base = preset(base) if isinstance(base, str) else base
    if not isinstance(base, Preset):
        raise TypeError(f"base must be a Preset or a preset name, got {type(base).__name__}")
    check_sweep_size(grid, seeds, shard)  # before the grid or the seeds are expanded
    # plain Python values (NumPy scalars included), so that journal keys and
    # headers compare equal after a JSON round trip
    points = [{k: _plain(v) for k, v in point.items()} for point in grid_points(grid)]
    for i, point in enumerate(points):  # validate every point before any work starts
        try:
            base.replace(**point)
        except (ValueError, TypeError) as exc:
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(f"grid point {i} ({describe(point)}): {exc}") from None
    seed_list = check_seeds(seeds, count=True, distinct=False)  # repeated seeds run again, as before
    shard = parse_shard(shard)
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero int (negative: joblib's count from all cores) or None, "
                         f"got {n_jobs!r}")
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"backend must be a joblib backend name or None, got {type(backend).__name__}")
    return base, points, seed_list, shard


def sweep(grid: Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]], seeds: int | Iterable[int] = 10, *,
          base: Preset | str = "grids", n_jobs: int | None = -1, backend: str | None = None,
          callback: Callable[[int, int], None] | None = None, journal: str | os.PathLike | None = None,
          shard: tuple[int, int] | str | None = None) -> SweepTable:
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
    n_jobs : int or None, default -1
        joblib workers: -1 all cores (-2 all but one, ...), as in joblib;
        None leaves it to joblib (an active ``joblib.parallel_config``'s
        ``n_jobs``, else 1). Each run uses the serial kernel.
    backend : str, optional
        joblib backend; by default the one of an active
        ``joblib.parallel_config`` (e.g. ``"dask"`` with a
        ``dask.distributed.Client``), else local processes (loky).
    callback : callable(done, total), optional
        Called after each finished run (runs found in the journal count as
        done at the start).
    journal : path, optional
        A JSON Lines file; each finished run is appended as it finishes.
        Started again with the same journal (same base, grid, seeds), the
        sweep runs only the missing runs; a journal of another sweep raises
        :class:`JournalError`.
    shard : (i, n) or "i/n", optional
        Run only every n-th task starting at i (0 <= i < n), e.g. one shard
        per machine; put the shards' journals together with
        :func:`merge_journals`.

    Returns
    -------
    SweepTable
        The rows of this sweep (or shard), in task order.

    Raises
    ------
    ValueError
        Before anything is expanded, when grid points x seeds exceed the
        memory budget (:func:`check_sweep_size`; ``EMBDYN_MEMORY_BUDGET``).
    JournalError
        For a damaged journal, another sweep's, or a symbolic link.
    """
    base, points, seed_list, shard = _check_sweep_args(grid, seeds, base, n_jobs, backend, shard)
    tasks = _shard_tasks(points, seed_list, shard)
    names = list(dict.fromkeys(name for point in points for name in point))
    found, writer = _resume_journal(journal, _journal_header(base, points, seed_list, shard), names)
    todo = [(point, seed) for point, seed in tasks if _task_key(point, seed) not in found]
    runner = _runner(n_jobs, backend)
    done = len(tasks) - len(todo)
    if callback is not None and done:
        callback(done, len(tasks))
    try:
        _run_tasks(runner, base, todo, names, found, writer, callback, done, len(tasks))
    finally:
        if writer is not None:
            writer.close()
    rows = [found[_task_key(point, seed)] for point, seed in tasks]
    return SweepTable(rows=rows, parameters=names)


def _shard_tasks(points: list[dict[str, Any]], seeds: list[int], shard: tuple[int, int] | None
                 ) -> list[tuple[dict[str, Any], int]]:
    """Every (grid point, seed) of a sweep in task order, or those of ``shard``: every n-th from i."""
    tasks = [(point, seed) for point in points for seed in seeds]
    if shard is not None:
        tasks = tasks[shard[0]::shard[1]]
    return tasks


def _row_key(row: Mapping[str, Any], names: list[str]) -> str:
    """The task key of a finished row: its swept parameters among ``names``, and its seed."""
    return _task_key({n: row[n] for n in names if n in row}, row["seed"])


def _resume_journal(journal: str | os.PathLike | None, header: dict[str, Any], names: list[str]
                    ) -> tuple[dict[str, dict[str, Any]], _Journal | None]:
    """The finished rows of a sweep's journal by task key, and the journal
    opened for appending (none without ``journal``). A journal holding only
    its header is started afresh; another sweep's, or a symbolic link,
    raises JournalError."""
    found: dict[str, dict[str, Any]] = {}
    if journal is None:
        return found, None
    path = check_path(journal, "journal")
    _refuse_linked_journal(path)  # neither read, removed nor appended to through a link
    if path.exists() and path.stat().st_size > 0:
        old, rows = read_journal(path)
        if not rows:  # only a header (nothing finished): start it afresh
            path.unlink()
        elif not _same_sweep(old, header, shard=True):
            raise JournalError(f"journal {path} belongs to another sweep (base, grid or seeds differ); use "
                               "another journal file (with embdyn sweep: another --out), or delete it")
        for row in rows:
            found[_row_key(row, names)] = row
    return found, _Journal(path, header)


def _runner(n_jobs: int | None, backend: str | None) -> Parallel:
    """The joblib runner of a sweep, yielding rows as they finish (``n_jobs``
    None: joblib's own choice, an active ``parallel_config``'s, else 1)."""
    return Parallel(n_jobs=n_jobs, return_as="generator_unordered",
                    **({"backend": backend} if backend is not None else {}))


def _run_tasks(runner: Parallel, base: Preset, todo: list[tuple[dict[str, Any], int]], names: list[str],
               found: dict[str, dict[str, Any]], writer: _Journal | None,
               callback: Callable[[int, int], None] | None, done: int, total: int) -> None:
    """Run the ``todo`` tasks of a sweep, putting each finished row into
    ``found`` (and appending it to the journal ``writer``) and reporting
    ``callback(done, total)`` after each, from ``done`` runs finished before."""
    for row in runner(delayed(_run_one)(base, point, seed, os.getpid()) for point, seed in todo):
        found[_row_key(row, names)] = row
        if writer is not None:
            writer.append(row)
        done += 1
        if callback is not None:
            callback(done, total)


def merge_journals(paths: Sequence[str | os.PathLike]) -> SweepTable:
    """One table from the journals of a sweep's shards (or of one sweep).

    Every journal must belong to the same sweep (base, grid, seeds), and
    together they must hold every (grid point, seed) exactly once; otherwise
    :class:`JournalError` says which runs are missing or repeated.
    """
    if isinstance(paths, (str, os.PathLike)) or not paths:
        raise TypeError("paths must be a non-empty list of journal files")
    header = None
    found: dict[str, dict[str, Any]] = {}
    for path in paths:
        h, rows = read_journal(path)
        if header is None:
            header = h
        elif not _same_sweep(h, header):
            raise JournalError(f"journal {path} belongs to another sweep than {paths[0]}")
        names = list(dict.fromkeys(name for point in h["grid"] for name in point))
        for row in rows:
            key = _task_key({n: row[n] for n in names if n in row}, row["seed"])
            if key in found:
                raise JournalError(f"journal {path}: run {key} appears twice across the journals")
            found[key] = row
    assert header is not None
    names = list(dict.fromkeys(name for point in header["grid"] for name in point))
    keys = [_task_key(point, seed) for point in header["grid"] for seed in header["seeds"]]
    missing = [k for k in keys if k not in found]
    if missing:
        raise JournalError(f"{len(missing)} of {len(keys)} runs are missing from the journals (first: {missing[0]}); "
                           "finish the shards (the same command resumes them)")
    return SweepTable(rows=[found[k] for k in keys], parameters=names)
