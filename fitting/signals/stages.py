"""The stages of a training run: memorisation, circuit formation, cleanup and
generalisation, placed from what a recorder keeps (docs/bring_your_own_run.md,
stages of a run).

Every rule is scale-free: a series is read as its *progress*, the share of
its own rise (or fall) from its early level to its late level, so that
multiplying the embedding, the losses or the signals by a constant changes
nothing. A stage boundary is the step at which the smoothed progress first
reaches a level (the early level is the smoothed series' first sample,
the late level the median of its last :data:`EDGE_SHARE`). The series is
smoothed by a running median over :data:`SMOOTH_SHARE` of its samples. A
boundary's range is where the series is within its noise of the level: the
first steps at which the progress reaches the level minus and plus
:data:`NOISE_BANDS` times the series' noise about its running median
(1.4826 times the median absolute residual, as a share of the rise),
widened by one sampling interval at either end. It covers the noise and
the sampling, not the choice of level (docs/bring_your_own_run.md gives the
lead times at other levels).

=====================  ==========================================================
stage                  rule
=====================  ==========================================================
memorisation           from the run's start to the step at which the training
                       accuracy (else the log training loss) has made 90 % of its
                       rise; placed when the final training accuracy is at least
                       :data:`FITTED_ACCURACY` (else the loss fell by at least
                       :data:`LOSS_DROP`)
circuit formation      the circuit frequencies' share of the embedding's
                       Fourier power (sum over the circuit's k of ``P_k =
                       |F_k|^2`` over the sum over all K) rising from 10 % to
                       90 % of its rise; placed when it rises by at least
                       :data:`MIN_SHARE_RISE`. The circuit's frequencies are
                       the m strongest of the final spectrum, m = round(K /
                       C) with C the final concentration (K times the inverse
                       participation ratio, ``K sum P_k^2 / (sum P_k)^2``: 1
                       for a flat spectrum, K/m for m equal frequencies), the
                       spectrum's effective number of frequencies. This needs
                       no frequency to stand out (a concatenating MLP's
                       embedding sharpens over many frequencies at once, and
                       the key-frequency rule then finds none); the key
                       frequencies and the concentration are reported beside
                       it
cleanup                the log power outside the circuit's frequencies falling
                       from 10 % to 90 % of its fall from its peak (from
                       circuit formation's start) to its final level; placed
                       when the final level is at most half the peak. With
                       weight decay this power falls from the start of the
                       run, so cleanup can begin as soon as the circuit does
generalisation         the validation accuracy rising from 10 % to 90 % of its
                       rise after memorisation ended (from its level then: a
                       network that generalises part-way while it memorises,
                       as transformers trained on 40 % of the pairs do, then
                       groks the rest; its whole rise when less than half of
                       it comes after memorisation, or memorisation was not
                       placed); placed only when it ends at or above
                       :data:`GENERALISED_ACCURACY`
=====================  ==========================================================

A run grokked when its generalisation began at least :data:`GROKKING_DELAY`
times as late as its memorisation ended (an order of magnitude, counted
from the run's first step); a run that learns both together (the survival
paper's MLPs) is reported as "no grokking".

The circuit's lead time over generalisation answers "does the circuit start
forming before the validation accuracy moves": the step at which the
validation accuracy made 10 % of its rise minus the step at which the
circuit share made 10 % of its rise (positive: the circuit first), with the
range from the two boundaries' ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.ndimage import median_filter

from particles.trajectory import Trajectory

from .fourier import trajectory_signals
from .frequencies import key_frequencies

__all__ = ["stages", "stage_windows", "RunStages", "Stage", "network_curves", "STAGE_NAMES", "CURVE_NAMES", "MIN_POINTS",
           "FITTED_ACCURACY", "GENERALISED_ACCURACY", "GROKKING_DELAY", "MIN_SHARE_RISE", "LOSS_DROP", "NOISE_BANDS"]

#: the stages, in the order of a grokking run
STAGE_NAMES = ("memorisation", "circuit formation", "cleanup", "generalisation")
#: the network curves the rules read (others a recorder logs are kept and shown)
CURVE_NAMES = ("train_loss", "train_acc", "val_loss", "val_acc")
#: the fewest samples of a series a rule places a boundary on
MIN_POINTS = 20
#: training accuracy at the end for "the training set was fitted"
FITTED_ACCURACY = 0.9
#: validation accuracy at the end for "the network generalised"
GENERALISED_ACCURACY = 0.9
#: grokking: generalisation begins at least this many times later than memorisation ends
GROKKING_DELAY = 10.0
#: the least rise of the circuit frequencies' share of the Fourier power for "a circuit formed"
MIN_SHARE_RISE = 0.1
#: without a training accuracy: the least factor by which the training loss falls
LOSS_DROP = 10.0
#: a boundary's range: the steps at which the progress reaches its level -/+ this many times the
#: series' noise about its running median (1.4826 x the median absolute residual, in progress units)
NOISE_BANDS = 2.0
#: share of a series' last samples (at least 3) whose median is its late level
EDGE_SHARE = 0.05
#: a series still moving at the run's end: its last two stretches differ by this share of its change
STILL_MOVING = 0.05
#: the running median's window, as a share of a series' samples (odd, at least 3)
SMOOTH_SHARE = 0.02


@dataclass(frozen=True)
class Stage:
    """One stage of a run.

    Attributes
    ----------
    name : str
        One of :data:`STAGE_NAMES`.
    found : bool
        Whether the rule placed it (else ``reason`` says why not).
    start : int or None
        Its first step (training steps, as recorded).
    stop : int or None
        Its last step.
    start_range : (int, int) or None
        The steps between which its start lies (see the module's notes).
    stop_range : (int, int) or None
        The steps between which its stop lies.
    rule : str
        The rule, in one line.
    evidence : str
        What the rule read, with numbers.
    reason : str or None
        Why it was not placed (a stage that did not happen, or a series
        that was not recorded).
    """

    name: str
    found: bool
    start: int | None
    stop: int | None
    start_range: tuple[int, int] | None
    stop_range: tuple[int, int] | None
    rule: str
    evidence: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "found": self.found, "start": self.start, "stop": self.stop,
                "start_range": None if self.start_range is None else list(self.start_range),
                "stop_range": None if self.stop_range is None else list(self.stop_range),
                "rule": self.rule, "evidence": self.evidence, "reason": self.reason}


@dataclass
class RunStages:
    """The stages of one run (:func:`stages`).

    Attributes
    ----------
    stages : tuple of Stage
        The four stages in :data:`STAGE_NAMES` order, placed or not.
    key_frequencies : list of int
        The run's key frequencies (:func:`fitting.key_frequencies`; may be
        none), reported beside the circuit's.
    circuit_frequencies : list of int
        The circuit's frequencies when circuit formation was placed; empty
        when no circuit formed (a flat final spectrum makes every frequency
        a candidate, which is not a circuit).
    share_frequencies : list of int
        The frequencies whose share of the power the circuit rules read
        (``series["circuit_share"]``), whether or not a circuit formed: the
        candidates (see :func:`stages`) or those given.
    lead_time : dict or None
        ``{"steps", "low", "high"}``: generalisation's onset minus circuit
        formation's onset (10 % of each rise; positive: the circuit first),
        with its range; None unless both were placed.
    series : dict of str to ndarray
        ``steps`` and the embedding's measures at those steps:
        ``circuit_share``, ``concentration`` and ``outside_power`` (relative
        to its peak from circuit formation's start, which cleanup falls
        from; to its overall peak when no circuit formed).
    curves : dict of str to (steps, values)
        The network's own curves the rules read (:func:`network_curves`).
    first_step, last_step : int
        The run's recorded steps.
    """

    stages: tuple[Stage, ...]
    key_frequencies: list[int]
    circuit_frequencies: list[int]
    share_frequencies: list[int]
    lead_time: dict[str, int] | None
    series: dict[str, np.ndarray]
    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    first_step: int
    last_step: int

    def __getitem__(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(f"no stage {name!r}; the stages are {', '.join(STAGE_NAMES)}")

    @property
    def grokking(self) -> dict[str, Any] | None:
        """Whether the run grokked: generalisation began at least
        :data:`GROKKING_DELAY` times later than memorisation ended (steps
        counted from the run's first). ``{"grokked": bool, "ratio": float,
        "sentence": str}``, or None when either stage was not placed."""
        mem, gen = self["memorisation"], self["generalisation"]
        if not (mem.found and gen.found):
            return None
        ratio = (gen.start - self.first_step) / max(mem.stop - self.first_step, 1)
        grokked = ratio >= GROKKING_DELAY
        sentence = (f"{'grokked' if grokked else 'no grokking'}: generalisation began {ratio:.3g}x as late as "
                    f"memorisation ended (step {gen.start} against {mem.stop}; grokking is >= {GROKKING_DELAY:g}x)")
        return {"grokked": grokked, "ratio": float(ratio), "sentence": sentence}

    @property
    def found(self) -> list[str]:
        """The names of the stages that were placed."""
        return [s.name for s in self.stages if s.found]

    @property
    def edges(self) -> list[int]:
        """Step edges that cut the run into consecutive windows at the ends
        of memorisation, circuit formation and cleanup (those placed), for
        the fits' ``windows=`` (``windows="stages"``)."""
        return [edge for edge, _ in self._windows()] + [self.last_step + 1]

    @property
    def window_names(self) -> list[str]:
        """The name of each window of :attr:`edges` (the stage it ends with,
        ``"after cleanup"`` for the last one when cleanup was placed)."""
        return [name for _, name in self._windows()]

    def _windows(self) -> list[tuple[int, str]]:
        cuts = []
        for name in ("memorisation", "circuit formation", "cleanup"):
            stage = self[name]
            if stage.found and self.first_step < stage.stop < self.last_step:
                cuts.append((stage.stop + 1, name))
        cuts.sort()
        starts, names = [self.first_step], []
        for stop, name in cuts:
            if stop > starts[-1]:
                starts.append(stop)
                names.append(name)
        names.append("after " + names[-1] if names else "whole run")
        return list(zip(starts, names))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``embdyn stages --json`` and the explorer serve)."""
        return {"stages": [s.to_dict() for s in self.stages], "edges": self.edges, "grokking": self.grokking,
                "window_names": self.window_names, "lead_time": self.lead_time,
                "key_frequencies": list(self.key_frequencies),
                "circuit_frequencies": list(self.circuit_frequencies),
                "share_frequencies": list(self.share_frequencies), "first_step": self.first_step,
                "last_step": self.last_step,
                "series": {k: np.asarray(v).tolist() for k, v in self.series.items()},
                "curves": {k: {"steps": s.tolist(), "values": v.tolist()} for k, (s, v) in self.curves.items()}}

    def table(self) -> str:
        """The stages as a plain-text table, with the lead time."""
        lines = [f"{'stage':<18} {'start':>8} {'stop':>8}  stop range          evidence"]
        for s in self.stages:
            if s.found:
                rng = f"[{s.stop_range[0]}, {s.stop_range[1]}]"
                lines.append(f"{s.name:<18} {s.start:>8} {s.stop:>8}  {rng:<19} {s.evidence}")
            else:
                lines.append(f"{s.name:<18} {'-':>8} {'-':>8}  {'':<19} not placed: {s.reason}")
        grok = self.grokking
        if grok is not None:
            lines.append(grok["sentence"])
        elif not self["generalisation"].found:
            lines.append("no generalisation: " + (self["generalisation"].reason or ""))
        if self.lead_time is not None:
            lt = self.lead_time
            lines.append(f"circuit formation leads generalisation by {lt['steps']} steps "
                         f"(range {lt['low']} to {lt['high']})")
        else:
            lines.append("lead time: not measured (needs both circuit formation and generalisation)")
        return "\n".join(lines)

    def figure(self):
        """A matplotlib figure: the embedding's measures, the network's curves and the stage boundaries."""
        from .figures import stages_figure

        return stages_figure(self)


def stage_windows(trajectory: Trajectory, **options: Any) -> tuple[list[int], list[str]]:
    """The step edges and names of the windows ``windows="stages"`` means
    (:attr:`RunStages.edges`, :attr:`RunStages.window_names`) for the fits
    (``ForceLawFit``, :func:`fitting.ode.fit_windows`, ``--windows
    stages``). ``options`` pass to :func:`stages`.

    Raises
    ------
    ValueError
        A run too short for the rules (from :func:`stages`), or one on which
        no stage ends inside the run, naming each stage's reason.
    """
    result = stages(trajectory, **options)
    if len(result.edges) < 3:
        def why(stage: Stage) -> str:
            if not stage.found:
                return stage.reason or "not placed"
            if stage.name == "generalisation":
                return "placed, but the windows are cut at the ends of the other stages"
            return f"ends at step {stage.stop}, not inside the run's steps {result.first_step}..{result.last_step - 1}"
        reasons = "; ".join(f"{s.name}: {why(s)}" for s in result.stages)
        raise ValueError(f"windows='stages': no stage ends inside this run (steps {result.first_step}.."
                         f"{result.last_step}), so there is nothing to cut it at ({reasons})")
    return result.edges, result.window_names


def network_curves(traj: Trajectory) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The network's own curves of a run: name -> (steps, values).

    From the curves a recorder logged (``Trajectory.curves``,
    :meth:`fitting.training.EmbeddingRecorder.log`), then from the per-step
    series the package's trainers store (``scalar_train_loss``,
    ``scalar_val_acc``, ...) for the names in :data:`CURVE_NAMES` not
    logged; empty when the run has neither.
    """
    if not isinstance(traj, Trajectory):
        raise TypeError(f"traj must be a particles.Trajectory, got {type(traj).__name__}")
    curves = {name: (steps.copy(), values.copy()) for name, (steps, values) in traj.curves.items()}
    for name in CURVE_NAMES:
        if name not in curves and name in traj.scalars:
            values = traj.scalars[name]
            keep = np.isfinite(values)
            if keep.any():
                curves[name] = (traj.steps[keep].copy(), values[keep].copy())
    return curves


