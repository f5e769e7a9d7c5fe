"""The Layers tab's recorded runs: every layer's state of a run recorded with
layer states (:func:`fitting.sandbox.data.load_layers`), one recorded step at
a time, for ``GET /api/runs/{id}/layers/meta`` and ``GET /api/runs/{id}/layers?step=N``.

The run's :class:`~fitting.sandbox.data.LayerStates` is read once and kept in
the run's view cache (:attr:`.runs.Run.cache`): its arrays are the
trajectory's own (no copy), so it holds only the thinned curves and the
meta beyond what the run holds already (:meth:`RunLayers.held_bytes`, counted
by :meth:`.runs.Run.held_bytes` against the server's memory budget). A frame
is one step's arrays as float32 (:mod:`.frames`), about 43 KB at the paper's
size (256 probe sequences of 12 tokens, two 48 x 48 region grids).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from fitting.sandbox.data import HOW_TO_RECORD, LayerStates, NoLayersError, envelope, load_layers

from .runs import MAX_SERIES_POINTS, Run

__all__ = ["RunLayers", "run_layers", "layer_work_bytes", "CACHE_KEY"]

#: the key of a run's layer view in its cache
CACHE_KEY = "layers"
_build_lock = threading.Lock()


class RunLayers:
    """The layer states of one run, as the page reads them: :meth:`meta` once, :meth:`frame` a step."""

    def __init__(self, name: str, states: LayerStates):
        self.name = name
        self.states = states
        curves = {}
        for key, (steps, values) in sorted(states.curves.items()):
            steps, values = np.asarray(steps), np.asarray(values, dtype=float)
            if values.ndim != 1 or steps.shape != values.shape:
                continue
            # each block's least and greatest value: a one-step spike stays on the page's chart
            s, v = envelope(steps.astype(float), values, MAX_SERIES_POINTS)
            curves[key] = (s, v)
        self.curves = curves  # thinned for the page (about MAX_SERIES_POINTS each at most)
        info = states.meta
        config = info.get("config") if isinstance(info.get("config"), dict) else {}
        tokens = states.probe_tokens
        self._meta = {"name": name, "model": info.get("model"), "p": int(states.p), "T": int(tokens.shape[1]),
                      "k": config.get("k"), "B": int(len(tokens)), "steps": states.steps.tolist(),
                      "states": sorted(states.states), "probe_tokens": tokens.tolist(),
                      "probe_labels": states.probe_labels.tolist(), "probe_split": states.probe_split.tolist(),
                      "grad_norm_groups": states.grad_norm_groups, "config": config or None,
                      "curves": {k: {"x": s.tolist(), "y": v.tolist()} for k, (s, v) in curves.items()}}

    def held_bytes(self) -> int:
        """What this view holds beyond the run's own arrays: the thinned curves and the recorded steps
        (the states are the trajectory's arrays, counted with it), and the probe set's lists, about."""
        points = sum(len(v) for _, v in self.curves.values())  # kept as arrays and as the meta's Python lists
        own = sum(s.nbytes + v.nbytes for s, v in self.curves.values()) + 64 * points + 40 * len(self.states.steps)
        return int(own + 64 * self.states.probe_tokens.size + 64 * len(self.states.probe_labels))

    def meta(self) -> dict[str, Any]:
        """Once per run: name, model, p, T, k, B probe sequences (their tokens, classes and split),
        the recorded steps, the states, the curves thinned to at most :data:`.runs.MAX_SERIES_POINTS`
        points each (``{name: {"x": steps, "y": values}}``) and the gradient norms' groups."""
        return self._meta

    def frame(self, step: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The arrays of recorded step ``step`` and a header (step, its index among the recorded ones,
        and ``values``: each curve's value at that step, or at the last step before it that has one,
        which ``values_at`` names: the trainers' last snapshot follows the last step's update, whose
        values are the step before it); a ValueError naming ``step`` and the nearest recorded steps
        when it was not recorded."""
        i = self.states.index(step)
        s = int(self.states.steps[i])
        values, at = {}, {}
        for key, (steps, series) in self.states.curves.items():
            steps = np.asarray(steps)
            j = int(np.searchsorted(steps, s, side="right")) - 1
            if j >= 0 and np.ndim(series) == 1 and len(series) == len(steps):
                values[key] = float(series[j])
                at[key] = int(steps[j])
        header = {"kind": "layers", "step": s, "index": i, "snapshots": len(self.states.steps),
                  "p": int(self.states.p), "values": values, "values_at": at}
        return header, {name: arr[i] for name, arr in self.states.states.items()}

    def frame_bytes(self) -> int:
        """Bytes of one frame's arrays as float32, and their float64 views' copies while encoded."""
        return int(sum(12 * arr[0].size for arr in self.states.states.values()) + 4096)


def run_layers(run: Run) -> RunLayers:
    """The run's :class:`RunLayers`, read once and kept in its cache; a ValueError saying how to record
    layer states for a run without them (:data:`fitting.sandbox.data.HOW_TO_RECORD`)."""
    view = run.cache.get(CACHE_KEY)
    if view is None:
        with _build_lock:
            view = run.cache.get(CACHE_KEY)
            if view is None:
                try:
                    states = load_layers(run.trajectory)
                except NoLayersError:
                    raise NoLayersError(f"the run {run.name!r} has no layer states: {HOW_TO_RECORD}") from None
                view = run.cache[CACHE_KEY] = RunLayers(run.name, states)
    return view


def layer_work_bytes(run: Run, what: str) -> int:
    """The memory a layers request computes beyond what the run holds: ``"meta"`` (the first one reads
    the view: its thinned curves and lists; JSON of them) or ``"frame"`` (one step's arrays, encoded)."""
    view = run.cache.get(CACHE_KEY)
    if what == "frame":
        return view.frame_bytes() if view is not None else 1 << 20
    if what == "meta":
        traj = run.trajectory
        curves = sum(min(np.size(v), MAX_SERIES_POINTS) for v in traj.scalars.values()) + 4 * len(traj.snapshot_steps)
        return int(64 * curves + (1 << 20))
    raise ValueError(f"what must be 'meta' or 'frame', got {what!r}")
