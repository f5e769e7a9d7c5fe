"""The force fit's data: runs of snapshots X (T, N, d) with the observed
forces G and their training set, taken from trajectories or arrays and
checked (:func:`as_force_runs`), and a window of training steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from particles.core.validation import check_array, check_choice, check_int, describe
from particles.datasets import TASK_LABELS, PairDataset
from particles.trajectory import Trajectory

from ..ode.quality import warn_quality

__all__ = ["ForceRun", "TARGETS", "TRAINING_SET_READERS", "as_force_runs", "check_horizon", "check_window",
           "check_window_form", "run_span", "steps_text", "displacements", "gradient_help", "rebuilt_training_set"]

#: what the observed force is: minus the loss gradient, the optimiser's update, or the displacement of the
#: embedding over ``horizon`` steps (per step)
TARGETS = ("gradient", "update", "displacement")


@dataclass
class ForceRun:
    """One run's data: snapshots X (T, N, d), observed forces G (T, N, d),
    its training set and the step of each snapshot; ``last_step`` is the
    last step the run recorded (a recorded run's last snapshot has no
    gradient, and a displacement none after it), None: ``steps[-1]``."""

    X: np.ndarray
    G: np.ndarray
    train: PairDataset
    steps: np.ndarray
    last_step: int | None = None

    @property
    def end(self) -> int:
        """The last step of the run's record."""
        return int(self.steps[-1]) if self.last_step is None else int(self.last_step)


def gradient_help() -> str:
    return ("record them with fitting.training.train(config, seed, gradients=True), `embdyn train ... --gradients` "
            "or EmbeddingRecorder(..., gradients=True)")


#: the entry-point group of readers that rebuild the training set of an older run file from its meta
TRAINING_SET_READERS = "embdyn.training_sets"


def rebuilt_training_set(meta: dict) -> PairDataset | None:
    """The training set of a run file that does not store one, rebuilt from
    its ``meta`` by the first reader registered under
    :data:`TRAINING_SET_READERS` that knows the file (the package's trainers
    register one for the files they wrote before they stored the set), or
    None. A reader returns None for a meta it does not know."""
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group=TRAINING_SET_READERS), key=lambda e: e.name):
        train = entry.load()(meta)
        if train is not None:
            return train
    return None


def check_horizon(horizon: Any, target: str) -> int | None:
    """``horizon`` (steps, int >= 1, or None: to the next snapshot), given with the displacement target only."""
    if horizon is not None and target != "displacement":
        raise ValueError(f"horizon is the displacement target's time scale: give target='displacement' or "
                         f"horizon=None, got horizon={horizon!r} with target={target!r}")
    return check_int(horizon, "horizon", 1, allow_none=True)


