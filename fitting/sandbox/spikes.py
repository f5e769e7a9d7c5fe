"""Loss spikes of a recorded run, traced to their layer and cause, and the
run's two stages (the clustering-head sandbox, docs/sandbox.md).

**Spikes** (:func:`find_spikes`). The curve is the full-training-set loss
``train_loss`` at every step: it is measured on the same parameters as the
layer states and gradient norms of that step (all before the step's
update), and it is smooth, so a spike is the network's and not the batch's.
The per-batch loss ``batch_loss`` changes by a factor of two from one batch
to the next in a fitted run, which would drown spikes in noise.

Step i is *flagged* when, in log space (``x = log loss``), with ``m`` the
median and ``s`` the robust spread (1.4826 x the median absolute deviation)
of ``x`` over the ``window`` steps before i (leaving out the steps already
flagged while they are at most half of them, so that a spike does not raise
the baseline of its own tail; found in a few passes),

    x[i] - m > log(factor)      (the loss is more than ``factor`` x its running median)
    x[i] - m > sigmas * s       (and the jump is large against the curve's own noise)

(each with a margin of 1e-9, so that the rounding of a scaled loss does not
flip a tie). Flagged steps at most ``min_gap`` steps apart are merged into
one spike, whose step is its peak (largest loss); its ratio is the peak loss over the
running median before its first flagged step (its *onset*). Everything is a
ratio of losses or a difference of logs, so multiplying the loss by a
constant changes nothing. The defaults, chosen on principle:

* ``window = 100``: a median is not moved while less than half of its
  window is spike, so a spike episode of up to 50 steps (five of Adam's
  momentum times 1 / (1 - beta1) = 10 steps) is measured against the loss
  before it; and 100 steps is short against the loss's own trends (in the
  steepest descent of the sparse-modular runs the loss falls by e in about
  400 steps, so the lagging median is at most ~15 % above the loss).
* ``factor = 2``: the loss at least doubles, the everyday meaning of a
  spike and the doubling docs/training.md counted (which compared a step
  with the one before and added a floor of 0.05 on the loss, not scale-free).
* ``sigmas = 5``: five robust standard deviations, rare under any
  bell-shaped noise; it only matters on a noisy curve (on the smooth
  full-set loss the doubling is the binding condition).
* ``min_gap = 20``: two of Adam's momentum times; a spike's recovery
  oscillates, and the flagged steps of one episode are a few steps apart.

``window`` and ``min_gap`` count curve samples, which are steps when the
curve has one value per step (as the trainers record it). The first
``window`` samples have no baseline and are not tested. An episode that
keeps more than half of the window high moves the median itself, so its
end is read early (seed 2's episode from step 10547 is one spike to step
10623; its tail, at about a tenth of its peak, lasts to about 10640).

**Causes** (:func:`trace_spikes`). The two causes the paper names, read
from the layer states recorded at the snapshots bracketing a spike: the
*before* snapshot is the last one before the spike's onset (the state at
step t is the one whose loss is ``train_loss[t]``, so a snapshot at the
onset already shows the spiking state), the *after* snapshot the first one
at or after its peak; snapshots between them are read too.

* decision boundary: a probe sequence's class under the map the rest of
  the network makes of the sequence plane differs, at a snapshot after
  *before* up to *after*, from its class at *before*: the count and share
  of probe sequences that changed class. The cause holds when some did,
  and more than over as many snapshots just before *before* (a control:
  classes also change while the network learns). The class is read from
  the recorded ``logits`` (that map at the sequence point itself); a run
  without them is read from the recorded region map (``regions_sequence``,
  the same map on a G x G grid over ``extent_sequence``: the grid point
  nearest to the sequence point, and only where the four grid points
  around it agree). The grid is not used when the logits are there,
  because near a boundary its nearest point's class is often not the
  network's: in seed 2 of the sparse-modular runs, during its spike at
  steps 10580-10600, the nearest grid point gave 8-17 probe sequences a
  class other than their label where the logits gave 0-5, and every one
  the logits misclassified lay in a grid cell a boundary crosses. Such
  probe sequences are counted apart (*on the boundary*, with the same
  control).
* normalisation: an input to a normalisation (an ``inputs`` point E + P of
  a (token, position), which ``normed_inputs`` normalises, or a ``sequence``
  point, which ``normed_sequence`` normalises) has a norm below
  ``norm_fraction`` (0.1) of the median norm of its kind at a bracketing
  snapshot: x / ||x|| turns by about dx / ||x|| for a step dx across x,
  ten times faster than at the typical norm. The smallest ratio, which
  point, and how much of the probe sequences such points feed (a normalised
  input enters a sequence embedding with its attention weight, so a
  near-zero input at a position the head ignores feeds little). Each kind
  is read only when its normalised state is recorded (the
  constant-attention network normalises nothing).

Both may hold; the stronger is the one with the larger share of the probe
sequences: the share that changed class against the share the near-zero
inputs feed (normalisation on a tie: it is upstream of a crossing).
"neither" when none holds, "not recorded" when no snapshots bracket the
spike. The farther apart the bracketing snapshots, the less certain the
attribution: every report gives their distance. A crossing that is undone
before the next snapshot is not seen: at snapshots 50 steps apart, seed
2's spike at step 10602 shows no probe sequence that changed class (while
the full training set's accuracy fell to 0.92 during it); at snapshots 10
steps apart, 8 of 256 did.

**Stages** (:func:`find_stages`): (1) the sequence embeddings cluster by
class: the within-class share of the variance of the unit-normalised
``residual`` states (the final residual stream, the sequence embedding the
tied output reads), grouped by probe label, is below 0.5 -- the definition
of ``docs/examples/training_experiments.py`` (``clustering-heads``,
``stage_order_half``); (2) the classifier fits: training accuracy is at
least 0.99. Each stage's step is the first step from which its criterion
holds to the end of the run, apart from the steps of loss spikes (a spike
briefly undoes both); the first step it holds at all is given too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from particles.core.validation import check_array, check_float, check_int

from .data import LayerStates, check_layer_states

__all__ = ["Spike", "SpikeReport", "Stage", "Stages", "find_spikes", "trace_spikes", "find_stages",
           "report_table", "within_class_share", "region_classes", "SPIKE_RULE", "CAUSES"]

#: the defaults of the spike rule (:func:`find_spikes`)
SPIKE_RULE: dict[str, Any] = {"window": 100, "factor": 2.0, "sigmas": 5.0, "min_gap": 20}
#: the causes a :class:`SpikeReport` names
CAUSES = ("decision boundary", "normalisation", "neither", "not recorded")
#: the median absolute deviation of a normal sample over its standard deviation, inverted
_MAD_SCALE = 1.4826
#: log-loss differences this small are ties (rounding of a scaled loss must not flip a comparison)
_TIE = 1e-9
#: the normalisation inputs read, and the normalised states they feed
_NORM_INPUTS = {"inputs": "normed_inputs", "sequence": "normed_sequence"}


@dataclass
class Spike:
    """One loss spike.

    Attributes
    ----------
    step : int
        Its peak: the step of the largest loss among its flagged steps.
    onset, end : int
        Its first and last flagged steps.
    loss : float
        The loss at the peak.
    baseline : float
        The running median of the loss over the ``window`` steps before the onset.
    ratio : float
        ``loss / baseline``.
    sigmas : float
        The peak's log-loss excess over the baseline in robust standard
        deviations of the log loss before the onset (inf when they are 0).
    flagged : int
        How many steps of [onset, end] were flagged.
    """

    step: int
    onset: int
    end: int
    loss: float
    baseline: float
    ratio: float
    sigmas: float
    flagged: int


@dataclass
class SpikeReport:
    """A spike traced to the layer whose gradient jumped most and to its cause.

    Attributes
    ----------
    spike : Spike
    layer : str or None
        The parameter group whose gradient norm jumped most: the largest
        ratio of its largest norm over the spike's steps [onset, end] to its
        median over the ``window`` steps before the onset (None without
        gradient-norm curves).
    layer_ratio : float or None
        That ratio.
    grad_ratios : dict of str to float
        The ratio of every group.
    before, after : int or None
        The bracketing snapshots' steps (None when the recorded steps do not
        bracket the spike).
    gap : int or None
        ``after - before``, steps.
    snapshots : int
        Recorded snapshots read, ``before`` and ``after`` included.
    crossings : int or None
        Probe sequences whose class under the recorded region map of the
        sequence plane changed from ``before`` at a later snapshot up to
        ``after`` (None: not bracketed, or no region map recorded).
    crossing_share : float or None
        ``crossings`` over the probe sequences.
    crossings_before : int or None
        The control: the probe sequences that changed class over as many
        recorded snapshots just before ``before`` (None when there are not
        so many). The decision-boundary cause holds when ``crossings`` > 0
        and exceeds this (classes also change while the network learns).
    on_boundary : int or None
        Probe sequences whose grid cell a boundary of the region map crosses
        at a snapshot after ``before`` up to ``after`` (their class is not
        decided at the map's resolution, so they are not counted in
        ``crossings``; many of them: points on the boundary).
    on_boundary_before : int or None
        The same over as many snapshots just before ``before`` (the
        control; many more on the boundary across the spike than before it
        is a sign of the decision-boundary cause that snapshots too far
        apart to see the crossing itself can still show).
    class_source : str or None
        Where the probe sequences' classes were read: ``"logits"`` (the
        recorded logits, the region map's function at the points
        themselves) or ``"region map"`` (when the logits are not recorded).
    norm_input : str or None
        The kind of normalisation input with the smallest norm ratio:
        ``"inputs"`` (E + P, normalised into ``normed_inputs``) or
        ``"sequence"`` (normalised into ``normed_sequence``).
    norm_where : str or None
        Which point: ``"token i at position t"`` or ``"sequence b"``, and the snapshot.
    norm_ratio : float or None
        Its norm over the median norm of its kind at that snapshot.
    norm_after : float or None
        The same point's ratio at the ``after`` snapshot (a point the spike
        threw out of the near-zero region has a larger one).
    norm_share : float or None
        How much of the probe sequences the near-zero normalisation inputs
        (below ``norm_fraction`` of their median at a snapshot read) feed:
        the mean over probe sequences of the attention weight each puts on
        its near-zero ``inputs`` points (summed, at most 1; each point
        counts 1 when the attention is not recorded), or 1 for a sequence
        whose own ``sequence`` point is near zero.
    norm_fraction : float
        The threshold of the normalisation cause.
    causes : tuple of str
        The causes that hold ("decision boundary", "normalisation").
    cause : str
        The stronger of them (the larger share of probe sequences), or
        "neither", or "not recorded".
    note : str
        One sentence: the cause, its numbers and how far apart the snapshots are.
    rule : dict
        The spike rule's parameters (``window``, ``factor``, ``sigmas``,
        ``min_gap``) the spike was traced with.
    """

    spike: Spike
    layer: str | None
    layer_ratio: float | None
    grad_ratios: dict[str, float]
    before: int | None
    after: int | None
    gap: int | None
    snapshots: int
    crossings: int | None
    crossing_share: float | None
    crossings_before: int | None
    on_boundary: int | None
    on_boundary_before: int | None
    class_source: str | None
    norm_input: str | None
    norm_where: str | None
    norm_ratio: float | None
    norm_after: float | None
    norm_share: float | None
    norm_fraction: float
    causes: tuple[str, ...]
    cause: str
    note: str
    rule: dict[str, Any] = field(default_factory=lambda: dict(SPIKE_RULE))

    @property
    def step(self) -> int:
        """The spike's peak step."""
        return self.spike.step

    @property
    def ratio(self) -> float:
        """The spike's peak loss over its running median."""
        return self.spike.ratio