# --- the rules ---------------------------------------------------------------------------------------------------

def _smooth(y: np.ndarray) -> np.ndarray:
    window = max(3, int(SMOOTH_SHARE * len(y)) | 1)
    return median_filter(y, size=window, mode="nearest")


def _levels(y: np.ndarray) -> tuple[float, float]:
    """Early level: the first sample (of the smoothed series: the run's start, before anything was learnt);
    late level: the median of the last EDGE_SHARE of the samples (at least 3)."""
    n = max(3, int(np.ceil(EDGE_SHARE * len(y))))
    return float(y[0]), float(np.median(y[-n:]))


def _noise(y: np.ndarray, smooth: np.ndarray) -> float:
    """The noise of a series about its running median: 1.4826 x the median absolute residual."""
    return float(1.4826 * np.median(np.abs(y - smooth)))


def _reach(steps: np.ndarray, progress: np.ndarray, level: float, after: int = 0,
           tol: float = 0.0) -> tuple[int, int, int]:
    """The first step (from index ``after``) at which ``progress`` reaches ``level``, with its range:
    the first steps at which it reaches level -/+ ``tol`` (the noise band, clipped to [0.01, 0.99]),
    widened by one sampling interval on either side."""
    def first(lv: float) -> int:
        idx = np.flatnonzero(progress[after:] >= lv)
        return after + int(idx[0]) if idx.size else len(progress) - 1
    i = first(level)
    lo = first(max(0.01, level - tol))
    hi = first(min(0.99, level + tol))
    return int(steps[i]), int(steps[max(lo - 1, 0)]), int(steps[min(hi + 1, len(steps) - 1)])


