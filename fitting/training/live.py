"""The constant-attention network trained step by step, for a page that shows
it while it learns (the explorer's Network tab) or a caller that steps it.

:class:`LiveNetwork` is the trainer's own task (:func:`.models.make_task`)
advanced one full-batch AdamW step at a time, so that with unchanged controls
its states are those of ``embdyn train constant-attention`` with the same seed
and settings. Controls (:data:`NETWORK_CONTROLS`) are checked all before any
is applied; the learning rate and the weight decay (and where it acts) change
the optimiser from the next step on; p, the seed, the training fraction and
the hidden width start the run again.

A training step is one full-batch step and cannot be cut, so its cost is
bounded instead: p, the hidden width and the training fraction together may
ask at most :data:`MAX_STEP_WORK` multiply-adds a step (parameters x
training pairs), and a change past it is refused naming the control and the
range it has at the other two. A frame with a time budget ends before a step
that would pass it (one step at least), and that step is short.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from typing import Any, Callable, Mapping

import numpy as np

from particles.core.locks import FirstLock
from particles.core.controls import Control, ControlError, check_changes, controls_spec
from particles.core.throttle import Throttled

from .configs import ConstantAttentionConfig, SurvivalMLPConfig
from .devices import check_device, check_device_dtype
from .models import make_task
from .threads import threads_for_work, torch_threads

__all__ = ["frame_steps", "LiveNetwork", "LiveSurvivalMLP", "NETWORK_CONTROLS", "DECAY_TARGETS", "MAX_EMBEDDING", "MAX_STEP_WORK",
           "RECORDED", "network_control_spec"]

#: the last steps whose embedding and minus loss gradient a live network keeps (:meth:`LiveNetwork.recorded`),
#: for a force law fitted to them
RECORDED = 200

#: an embedding entry beyond this stops the run (the structure metrics refuse such values)
MAX_EMBEDDING = 1e12

#: where the weight decay acts: every parameter, the embedding only, or the classifier only
DECAY_TARGETS = ("all", "embedding", "classifier")

#: the most multiply-adds (parameters x training pairs) one training step of a live network may ask: a step is
#: not cut, so a frame's time budget holds only if a step is short, also when the 8 live pages the server allows
#: share 2 cores. Measured on one core of the 2-core reference machine (torch 2.13, CPU): 0.14-0.23 ns a
#: multiply-add for the survival MLP (float64), 0.19-0.30 ns for the constant-attention network, so a step of at
#: most about 30 ms (7 pages on 2 cores: about 0.1 s each), beside 1.4 s for the survival MLP at p = 97, hidden
#: 1024 (8.7e9 multiply-adds) before this bound. At p = 97 and the default training fraction 0.8 it allows a hidden
#: width of 73 for the survival MLP, 260 for the constant-attention network; at p = 59, 159 and 1024 (the trainer's
#: survival MLP, p = 59 and hidden 100, fits); the constant-attention network's widest, 1024, up to p = 61.
MAX_STEP_WORK = 100_000_000

#: the controls a step's cost depends on, in the order a refusal names them (the first one changed)
COST_CONTROLS = ("hidden", "p", "train_fraction")


def _sci(x: float) -> str:
    """``x`` in two significant digits, as 1.5e8."""
    mantissa, _, exponent = f"{x:.2g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


#: every control of a live network, with its accepted range
NETWORK_CONTROLS: dict[str, Control] = {
    "p": Control("int", 3, 97, restart=True,
                 help="tokens (modular addition mod p); with hidden and train_fraction, a step of at most "
                      f"{_sci(MAX_STEP_WORK)} multiply-adds"),
    "seed": Control("int", 0, 2 ** 31 - 1, restart=True, help="split and initialisation"),
    "train_fraction": Control("float", 0.0, 1.0, strict=True, strict_high=True, restart=True,
                              help="share of the model's pairs trained on (unordered or ordered, by model)"),
    "hidden": Control("int", 1, 1024, restart=True,
                      help=f"width of the hidden layer; a step is held to {_sci(MAX_STEP_WORK)} multiply-adds "
                           "(parameters x training pairs): at p = 97 and train_fraction 0.8 at most 73 for "
                           "survival-mlp, 260 for constant-attention"),
    "lr": Control("float", 0.0, 1.0, strict=True, help="AdamW learning rate"),
    "weight_decay": Control("float", 0.0, 100.0, help="AdamW weight decay"),
    "decay_on": Control("choice", choices=DECAY_TARGETS, help="what the weight decay acts on"),
    "steps_per_frame": Control("int", 1, 1000, help="training steps between frames (a frame with a time budget "
                                                    "ends before a step that would pass it)"),
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


def frame_steps(net: Any, lock: FirstLock, n: int, threads: int, one_step: Callable[[], int | None],
                budget: float | None, stop: Callable[[], bool] | None) -> int:
    """A live network's frame: up to ``n`` calls of ``one_step`` (a training step), each under the
    network's ``lock`` with ``threads`` torch
    threads; returns the steps taken. The frame ends early when the run restarts (``net.restarts``
    changes: the rest were the old run's steps), when ``one_step`` stops the run (it returns the steps
    to count, after setting ``net.error``), or before a step that would pass
    ``budget`` seconds (timed as the step before it; one step at least) or when ``stop()`` is True
    (said in ``net.cut``). A control change or reset waits for one step at most."""
    began, done, run, took = time.perf_counter(), 0, None, 0.0
    net.cut = None
    while done < n:
        with lock, torch_threads(threads):
            t0 = time.perf_counter()
            run = net.restarts if run is None else run
            if net.restarts != run:  # a restart or reset during the frame: the rest of its steps were the old run's
                break
            ended = one_step()
            if ended is not None:
                return done + ended
            took = time.perf_counter() - t0
        done += 1
        lock.let_waiting_through()  # a control change or reset waits: it goes first
        if done < n and ((budget is not None and time.perf_counter() - began + took > budget)
                         or (stop is not None and stop())):
            net.cut = {"done": done, "asked": n}
            break
    return done


class LiveNetwork:
    """The constant-attention network (2-D embeddings) trained a frame at a time.

    Parameters
    ----------
    device : str or torch.device, optional
        Where the network trains (keyword only; not a control a page can
        send): ``"cpu"``, ``"cuda"``, ``"cuda:1"``
        (:func:`fitting.training.devices.check_device`; ``"mps"`` is refused:
        the live models are float64). None: ``EMBDYN_DEVICE``, else the CPU.
        Every restart builds its network there; the embedding and its
        gradient are copied to the CPU for the frames.
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
    #: the most multiply-adds a training step may ask (:data:`MAX_STEP_WORK`)
    max_step_work: int = MAX_STEP_WORK

    @staticmethod
    def parameter_count(p: int, hidden: int) -> int:
        """The network's parameters at ``p`` tokens and width ``hidden``: the embedding (p, 2), the hidden
        layer (2 -> hidden) and the output layer (hidden -> p), weights and biases."""
        return 2 * p + (2 * hidden + hidden) + (hidden * p + p)

    @staticmethod
    def pair_count(p: int) -> int:
        """The pairs the model's split draws from: the unordered pairs of Z_p."""
        return p * (p + 1) // 2

    @classmethod
    def step_work(cls, values: Mapping[str, Any]) -> int:
        """Multiply-adds of one training step at the control ``values`` (``p``, ``hidden``, ``train_fraction``),
        counted as the trainer's task counts them: parameters x training pairs."""
        pairs = int(float(values["train_fraction"]) * cls.pair_count(values["p"]) + 0.5)  # the split's rounding
        return cls.parameter_count(values["p"], values["hidden"]) * pairs

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

    def __init__(self, *, device: Any = None, **values: Any):
        self.device = check_device(device)
        check_device_dtype(self.device, getattr(self.base_config(), "dtype", None))  # the live models are float64
        self.values: dict[str, Any] = self.defaults()
        self.values.update(self.check(values))
        self._lock = FirstLock()  # calls from the page go before a frame's next step (_lock.first())
        self.metrics = Throttled()  # the frames' structure metrics, a few times a second
        self.version = 0
        self.restarts = -1
        self.cut: dict[str, int] | None = None
        self.error: str | None = None
        self._start(*self._build(self.values))

    # -- controls -------------------------------------------------------------------------------------
    def check(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """``changes`` checked against :data:`NETWORK_CONTROLS`, then together with the
        values in force against :attr:`max_step_work`; a :class:`ControlError` (a
        ``ValueError``) naming the first bad control and its accepted range (for a step
        too heavy, the range of the first of hidden, p, train_fraction changed, at the
        others' values)."""
        changes = check_changes(NETWORK_CONTROLS, changes)
        self._check_cost({**self.values, **changes}, changes)
        return changes

    def _check_cost(self, values: Mapping[str, Any], changes: Mapping[str, Any]) -> None:
        """A :class:`ControlError` when a step at ``values`` asks more than :attr:`max_step_work`
        multiply-adds, naming the first cost control in ``changes`` and its range at the others."""
        if self.step_work(values) <= self.max_step_work:
            return
        name = next((k for k in COST_CONTROLS if k in changes), COST_CONTROLS[0])
        at = f"at {', '.join(f'{k} = {values[k]:g}' for k in COST_CONTROLS if k != name)} ({self.model})"
        why = (f"a training step is held to {_sci(self.max_step_work)} multiply-adds (parameters x training pairs; "
               f"this one asks {_sci(self.step_work(values))}), so that a live frame keeps its time budget")
        control, top = NETWORK_CONTROLS[name], self._cost_limit(values, name)
        if top is None:
            raise ControlError(name, f"no {name} fits {at}: {why}; lower "
                                     f"{' or '.join(k for k in COST_CONTROLS if k != name)}")
        accepted = dataclasses.replace(control, high=top, strict_high=False).describe()
        raise ControlError(name, f"{name} must be {accepted} {at}: {why}; got {values[name]!r}")

    def _cost_limit(self, values: Mapping[str, Any], name: str) -> float | None:
        """The largest value of the control ``name`` whose step fits :attr:`max_step_work` at the other
        ``values`` (a step's work grows with each), or None when even its lowest does not."""
        control = NETWORK_CONTROLS[name]
        if control.kind == "float":  # train_fraction: k training pairs at most, k / n of the pairs
            k = self.max_step_work // self.parameter_count(values["p"], values["hidden"])
            top = k / self.pair_count(values["p"])
            if top <= control.low:
                return None
            digits = max(3, 2 - math.floor(math.log10(top)))  # rounded down to 3 significant digits
            return math.floor(top * 10 ** digits) / 10 ** digits
        lo, hi = int(control.low), int(control.high)
        if self.step_work({**values, name: lo}) > self.max_step_work:
            return None
        while lo < hi:  # the largest fitting value, by bisection
            mid = (lo + hi + 1) // 2
            if self.step_work({**values, name: mid}) <= self.max_step_work:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def update(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Check, then apply, ``changes`` (nothing changes when any is refused);
        returns the control values now in force. A change waits for the step
        being taken at most (it goes before a frame's next step)."""
        changes = check_changes(NETWORK_CONTROLS, changes)
        with self._lock.first():
            values = {**self.values, **changes}
            self._check_cost(values, changes)  # against the values in force now (another change may have come)
            restart = any(NETWORK_CONTROLS[name].restart for name in changes)
            built = self._build(values) if restart else None  # may refuse (an empty split): nothing changed yet
            self.values = values
            self.version += 1
            if built is not None:
                self._start(*built)
            else:
                self._set_optimiser()
                self._meta = {**self._meta, "values": dict(self.values)}
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
        with self._lock.first():
            self._start(*self._build(self.values))

    def _build(self, values: Mapping[str, Any]) -> tuple[Any, Any]:
        """The configuration and a fresh task of ``values``; a :class:`ControlError` when they make
        no network (a split with no training pair), before anything changes."""
        try:
            config = self.configure(values)
            return config, make_task(config, values["seed"], device=self.device)
        except (ValueError, TypeError) as exc:
            raise ControlError(None, f"these controls make no network: {exc}") from None

    def _start(self, config: Any, task: Any) -> None:
        self.config = config
        self.task = task
        self._threads = threads_for_work(task.step_work())  # with parallel=True
        self._frame_threads = 1  # the torch threads of the last frame's steps, for its evaluation
        self.step = 0
        self.last: dict[str, float] = {}
        self.error = None
        self.restarts += 1
        self._recorded: deque = deque(maxlen=RECORDED)
        train = task.train_set
        # what meta() gives, replaced whole (read without the lock: a restart's page never waits for a step)
        self._meta = {"kind": "network", "model": self.model, "description": self.description,
                      "p": int(self.values["p"]), "d": 2, "pairs": train.pairs.tolist(),
                      "labels": train.labels.tolist(), "values": dict(self.values), "restarts": self.restarts}

    # -- training -------------------------------------------------------------------------------------
    @property
    def staged_version(self) -> int:
        """The control changes made (all in force at once: a step is short)."""
        return self.version

    def advance(self, steps: int | None = None, *, budget: float | None = None,
                stop: Callable[[], bool] | None = None, parallel: bool | None = None) -> int:
        """``steps`` training steps (default the control ``steps_per_frame``);
        returns the steps taken. With ``budget`` (seconds) the frame ends
        before a step that would pass it (timed as the step before it; one
        step at least, and a step is bounded by :attr:`max_step_work`), with
        ``stop`` when it returns True: fewer steps than asked, said in
        ``cut``. A control change or reset waits for one step at most.
        A non-finite loss, or an embedding entry beyond :data:`MAX_EMBEDDING`,
        stops the run where it is and says so in ``error`` (until a reset or a
        restart). ``parallel=True``: torch's threads sized to the step's
        work; else (None, False) one thread, also for the frame that follows:
        a step is bounded to tens of milliseconds of one core
        (:data:`MAX_STEP_WORK`), several pages training at once share the
        cores, and beside a busy core two threads took 7-10 times longer
        (285 ms a step against 28-40 ms for the survival MLP at p = 97,
        hidden 97). The states are the same either way to float rounding.
        A restart or reset made while the frame runs ends it (the new run
        starts at step 0, not a frame's steps in)."""
        n = int(self.values["steps_per_frame"] if steps is None else steps)
        threads = self._threads if parallel else 1
        self._frame_threads = threads
        return frame_steps(self, self._lock, n, threads, self._one_step, budget, stop)

    def _one_step(self) -> int | None:
        """One training step under the run's lock; None, or the steps to count when it stopped the run."""
        values = self.task.step()
        if not np.isfinite(values["train_loss"]):
            self.error = (f"the training loss became {values['train_loss']} at step {self.step}: reset, "
                          "or start again with another p, seed, training fraction or width")
            return 0
        # the state the gradient was taken at, before the update
        self._recorded.append((self.step, self.task.embedding(), -self.task.embedding_gradient()))
        self.task.apply_update()
        self.step += 1
        self.last = values
        E = self.task.embedding()
        if not np.all(np.isfinite(E)) or np.max(np.abs(E)) > MAX_EMBEDDING:  # at most x 100 a step
            self.error = (f"the embedding ran away at step {self.step} (beyond {MAX_EMBEDDING:g} or not "
                          "finite): lower the learning rate or the weight decay and reset")
            return 1
        return None

    def embedding(self) -> np.ndarray:
        """The token embedding now, (p, 2)."""
        with self._lock.first():
            return self.task.embedding()

    def recorded(self) -> dict[str, Any]:
        """The last steps of the run (at most :data:`RECORDED`), for a force law fitted to them: ``steps``
        (T,), the embedding before each step ``X`` (T, p, 2), minus the loss gradient there ``G`` (T, p, 2),
        the training set ``train``, the embedding ``now`` (p, 2) and its ``step``. The gradient is the loss's only: the
        optimiser's decoupled weight decay is not in it."""
        with self._lock.first():
            steps = np.array([s for s, _, _ in self._recorded], dtype=np.int64)
            shape = (0, int(self.values["p"]), 2)
            X = np.array([x for _, x, _ in self._recorded]) if len(steps) else np.zeros(shape)
            G = np.array([g for _, _, g in self._recorded]) if len(steps) else np.zeros(shape)
            return {"steps": steps, "X": X, "G": G, "train": self.task.train_set, "now": self.task.embedding(),
                    "step": self.step}

    def meta(self) -> dict[str, Any]:
        """What a page needs once per run: tokens, training pairs and their classes, controls. Kept
        from the run's start and the last control change: it does not wait for a step."""
        meta = self._meta  # one read: a run's meta whole, never half of the next one's
        return {**meta, "values": dict(meta["values"])}

    def frame(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The network now: header (step, train and validation loss and
        accuracy, structure class and circularity of the embedding on the
        training pairs, control version) and arrays: token positions (p, 2),
        pair sums (n, 2) and minus the loss gradient on the embedding at the
        last step (p, 2; zeros before the first step). The structure metrics
        are measured a few times a second (:mod:`particles.core.throttle`):
        ``metrics_step`` says at which step (computed after the run's lock
        is released: a control change does not wait for them). Called by
        the thread that advances the run."""
        from particles.metrics import structure_metrics

        with self._lock, torch_threads(self._frame_threads):
            E = self.task.embedding()
            train = self.task.train_set
            val = self.task.evaluate()
            force = -self.task.embedding_gradient()
            header = {"kind": "network", "model": self.model, "step": self.step, "train_loss": self.last.get("train_loss"),
                      "train_acc": self.last.get("train_acc"), "val_loss": val["val_loss"],
                      "val_acc": val["val_acc"], "version": self.version, "restarts": self.restarts,
                      "error": self.error, "cut": self.cut, "p": int(E.shape[0]), "d": int(E.shape[1])}
        tame = bool(np.all(np.isfinite(E))) and float(np.max(np.abs(E))) <= MAX_EMBEDDING
        undefined = {"structure": "undefined", "circularity": None, "frequency": None}
        metrics, measured = self.metrics.get(header["restarts"], header["step"],
                                             lambda: structure_metrics(E, train) if tame else undefined)
        header.update({"structure": metrics["structure"], "circularity": metrics["circularity"],
                       "frequency": metrics["frequency"], "metrics_step": measured})
        sums = E[train.pairs[:, 0]] + E[train.pairs[:, 1]]
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
    def parameter_count(p: int, hidden: int) -> int:
        """The embedding (p, 2) and the layers 4 -> hidden -> hidden -> p, weights and biases."""
        return 2 * p + (4 * hidden + hidden) + (hidden * hidden + hidden) + (hidden * p + p)

    @staticmethod
    def pair_count(p: int) -> int:
        """The ordered pairs of Z_p."""
        return p * p

    @staticmethod
    def configure(values: Mapping[str, Any]) -> Any:
        return SurvivalMLPConfig(p=values["p"], d=2, hidden=values["hidden"], lr=values["lr"],
                                 weight_decay=values["weight_decay"], train_fraction=values["train_fraction"])

    def _start(self, config: Any, task: Any) -> None:
        super()._start(config, task)
        if self.values["decay_on"] != "all":
            self._set_optimiser()