@dataclass
class Stage:
    """One stage of a run.

    Attributes
    ----------
    name : str
        ``"clustering"`` or ``"fitting"``.
    step : int or None
        The first step from which the criterion holds to the end of the run
        (apart from spike steps); None when it does not hold at the end.
    first : int or None
        The first step at which the criterion holds at all; None when never.
    rule : str
        The criterion, in words.
    """

    name: str
    step: int | None
    first: int | None
    rule: str


@dataclass
class Stages:
    """The two stages of a run (:func:`find_stages`).

    Attributes
    ----------
    clustering, fitting : Stage
    order : str or None
        "clustering first", "fitting first" or "same step"; None unless both happened.
    state : str
        The state whose within-class share the clustering reads (``residual``,
        or ``sequence`` for a model without a residual stream).
    share_steps : ndarray of int, shape (S,)
        The recorded steps.
    shares : ndarray of float, shape (S,)
        The within-class share of the variance at each.
    excluded : list of (int, int)
        The spike spans [onset, end] left out of "stays".
    """

    clustering: Stage
    fitting: Stage
    order: str | None
    state: str
    share_steps: np.ndarray
    shares: np.ndarray
    excluded: list[tuple[int, int]] = field(default_factory=list)


# ---------------------------------------------------------------- checks
def _check_rule(window: Any, factor: Any, sigmas: Any, min_gap: Any) -> tuple[int, float, float, int]:
    window = check_int(window, "window", 3)
    factor = check_float(factor, "factor", 1.0, strict=True)
    sigmas = check_float(sigmas, "sigmas", 0.0)
    min_gap = check_int(min_gap, "min_gap", 1)
    return window, factor, sigmas, min_gap