def _rising(steps: np.ndarray, y: np.ndarray, levels: tuple[float, float] = (0.1, 0.9),
            after: int = 0) -> dict[str, Any]:
    """Progress of a rising series from sample ``after`` on (its early level: the smoothed value there):
    early and late levels, its noise (in progress units) and the points at which it makes ``levels`` of
    its rise (``start``, ``stop``), with their ranges."""
    s = _smooth(y)
    y0, y1 = _levels(s[after:])
    span = y1 - y0
    progress = (s - y0) / span if span > 0 else np.zeros_like(s)
    tol = NOISE_BANDS * _noise(y, s) / span if span > 0 else 0.0
    return {"early": y0, "late": y1, "noise": tol, "flat": span <= 0 or tol >= 1,
            "start": _reach(steps, progress, levels[0], after, tol),
            "stop": _reach(steps, progress, levels[1], after, tol), "moving": _still_moving(s, y0, y1)}


def _still_moving(s: np.ndarray, early: float, late: float) -> bool:
    """Whether a smoothed series is still moving at its end: between the medians of its last two
    EDGE_SHARE stretches it changes by at least STILL_MOVING of its whole change."""
    n = max(3, int(np.ceil(EDGE_SHARE * len(s))))
    if len(s) < 2 * n or late == early:
        return False
    return abs(float(np.median(s[-n:])) - float(np.median(s[-2 * n:-n]))) >= STILL_MOVING * abs(late - early)


