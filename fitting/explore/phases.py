"""The Phase tab's files: a particle sweep table (``sweep.csv`` of ``embdyn sweep``, with the
base settings from the ``sweep.journal.jsonl`` beside it when there is one), a sweep journal
itself, or a phase-grid JSON of ``embdyn toy-phases``, read into one grid of cells."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from particles.core.io import json_safe

__all__ = ["load_phase_file", "PhaseFileError"]

class PhaseFileError(ValueError):
    """A file given to the Phase tab is neither a sweep table nor a toy-phases grid."""


def live_base(base: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """The Live-tab control values of a sweep's base preset (from its journal), or None and why not.

    The base must be one of the Live presets by name, with every setting the Live tab has no
    control for (the alignment's kind and form, the particles' own decay, the training fraction,
    the initial scale, the temperatures) as that preset has it, and p, d and dt in the Live ranges.
    """
    from particles.presets import preset

    from .live import CONTROLS, FORCE_FIELDS, PRESET_NAMES

    if base is None:
        return None, "the sweep's base settings are not in its table (no journal beside it): the Live tab keeps " \
                     "its own preset, p, d and dt"
    name = base.get("name")
    if name not in PRESET_NAMES:
        return None, f"the sweep's base preset {name!r} is not one the Live tab runs"
    reference = preset(name).to_dict()
    params = base.get("params", {})
    for key in ("alignment", "alignment_form", "particle_wd"):
        if params.get(key) != reference["params"].get(key):
            return None, f"the sweep's base sets {key} = {params.get(key)!r}, which the Live tab has no control for"
    for key in ("fraction", "init_scale", "temperature", "final_temperature"):
        if base.get(key) != reference.get(key):
            return None, f"the sweep's base sets {key} = {base.get(key)!r}, which the Live tab has no control for"
    values = {"preset": name, "p": base.get("p"), "d": base.get("d"), "dt": base.get("dt"),
              **{k: params.get(k) for k in FORCE_FIELDS}}
    for key, value in values.items():
        try:
            CONTROLS[key].check(value, key)
        except ValueError as exc:
            return None, f"the sweep's base is outside the Live tab's range: {exc}"
    return values, f"the sweep's base from its journal: preset {name}, p = {values['p']}, d = {values['d']}, " \
                   f"dt = {values['dt']:g}"


def _grid(name: str, kind: str, axes: list[str], rows: list[dict[str, Any]], outcome: str,
          live: bool, base: dict[str, Any] | None = None, note: str = "") -> dict[str, Any]:
    if not rows:
        raise PhaseFileError(f"{name} has no runs")
    x_name = axes[0]
    y_name = axes[1] if len(axes) > 1 else None
    x_values = sorted({r[x_name] for r in rows}, key=lambda v: (isinstance(v, str), v))
    y_values = sorted({r[y_name] for r in rows}, key=lambda v: (isinstance(v, str), v)) if y_name else [None]
    classes = sorted({str(r[outcome]) for r in rows})
    cells = []
    for y in y_values:
        for x in x_values:
            runs = [r for r in rows if r[x_name] == x and (y_name is None or r[y_name] == y)]
            if not runs:
                continue
            counts = Counter(str(r[outcome]) for r in runs)
            majority, top = counts.most_common(1)[0]
            setting = {a: runs[0][a] for a in axes}
            cells.append({"x": x, "y": y, "setting": setting, "majority": majority, "share": top / len(runs),
                          "shares": {c: counts[c] / len(runs) for c in counts}, "runs": runs})
    return json_safe({"kind": kind, "name": name, "x": x_name, "y": y_name, "x_values": x_values,
                      "y_values": y_values, "axes": axes, "outcome": outcome, "classes": classes, "cells": cells,
                      "live": live, "extra_axes": axes[2:], "base": base, "live_note": note})


def load_phase_file(path: str | Path) -> dict[str, Any]:
    """A sweep table (``.csv``) or a toy-phases grid (``.json``) as a grid of cells.

    Returns
    -------
    dict
        ``kind`` ("sweep" or "toy-phases"), the axes ``x``/``y`` with their values,
        ``cells`` (setting, majority outcome and its share, shares, runs), ``live``
        (whether a cell's setting can run in the Live tab: particle sweeps only).

    Raises
    ------
    PhaseFileError
        When the file is neither.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no phase file at {str(path)!r}")
    name = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
    if path.suffix.lower() in (".csv", ".jsonl"):
        from particles.sweep import JournalError, SweepTable, read_journal

        header = None
        journal = path if path.suffix.lower() == ".jsonl" else path.with_name("sweep.journal.jsonl")
        try:
            if path.suffix.lower() == ".jsonl":
                header, rows = read_journal(path)
                table = SweepTable(rows=rows, parameters=list(header["grid"][0]) if header.get("grid") else [])
            else:
                table = SweepTable.from_csv(path)
                if journal.is_file():
                    try:
                        header, _ = read_journal(journal)
                    except (JournalError, OSError, ValueError, KeyError):
                        header = None  # the table stands on its own
        except Exception as exc:  # a foreign CSV or journal
            raise PhaseFileError(f"{name} is not a sweep table or journal of embdyn sweep "
                                 f"({' '.join(str(exc).split())})") from None
        columns = table.columns
        if "structure" not in columns or "seed" not in columns:
            raise PhaseFileError(f"{name} is not a sweep table of embdyn sweep: it has no structure and seed columns")
        axes = list(table.parameters)  # the swept settings (SweepTable.from_csv: the columns before seed)
        if not axes:
            raise PhaseFileError(f"{name} has no setting columns to lay out")
        rows = [dict(r) for r in table]
        from .live import CONTROLS

        base, note = live_base(header.get("base") if isinstance(header, dict) else None)
        live = all(a in CONTROLS for a in axes) and (base is not None or header is None)
        if not all(a in CONTROLS for a in axes):
            note = "this sweep varies settings the Live tab has no control for"
        return _grid(name, "sweep", axes, rows, "structure", live=live, base=base, note=note)
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PhaseFileError(f"{name} is not readable JSON ({exc})") from None
        if not (isinstance(data, dict) and isinstance(data.get("meta"), dict)
                and isinstance(data["meta"].get("grid"), dict) and isinstance(data.get("records"), list)):
            raise PhaseFileError(f"{name} is not a phase grid of embdyn toy-phases (no meta.grid and records)")
        axes = list(data["meta"]["grid"])
        rows = [r for r in data["records"] if isinstance(r, dict) and all(a in r for a in axes) and "phase" in r]
        return _grid(name, "toy-phases", axes, rows, "phase", live=False,
                     note="toy-model grids are network trainings: the Live tab runs the particle model only")
    raise PhaseFileError(f"{name}: the Phase tab reads a sweep table (.csv), a sweep journal (.jsonl) or a "
                         f"toy-phases grid (.json)")