def _check_curve(steps: Any, loss: Any) -> tuple[np.ndarray, np.ndarray]:
    steps = check_array(steps, "steps", ndim=1, dtype="int")
    loss = check_array(loss, "loss", shape=(len(steps),), bounded=False)
    if len(steps) > 1 and np.any(np.diff(steps) <= 0):
        i = int(np.flatnonzero(np.diff(steps) <= 0)[0])
        raise ValueError(f"steps must increase, got {int(steps[i])} then {int(steps[i + 1])} at positions {i}, {i + 1}")
    if loss.size and np.min(loss) < 0:
        raise ValueError(f"loss must be >= 0 everywhere (a loss), got a minimum of {float(np.min(loss))!r}")
    return steps, loss


def _loss_curve(layers: LayerStates) -> tuple[np.ndarray, np.ndarray]:
    curve = layers.curve("train_loss")
    if curve is None:
        raise ValueError(f"layers has no 'train_loss' curve (the full-training-set loss per step), which the spike "
                         f"rule reads; its curves are {', '.join(sorted(layers.curves)) or 'none'}")
    return curve


# ---------------------------------------------------------------- spikes
def _running_baseline(x: np.ndarray, window: int, masked: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Median and robust spread (1.4826 x MAD) of ``x`` over the ``window``
    samples before each sample, leaving out the ``masked`` ones while at
    least half the window is left; shape (n,) each (NaN for the first ``window``)."""
    n = len(x)
    med = np.full(n, np.nan)
    spread = np.full(n, np.nan)
    if n <= window:
        return med, spread
    view = np.lib.stride_tricks.sliding_window_view(x, window)[:-1]  # row j: x[j : j + window], before j + window
    rows = np.arange(len(view))
    if masked is not None and masked.any():
        hidden = np.concatenate([[0], np.cumsum(masked)])
        count = hidden[rows + window] - hidden[rows]  # masked samples in each row
        rows = np.flatnonzero((count > 0) & (count <= window // 2))
        part = np.where(np.lib.stride_tricks.sliding_window_view(masked, window)[:-1][rows], np.nan, view[rows])
        m = np.nanmedian(part, axis=1)
        med[window + rows] = m
        spread[window + rows] = _MAD_SCALE * np.nanmedian(np.abs(part - m[:, None]), axis=1)
        return med, spread
    m = np.median(view, axis=1)
    med[window:] = m
    spread[window:] = _MAD_SCALE * np.median(np.abs(view - m[:, None]), axis=1)
    return med, spread


def _flag(x: np.ndarray, window: int, factor: float, sigmas: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flagged steps, running median, robust spread), the flagged steps left out of the baselines after them."""
    med0, spread0 = med, spread = _running_baseline(x, window)
    flagged = np.zeros(len(x), dtype=bool)
    for _ in range(len(x)):  # a few passes: each leaves the steps flagged so far out of the baselines
        with np.errstate(invalid="ignore"):  # the margin keeps a tie a tie when the loss is scaled (rounding)
            now = flagged | ((x - med > math.log(factor) + _TIE) & (x - med > sigmas * spread + _TIE))
        if np.array_equal(now, flagged):
            break
        flagged = now
        m2, s2 = _running_baseline(x, window, flagged)
        redo = np.isfinite(m2)
        med, spread = np.where(redo, m2, med0), np.where(redo, s2, spread0)
    return flagged, med, spread


def find_spikes(steps: Any, loss: Any, *, window: int = 100, factor: float = 2.0, sigmas: float = 5.0,
                min_gap: int = 20) -> list[Spike]:
    """The loss spikes of a per-step loss curve (the rule of :mod:`fitting.sandbox.spikes`).

    Parameters
    ----------
    steps : array-like of int, shape (n,)
        The steps of the curve, increasing.
    loss : array-like of float, shape (n,)
        The loss at each, >= 0: the full-training-set loss ``train_loss``
        (the per-batch loss is too noisy). A zero is read as the smallest
        positive loss of the curve (so that its log is finite); a curve
        without a positive loss has no spikes.
    window : int >= 3
        Samples of the running median before each step (100).
    factor : float > 1
        A flagged step's loss exceeds ``factor`` x the running median (2).
    sigmas : float >= 0
        ... and its log exceeds the running median's log by ``sigmas``
        robust standard deviations of the log loss in the window (5).
    min_gap : int >= 1
        Flagged steps at most ``min_gap`` samples apart are one spike (20).

    Returns
    -------
    list of Spike
        In order of step; empty when none. Multiplying ``loss`` by a
        positive constant gives the same spikes (their ``loss`` and
        ``baseline`` scaled).

    Raises
    ------
    TypeError, ValueError
        Naming the parameter, before any work: a non-increasing ``steps``,
        a ``loss`` of another length, negative or non-finite, ``window`` < 3,
        ``factor`` <= 1, ``sigmas`` < 0, ``min_gap`` < 1.
    """
    window, factor, sigmas, min_gap = _check_rule(window, factor, sigmas, min_gap)
    steps, loss = _check_curve(steps, loss)
    positive = loss[loss > 0]
    if positive.size == 0 or len(loss) <= window:
        return []
    x = np.log(np.where(loss > 0, loss, positive.min()))
    flagged, med, spread = _flag(x, window, factor, sigmas)
    idx = np.flatnonzero(flagged)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > min_gap)
    spikes = []
    for group in np.split(idx, breaks + 1):
        onset, end = int(group[0]), int(group[-1])
        peak = int(group[np.flatnonzero(x[group] >= x[group].max() - _TIE)[0]])  # the first of tied peaks
        base_log, base_spread = med[onset], spread[onset]
        up = x[peak] - base_log
        spikes.append(Spike(step=int(steps[peak]), onset=int(steps[onset]), end=int(steps[end]),
                            loss=float(loss[peak]), baseline=float(math.exp(base_log)), ratio=float(math.exp(up)),
                            sigmas=float(up / base_spread) if base_spread > 0 else math.inf, flagged=len(group)))
    return spikes