def _check_points(name: str, steps: np.ndarray, what: str) -> None:
    if len(steps) < MIN_POINTS:
        raise ValueError(f"the run records {what} at {len(steps)} step{'s' if len(steps) != 1 else ''} "
                         f"({int(steps[0]) if len(steps) else '-'}..{int(steps[-1]) if len(steps) else '-'}); "
                         f"the {name} rule needs at least {MIN_POINTS}")


def _not_placed(name: str, rule: str, reason: str, evidence: str = "") -> Stage:
    return Stage(name, False, None, None, None, None, rule, evidence, reason)


def _stage(name: str, rule: str, evidence: str, start: tuple[int, int, int], stop: tuple[int, int, int]) -> Stage:
    return Stage(name, True, start[0], stop[0], (start[1], start[2]), (stop[1], stop[2]), rule, evidence)


def _memorisation(curves: dict, first: int, levels: tuple[float, float]) -> Stage:
    rule = (f"run start to {levels[1]:.0%} of the training accuracy's rise (else of the log training loss's fall); "
            f"placed when the final training accuracy is >= {FITTED_ACCURACY:g}")
    if "train_acc" in curves:
        steps, acc = curves["train_acc"]
        if len(steps) < MIN_POINTS:
            return _not_placed("memorisation", rule, f"train_acc has {len(steps)} points; the rule needs "
                                                     f"{MIN_POINTS}")
        r = _rising(steps, acc, levels)
        evidence = f"train_acc {r['early']:.3f} -> {r['late']:.3f}"
        if r["late"] < FITTED_ACCURACY:
            return _not_placed("memorisation", rule, f"the training accuracy ends at {r['late']:.3f}, below "
                                                     f"{FITTED_ACCURACY:g}", evidence)
        if r["flat"]:
            return _not_placed("memorisation", rule, f"the training accuracy does not rise above its noise (it is "
                                                     f"{r['early']:.3f} at the first logged step, {int(steps[0])})",
                               evidence)
        return _stage("memorisation", rule, evidence, (first, first, first), r["stop"])
    if "train_loss" in curves:
        steps, loss = curves["train_loss"]
        if len(steps) < MIN_POINTS:
            return _not_placed("memorisation", rule, f"train_loss has {len(steps)} points; the rule needs "
                                                     f"{MIN_POINTS}")
        r = _rising(steps, -np.log(np.maximum(loss, 1e-300)), levels)
        drop = float(np.exp(r["late"] - r["early"]))
        evidence = f"train_loss fell {drop:.3g}x"
        if drop < LOSS_DROP or r["flat"]:
            return _not_placed("memorisation", rule, f"the training loss fell only {drop:.3g}x (the rule needs "
                                                     f"{LOSS_DROP:g}x without an accuracy, above its noise)", evidence)
        return _stage("memorisation", rule, evidence, (first, first, first), r["stop"])
    return _not_placed("memorisation", rule, "the run records no training accuracy or loss (recorder.log(step, "
                                             "train_acc=...) stores them)")


