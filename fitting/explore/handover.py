"""The hand-over from a network in training to the particle model: the law a
particle panel runs from the network's embedding, either a preset's or the
one :class:`fitting.forcefit.ForceLawFit` fits to the network's last steps.

The fitted law is the preset's terms (alignment tied, so that it is a
``ForceParams`` the particle engine runs) with strengths and ranges fitted to
minus the loss gradient the network recorded at each of its last steps
(:meth:`fitting.training.live.LiveNetwork.recorded`), each run scaled to unit
RMS force (``normalize="rms"``: the strengths are per unit RMS force, the
network's flow on another time scale). No bootstrap (a page waits for it);
a null of relabelled tokens is fitted beside it, so the page can say whether
the law explains more than chance.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Mapping

import numpy as np

from particles.core.controls import ControlError

from ..forcefit import ForceLawFit

__all__ = ["HANDOVER_LAWS", "MIN_SNAPSHOTS", "HANDOVER_NULL", "handover_law", "fitted_law"]

#: the laws a particle panel can take a network's embedding under
HANDOVER_LAWS = ("preset", "fitted")
#: recorded steps a fitted law needs (the range search uses 20 snapshots)
MIN_SNAPSHOTS = 20
#: relabellings of the tokens in the fitted law's null
HANDOVER_NULL = 5
#: one fit at a time: the warnings a fit gives are caught through the process-wide warnings state, which two
#: fits at once would mix up (pages asking together wait for each other, a second or two each)
_FIT_LOCK = threading.Lock()


def fitted_law(recorded: Mapping[str, Any], preset_name: str, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """The preset ``preset_name``'s law fitted to a network's recorded steps.

    Parameters
    ----------
    recorded : mapping
        ``steps`` (T,), ``X`` and ``G`` (T, p, d), ``train`` (PairDataset), as
        :meth:`fitting.training.live.LiveNetwork.recorded` gives them.
    preset_name : str
        The preset whose terms and starting ranges are fitted.
    seed : int
        The null's relabellings.

    Returns
    -------
    law : ForceParams
    info : dict
        ``r2``, ``null_r2`` (mean over the null's relabellings), ``verdict``
        ("above chance", "at chance" or "below chance", :func:`fitting.forcefit.verdict.verdict`, the
        summary's and the command line's), ``null_r2_interval``, ``snapshots``,
        ``steps`` (first, last), ``ranges``, ``strengths`` and ``warnings``
        (the fit's own, one plain sentence each).
    """
    steps = np.asarray(recorded["steps"])
    if len(steps) < MIN_SNAPSHOTS:
        raise ControlError("law", f"a fitted law needs at least {MIN_SNAPSHOTS} recorded training steps; the "
                                  f"network has {len(steps)}: train it further first")
    estimator = ForceLawFit(preset_name, tie_alignment=True, normalize="rms", n_bootstrap=0, null=HANDOVER_NULL,
                            seed=seed)
    with _FIT_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(recorded["X"], recorded["G"], train=recorded["train"], steps=steps)
    law = estimator.to_law()
    info = {"r2": float(estimator.r2_), "null_r2": estimator.null_r2_, "verdict": estimator.verdict_,
            "null_r2_interval": None if estimator.null_r2_interval_ is None else
            [float(v) for v in estimator.null_r2_interval_], "snapshots": int(len(steps)),
            "steps": [int(steps[0]), int(steps[-1])], "ranges": dict(estimator.ranges_),
            "strengths": {t: float(c) for t, c in zip(estimator.terms_, estimator.coef_)},
            "warnings": [" ".join(str(w.message).split()) for w in caught]}
    return law, info


def handover_law(kind: Any, preset_name: str, recorded: Mapping[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """The law of a hand-over: ``kind`` "preset" (the preset's own law, no
    fit: info None) or "fitted" (:func:`fitted_law`); a :class:`ControlError`
    naming ``law`` for another kind."""
    from particles.presets import preset

    if kind not in HANDOVER_LAWS:
        raise ControlError("law", f"law must be one of {', '.join(HANDOVER_LAWS)}, got {kind!r}")
    if kind == "preset":
        return preset(preset_name).params, None
    return fitted_law(recorded, preset_name)