# ---------------------------------------------------------------- causes
def region_classes(points: Any, regions: Any, extent: Any, *, strict: bool = False) -> np.ndarray:
    """The class of each point under a recorded region map.

    Parameters
    ----------
    points : array-like, shape (B, 2)
        Points of the plane the map covers.
    regions : array-like, shape (G, G)
        The class index of each grid point; a row is one y (``y0`` first), a
        column one x (:mod:`fitting.training.layers`).
    extent : array-like, shape (4,)
        The grid's x0, x1, y0, y1: grid point (r, c) is at
        (x0 + c (x1 - x0) / (G - 1), y0 + r (y1 - y0) / (G - 1)).
    strict : bool
        Give a class only where the map decides it at its resolution: the
        four grid points around the point (the corners of its grid cell)
        agree; -2 where they do not (a boundary crosses the point's cell).

    Returns
    -------
    ndarray of int, shape (B,)
        The class of the grid point nearest to each point (points outside
        the extent take the nearest edge's); -1 for a non-finite point;
        with ``strict``, -2 for a point whose cell a boundary crosses.
    """
    pts = check_array(points, "points", ndim=2, shape=(None, 2), finite=False)
    reg = check_array(regions, "regions", ndim=2, finite=False)
    ext = check_array(extent, "extent", shape=(4,))
    if reg.shape[0] != reg.shape[1] or reg.shape[0] < 2:
        raise ValueError(f"regions must be a square grid of at least 2 x 2, got shape {reg.shape}")
    if not (ext[1] > ext[0] and ext[3] > ext[2]):
        raise ValueError(f"extent must be x0 < x1, y0 < y1, got {ext.tolist()}")
    g = reg.shape[0]
    ok = np.all(np.isfinite(pts), axis=1)
    safe = np.where(ok[:, None], pts, 0.0)
    fc = np.clip((safe[:, 0] - ext[0]) / (ext[1] - ext[0]) * (g - 1), 0, g - 1)  # fractional column, row
    fr = np.clip((safe[:, 1] - ext[2]) / (ext[3] - ext[2]) * (g - 1), 0, g - 1)
    reg = np.where(np.isfinite(reg), reg, -1).astype(np.int64)
    cls = reg[np.rint(fr).astype(np.int64), np.rint(fc).astype(np.int64)]
    if strict:
        r0, c0 = np.floor(fr).astype(np.int64), np.floor(fc).astype(np.int64)
        r1, c1 = np.minimum(r0 + 1, g - 1), np.minimum(c0 + 1, g - 1)
        corners = np.stack([reg[r0, c0], reg[r0, c1], reg[r1, c0], reg[r1, c1]])
        cls = np.where(np.all(corners == corners[0], axis=0), cls, -2)
    return np.where(ok, cls, -1)