def _generalisation(curves: dict, levels: tuple[float, float], memorised: int | None) -> tuple[Stage, dict | None]:
    rule = (f"{levels[0]:.0%} to {levels[1]:.0%} of the validation accuracy's rise after memorisation ended (of its "
            f"whole rise when less than half of it comes after); placed when it ends >= {GENERALISED_ACCURACY:g}")
    if "val_acc" not in curves:
        return _not_placed("generalisation", rule, "the run records no validation accuracy (recorder.log(step, "
                                                   "val_acc=...) stores it)"), None
    steps, acc = curves["val_acc"]
    if len(steps) < MIN_POINTS:
        return _not_placed("generalisation", rule, f"val_acc has {len(steps)} points; the rule needs "
                                                   f"{MIN_POINTS}"), None
    r = _rising(steps, acc, levels)
    evidence = f"val_acc {r['early']:.3f} -> {r['late']:.3f}"
    if memorised is not None:
        after = min(int(np.searchsorted(steps, memorised)), len(steps) - 1)
        later = _rising(steps, acc, levels, after)
        if later["late"] - later["early"] >= 0.5 * (r["late"] - r["early"]) > 0:
            evidence += f", {later['early']:.3f} when memorisation ended (step {memorised})"
            r = later
    if r["flat"] and r["late"] >= GENERALISED_ACCURACY:
        return _not_placed("generalisation", rule, f"the validation accuracy does not rise above its noise (it is "
                                                   f"{r['early']:.3f} at the first logged step, {int(steps[0])})",
                           evidence), None
    if r["late"] < GENERALISED_ACCURACY:
        return _not_placed("generalisation", rule, f"the validation accuracy ends at {r['late']:.3f}, below "
                                                   f"{GENERALISED_ACCURACY:g}: the run did not generalise",
                           evidence), None
    return _stage("generalisation", rule, evidence, r["start"], r["stop"]), r


