"""The Live tab's simulation: the particle engine stepped frame by frame under
controls a page may change at any moment.

Every control has a kind and a range (:data:`CONTROLS`); :meth:`LiveSimulation.update`
checks all changes before it applies any, so a refused value leaves the run as
it was. Changing the preset, p, d or the seed starts again from that seed's
initial state; every other change acts on the current state from the next frame.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

import numpy as np

from particles.core.locks import FirstLock
from particles.core.controls import Control, ControlError, check_changes, controls_spec
from particles.core.throttle import Throttled

from .projection import principal_plane, project

__all__ = ["Control", "ControlError", "CONTROLS", "LiveSimulation", "control_spec", "CHUNK_SECONDS"]

#: the Euler steps of a frame run in chunks of about this many seconds, each holding the run's lock
CHUNK_SECONDS = 0.05


PRESET_NAMES = ("clustering-alignment", "circles", "grids")
FORCE_FIELDS = ("lam", "wd", "wd_target", "k_a", "sig_a", "k_r", "sig_r", "sig_t", "eps", "bias_scale")

#: every control the page can send, with its accepted range
CONTROLS: dict[str, Control] = {
    "preset": Control("choice", choices=PRESET_NAMES, restart=True, help="starting law and schedule"),
    "p": Control("int", 3, 113, restart=True, help="tokens (modular addition mod p)"),
    "d": Control("int", 2, 8, restart=True, help="embedding dimension (d > 2 shown by PCA)"),
    "seed": Control("int", 0, 2 ** 31 - 1, restart=True, help="split and initial state"),
    "dt": Control("float", 0.0, 0.5, strict=True, help="Euler time step"),
    "steps_per_frame": Control("int", 1, 1000, help="Euler steps between frames"),
    "lam": Control("float", 0.0, 100.0, help="alignment weight"),
    "wd": Control("float", 0.0, 100.0, help="weight decay"),
    "wd_target": Control("choice", choices=("particles", "classifier"), help="what the weight decay acts on"),
    "k_a": Control("float", 0.0, 100.0, help="attraction strength"),
    "sig_a": Control("float", 0.0, 100.0, strict=True, help="attraction range"),
    "k_r": Control("float", 0.0, 100.0, help="repulsion strength"),
    "sig_r": Control("float", 0.0, 100.0, strict=True, help="repulsion range"),
    "sig_t": Control("float", 0.0, 10.0, strict=True, help="angular range of the alignment repulsion"),
    "eps": Control("float", 0.0, 100.0, strict=True, help="softening of the alignment's norm"),
    "bias_scale": Control("float", 0.0, 100.0, strict=True,
                          help="classifier bias scale (acts only with wd_target = classifier)"),
    "force_terms": Control("choice", choices=("off", "on"), help="each term's force on the tokens in the frames"),
}


def control_spec() -> dict[str, dict[str, Any]]:
    """The controls as JSON for the page: kind, range, choices, restart, help and the accepted-range text."""
    return controls_spec(CONTROLS)


class LiveSimulation:
    """A particle run advanced one frame at a time.

    Parameters
    ----------
    **values
        Initial control values (see :data:`CONTROLS`); the rest come from the
        preset (default ``"clustering-alignment"``, p = 17, d = 2, seed 0,
        20 steps a frame).

    Thread-safe: :meth:`update` and :meth:`advance` may be called from different threads.
    """

    #: the controls a page may send (a restart control starts the run again)
    controls = CONTROLS

    def __init__(self, **values: Any):
        self._lock = FirstLock()  # calls from the page go before a frame's next chunk (_lock.first())
        self._chunk = 1  # Euler steps a chunk: grows to about CHUNK_SECONDS from the first frame on
        self.cut: dict[str, int] | None = None
        self.values: dict[str, Any] = {}
        self.version = 0
        self.error: str | None = None
        self._basis: np.ndarray | None = None
        self._stage_lock = threading.Lock()
        self._pending: dict[str, Any] | None = None
        self.staged_version = 0
        self._base = self._preset_values(values.pop("preset", "clustering-alignment"), self.values)
        self.values.update({"p": 17, "d": 2, "seed": 0, "steps_per_frame": 20, "force_terms": "off"})
        self._origin: tuple[np.ndarray, Any, str] | None = None  # a handed-over state that a reset comes back to
        self.metrics = Throttled()  # the frames' structure metrics, a few times a second
        self.update(values)

    # -- controls -------------------------------------------------------------------------------------
    @staticmethod
    def _preset_values(name: str, values: dict[str, Any]) -> Any:
        """Set ``values``' preset, dt and force fields from the preset ``name``; returns the preset."""
        from particles.presets import preset

        config = preset(name)
        values.update({"preset": name, "dt": config.dt})
        params = config.params.to_dict()
        values.update({k: params[k] for k in FORCE_FIELDS})
        return config

    def check(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """``changes`` checked against :data:`CONTROLS`; a :class:`ControlError` (a
        ``ValueError``) naming the first bad control and its accepted range, before anything changes."""
        return check_changes(CONTROLS, changes)

    @staticmethod
    def law_for(base: Any, values: Mapping[str, Any]) -> Any:
        """The force law of ``values`` on the preset ``base``: the classifier's bias scale and the
        particles' own decay act only with ``wd_target = "classifier"`` (otherwise 1 and 0, as
        :class:`particles.ForceParams` requires); the decay is the preset's."""
        fields = {k: values[k] for k in FORCE_FIELDS if k != "bias_scale"}
        if values["wd_target"] == "classifier":
            fields["bias_scale"] = values["bias_scale"]
            fields["particle_wd"] = base.params.particle_wd
        else:
            fields["bias_scale"], fields["particle_wd"] = 1.0, 0.0
        return base.replace(**fields).params

    def update(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Check, then apply, ``changes``; returns the control values now in force. Nothing
        changes when any value is refused.

        The changes are staged and take effect at once when no frame is being
        computed, else before the frame's next chunk: a control change never
        waits for the steps of a heavy frame. ``version`` counts the changes
        in force (a frame carries it); ``staged_version`` the changes made."""
        changes = self.check(changes)
        with self._stage_lock:
            pending = self._pending
            values = dict(pending["values"] if pending else self.values)
            base = pending["base"] if pending else self._base
            if "preset" in changes:
                base = self._preset_values(changes["preset"], values)
            values.update(changes)
            try:
                law = self.law_for(base, values)
            except (ValueError, TypeError) as exc:
                raise ControlError(None, f"these controls make no force law: {exc}") from None
            restart = any(CONTROLS[name].restart for name in changes) or bool(pending and pending["restart"])
            self.staged_version += 1
            self._pending = {"values": values, "base": base, "law": law, "restart": restart,
                             "version": self.staged_version}
        if self._lock.acquire(blocking=False):  # no frame running: in force now
            try:
                self._apply_pending()
            finally:
                self._lock.release()
        return dict(values)

    def _apply_pending(self) -> None:
        """Put the staged changes in force (the caller holds the run's lock)."""
        with self._stage_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        self.values, self._base, self.law = pending["values"], pending["base"], pending["law"]
        self.version = pending["version"]
        self._energy = float("nan")  # the frame's energy is that of the new law
        if pending["restart"] or not hasattr(self, "x"):
            self._origin = None  # another preset, p, d or seed: that seed's state, not a handed-over one
            self._restart()

    def reset(self) -> None:
        """Back to the seed's initial state (controls unchanged)."""
        with self._lock.first():
            self._apply_pending()
            self._restart()

    def start_from(self, x: np.ndarray, train: Any, law: Any, origin: str, preset: str | None = None
                   ) -> dict[str, Any]:
        """Run from the state ``x`` (p, d) on the training pairs ``train`` under
        the ForceParams ``law`` (a network's embedding handed over, under a
        preset's or a fitted law), from step 0. The controls take the law's
        values (so a later change acts on it); a reset comes back to this
        state, a restart control (preset, p, d, seed) to a seed's. ``origin``
        says where the state came from (the frames carry it); ``preset``
        (default the current one) gives the time step and the law's other
        settings. Returns the control values now in force."""
        from particles.datasets import PairDataset
        from particles.params import ForceParams

        if not isinstance(law, ForceParams):
            raise TypeError(f"law must be a ForceParams, got {type(law).__name__}")
        if not isinstance(train, PairDataset):
            raise TypeError(f"train must be a PairDataset, got {type(train).__name__}")
        x = np.array(x, dtype=float)
        if x.ndim != 2 or x.shape[0] != train.p or not np.all(np.isfinite(x)):
            raise ValueError(f"x must be a finite ({train.p}, d) array, got shape {x.shape}")
        params = law.to_dict()
        # the law's values must be ones the controls accept (a later change of one is checked against its range)
        changes = self.check({"p": x.shape[0], "d": x.shape[1], **({} if preset is None else {"preset": preset}),
                              **{k: params[k] for k in FORCE_FIELDS}})
        with self._lock.first(), self._stage_lock:
            # built on the staged values and put in force at once, under the staging lock: a control change made
            # meanwhile waits and then builds on the handed-over law (it never brings the old one back)
            pending = self._pending
            values = dict(pending["values"] if pending else self.values)
            base = self._preset_values(preset, values) if preset is not None else (pending or {}).get("base",
                                                                                                     self._base)
            values.update(changes)
            base = base.replace(**params)
            built = self.law_for(base, values)
            if built != law:  # the controls could not hold this law: nothing changed
                raise ValueError(f"the law {law} does not fit the Live controls (they give {built})")
            self._pending = None
            self.staged_version += 1
            self.version = self.staged_version
            self.values, self._base, self.law = values, base, law
            self._origin = (x.copy(), train, str(origin))
            self._restart()
            return dict(self.values)

    def _restart(self) -> None:
        if self._origin is not None:
            self.x, self.train = self._origin[0].copy(), self._origin[1]
        else:
            config = self._base.replace(p=self.values["p"], d=self.values["d"])
            self.x, self.train, _ = config.sample(self.values["seed"])
        self.step = 0
        self.time = 0.0
        self.error = None
        self._chunk = 1  # another p or d costs another time per step: sized again from one step
        self._basis = None
        self._energy = float("nan")
        self.restarts = getattr(self, "restarts", -1) + 1

    # -- stepping -------------------------------------------------------------------------------------
    def advance(self, steps: int | None = None, *, budget: float | None = None,
                stop: Callable[[], bool] | None = None, parallel: bool | None = None) -> int:
        """``steps`` Euler steps (default the control ``steps_per_frame``); returns
        the steps taken. A run that turns non-finite or runs away keeps its last
        good state and records why in ``error``.

        The steps run in chunks of about :data:`CHUNK_SECONDS`, each under the
        lock, so a control change waits for one chunk at most. With ``budget``
        (seconds) the frame ends after the chunk that passes it, and with
        ``stop`` when it returns True (the page has gone): fewer steps than
        asked, said in ``cut`` (``{"done", "asked"}``, else None). Chunks give
        the same states as one call (the Euler steps do not depend on where a
        call starts). ``parallel`` as in :func:`particles.simulate` (False:
        the serial kernels, which release Python's lock while they run). A
        restart or reset made while the frame runs ends it (the new run starts
        at step 0, not a frame's steps in)."""
        from particles.simulate import NonFiniteStateError, simulate

        n = int(self.values["steps_per_frame"] if steps is None else steps)
        began, done, run = time.perf_counter(), 0, None
        self.cut = None
        while done < n:
            with self._lock:
                self._apply_pending()  # a control change made while the frame ran
                run = self.restarts if run is None else run
                if self.restarts != run:  # restarted during the frame: the rest of its steps were the old run's
                    break
                chunk = max(1, min(n - done, self._chunk))
                t0 = time.perf_counter()
                try:
                    traj = simulate(self.x, self.train, self.law, steps=chunk, dt=self.values["dt"],
                                    record_every=chunk, parallel=parallel)
                except NonFiniteStateError as exc:
                    self.error = f"the run stopped: {exc}; change a control or reset"
                    return done
                self.error = None
                self.x = traj.final.copy()
                self._energy = float(traj.energy[-1])
                self.step += chunk
                self.time += chunk * self.values["dt"]
                took = time.perf_counter() - t0
            done += chunk
            self._lock.let_waiting_through()  # a control change waits: it goes first
            # the next chunk sized to about CHUNK_SECONDS (at most doubling, so a slow first call of a fresh
            # compilation does not shrink it for good)
            self._chunk = int(min(2 * chunk, max(1, chunk * CHUNK_SECONDS / max(took, 1e-9))))
            if done < n and ((budget is not None and time.perf_counter() - began >= budget)
                             or (stop is not None and stop())):
                self.cut = {"done": done, "asked": n}
                break
        return done

    def meta(self) -> dict[str, Any]:
        """What the page needs once per run: tokens, training pairs and their classes, controls."""
        with self._lock.first():
            self._apply_pending()
            return {"p": int(self.x.shape[0]), "d": int(self.x.shape[1]), "pairs": self.train.pairs.tolist(),
                    "labels": self.train.labels.tolist(), "values": dict(self.values), "restarts": self.restarts}

    def frame(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The current state as a frame: header (step, time, energy, structure class,
        circularity, pair-sum accuracy, explained variance, control version) and the
        projected token positions and pair sums (and each term's force with the
        control ``force_terms`` on). The structure metrics are measured a few
        times a second (:mod:`particles.core.throttle`): ``metrics_step`` says
        at which step."""
        from particles.energy import energy_and_forces
        from particles.law_terms import force_terms
        from particles.metrics import structure_metrics

        with self._lock:
            self._apply_pending()
            x = self.x
            if not np.isfinite(self._energy):
                self._energy = float(energy_and_forces(x, self.train, self.law)[0])
            sums = x[self.train.pairs[:, 0]] + x[self.train.pairs[:, 1]]
            center, basis, explained = principal_plane(x, self._basis)
            self._basis = basis
            metrics, measured = self.metrics.get(self.restarts, self.step, lambda: structure_metrics(x, self.train))
            header = {"kind": "live", "step": self.step, "time": self.time, "energy": self._energy,
                      "structure": metrics["structure"], "circularity": metrics["circularity"],
                      "frequency": metrics["frequency"], "accuracy": metrics["accuracy_euclidean"],
                      "explained": explained, "version": self.version, "restarts": self.restarts,
                      "error": self.error, "p": int(x.shape[0]), "d": int(x.shape[1]), "cut": self.cut,
                      "origin": None if self._origin is None else self._origin[2], "metrics_step": measured}
            arrays = {"positions": project(x, center, basis), "pair_sums": project(sums, center, basis)}
            if self.values["force_terms"] == "on":  # each term's force, in the view's plane (a direction: no center)
                terms = force_terms(self.law, x, self.train)
                header["terms"] = list(terms)
                arrays.update({f"term:{name}": project(f, np.zeros(x.shape[1]), basis) for name, f in terms.items()})
            return header, arrays