def _bracket(rec: np.ndarray, onset: int, peak: int) -> tuple[int | None, int | None]:
    """Indices into the recorded steps ``rec`` of the last snapshot before ``onset`` and the first at or after ``peak``."""
    i = int(np.searchsorted(rec, onset, side="left")) - 1
    j = int(np.searchsorted(rec, peak, side="left"))
    return (i if i >= 0 else None), (j if j < len(rec) else None)


def _crossings(layers: LayerStates, i: int, j: int) -> tuple[int, int | None, str] | None:
    """(probe sequences whose class at a snapshot after i up to j differs from their class at i, those whose
    grid cell a boundary of the region map crosses at a snapshot after i up to j, where the classes come from)."""
    st = layers.states
    has_map = all(k in st for k in ("regions_sequence", "extent_sequence", "sequence"))
    if "logits" not in st and not has_map:
        return None

    def on_map(k: int) -> np.ndarray:
        return region_classes(st["sequence"][k], st["regions_sequence"][k], st["extent_sequence"][k], strict=True)

    def classes(k: int) -> np.ndarray:
        if "logits" in st:
            logits = np.asarray(st["logits"][k], dtype=float)
            return np.where(np.all(np.isfinite(logits), axis=1), np.argmax(np.nan_to_num(logits, nan=-np.inf), axis=1),
                            -1)
        return on_map(k)

    first = classes(i)
    changed = np.zeros(len(first), dtype=bool)
    near = np.zeros(len(first), dtype=bool)
    for k in range(i + 1, j + 1):
        cls = classes(k)
        changed |= (cls != first) & (cls >= 0) & (first >= 0)
        if has_map:
            near |= on_map(k) == -2
    return int(changed.sum()), (int(near.sum()) if has_map else None), ("logits" if "logits" in st else "region map")


def _norm_ratios(points: np.ndarray) -> np.ndarray:
    """Each point's norm over the median norm of the finite points (NaN for a non-finite point)."""
    norms = np.linalg.norm(points, axis=-1)
    finite = np.isfinite(norms)
    med = np.median(norms[finite]) if finite.any() else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return norms / med if med > 0 else np.full(norms.shape, np.nan)


def _normalisation(layers: LayerStates, i: int, j: int, fraction: float) -> dict[str, Any] | None:
    """The smallest normalisation input over snapshots i..j: its kind, where, ratio and ratio at snapshot j,
    and the share of the probe sequences that near-zero inputs feed (None: no normalisation inputs)."""
    st, tokens = layers.states, layers.probe_tokens
    best: dict[str, Any] | None = None
    fed = np.zeros(len(layers.probe_labels))  # per probe sequence, the largest weight it gives near-zero inputs
    weighted = "attention" in st
    for kind, normed in _NORM_INPUTS.items():
        if kind not in st or normed not in st:  # read only where the model normalises it (records the normed state)
            continue
        for k in range(i, j + 1):
            r = _norm_ratios(np.asarray(st[kind][k], dtype=float))
            if not np.isfinite(r).any():
                continue
            at = np.unravel_index(int(np.nanargmin(r)), r.shape)
            if best is None or r[at] < best["ratio"]:
                where = f"token {at[0]} at position {at[1]}" if kind == "inputs" else f"sequence {at[0]}"
                best = {"kind": kind, "where": f"{where}, step {int(layers.steps[k])}", "ratio": float(r[at]),
                        "after": float(_norm_ratios(np.asarray(st[kind][j], dtype=float))[at])}
            low = np.nan_to_num(r, nan=np.inf) < fraction
            if kind == "inputs":  # (p, T): the sequences holding token a at position t, by their attention there
                T = min(low.shape[1], tokens.shape[1])
                held = low[tokens[:, :T], np.arange(T)[None, :]]  # (B, T): position t holds a near-zero input
                w = np.asarray(st["attention"][k], dtype=float)[:, :T] if weighted else np.ones(held.shape)
                fed = np.maximum(fed, np.clip(np.nansum(np.where(held, w, 0.0), axis=1), 0.0, 1.0))
            else:
                fed = np.maximum(fed, low.astype(float))
    if best is not None:
        best["share"] = float(fed.mean()) if fed.size else 0.0
        best["weighted"] = weighted
    return best