def stages(trajectory: Trajectory, *, frequencies: Any = "auto", levels: Any = (0.1, 0.9)) -> RunStages:
    """The stages of a run: memorisation, circuit formation, cleanup and
    generalisation, each as a step interval with the evidence for its
    boundaries, or not placed with the reason.

    The circuit rules read the embedding alone (its Fourier signals, stored
    by a recorder at every step, else computed from the snapshots); the
    memorisation and generalisation rules read the network's own curves
    when the run has them (:func:`network_curves`). The rules are in this
    module's notes and in docs/bring_your_own_run.md.

    Parameters
    ----------
    trajectory : particles.Trajectory
        A recorded run.
    frequencies : "auto" or list of int
        The circuit's frequencies: the m strongest of the run's final
        spectrum, m = round(K / final concentration), its effective number
        of frequencies (default), or those k.

    Returns
    -------
    RunStages

    Raises
    ------
    ValueError
        A run whose signals (or snapshots, without signals) cover fewer
        than :data:`MIN_POINTS` steps, before any work; frequencies outside
        1..K.
    """
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"trajectory must be a particles.Trajectory, got {type(trajectory).__name__}")
    try:
        lo, hi = (float(v) for v in levels)
    except (TypeError, ValueError):
        raise TypeError(f"levels must be two numbers (start, stop) in (0, 1), got {levels!r}") from None
    if not 0 < lo < hi < 1:
        raise ValueError(f"levels must satisfy 0 < start < stop < 1, got {levels!r}")
    levels = (lo, hi)
    n_points = len(trajectory.steps) if trajectory.signals is not None else len(trajectory.snapshot_steps)
    if n_points < MIN_POINTS:
        what = "Fourier signals" if trajectory.signals is not None else "embedding snapshots (and no signals)"
        _check_points("circuit", trajectory.steps if trajectory.signals is not None else trajectory.snapshot_steps,
                      what)
    steps, signals = trajectory_signals(trajectory, power=1)
    given = _check_frequencies(frequencies, signals.shape[1])
    spectrum = _spectrum(trajectory, signals, given)
    circuit, circuit_start = _circuit(steps, spectrum, levels)
    cleanup, rel_outside = _cleanup(steps, spectrum, circuit, circuit_start, levels)
    curves = network_curves(trajectory)
    first, last = int(steps[0]), int(steps[-1])
    memorisation = _memorisation(curves, first, levels)
    generalisation, g = _generalisation(curves, levels, memorisation.stop if memorisation.found else None)
    lead = None
    if g is not None and circuit.found:
        c, v = circuit.start_range, g["start"]
        lead = {"steps": v[0] - circuit.start, "low": v[1] - c[1], "high": v[2] - c[0]}
    return RunStages(stages=(memorisation, circuit, cleanup, generalisation), key_frequencies=spectrum["key"],
                     circuit_frequencies=spectrum["circuit"] if circuit.found else [],
                     share_frequencies=spectrum["circuit"], lead_time=lead,
                     series={"steps": steps.copy(), "circuit_share": spectrum["share"],
                             "concentration": spectrum["concentration"], "outside_power": rel_outside},
                     curves=curves, first_step=first, last_step=last)


