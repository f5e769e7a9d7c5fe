"""The sparse-modular transformer (d = 2) trained step by step with every
layer's state in each frame: the live half of the explorer's Layers tab
(issue 71, the clustering-head sandbox).

:class:`LiveSparseModular` is the trainer's own task
(:func:`.models.make_task` of a :class:`.configs.SparseModularConfig`)
advanced one minibatch Adam step at a time, so that with unchanged controls
its states are those of ``embdyn train sparse-modular`` with the same seed
and settings. Each frame holds the arrays of
:meth:`fitting.training.layers.LayerRecorder.read` on the task's probe set
(half training, half validation sequences), named without their ``layer_``
prefix as the recorded runs' frames name them, and in its header the step,
the training and validation loss and accuracy of that state, the last
minibatch's loss and the gradient norm of each parameter group at the last
step.

Controls (:data:`LAYER_CONTROLS`) are checked all before any is applied;
the learning rate and the batch size act from the next step; p, seq_len,
k, the seed, the initial scale and the curriculum start the run again.
The explorer paces its frames to :data:`FRAME_RATE` a second
(``frame_rate``), which the page states beside the rate it achieves.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from particles.core.controls import Control, ControlError, check_changes, controls_spec
from particles.core.locks import FirstLock

from .configs import SparseModularConfig
from .devices import check_device, check_device_dtype
from .layers import LAYER_PREFIX
from .live import frame_steps
from .models import make_task
from .threads import torch_threads

__all__ = ["LiveSparseModular", "LAYER_CONTROLS", "FRAME_RATE", "STEPS_PER_FRAME", "CURRICULUM_STEPS",
           "layer_control_spec"]

#: frames a second the explorer sends (and the page says it aims for). Measured on the 2-core reference machine
#: (torch 2.13, CPU, one torch thread) at the paper's size (p = 2, T = 12, k = 5, batch 32): a training step takes
#: 1.5-3.2 ms and a frame's reading (the probe set's layers, the two region grids, the full training and
#: validation sets' loss and accuracy) 6-12 ms, so a frame of STEPS_PER_FRAME steps costs 25-45 ms of the 100 ms
#: it has, also with the machine's other core busy (docs/explore.md, "The Layers tab")
FRAME_RATE = 10.0
#: training steps a frame by default (the control ``steps_per_frame``)
STEPS_PER_FRAME = 10
#: the steps of the curriculum when it is on: the labels sum the first 1, ..., k - 1 tokens in equal parts of them
CURRICULUM_STEPS = 1000
#: the longest sequence a page may ask for (a step's cost grows with it)
MAX_SEQ_LEN = 48

#: every control of the live sparse-modular network, with its accepted range
LAYER_CONTROLS: dict[str, Control] = {
    "p": Control("int", 2, 3, restart=True, help="classes: tokens in Z_p, the label the sum of the first k mod p"),
    "seq_len": Control("int", 1, MAX_SEQ_LEN, restart=True, help="positions T of a sequence (at least k)"),
    "k": Control("int", 1, MAX_SEQ_LEN, restart=True, help="tokens summed for the label (at most seq_len)"),
    "seed": Control("int", 0, 2 ** 31 - 1, restart=True, help="data, initialisation and minibatches"),
    "lr": Control("float", 0.0, 1.0, strict=True, help="Adam learning rate (from the next step)"),
    "batch_size": Control("int", 1, 512, help="sequences a training step (from the next step)"),
    "init_scale": Control("float", 0.0, 10.0, strict=True, restart=True,
                          help="standard deviation of the token and position embeddings at initialisation"),
    "curriculum": Control("choice", choices=("off", "on"), restart=True,
                          help=f"on: the labels sum the first 1, ..., k - 1 tokens in equal parts of the first "
                               f"{CURRICULUM_STEPS} steps, then the first k (needs k >= 2)"),
    "steps_per_frame": Control("int", 1, 200, help="training steps between frames (a frame with a time budget "
                                                   "ends before a step that would pass it)"),
}


def layer_control_spec() -> dict[str, dict[str, Any]]:
    """:data:`LAYER_CONTROLS` as JSON for a page."""
    return controls_spec(LAYER_CONTROLS)


class LiveSparseModular:
    """The sparse-modular transformer at d = 2 trained a frame at a time, every layer's state in each frame.

    Parameters
    ----------
    device : str or torch.device, optional
        Where the network trains (keyword only): as :class:`fitting.training.live.LiveNetwork`'s.
    **values
        Initial control values (:data:`LAYER_CONTROLS`); the others are the
        trainer's defaults (p = 2, seq_len 12, k = 5, lr 3e-3, batch 32,
        initial scale 1, no curriculum), seed 0 and :data:`STEPS_PER_FRAME`
        steps a frame.

    The interface is :class:`fitting.training.live.LiveNetwork`'s (``controls``,
    :meth:`check`, :meth:`update`, :meth:`reset`, :meth:`advance`, :meth:`frame`,
    :meth:`meta`, ``step``, ``error``, ``version``), so the explorer's live
    sessions run it unchanged. Thread-safe as that one.
    """

    #: the controls a page may send (a restart control starts the run again)
    controls = LAYER_CONTROLS
    #: the model's name (as ``embdyn train`` knows it) and what it is, for a page
    model = "sparse-modular"
    description = ("the sparse-modular transformer at d = 2: T tokens from Z_p, the label the sum of the first k "
                   "mod p; token + position embeddings, RMSNorm, one attention query with a value map, a residual "
                   "GELU MLP, logits tied to the token embedding; Adam on minibatches")
    #: the explorer tab that trains it (the Network tab offers only the pair models)
    tab = "layers"
    #: frames a second the explorer sends it at most (:data:`FRAME_RATE`)
    frame_rate = FRAME_RATE

    @staticmethod
    def defaults() -> dict[str, Any]:
        """The control values a run starts from when not given: the trainer's."""
        base = SparseModularConfig()
        return {"p": base.p, "seq_len": base.seq_len, "k": base.k, "seed": 0, "lr": base.lr,
                "batch_size": base.batch_size, "init_scale": base.init_scale, "curriculum": "off",
                "steps_per_frame": STEPS_PER_FRAME}

    @staticmethod
    def configure(values: Mapping[str, Any]) -> SparseModularConfig:
        """The trainer's configuration of ``values`` (the curriculum on: :data:`CURRICULUM_STEPS` of it)."""
        curriculum = CURRICULUM_STEPS if values["curriculum"] == "on" else 0
        return SparseModularConfig(p=values["p"], seq_len=values["seq_len"], k=values["k"], lr=values["lr"],
                                   batch_size=values["batch_size"], init_scale=values["init_scale"],
                                   curriculum=curriculum, steps=max(SparseModularConfig.steps, CURRICULUM_STEPS))

    def __init__(self, *, device: Any = None, **values: Any):
        self.device = check_device(device)
        check_device_dtype(self.device, SparseModularConfig().dtype)
        self.values: dict[str, Any] = self.defaults()
        self.values.update(self.check(values))
        self._lock = FirstLock()  # calls from the page go before a frame's next step (_lock.first())
        self.version = 0
        self.restarts = -1
        self.cut: dict[str, int] | None = None
        self.error: str | None = None
        self._start(*self._build(self.values))

    # -- controls -------------------------------------------------------------------------------------
    def check(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """``changes`` checked against :data:`LAYER_CONTROLS`, then together with the values in force
        (k at most seq_len; the curriculum needs k >= 2); a :class:`ControlError` (a ``ValueError``)
        naming the first bad control and its accepted range, before anything changes."""
        changes = check_changes(LAYER_CONTROLS, changes)
        self._check_together({**self.values, **changes}, changes)
        return changes

    @staticmethod
    def _check_together(values: Mapping[str, Any], changes: Mapping[str, Any]) -> None:
        if values["k"] > values["seq_len"]:
            name = "seq_len" if "seq_len" in changes and "k" not in changes else "k"
            if name == "k":
                raise ControlError("k", f"k must be an int in [1, {values['seq_len']}] (at most seq_len = "
                                        f"{values['seq_len']}), got {values['k']!r}")
            raise ControlError("seq_len", f"seq_len must be an int in [{values['k']}, {MAX_SEQ_LEN}] (at least "
                                          f"k = {values['k']}), got {values['seq_len']!r}")
        if values["curriculum"] == "on" and values["k"] < 2:
            name = "k" if "k" in changes and "curriculum" not in changes else "curriculum"
            raise ControlError(name, f"the curriculum sums the first 1, ..., k - 1 tokens: it needs k >= 2, got "
                                     f"k = {values['k']} ({name} refused; curriculum must be off at k = 1)")

    def update(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Check, then apply, ``changes`` (nothing changes when any is refused); returns the control
        values now in force. A change waits for the step being taken at most."""
        changes = check_changes(LAYER_CONTROLS, changes)
        with self._lock.first():
            values = {**self.values, **changes}
            self._check_together(values, changes)  # against the values in force now
            restart = any(LAYER_CONTROLS[name].restart for name in changes)
            built = self._build(values) if restart else None  # may refuse: nothing changed yet
            self.values = values
            self.version += 1
            if built is not None:
                self._start(*built)
            else:
                self._set_optimiser()
                self._meta = {**self._meta, "values": dict(self.values)}
            return dict(self.values)

    def _set_optimiser(self) -> None:
        """The learning rate and the batch size of the controls on the running task (Adam's moments kept)."""
        for opt in self.task.optimizers:
            for group in opt.param_groups:
                group["lr"] = self.values["lr"]
        self.task.config = self.task.config.replace(lr=self.values["lr"], batch_size=self.values["batch_size"])
        self.config = self.task.config

    def reset(self) -> None:
        """Back to the seed's initial network (controls unchanged)."""
        with self._lock.first():
            self._start(*self._build(self.values))

    def _build(self, values: Mapping[str, Any]) -> tuple[SparseModularConfig, Any]:
        """The configuration and a fresh task of ``values``, recording its layers; a :class:`ControlError`
        when they make no network, before anything changes."""
        try:
            config = self.configure(values)
            task = make_task(config, values["seed"], device=self.device)
            task.record_layers()
            return config, task
        except (ValueError, TypeError) as exc:
            raise ControlError(None, f"these controls make no network: {exc}") from None

    def _start(self, config: SparseModularConfig, task: Any) -> None:
        self.config = config
        self.task = task
        self.step = 0
        self.batch_loss: float | None = None
        self.error = None
        self.restarts += 1
        rec = task.layers
        # what meta() gives, replaced whole (read without the lock: a restart's page never waits for a step)
        self._meta = {"kind": "layers", "model": self.model, "description": self.description, "p": config.p,
                      "T": config.seq_len, "k": config.k, "d": 2, "grid": rec.grid,
                      "probe_tokens": rec.tokens.tolist(), "probe_labels": rec.labels.tolist(),
                      "probe_split": list(rec.split), "states": rec.meta()["states"],
                      "groups": sorted(task.layer_groups), "values": dict(self.values), "restarts": self.restarts,
                      "controls": layer_control_spec(), "frame_rate": self.frame_rate,
                      "curriculum_steps": config.curriculum}

    # -- training -------------------------------------------------------------------------------------
    @property
    def staged_version(self) -> int:
        """The control changes made (all in force at once: a step is short)."""
        return self.version

    def advance(self, steps: int | None = None, *, budget: float | None = None,
                stop: Callable[[], bool] | None = None, parallel: bool | None = None) -> int:
        """``steps`` training steps (default the control ``steps_per_frame``), each one minibatch and
        one Adam update as the trainer takes them; returns the steps taken. With ``budget`` (seconds)
        the frame ends before a step that would pass it (one step at least), with ``stop`` when it
        returns True: fewer steps than asked, said in ``cut``. A control change or reset waits for one
        step at most; one made during the frame that restarts the run ends the frame. A non-finite
        loss stops the run where it is and says so in ``error`` (until a reset or a restart). One
        torch thread (``parallel`` is accepted for the interface and ignored: a step of this size
        gains nothing from more)."""
        n = int(self.values["steps_per_frame"] if steps is None else steps)
        return frame_steps(self, self._lock, n, 1, self._one_step, budget, stop)

    def _one_step(self) -> int | None:
        """One minibatch step under the run's lock; None, or 0 when the run is stopped (a non-finite loss)."""
        if self.error is not None:
            return 0
        loss = float(self.task.minibatch_step().detach())
        if not math.isfinite(loss):
            self.error = (f"the training loss became {loss} at step {self.step}: reset, or start again "
                          "with a lower learning rate or initial scale")
            return 0
        self.task.apply_update()
        self.step += 1
        self.batch_loss = loss
        return None

    def embedding(self) -> np.ndarray:
        """The token embedding now, (p, 2)."""
        with self._lock.first():
            return self.task.embedding()

    def recorded(self) -> dict[str, Any]:
        """Refused: the particle model takes a pair model's embedding and training pairs; this network
        trains on sequences (a :class:`ControlError` naming ``from``)."""
        raise ControlError("from", "the sparse-modular network trains on sequences, not pairs: it has no pair "
                                   "sums for the particle model (hand over from a constant-attention or "
                                   "survival-mlp session)")

    def meta(self) -> dict[str, Any]:
        """What a page needs once per run: the probe set (tokens, classes, train or val), p, T, k, the
        states recorded, the parameter groups, the controls with their ranges and values, the frame
        rate aimed for. Kept from the run's start and the last control change: it does not wait for a step."""
        meta = self._meta  # one read: a run's meta whole, never half of the next one's
        return {**meta, "values": dict(meta["values"])}

    @torch.no_grad()
    def _losses(self) -> dict[str, float]:
        """Loss and accuracy of the network now on the training set (the task's labels) and the validation set."""
        task = self.task
        full = task.model(task.train_tokens)
        out = {"train_loss": float(F.cross_entropy(full, task.train_labels)),
               "train_acc": float((full.argmax(dim=1) == task.train_labels).double().mean())}
        out.update(task.evaluate())
        return out

    def frame(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The network now: header (step, the training and validation loss and accuracy of this state,
        the last minibatch's loss, each parameter group's gradient norm at the last step (zeros before
        the first), control version, restarts, error, cut, p, T, k) and the layer arrays of
        :meth:`fitting.training.layers.LayerRecorder.read` on the probe set, without their ``layer_``
        prefix."""
        with self._lock, torch_threads(1):
            arrays = self.task.layers.read()
            losses = self._losses()
            norms = self.task.grad_norms() if self.step else {g: 0.0 for g in self.task.layer_groups}
            cfg = self.config
            header = {"kind": "layers", "model": self.model, "step": self.step, **losses,
                      "batch_loss": self.batch_loss, "grad_norms": norms, "version": self.version,
                      "restarts": self.restarts, "error": self.error, "cut": self.cut, "p": cfg.p,
                      "T": cfg.seq_len, "k": cfg.k, "frame_rate": self.frame_rate}
        return header, {name[len(LAYER_PREFIX):]: value for name, value in arrays.items()}