def _grad_ratios(layers: LayerStates, spike: Spike, window: int) -> dict[str, float]:
    out = {}
    for g in layers.grad_norm_groups:
        s, v = layers.curves[f"grad_norm_{g}"]
        s, v = np.asarray(s), np.asarray(v, dtype=float)
        a = int(np.searchsorted(s, spike.onset, side="left"))
        b = int(np.searchsorted(s, spike.end, side="right"))
        before = v[max(0, a - window):a]
        before = before[np.isfinite(before)]
        during = v[a:b]
        during = during[np.isfinite(during)]
        if before.size == 0 or during.size == 0:
            continue
        base, top = float(np.median(before)), float(np.max(during))
        out[g] = top / base if base > 0 else (math.inf if top > 0 else 1.0)
    return out


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def _choose(crossings: int | None, control: int | None, c_share: float | None, n_ratio: float | None,
            n_share: float | None, fraction: float) -> tuple[dict[str, float], str]:
    """The causes that hold, with their shares, and the one named."""
    holds = {}
    if crossings and (control is None or crossings > control):
        holds["decision boundary"] = c_share
    if n_ratio is not None and n_ratio < fraction:
        holds["normalisation"] = n_share
    if not holds:
        return holds, "neither"
    if len(holds) == 1:
        return holds, next(iter(holds))
    return holds, "decision boundary" if holds["decision boundary"] > holds["normalisation"] else "normalisation"


def _trace(layers: LayerStates, spike: Spike, rule: dict[str, Any], norm_fraction: float) -> SpikeReport:
    """One spike's report (:func:`trace_spikes`)."""
    rec = np.asarray(layers.steps)
    grads = _grad_ratios(layers, spike, rule["window"])
    layer = max(grads, key=grads.get) if grads else None
    common = {"spike": spike, "layer": layer, "layer_ratio": grads.get(layer) if layer else None,
              "grad_ratios": grads, "norm_fraction": norm_fraction, "rule": dict(rule)}
    i, j = _bracket(rec, spike.onset, spike.step)
    if i is None or j is None:
        where = f"{int(rec[0])} to {int(rec[-1])}" if len(rec) else "none"
        return SpikeReport(
            **common, before=None, after=None, gap=None, snapshots=0, crossings=None, crossing_share=None,
            crossings_before=None, on_boundary=None, on_boundary_before=None, class_source=None, norm_input=None,
            norm_where=None, norm_ratio=None, norm_after=None, norm_share=None, causes=(), cause="not recorded",
            note=f"not recorded: no recorded snapshots bracket steps {spike.onset}-{spike.step} (recorded: {where})")
    before, after = int(rec[i]), int(rec[j])
    crossed = _crossings(layers, i, j)
    crossings, near, source = (None, None, None) if crossed is None else crossed
    ctrl = _crossings(layers, 2 * i - j, i) if crossed is not None and 2 * i - j >= 0 else None
    control, near_before = (None, None) if ctrl is None else ctrl[:2]
    n_probe = len(layers.probe_labels)
    c_share = None if crossings is None else crossings / n_probe
    norm = _normalisation(layers, i, j, norm_fraction) or {}
    kind, where, n_ratio, n_share, n_after = (norm.get(k) for k in ("kind", "where", "ratio", "share", "after"))
    holds, cause = _choose(crossings, control, c_share, n_ratio, n_share, norm_fraction)
    gap = after - before
    parts = []
    if crossings is not None:
        parts.append(f"{crossings} of {n_probe} probe sequences ({_pct(c_share)}) changed class" +
                     ("" if control is None else f" ({control} over as many snapshots before)") +
                     (f", {near} on a boundary of the region map (within a grid cell; {near_before} over "
                      f"as many snapshots before)" if near is not None else "") + f" (classes from the {source})")
    if n_ratio is not None:
        parts.append(f"the smallest normalisation input ({kind}, {where}) is {n_ratio:.3g} x its median norm "
                     f"({n_after:.3g} at step {after})")
    span = spike.end - spike.onset + 1
    note = (f"{cause}: " + "; ".join(parts) + f" between the snapshots at steps {before} and {after}, "
            f"{gap} steps apart for a spike of {span} step{'s' if span != 1 else ''} (the farther apart, "
            f"the less certain the attribution)")
    return SpikeReport(**common, before=before, after=after, gap=gap, snapshots=j - i + 1, crossings=crossings,
                       crossing_share=c_share, crossings_before=control, on_boundary=near,
                       on_boundary_before=near_before, class_source=source, norm_input=kind, norm_where=where,
                       norm_ratio=n_ratio, norm_after=n_after, norm_share=n_share, causes=tuple(holds), cause=cause,
                       note=note)


def trace_spikes(layers: Any, spikes: Sequence[Spike] | None = None, *, norm_fraction: float = 0.1,
                 **rule: Any) -> list[SpikeReport]:
    """Each loss spike of a run with the layer whose gradient jumped most and its cause.

    Parameters
    ----------
    layers : LayerStates
        The run (:func:`fitting.sandbox.load_layers`), with its ``train_loss``
        curve when ``spikes`` is None, its ``grad_norm_<group>`` curves and
        its layer states.
    spikes : sequence of Spike, optional
        The spikes to trace; default :func:`find_spikes` on the run's
        ``train_loss`` with ``rule``.
    norm_fraction : float in (0, 1)
        A normalisation input whose norm is below this share of the median
        norm of its kind is near zero (0.1).
    **rule
        ``window``, ``factor``, ``sigmas``, ``min_gap`` of :func:`find_spikes`
        (``window`` is also the baseline of the gradient-norm ratios).

    Returns
    -------
    list of SpikeReport
        One per spike, in the order given.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter, before any work.
    """
    layers = check_layer_states(layers)
    norm_fraction = check_float(norm_fraction, "norm_fraction", 0.0, 1.0, strict=True)
    bad = sorted(set(rule) - set(SPIKE_RULE))
    if bad:
        raise TypeError(f"trace_spikes got an unexpected keyword {bad[0]!r}; the rule's keywords are "
                        f"{', '.join(SPIKE_RULE)}")
    params = _check_rule(**{**SPIKE_RULE, **rule})
    if spikes is None:
        steps, loss = _loss_curve(layers)
        spikes = find_spikes(steps, loss, **dict(zip(SPIKE_RULE, params)))
    else:
        if isinstance(spikes, Spike) or not isinstance(spikes, Sequence) or \
                not all(isinstance(s, Spike) for s in spikes):
            raise TypeError(f"spikes must be a sequence of Spike (find_spikes), got {type(spikes).__name__}")
    used = dict(zip(SPIKE_RULE, params))
    return [_trace(layers, spike, used, norm_fraction) for spike in spikes]