def _check_frequencies(frequencies: Any, K: int) -> list[int] | None:
    """``frequencies`` of :func:`stages`: None for "auto", else the sorted k in 1..K."""
    if isinstance(frequencies, str):
        if frequencies != "auto":
            raise ValueError(f"frequencies must be 'auto' or a list of frequencies in 1..{K}, got {frequencies!r}")
        return None
    try:
        given = sorted({int(k) for k in frequencies})
    except (TypeError, ValueError):
        raise TypeError(f"frequencies must be 'auto' or a list of ints in 1..{K}, got {frequencies!r}") from None
    if not given or given[0] < 1 or given[-1] > K:
        raise ValueError(f"frequencies must be a non-empty list of ints in 1..{K} (K = (p - 1) // 2 = {K}: "
                         f"frequency k and p - k are the same), got {list(frequencies)}")
    return given


def _spectrum(trajectory: Trajectory, signals: np.ndarray, given: list[int] | None) -> dict[str, Any]:
    """The embedding's measures: the circuit's frequencies, its share of the power, the power outside
    it, the concentration (K x IPR) and the key frequencies."""
    K = signals.shape[1]
    power = signals ** 2
    if K < 1 or not np.any(power[-1] > 0):
        raise ValueError(f"the run's final Fourier spectrum is {'empty (p < 3)' if K < 1 else 'zero'}: the circuit "
                         "rules need a final embedding that varies over the tokens")
    total = power.sum(axis=1)
    total = np.where(total > 0, total, 1.0)
    concentration = K * (power ** 2).sum(axis=1) / total ** 2  # K x IPR: 1 for a flat spectrum, K for one k
    if given is None:  # the final spectrum's effective number of frequencies, strongest first
        m = max(1, min(K, int(round(K / concentration[-1]))))
        given = sorted(int(k) + 1 for k in np.argsort(power[-1], kind="stable")[::-1][:m])
    mask = np.zeros(K, dtype=bool)
    mask[np.asarray(given, dtype=np.int64) - 1] = True
    return {"circuit": given, "mask": mask, "share": power[:, mask].sum(axis=1) / total,
            "outside": power[:, ~mask].sum(axis=1), "concentration": concentration, "K": K,
            "key": [int(k) for k in key_frequencies(trajectory)]}


