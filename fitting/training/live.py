"""The constant-attention network trained step by step, for a page that shows
it while it learns (the explorer's Network tab) or a caller that steps it.

:class:`LiveNetwork` is the trainer's own task (:func:`.models.make_task`)
advanced one full-batch AdamW step at a time, so that with unchanged controls
its states are those of ``embdyn train constant-attention`` with the same seed
and settings. Controls (:data:`NETWORK_CONTROLS`) are checked all before any
is applied; the learning rate and the weight decay (and where it acts) change
the optimiser from the next step on; p, the seed, the training fraction and
the hidden width start the run again.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable, Mapping

import numpy as np

from particles.core.controls import Control, ControlError, check_changes, controls_spec
from particles.core.throttle import Throttled

from .configs import ConstantAttentionConfig, SurvivalMLPConfig
from .models import make_task
from .threads import threads_for_work, torch_threads

__all__ = ["LiveNetwork", "LiveSurvivalMLP", "NETWORK_CONTROLS", "DECAY_TARGETS", "MAX_EMBEDDING", "RECORDED", "network_control_spec"]

#: the last steps whose embedding and minus loss gradient a live network keeps (:meth:`LiveNetwork.recorded`),
#: for a force law fitted to them
RECORDED = 200

#: an embedding entry beyond this stops the run (the structure metrics refuse such values)
MAX_EMBEDDING = 1e12

#: where the weight decay acts: every parameter, the embedding only, or the classifier only
DECAY_TARGETS = ("all", "embedding", "classifier")

#: every control of a live network, with its accepted range
NETWORK_CONTROLS: dict[str, Control] = {
    "p": Control("int", 3, 97, restart=True, help="tokens (modular addition mod p)"),
    "seed": Control("int", 0, 2 ** 31 - 1, restart=True, help="split and initialisation"),
    "train_fraction": Control("float", 0.0, 1.0, strict=True, strict_high=True, restart=True,
                              help="share of the model's pairs trained on (unordered or ordered, by model)"),
    "hidden": Control("int", 1, 1024, restart=True, help="width of the hidden layer"),
    "lr": Control("float", 0.0, 1.0, strict=True, help="AdamW learning rate"),
    "weight_decay": Control("float", 0.0, 100.0, help="AdamW weight decay"),
    "decay_on": Control("choice", choices=DECAY_TARGETS, help="what the weight decay acts on"),
    "steps_per_frame": Control("int", 1, 1000, help="training steps between frames"),
}


def network_control_spec() -> dict[str, dict[str, Any]]:
    """:data:`NETWORK_CONTROLS` as JSON for a page."""
    return controls_spec(NETWORK_CONTROLS)


def _decays(weight_decay: float, decay_on: str) -> dict[str, Any]:
    if decay_on == "all":
        return {"weight_decay": weight_decay, "embedding_weight_decay": None}
    if decay_on == "embedding":
        return {"weight_decay": 0.0, "embedding_weight_decay": weight_decay}
    return {"weight_decay": weight_decay, "embedding_weight_decay": 0.0}


class LiveNetwork:
    """The constant-attention network (2-D embeddings) trained a frame at a time.

    Parameters
    ----------
    **values
        Initial control values (:data:`NETWORK_CONTROLS`); the others are the
        trainer's defaults (p = 17, hidden 64, lr 0.01, weight decay 0.3 on
        every parameter, training fraction 0.8), seed 0 and 20 steps a frame.

    Thread-safe: :meth:`update`, :meth:`reset`, :meth:`advance` and
    :meth:`frame` may be called from different threads. Another pair model
    with a token embedding, one AdamW optimiser and these controls is a
    subclass that says how ``values`` make its configuration
    (:meth:`configure`, :attr:`base_config`), as :class:`LiveSurvivalMLP` does.
    """

    #: the controls a page may send (a restart control starts the run again)
    controls = NETWORK_CONTROLS
    #: the model's name (as ``embdyn train`` knows it) and what it is, for a page
    model = "constant-attention"
    description = ("the constant-attention network: s = E_a + E_b (2-D embeddings), a ReLU hidden layer, full-batch "
                   "AdamW on unordered pairs")

    #: the trainer's configuration whose settings are the defaults, and p when not its (None: its)
    base_config: Any = ConstantAttentionConfig
    default_p: int | None = None

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The control values a run starts from when not given: :attr:`base_config`'s."""
        base = cls.base_config()
        return {"p": cls.default_p or base.p, "seed": 0, "train_fraction": base.train_fraction, "hidden": base.hidden,
                "lr": base.lr, "weight_decay": base.weight_decay, "decay_on": "all", "steps_per_frame": 20}

    @staticmethod
    def configure(values: Mapping[str, Any]) -> Any:
        """The trainer's configuration of ``values`` (its weight decay where ``decay_on`` puts it)."""
        config = ConstantAttentionConfig(p=values["p"], hidden=values["hidden"], lr=values["lr"],
                                         train_fraction=values["train_fraction"])
        return config.replace(**_decays(values["weight_decay"], values["decay_on"]))

    def __init__(self, **values: Any):
        self.values: dict[str, Any] = self.defaults()
        self.values.update(self.check(values))
        self._lock = threading.Lock()
        self.metrics = Throttled()  # the frames' structure metrics, a few times a second
        self.version = 0
        self.restarts = -1
        self.cut: dict[str, int] | None = None
        self.error: str | None = None
        self._start(*self._build(self.values))

    # -- controls -------------------------------------------------------------------------------------
    @staticmethod
    def check(changes: Mapping[str, Any]) -> dict[str, Any]:
        """``changes`` checked against :data:`NETWORK_CONTROLS`; a :class:`ControlError`
        (a ``ValueError``) naming the first bad control and its accepted range."""
        return check_changes(NETWORK_CONTROLS, changes)

    def update(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Check, then apply, ``changes`` (nothing changes when any is refused);
        returns the control values now in force."""
        changes = self.check(changes)
        with self._lock:
            values = {**self.values, **changes}
            restart = any(NETWORK_CONTROLS[name].restart for name in changes)
            built = self._build(values) if restart else None  # may refuse (an empty split): nothing changed yet
            self.values = values
            self.version += 1
            if built is not None:
                self._start(*built)
            else:
                self._set_optimiser()
            return dict(self.values)

    def _set_optimiser(self) -> None:
        """The learning rate and weight decays of the controls on the running optimiser, as two groups:
        the embedding's and the classifier's (one group over every parameter is split first, state kept;
        per parameter the steps are the same)."""
        if len(self.task.optimizers[0].param_groups) == 1:
            self._split_groups()
        decays = _decays(self.values["weight_decay"], self.values["decay_on"])
        embedding, classifier = self.task.optimizers[0].param_groups
        embedding["weight_decay"] = (decays["weight_decay"] if decays["embedding_weight_decay"] is None
                                     else decays["embedding_weight_decay"])
        classifier["weight_decay"] = decays["weight_decay"]
        for group in (embedding, classifier):
            group["lr"] = self.values["lr"]

    def _split_groups(self) -> None:
        """Replace the optimiser's one parameter group by the embedding's and the classifier's."""
        opt = self.task.optimizers[0]
        group = opt.param_groups[0]
        model = self.task.model
        classifier = [q for n, q in model.named_parameters() if n != "embedding"]
        settings = {k: v for k, v in group.items() if k != "params"}
        opt.param_groups = [{**settings, "params": [model.embedding]}, {**settings, "params": classifier}]

    def reset(self) -> None:
        """Back to the seed's initial network (controls unchanged)."""
        with self._lock:
            self._start(*self._build(self.values))

    def _build(self, values: Mapping[str, Any]) -> tuple[Any, Any]:
        """The configuration and a fresh task of ``values``; a :class:`ControlError` when they make
        no network (a split with no training pair), before anything changes."""
        try:
            config = self.configure(values)
            return config, make_task(config, values["seed"])
        except (ValueError, TypeError) as exc:
            raise ControlError(None, f"these controls make no network: {exc}") from None

    def _start(self, config: Any, task: Any) -> None:
        self.config = config
        self.task = task
        self._threads = threads_for_work(task.step_work())
        self.step = 0
        self.last: dict[str, float] = {}
        self.error = None
        self.restarts += 1
        self._recorded: deque = deque(maxlen=RECORDED)

    # -- training -------------------------------------------------------------------------------------
    @property
    def staged_version(self) -> int:
        """The control changes made (all in force at once: a step is short)."""
        return self.version

    def advance(self, steps: int | None = None, *, budget: float | None = None,
                stop: Callable[[], bool] | None = None, parallel: bool | None = None) -> int:
        """``steps`` training steps (default the control ``steps_per_frame``);
        returns the steps taken. With ``budget`` (seconds) the frame ends
        after the step that passes it, with ``stop`` when it returns True:
        fewer steps than asked, said in ``cut``. A non-finite loss, or an
        embedding entry beyond :data:`MAX_EMBEDDING`, stops the run where it
        is and says so in ``error`` (until a reset or a restart). ``parallel=False``: torch on
        one thread (several pages training at once share the cores); else its
        threads sized to the step's work. The states are the same either way
        to float rounding. A restart or reset made while the frame runs ends
        it (the new run starts at step 0, not a frame's steps in)."""
        n = int(self.values["steps_per_frame"] if steps is None else steps)
        threads = 1 if parallel is False else self._threads
        began, done, run = time.perf_counter(), 0, None
        self.cut = None
        while done < n:
            with self._lock, torch_threads(threads):
                run = self.restarts if run is None else run
                if self.restarts != run:  # a restart or reset during the frame: the rest of its steps were the old run's
                    break
                values = self.task.step()
                if not np.isfinite(values["train_loss"]):
                    self.error = (f"the training loss became {values['train_loss']} at step {self.step}: reset, "
                                  "or start again with another p, seed, training fraction or width")
                    return done
                # the state the gradient was taken at, before the update
                self._recorded.append((self.step, self.task.embedding(), -self.task.embedding_gradient()))
                self.task.apply_update()
                self.step += 1
                self.last = values
                E = self.task.embedding()
                if not np.all(np.isfinite(E)) or np.max(np.abs(E)) > MAX_EMBEDDING:  # at most x 100 a step
                    self.error = (f"the embedding ran away at step {self.step} (beyond {MAX_EMBEDDING:g} or not "
                                  "finite): lower the learning rate or the weight decay and reset")
                    return done + 1
            done += 1
            if done < n and ((budget is not None and time.perf_counter() - began >= budget)
                             or (stop is not None and stop())):
                self.cut = {"done": done, "asked": n}
                break
        return done

    def embedding(self) -> np.ndarray:
        """The token embedding now, (p, 2)."""
        with self._lock:
            return self.task.embedding()

    def recorded(self) -> dict[str, Any]:
        """The last steps of the run (at most :data:`RECORDED`), for a force law fitted to them: ``steps``
        (T,), the embedding before each step ``X`` (T, p, 2), minus the loss gradient there ``G`` (T, p, 2),
        the training set ``train``, the embedding ``now`` (p, 2) and its ``step``. The gradient is the loss's only: the
        optimiser's decoupled weight decay is not in it."""
        with self._lock:
            steps = np.array([s for s, _, _ in self._recorded], dtype=np.int64)
            shape = (0, int(self.values["p"]), 2)
            X = np.array([x for _, x, _ in self._recorded]) if len(steps) else np.zeros(shape)
            G = np.array([g for _, _, g in self._recorded]) if len(steps) else np.zeros(shape)
            return {"steps": steps, "X": X, "G": G, "train": self.task.train_set, "now": self.task.embedding(),
                    "step": self.step}

    def meta(self) -> dict[str, Any]:
        """What a page needs once per run: tokens, training pairs and their classes, controls."""
        with self._lock:
            train = self.task.train_set
            return {"kind": "network", "model": self.model, "description": self.description,
                    "p": int(self.values["p"]), "d": 2, "pairs": train.pairs.tolist(),
                    "labels": train.labels.tolist(), "values": dict(self.values), "restarts": self.restarts}

    def frame(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The network now: header (step, train and validation loss and
        accuracy, structure class and circularity of the embedding on the
        training pairs, control version) and arrays: token positions (p, 2),
        pair sums (n, 2) and minus the loss gradient on the embedding at the
        last step (p, 2; zeros before the first step). The structure metrics
        are measured a few times a second (:mod:`particles.core.throttle`):
        ``metrics_step`` says at which step."""
        from particles.metrics import structure_metrics

        with self._lock, torch_threads(self._threads):
            E = self.task.embedding()
            train = self.task.train_set
            val = self.task.evaluate()
            tame = bool(np.all(np.isfinite(E))) and float(np.max(np.abs(E))) <= MAX_EMBEDDING
            undefined = {"structure": "undefined", "circularity": None, "frequency": None}
            metrics, measured = self.metrics.get(self.restarts, self.step,
                                                 lambda: structure_metrics(E, train) if tame else undefined)
            header = {"kind": "network", "model": self.model, "step": self.step, "train_loss": self.last.get("train_loss"),
                      "train_acc": self.last.get("train_acc"), "val_loss": val["val_loss"],
                      "val_acc": val["val_acc"], "structure": metrics["structure"],
                      "circularity": metrics["circularity"], "frequency": metrics["frequency"],
                      "version": self.version, "restarts": self.restarts, "error": self.error, "cut": self.cut,
                      "p": int(E.shape[0]), "d": int(E.shape[1]), "metrics_step": measured}
            sums = E[train.pairs[:, 0]] + E[train.pairs[:, 1]]
            force = -self.task.embedding_gradient()
            return header, {"positions": E, "pair_sums": sums, "force": force}


class LiveSurvivalMLP(LiveNetwork):
    """The survival paper's MLP on [E_a, E_b] (ordered pairs, two SiLU hidden
    layers, AdamW on every parameter, float64) at d = 2, trained a frame at a
    time with the controls of :class:`LiveNetwork`: with unchanged controls
    its states are those of ``embdyn train survival-mlp`` with d = 2 and the
    same seed and settings. ``decay_on`` other than "all" splits its optimiser
    into the embedding's and the layers' groups from the first step (the
    trainer has no such setting)."""

    model = "survival-mlp"
    description = ("the survival paper's MLP: [E_a, E_b] (2-D embeddings) through two SiLU hidden layers, full-batch "
                   "AdamW on ordered pairs")

    base_config = SurvivalMLPConfig
    default_p = 17  # the trainer's 59 steps too slowly to watch at d = 2

    @staticmethod
    def configure(values: Mapping[str, Any]) -> Any:
        return SurvivalMLPConfig(p=values["p"], d=2, hidden=values["hidden"], lr=values["lr"],
                                 weight_decay=values["weight_decay"], train_fraction=values["train_fraction"])

    def _start(self, config: Any, task: Any) -> None:
        super()._start(config, task)
        if self.values["decay_on"] != "all":
            self._set_optimiser()