# ---------------------------------------------------------------- stages
def within_class_share(points: Any, labels: Any) -> np.ndarray:
    """The within-class share of the variance of unit-normalised points.

    The definition of ``docs/examples/training_experiments.py``
    (``clustering-heads``): each point is divided by its norm (at least
    1e-12), and the share is the summed squared distance of the points to
    their class means over the summed squared distance to the overall mean
    (1 when the latter is 0). 0 is perfectly clustered, 1 no clustering.

    Parameters
    ----------
    points : array-like, shape (..., B, d)
        The points (e.g. the ``residual`` states of B probe sequences, with
        a leading axis over recorded steps).
    labels : array-like of int, shape (B,)
        Their classes.

    Returns
    -------
    ndarray of float, shape (...)
    """
    pts = check_array(points, "points", ndim=(2, 3, 4), bounded=False)
    labs = check_array(labels, "labels", ndim=1, dtype="int")
    if pts.shape[-2] != len(labs):
        raise ValueError(f"labels must have one class per point: points hold {pts.shape[-2]} points "
                         f"(shape {pts.shape}), labels {len(labs)}")
    z = pts / np.maximum(np.linalg.norm(pts, axis=-1, keepdims=True), 1e-12)
    total = np.sum((z - z.mean(axis=-2, keepdims=True)) ** 2, axis=(-2, -1))
    within = np.zeros(total.shape)
    for c in np.unique(labs):
        zc = z[..., labs == c, :]
        within = within + np.sum((zc - zc.mean(axis=-2, keepdims=True)) ** 2, axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, within / np.where(total > 0, total, 1.0), 1.0)