def _circuit(steps: np.ndarray, sp: dict[str, Any], levels: tuple[float, float]) -> tuple[Stage, int]:
    """Circuit formation from the circuit's share of the power; and the index it starts at (0 if not placed)."""
    lo, hi = levels
    K, circuit_k = sp["K"], sp["circuit"]
    rule = (f"{lo:.0%} to {hi:.0%} of the rise of the circuit frequencies' share of the Fourier power; "
            f"placed when it rises by >= {MIN_SHARE_RISE:g}")
    r = _rising(steps, sp["share"], levels)
    c0, c1 = _levels(_smooth(sp["concentration"]))
    evidence = (f"circuit share {r['early']:.2f} -> {r['late']:.2f} (flat spectrum {len(circuit_k) / K:.2f}) over "
                f"{len(circuit_k)} of {K} frequencies; concentration {c0:.2f} -> {c1:.2f} (K x IPR, 1..{K}); key "
                f"frequencies {', '.join(map(str, sp['key'])) or 'none stand out'}")
    if r["late"] - r["early"] < MIN_SHARE_RISE:
        return _not_placed("circuit formation", rule, f"the circuit share rises only {r['early']:.2f} -> "
                                                      f"{r['late']:.2f}", evidence), 0
    if r["moving"]:
        evidence += ("; still rising at the run's end: its late level is the run's last 5 %, so its stop is where it "
                     "had made 90 % of its rise by then, not where the circuit settles")
    return (_stage("circuit formation", rule, evidence, r["start"], r["stop"]),
            int(np.searchsorted(steps, r["start"][0])))


def _cleanup(steps: np.ndarray, sp: dict[str, Any], circuit: Stage, circuit_start: int,
             levels: tuple[float, float]) -> tuple[Stage, np.ndarray]:
    """Cleanup from the log power outside the circuit's frequencies; and that power relative to its peak."""
    lo, hi = levels
    outside = sp["outside"]
    rule = (f"{lo:.0%} to {hi:.0%} of the fall of the log power outside the circuit frequencies from its peak "
            "(from circuit formation's start) to its final level; placed when that level is <= half the peak")
    rel_outside = outside / max(outside.max(), 1e-300)
    if not circuit.found or sp["mask"].all():
        return _not_placed("cleanup", rule, "no circuit formed" if not circuit.found
                           else "every frequency is a circuit frequency"), rel_outside
    log_out = np.log(np.maximum(outside, 1e-300))
    s = _smooth(log_out)
    peak_i = circuit_start + int(np.argmax(s[circuit_start:]))
    peak = float(s[peak_i])
    _, final = _levels(s)
    fall = float(np.exp(final - peak))
    rel_outside = outside / float(np.exp(peak))
    evidence = f"outside power falls to {fall:.2g} of its peak at step {int(steps[peak_i])}"
    if fall > 0.5 or peak_i >= len(s) - 2:
        return _not_placed("cleanup", rule, f"the power outside the circuit frequencies ends at {fall:.2g} of its "
                                            "peak", evidence), rel_outside
    if _still_moving(s[peak_i:], peak, final):
        evidence += ("; still falling at the run's end: its late level is the run's last 5 %, so its stop is where "
                     "it had made 90 % of its fall by then, not where the cleanup ends")
    progress = (peak - s) / (peak - final)
    tol = NOISE_BANDS * _noise(log_out, s) / (peak - final)
    return _stage("cleanup", rule, evidence, _reach(steps, progress, lo, peak_i, tol),
                  _reach(steps, progress, hi, peak_i, tol)), rel_outside
