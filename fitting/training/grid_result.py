"""The result of a toy-model grid (:class:`GridResult`): one record per cell
and seed, saved as JSON with a CSV beside it, checked on load."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from effective_theory.metrics import PHASES, classify_phase
from particles.core.io import atomic_write_text


__all__ = ["GridResult", "GridFormatError", "GRID_FIELDS", "RECORD_KEYS", "TANH_BEFORE_OPTION", "check_grid", "finite_or_none"]


GRID_FIELDS = ("decoder_lr", "decoder_weight_decay", "embedding_lr", "embedding_weight_decay")
RECORD_KEYS = ("seed", "steps_train", "steps_val", "phase", "steps_run", "train_acc", "val_acc", "train_loss",
               "diverged")


class GridFormatError(ValueError):
    """A grid result file is malformed; the message names the field."""


TANH_BEFORE_OPTION = "exact"
"""The tanh of results and checkpoints written before ``train_grid`` had a
``tanh`` option (their meta has no ``tanh`` key)."""


# ------------------------------------------------------------------ results
@dataclass
class GridResult:
    """One record per cell and seed, plus how the grid was run.

    Attributes
    ----------
    records : list of dict
        Grid fields of the cell (e.g. ``decoder_lr``, ``decoder_weight_decay``),
        ``seed``, ``steps_train`` and ``steps_val`` (first step with accuracy
        >= threshold, None if never), ``phase`` (``effective_theory.classify_phase``
        with the run's budget and gap; validation reached without training
        counts as confusion), ``steps_run`` (steps trained before
        the cell stopped), ``train_acc``/``val_acc``/``train_loss`` at the
        last step measured, ``diverged`` (loss became non-finite).
    meta : dict
        ``config``, ``grid``, ``seeds``, ``steps``, ``threshold``, ``gap``,
        ``stop_when``, ``seconds``, ``cell_steps`` (sum of steps over cells),
        ``compiled``, ``torch_version``, ``tanh`` (absent in results made
        before the option: those used ``"exact"``), ``threads`` (torch
        threads per process) and ``n_jobs`` (processes; both absent in
        older results).
    """

    records: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def merge(cls, results: Sequence["GridResult"]) -> "GridResult":
        """One result from runs of the same grid with different seeds (for
        example ``--first-seed 1 --seeds 2`` after a one-seed run). Records
        are ordered by cell, then seed; ``seconds`` and ``cell_steps`` add up."""
        results = list(results)
        if not results:
            raise ValueError("results must hold at least one GridResult")
        first = results[0].meta
        for r in results[1:]:
            for key in ("config", "grid", "steps", "threshold", "gap", "stop_when", "val_without_train"):
                if r.meta.get(key) != first.get(key):
                    raise ValueError(f"results differ in meta[{key!r}]: {first.get(key)!r} vs {r.meta.get(key)!r}")
            tanhs = (first.get("tanh", TANH_BEFORE_OPTION), r.meta.get("tanh", TANH_BEFORE_OPTION))
            if tanhs[0] != tanhs[1]:
                raise ValueError(f"results differ in meta['tanh']: {tanhs[0]!r} vs {tanhs[1]!r}")
        seeds = [s for r in results for s in r.meta.get("seeds", [])]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"results share seeds: {sorted(seeds)}")
        keys = list(first.get("grid", {}))
        order = {tuple(v): i for i, v in enumerate(itertools.product(*first["grid"].values()))} if keys else {}
        records = [rec for r in results for rec in r.records]
        for rec in records:
            if tuple(rec[k] for k in keys) not in order:
                raise ValueError(f"a record's cell {[rec[k] for k in keys]} is not in the grid {first['grid']}")
        records.sort(key=lambda rec: (order[tuple(rec[k] for k in keys)], rec["seed"]))
        meta = {**first, "tanh": first.get("tanh", TANH_BEFORE_OPTION), "seeds": sorted(seeds),
                "seconds": sum(r.meta.get("seconds", 0.0) for r in results),
                "cell_steps": sum(r.meta.get("cell_steps", 0) for r in results)}
        return cls(records, meta)

    def reclassify(self, gap: float | None = None, val_without_train: str = "confusion") -> "GridResult":
        """The same records with phases recomputed from ``steps_train`` and
        ``steps_val`` (for another grokking gap or another treatment of
        validation reached without training)."""
        gap = self.meta.get("gap", 1000.0) if gap is None else gap
        budget = float(self.meta.get("steps", 1e5))
        records = [{**r, "phase": classify_phase(r["steps_train"], r["steps_val"], budget=budget, gap=gap,
                                                 val_without_train=val_without_train)} for r in self.records]
        return GridResult(records, {**self.meta, "gap": float(gap), "val_without_train": val_without_train})

    def phase_counts(self) -> dict[str, int]:
        """Number of records in each phase."""
        return {ph: sum(r["phase"] == ph for r in self.records) for ph in PHASES}

    def majority(self, keys: Sequence[str] | None = None) -> dict[tuple, str]:
        """Majority phase per cell over seeds (ties go to the earlier phase of
        ``PHASES``); cells are keyed by the values of ``keys`` (the grid's
        fields by default)."""
        keys = list(self.meta.get("grid", {})) if keys is None else list(keys)
        votes: dict[tuple, list[str]] = {}
        for r in self.records:
            votes.setdefault(tuple(r[k] for k in keys), []).append(r["phase"])
        return {cell: max(PHASES, key=lambda ph: (v.count(ph), -PHASES.index(ph))) for cell, v in votes.items()}

    # files
    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically as JSON (``.json``: records and meta) or CSV
        (``.csv``: the records)."""
        path = Path(path)
        if path.suffix == ".json":
            text = json.dumps({"meta": self.meta, "records": self.records}, indent=1)
        elif path.suffix == ".csv":
            buf = io.StringIO()
            keys = list(self.records[0]) if self.records else list(RECORD_KEYS)
            writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
            writer.writeheader()
            for r in self.records:
                writer.writerow({k: "" if r[k] is None else r[k] for k in keys})
            text = buf.getvalue()
        else:
            raise ValueError(f"path must end in .json or .csv, got {str(path)!r}")
        return atomic_write_text(path, text)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "GridResult":
        """Read a ``.json`` file written by :meth:`save`."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise GridFormatError(f"{str(path)!r} is not a JSON grid result: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise GridFormatError(f"{str(path)!r}: field 'records' must be a list")
        for i, r in enumerate(data["records"]):
            if not isinstance(r, dict):
                raise GridFormatError(f"{str(path)!r}: field 'records[{i}]' must be an object")
            for key in ("seed", "steps_train", "steps_val", "phase"):
                if key not in r:
                    raise GridFormatError(f"{str(path)!r}: field 'records[{i}].{key}' is missing")
            if r["phase"] not in PHASES:
                raise GridFormatError(f"{str(path)!r}: field 'records[{i}].phase' must be one of {PHASES}, "
                                      f"got {r['phase']!r}")
        return cls(records=data["records"], meta=data.get("meta", {}))


# ------------------------------------------------------------------ checks


def check_grid(grid: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    if not isinstance(grid, Mapping) or not grid:
        raise TypeError(f"grid must be a non-empty dict of field -> values, got {type(grid).__name__}")
    out = {}
    for key, values in grid.items():
        if key not in GRID_FIELDS:
            raise ValueError(f"grid keys must be among {GRID_FIELDS}, got {key!r}")
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)) or np.ndim(values) != 1 \
                or len(values) == 0:
            raise ValueError(f"grid[{key!r}] must be a non-empty list of numbers, got {values!r}")
        vals = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise ValueError(f"grid[{key!r}] must hold finite numbers, got {v!r}")
            vals.append(float(v))
        out[key] = vals
    return out


# ------------------------------------------------------------------ the stack


def finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