def _in_spans(steps: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    out = np.zeros(len(steps), dtype=bool)
    for a, b in spans:
        out |= (steps >= a) & (steps <= b)
    return out


def _stays(steps: np.ndarray, ok: np.ndarray, skip: np.ndarray) -> tuple[int | None, int | None]:
    """(first step from which ``ok`` holds to the end apart from ``skip``, first step where ``ok`` holds)."""
    hit = np.flatnonzero(ok)
    first = int(steps[hit[0]]) if hit.size else None
    bad = np.flatnonzero(~ok & ~skip)
    start = 0 if bad.size == 0 else bad[-1] + 1
    rest = np.flatnonzero(ok[start:])
    return (int(steps[start + rest[0]]) if rest.size else None), first


def find_stages(layers: Any, *, share: float = 0.5, accuracy: float = 0.99, curve: str = "train_acc",
                spikes: Sequence[Spike] | None = None) -> Stages:
    """The run's two stages: its sequence embeddings cluster, then its classifier fits.

    Parameters
    ----------
    layers : LayerStates
        The run, with its ``residual`` (or, for a model without one,
        ``sequence``) states and its accuracy curve.
    share : float in (0, 1)
        Clustered: the within-class share of the variance
        (:func:`within_class_share`) of the unit-normalised ``residual``
        states of the probe sequences is below this (0.5, as
        ``docs/examples/training_experiments.py``'s ``stage_order_half``).
    accuracy : float in (0, 1]
        Fitted: the accuracy curve is at least this (0.99).
    curve : str
        The accuracy curve: ``"train_acc"`` (default) or ``"val_acc"``.
    spikes : sequence of Spike, optional
        Spikes whose steps [onset, end] "stays" overlooks; default
        :func:`find_spikes` on the run's ``train_loss`` (``[]`` for none).

    Returns
    -------
    Stages
        A stage's ``step`` is None when its criterion does not hold at the
        end of the run.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter, before any work (a run without the states or
        the curve).
    """
    layers = check_layer_states(layers)
    share = check_float(share, "share", 0.0, 1.0, strict=True)
    accuracy = check_float(accuracy, "accuracy", 0.0, 1.0)
    if accuracy <= 0:
        raise ValueError(f"accuracy must be a number in (0, 1], got {accuracy!r}")
    if curve not in ("train_acc", "val_acc"):
        raise ValueError(f"curve must be 'train_acc' or 'val_acc', got {curve!r}")
    acc = layers.curve(curve)
    if acc is None:
        raise ValueError(f"layers has no {curve!r} curve; its curves are {', '.join(sorted(layers.curves)) or 'none'}")
    state = "residual" if "residual" in layers.states else "sequence"
    if state not in layers.states:
        raise ValueError("layers has neither 'residual' nor 'sequence' states to measure the clustering by")
    if spikes is None:
        spikes = find_spikes(*_loss_curve(layers)) if layers.curve("train_loss") is not None else []
    elif isinstance(spikes, Spike) or not isinstance(spikes, Sequence) or \
            not all(isinstance(s, Spike) for s in spikes):
        raise TypeError(f"spikes must be a sequence of Spike (find_spikes), got {type(spikes).__name__}")
    spans = [(s.onset, s.end) for s in spikes]
    rec = np.asarray(layers.steps)
    shares = within_class_share(layers.states[state], layers.probe_labels)
    c_step, c_first = _stays(rec, shares < share, _in_spans(rec, spans))
    a_steps, a_vals = np.asarray(acc[0]), np.asarray(acc[1], dtype=float)
    f_step, f_first = _stays(a_steps, a_vals >= accuracy, _in_spans(a_steps, spans))
    clustering = Stage("clustering", c_step, c_first,
                       f"within-class share of the variance of the unit-normalised {state} states of the "
                       f"{len(layers.probe_labels)} probe sequences, by label, < {share:g} from this recorded "
                       f"step on (spike steps aside)")
    fitting = Stage("fitting", f_step, f_first,
                    f"{curve} >= {accuracy:g} from this step on (spike steps aside)")
    order = None
    if c_step is not None and f_step is not None:
        order = "clustering first" if c_step < f_step else "fitting first" if f_step < c_step else "same step"
    return Stages(clustering=clustering, fitting=fitting, order=order, state=state, share_steps=rec.copy(),
                  shares=shares, excluded=spans)


# ---------------------------------------------------------------- table
def _fmt(v: float | None, spec: str = ".3g") -> str:
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf"
    return format(v, spec)


def report_table(reports: Sequence[SpikeReport], stages: Stages | None = None, *,
                 rule: dict[str, Any] | None = None) -> str:
    """The spikes and stages as a plain-text table (``embdyn sandbox RUN --report``).

    Parameters
    ----------
    reports : sequence of SpikeReport
        From :func:`trace_spikes`.
    stages : Stages, optional
        From :func:`find_stages`.
    rule : dict, optional
        The spike rule to state in the heading (``window``, ``factor``,
        ``sigmas``, ``min_gap``); default the reports' own, or
        :data:`SPIKE_RULE` when there are none.

    Returns
    -------
    str
        One row a spike (step, onset-end, loss / median, the layer whose
        gradient jumped most and by how much, the cause, the probe sequences
        that changed class, the smallest normalisation-input norm ratio, the
        bracketing snapshots), then one row a stage (name, step, first step,
        rule), without a trailing newline.
    """
    if isinstance(reports, SpikeReport) or not isinstance(reports, Sequence) or \
            not all(isinstance(r, SpikeReport) for r in reports):
        raise TypeError(f"reports must be a sequence of SpikeReport (trace_spikes), got {type(reports).__name__}")
    if stages is not None and not isinstance(stages, Stages):
        raise TypeError(f"stages must be a Stages (find_stages) or None, got {type(stages).__name__}")
    if rule is not None and (not isinstance(rule, dict) or set(rule) != set(SPIKE_RULE)):
        raise TypeError(f"rule must be a dict with the keys {', '.join(SPIKE_RULE)} (or None), got {rule!r}")
    r = rule or (reports[0].rule if reports else SPIKE_RULE)
    text = (f"train_loss > {r['factor']:g} x its median over the {r['window']} steps before and > "
            f"{r['sigmas']:g} robust sd above it in log space; flagged steps <= {r['min_gap']} apart are one spike")
    lines = [f"loss spikes: {len(reports)} ({text})"]
    if reports:
        head = ("step", "onset-end", "loss/median", "layer (grad x)", "cause", "changed class",
                "min norm ratio", "snapshots")
        rows = []
        for r in reports:
            s = r.spike
            layer = "-" if r.layer is None else f"{r.layer} ({_fmt(r.layer_ratio, '.3g')}x)"
            changed = "-" if r.crossings is None else f"{r.crossings} ({_pct(r.crossing_share)})" + \
                ("" if r.crossings_before is None else f", {r.crossings_before} before") + \
                (f"; {r.on_boundary} on boundary" + ("" if r.on_boundary_before is None
                                                     else f" ({r.on_boundary_before} before)")
                 if r.on_boundary else "")
            norm = "-" if r.norm_ratio is None else f"{r.norm_ratio:.3g} ({r.norm_input})"
            snaps = "-" if r.before is None else f"{r.before}-{r.after} ({r.gap} steps)"
            cause = r.cause + (" (+" + ", ".join(c for c in r.causes if c != r.cause) + ")"
                               if len(r.causes) > 1 else "")
            rows.append((str(s.step), f"{s.onset}-{s.end}", _fmt(s.ratio, ".3g"), layer, cause, changed, norm, snaps))
        widths = [max(len(h), *(len(row[k]) for row in rows)) for k, h in enumerate(head)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
    if stages is not None:
        lines.append("")
        lines.append("stages" + (f": {stages.order}" if stages.order else ""))
        rows = [(st.name, "never" if st.step is None else str(st.step), "-" if st.first is None else str(st.first),
                 st.rule) for st in (stages.clustering, stages.fitting)]
        head = ("stage", "step", "first", "rule")
        widths = [max(len(h), *(len(row[k]) for row in rows)) for k, h in enumerate(head)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
    return "\n".join(lines)