def displacements(X: np.ndarray, steps: np.ndarray, horizon: int | None, name: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The displacement per step of every snapshot that has a partner
    ``horizon`` steps later (None: the next snapshot), (X[j] - X[i]) /
    (steps[j] - steps[i]); returns X, the displacements and the steps of
    the snapshots kept. A window of steps (``window=``, ``windows=``)
    selects displacements by the step they start from, so the last ones
    reach up to ``horizon`` steps past the window's stop."""
    steps = np.asarray(steps, dtype=np.int64)
    if len(steps) < 2:
        raise ValueError(f"target='displacement' needs two snapshots or more; {name} has {len(steps)}")
    if horizon is None:
        i, j = np.arange(len(steps) - 1), np.arange(1, len(steps))
    else:
        span = int(steps[-1] - steps[0])
        if horizon > span:
            raise ValueError(f"horizon must be at most the run's span of {span} steps ({name}: steps {steps[0]} to "
                             f"{steps[-1]}), got {horizon}")
        j = np.searchsorted(steps, steps + horizon)
        ok = j < len(steps)
        ok[ok] = steps[j[ok]] == steps[ok] + horizon
        i, j = np.flatnonzero(ok), j[ok]
        if len(i) == 0:
            gaps = np.unique(np.diff(steps))
            raise ValueError(f"horizon={horizon}: no two snapshots of {name} are {horizon} steps apart (their "
                             f"spacings are {gaps[:5].tolist()}{' ...' if len(gaps) > 5 else ''} steps): give a "
                             "horizon that is a sum of consecutive spacings, or horizon=None (the next snapshot)")
    h = (steps[j] - steps[i]).astype(float)
    return X[i], (X[j] - X[i]) / h[:, None, None], steps[i]


def run_from_trajectory(traj: Trajectory, target: str, train: PairDataset | None, name: str,
                        horizon: int | None = None) -> ForceRun:
    if target == "displacement":
        values = None
    else:
        field = "gradients" if target == "gradient" else "updates"
        values = getattr(traj, field)
        if values is None:
            raise ValueError(f"{name} has no {field}: {gradient_help()}; or fit target='displacement', which "
                             "needs the snapshots only")
    if train is None:
        train = traj.train
        if train is not None and traj.meta.get("task") not in TASK_LABELS:
            warn_quality(f"{name}'s training labels were not checked against a task (its meta names none of "
                         f"{sorted(TASK_LABELS)}): wrong labels would fit a wrong force law without a word; record "
                         "the run with meta={'task': 'modular_addition'} (or 'addition') to have them checked")
    if train is None:
        train = rebuilt_training_set(traj.meta)
    if train is None:
        raise ValueError(f"{name} holds no training set: give it as train=PairDataset(pairs, labels, p) (or "
                         "record it with EmbeddingRecorder(..., train=(pairs, labels))), or on the command line "
                         "embdyn force-fit RUN --train FILE (.npz with arrays pairs, labels or a CSV a,b,label)")
    if target == "displacement":
        X, D, steps = displacements(traj.embeddings, traj.snapshot_steps, horizon, name)
        return ForceRun(X, D, train, steps, int(traj.snapshot_steps[-1]))
    G = -values if target == "gradient" else values
    n = len(G)  # the last snapshot has no gradient when no step followed it
    return ForceRun(traj.embeddings[:n], G, train, traj.snapshot_steps[:n], int(traj.snapshot_steps[-1]))


def as_force_runs(X: Any, G: Any = None, *, train: Any = None, steps: Any = None, target: str = "gradient",
                  horizon: int | None = None) -> list[ForceRun]:
    """The data of :meth:`ForceLawFit.fit` as a list of runs, checked (see there)."""
    check_choice(target, "target", TARGETS)
    horizon = check_horizon(horizon, target)
    if isinstance(X, Trajectory) or (isinstance(X, (list, tuple)) and X and all(isinstance(t, Trajectory) for t in X)):
        if G is not None:
            raise ValueError("G must be None when X is a Trajectory (the forces come from its gradients)")
        trajs = [X] if isinstance(X, Trajectory) else list(X)
        trains = train if isinstance(train, (list, tuple)) else [train] * len(trajs)
        if len(trains) != len(trajs):
            raise ValueError(f"train must be one PairDataset or one per trajectory ({len(trajs)}), got {len(trains)}")
        for i, tr in enumerate(trains):
            if tr is not None and not isinstance(tr, PairDataset):
                raise TypeError(f"train must be a PairDataset (or one per trajectory), got {describe(tr)} for "
                                f"trajectory {i}")
        runs = [run_from_trajectory(t, target, tr, f"trajectory {i}" if len(trajs) > 1 else "the trajectory",
                                    horizon) for i, (t, tr) in enumerate(zip(trajs, trains))]
    else:
        if target == "displacement" and G is not None:
            raise ValueError("G must be None with target='displacement' (the displacements come from X and steps)")
        if G is None and target != "displacement":
            raise ValueError(f"G must be given with X as an array (the observed forces, shape of X); {gradient_help()}")
        if not isinstance(train, PairDataset):
            raise TypeError(f"train must be a PairDataset (the training pairs and labels), got {describe(train)}")
        X = check_array(X, "X", dtype="float", ndim=3)
        if X.shape[0] < 1:  # before steps, whose length follows X
            raise ValueError(f"X must hold at least one snapshot: shape (T, p, d) with T >= 1, got {X.shape}")
        if steps is not None:
            steps = check_array(steps, "steps", dtype="int", low=0, ndim=1)
            if steps.shape[0] != X.shape[0]:
                raise ValueError(f"steps must have shape ({X.shape[0]},) to match the snapshots of X, got "
                                 f"{steps.shape}")
        steps = np.arange(X.shape[0]) if steps is None else steps
        steps = np.asarray(steps, dtype=np.int64)
        last = int(steps[-1]) if len(steps) else None
        if target == "displacement":
            if np.any(np.diff(steps) <= 0):
                i = int(np.flatnonzero(np.diff(steps) <= 0)[0])
                raise ValueError(f"steps must increase strictly with target='displacement', got {int(steps[i])} "
                                 f"then {int(steps[i + 1])} at index {i + 1}")
            X, G, steps = displacements(X, steps, horizon, "X")
        G = check_array(G, "G", dtype="float", ndim=3)
        if G.shape != X.shape:
            raise ValueError(f"G must have the shape of X {X.shape}, got {G.shape}")
        runs = [ForceRun(X, G, train, steps, last)]
    for i, run in enumerate(runs):
        label = f"run {i}: " if len(runs) > 1 else ""
        if run.X.shape[0] < 1:
            raise ValueError(f"{label}X must hold at least one snapshot")
        if run.X.shape[1] != run.train.p:
            raise ValueError(f"{label}X has {run.X.shape[1]} tokens but train has p = {run.train.p}")
        if not np.all(np.isfinite(run.G)):
            raise ValueError(f"{label}G holds non-finite values")
        if not np.all(np.isfinite(run.X)):
            raise ValueError(f"{label}X holds non-finite values")
    shapes = {run.X.shape[1:] for run in runs}
    if len(shapes) > 1:
        raise ValueError(f"the runs must share p and d (tokens and dimension), got {sorted(shapes)}")
    return runs


def run_span(runs: list[ForceRun]) -> tuple[int, int]:
    """The first step with a force and the last recorded step over ``runs``."""
    return min(int(r.steps.min()) for r in runs), max(r.end for r in runs)


def steps_text(first: int, last: int, snapshots: int, runs: int = 1) -> str:
    """"the run's steps are 0..3000 (60 snapshots with a force)": what a
    refused window is told about the run."""
    who = "the run's steps are" if runs == 1 else f"the {runs} runs' steps are"
    return f"{who} {first}..{last} ({snapshots} snapshot{'s' if snapshots != 1 else ''} with a force)"


def check_window_form(window: Any) -> tuple[int, int] | None:
    """``window`` as (start, stop), two ints >= 0, or None; else a
    TypeError/ValueError naming ``window`` (its order and place in the run
    are checked by :func:`check_window`)."""
    if window is None:
        return None
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise TypeError(f"window must be (start, stop) steps, got {describe(window)}")
    start, stop = (check_int(v, f"window[{i}]", 0) for i, v in enumerate(window))
    return start, stop


def check_window(window: Any, runs: list[ForceRun]) -> list[ForceRun]:
    """The runs' snapshots with start <= step < stop. A window that is
    reversed or empty, begins before the runs' first step with a force,
    stops past their last recorded step + 1 or holds no snapshot is refused
    by a ValueError naming ``window``, the runs' steps (first..last) and the
    accepted range; ``embdyn force-fit --window`` gets the same words."""
    window = check_window_form(window)
    if window is None:
        return runs
    start, stop = window
    first, last = run_span(runs)
    shown = f"window ({start}, {stop})"
    accepted = (f"{steps_text(first, last, sum(len(r.steps) for r in runs), len(runs))}, so give {first} <= start "
                f"< stop <= {last + 1}")
    if start > stop:
        raise ValueError(f"{shown} is reversed (start > stop): {accepted}")
    if start == stop:
        raise ValueError(f"{shown} is empty (start = stop): {accepted}")
    if start < first:
        raise ValueError(f"{shown} begins before the run's start: {accepted}")
    if stop > last + 1:
        raise ValueError(f"{shown} goes past the run's end: {accepted}")
    out = []
    for run in runs:
        keep = (run.steps >= start) & (run.steps < stop)
        if keep.any():
            out.append(ForceRun(run.X[keep], run.G[keep], run.train, run.steps[keep], min(run.end, stop - 1)))
    if not out:
        raise ValueError(f"{shown} holds no snapshot with a force: {accepted}")
    return out
