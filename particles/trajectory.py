"""The trajectory file shared by every package (docs/particles.md, the trajectory file).

One ``.npz`` without pickled objects:

========================  ================  ==========================================
array                     shape / dtype     meaning
========================  ================  ==========================================
``schema_version``        () int            format version (currently 1)
``steps``                 (T,) int          steps at which per-step series are recorded
``snapshot_steps``        (S,) int          steps at which embeddings are recorded
``embeddings``            (S, p, d) float   token embeddings
``signals``               (T, K) float      optional Fourier signals
``scalar_<name>``         (T,) float        optional per-step series (``energy``,
                                            ``train_loss``, ``val_acc``, ...)
``snapshot_<name>``       (S, ...) float    optional arrays recorded with each snapshot
                                            (e.g. sequence embeddings of a probe set)
``gradients``             (S, p, d) float   optional: the loss gradient dL/dE at each
                                            snapshot (training runs; docs/force_fit.md);
                                            (S - 1, p, d) when the last snapshot had
                                            no following step
``updates``               (S, p, d) float   optional: the optimiser's update E_{s+1} - E_s
                                            taken from each snapshot (shape of gradients)
``train_pairs``           (M, 2) int        optional: the training pairs (a, b), tokens
                                            in 0..p-1 (with ``train_labels``)
``train_labels``          (M,) int          optional: their labels
``curve_<name>``          (2, N) float      optional: a curve the network logged (its own
                                            steps): row 0 the steps, row 1 the values
                                            (``train_loss``, ``val_acc``, ...)
``meta``                  () str            JSON: source, p, d, seed, parameters, ...
========================  ================  ==========================================

Particle simulations record energy at every snapshot, so there
``steps == snapshot_steps`` and ``scalar_energy`` has one value per snapshot.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .core import io as _core_io
from .core.io import atomic_write
from .core.io import json_loads_bounded
from .core.validation import check_bool, check_int, check_magnitude, check_path
from .datasets import PairDataset, as_training_set

__all__ = ["Trajectory", "TrajectoryFormatError", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


class TrajectoryFormatError(ValueError):
    """A trajectory file or object is malformed; ``field`` names the culprit."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"trajectory field {field_name!r}: {message}")
        self.field = field_name


def _int_series(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise TrajectoryFormatError(name, f"must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":  # not timedelta64 (a numpy integer subtype), not bool
        if arr.dtype.kind != "f" or not np.all(arr == np.round(arr)):
            raise TrajectoryFormatError(name, f"must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size > 1 and np.any(np.diff(arr) <= 0):
        raise TrajectoryFormatError(name, "must be strictly increasing")
    if arr.size and arr[0] < 0:
        raise TrajectoryFormatError(name, "must be >= 0")
    return arr


def _float_array(name: str, value: Any, ndim: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise TrajectoryFormatError(name, f"must have {ndim} dimensions, got shape {arr.shape}")
    if arr.dtype.kind not in "iuf":  # timedelta64 is a numpy integer subtype: refused by kind
        raise TrajectoryFormatError(name, f"must hold real numbers (float or int), got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise TrajectoryFormatError(name, f"holds a non-finite value at index {tuple(int(i) for i in bad)}")
    return arr


def default_memory_budget() -> int:
    """The most memory (bytes) :meth:`Trajectory.load` lets one file take after conversion to
    float64 by default: a quarter of the machine's physical memory (4 GiB where it cannot be read)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 16 * 2**30
    return int(total // 4)


def _plain_reason(exc: BaseException) -> str:
    """An exception's message without Python object reprs (``<ast.Call object at 0x...>``, which NumPy's
    header parser puts in its message for a header holding an expression)."""
    import re

    text = re.sub(r"<[\w.]+ object at 0x[0-9a-fA-F]+>", "an expression", str(exc))
    return " ".join(text.split()) or type(exc).__name__


def _check_npz_headers(path: Path, budget: int | None = None) -> None:
    """Read every member's .npy header from the zip directory, before any
    array is loaded: a damaged archive, an object dtype or a shape larger
    than the bytes stored is a TrajectoryFormatError naming the member; the
    memory the arrays take once read and converted to float64 (with the
    compressed bytes read alongside) above ``budget`` is one naming the
    file, the figure and the limit."""
    with open(path, "rb") as fh:
        if fh.read(6) == b"\x93NUMPY":
            raise TrajectoryFormatError("file", f"{str(path)!r} holds a single array (.npy), not an .npz archive")
    try:
        archive = zipfile.ZipFile(path)
    except Exception as exc:  # BadZipFile, OSError, NotImplementedError (unknown compression), ...
        raise TrajectoryFormatError("file", f"{str(path)!r} is not a readable .npz archive ({exc})") from None
    needed = 0
    seen: set[str] = set()
    with archive:
        for info in archive.infolist():
            field = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if info.filename in seen:  # numpy would keep the last copy without a word
                raise TrajectoryFormatError(field, f"appears more than once in {str(path)!r} (duplicate zip members: "
                                                   "which copy is meant is unknown)")
            seen.add(info.filename)
            try:
                with archive.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            except Exception as exc:  # zip, zlib, header syntax
                raise TrajectoryFormatError(field, f"has a damaged header in {str(path)!r} "
                                                   f"({_plain_reason(exc)})") from None
            if dtype.hasobject:
                raise TrajectoryFormatError(field, "holds Python objects (needs pickle), which are refused")
            nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
            if nbytes > info.file_size:
                raise TrajectoryFormatError(field, f"header declares shape {shape} of {dtype} ({nbytes:.3g} bytes) "
                                                   f"but the archive stores {info.file_size} bytes for it")
            # as read (its own dtype) plus its float64 copy, for numeric members
            count = int(np.prod(shape, dtype=np.float64))
            needed += nbytes + (8 * count if dtype.kind in "fiub" and dtype.itemsize < 8 else 0)
    if budget is not None and needed > budget:
        raise TrajectoryFormatError("file", f"{str(path)!r} would take {needed / 2**20:.0f} MiB of memory once read "
                                            f"and converted to float64, over the budget of {budget / 2**20:.0f} "
                                            "MiB (Trajectory.load(path, max_bytes=...) raises it)")


def _check_loadable(traj: "Trajectory") -> None:
    """What a file must hold to be of use to any reader (refused at load, not when a partial
    trajectory is built in memory): a snapshot, at least 2 tokens and 1 dimension, and embeddings,
    signals, gradients and updates whose squares stay finite (magnitude <= MAX_ABS), and a meta["p"] /
    meta["d"] (where recorded as numbers) equal to the embeddings' token count and dimension."""
    S, p, d = traj.embeddings.shape
    if S == 0:
        raise TrajectoryFormatError("embeddings", "holds no snapshot; a trajectory file needs at least one")
    if p < 2:
        raise TrajectoryFormatError("embeddings", f"holds {p} token{'s' if p != 1 else ''}; at least 2 are needed")
    if d < 1:
        raise TrajectoryFormatError("embeddings", "has 0 dimensions; at least 1 is needed")
    # every writer records meta["p"] and meta["d"] as the embeddings' own token count and dimension
    # (a recorder given tokens= stores those rows only, and p = their count)
    for key, actual, axis in (("p", p, "token"), ("d", d, "dimension")):
        recorded = traj.meta.get(key)
        if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) and recorded != actual:
            raise TrajectoryFormatError("meta", f"records {key} = {recorded!r} (meta[{key!r}]) but the embeddings "
                                                f"{(S, p, d)} have {key} = {actual} on their {axis} axis")
    # positions and what is computed from them; scalars (energies, partition functions of valid runs
    # can exceed the bound) and snapshot arrays are stored as they are
    arrays = {"embeddings": traj.embeddings, "signals": traj.signals, "gradients": traj.gradients,
              "updates": traj.updates}
    for name, arr in arrays.items():
        if arr is not None:
            try:
                check_magnitude(arr, name)
            except ValueError as exc:
                raise TrajectoryFormatError(name, str(exc).removeprefix(f"{name} ")) from None


def _check_curves(curves: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``curves`` as name -> (int steps, float values): identifiers, 1-D, equal lengths, steps
    strictly increasing and >= 0, values finite; a TrajectoryFormatError naming ``curve_<name>``."""
    if not isinstance(curves, dict):
        raise TrajectoryFormatError("curves", f"must be a dict of name -> (steps, values), got {type(curves).__name__}")
    checked = {}
    for name, value in curves.items():
        key = f"curve_{name}"
        if not isinstance(name, str) or not name.isidentifier():
            raise TrajectoryFormatError(key, "name must be an identifier")
        if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] == 2:
            steps, values = value[0], value[1]
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            steps, values = value
        else:
            raise TrajectoryFormatError(key, "must be a pair (steps, values)")
        steps = _int_series(f"{key} steps", steps)
        values = _float_array(f"{key} values", values, 1)
        if steps.shape != values.shape:
            raise TrajectoryFormatError(key, f"has {values.shape[0]} values for {steps.shape[0]} steps")
        if steps.size == 0:
            raise TrajectoryFormatError(key, "is empty")
        checked[name] = (steps, values)
    return checked


@dataclass(eq=False)
class Trajectory:
    """Embeddings over time plus optional per-step series.

    Attributes
    ----------
    embeddings : ndarray, shape (S, p, d)
        Embedding snapshots.
    snapshot_steps : ndarray of int, shape (S,)
        Step of each snapshot.
    steps : ndarray of int, shape (T,)
        Steps of the per-step series (defaults to ``snapshot_steps``).
    signals : ndarray, shape (T, K), optional
        Fourier signals per step.
    scalars : dict of str to ndarray of shape (T,)
        Per-step series, e.g. ``energy``, ``train_loss``, ``val_acc``.
    snapshot_arrays : dict of str to ndarray of shape (S, ...)
        Arrays recorded with each snapshot, e.g. ``sequence_embedding``.
    meta : dict
        JSON-serialisable description (source, p, d, seed, parameters, ...).
    gradients : ndarray, shape (S, p, d) or (S - 1, p, d), optional
        The gradient of the training loss with respect to the embedding at
        each snapshot (before the optimiser's weight decay); one entry fewer
        than the snapshots when the last snapshot (the run's final state) was
        not followed by a step. Recorded with
        ``gradients=True`` (:class:`fitting.training.EmbeddingRecorder`,
        :func:`fitting.training.train`).
    updates : ndarray, the shape of ``gradients``, optional
        The change the optimiser made to the embedding in the step taken
        from each snapshot (recorded with the gradients).
    train_pairs, train_labels : ndarray of int, shapes (M, 2) and (M,), optional
        The training set of the run (both or neither): token pairs in
        ``0..p-1`` and their labels. Checked against ``meta["task"]`` (a key
        of :data:`particles.datasets.TASK_LABELS`) and ``meta["n_train"]``
        where the metadata has them. :attr:`train` gives it as a
        :class:`~particles.PairDataset`. Files written before these fields
        existed load without them.
    curves : dict of str to (steps, values), optional
        The network's own curves (``train_loss``, ``train_acc``,
        ``val_loss``, ``val_acc``, ...), each at its own steps: steps an
        int array, strictly increasing, and values a finite float array of
        the same length (:meth:`fitting.training.EmbeddingRecorder.log`).
        Files written before this field existed load without it.
    """

    embeddings: np.ndarray
    snapshot_steps: np.ndarray
    steps: np.ndarray | None = None
    signals: np.ndarray | None = None
    scalars: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    snapshot_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    gradients: np.ndarray | None = None
    updates: np.ndarray | None = None
    train_pairs: np.ndarray | None = None
    train_labels: np.ndarray | None = None
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.embeddings = _float_array("embeddings", self.embeddings, 3)
        self.snapshot_steps = _int_series("snapshot_steps", self.snapshot_steps)
        if self.embeddings.shape[0] != self.snapshot_steps.shape[0]:
            raise TrajectoryFormatError(
                "snapshot_steps",
                f"has {self.snapshot_steps.shape[0]} entries for {self.embeddings.shape[0]} snapshots in embeddings")
        self.steps = self.snapshot_steps.copy() if self.steps is None else _int_series("steps", self.steps)
        n_steps = self.steps.shape[0]
        if self.signals is not None:
            self.signals = _float_array("signals", self.signals, 2)
            if self.signals.shape[0] != n_steps:
                raise TrajectoryFormatError("signals", f"has {self.signals.shape[0]} rows for {n_steps} steps")
        scalars = {}
        for name, series in dict(self.scalars).items():
            if not isinstance(name, str) or not name.isidentifier():
                raise TrajectoryFormatError(f"scalar_{name}", "name must be an identifier")
            arr = _float_array(f"scalar_{name}", series, 1)
            if arr.shape[0] != n_steps:
                raise TrajectoryFormatError(f"scalar_{name}", f"has {arr.shape[0]} entries for {n_steps} steps")
            scalars[name] = arr
        self.scalars = scalars
        arrays = {}
        n_snap = self.embeddings.shape[0]
        for name, value in dict(self.snapshot_arrays).items():
            key = f"snapshot_{name}"
            if not isinstance(name, str) or not name.isidentifier() or name == "steps":
                raise TrajectoryFormatError(key, "name must be an identifier other than 'steps'")
            arr = np.asarray(value)
            if arr.ndim < 1:
                raise TrajectoryFormatError(key, "must have a leading snapshot axis")
            arr = _float_array(key, arr, arr.ndim)
            if arr.shape[0] != n_snap:
                raise TrajectoryFormatError(key, f"has {arr.shape[0]} entries for {n_snap} snapshots")
            arrays[name] = arr
        self.snapshot_arrays = arrays
        self.curves = _check_curves(self.curves)
        for name in ("gradients", "updates"):
            value = getattr(self, name)
            if value is not None:
                arr = _float_array(name, value, 3)
                S = self.embeddings.shape[0]
                # the final snapshot has no gradient when no step followed it: S or S - 1 entries
                if arr.shape[1:] != self.embeddings.shape[1:] or arr.shape[0] not in (S, S - 1) or arr.shape[0] < 1:
                    raise TrajectoryFormatError(name, f"must have the shape of embeddings {self.embeddings.shape}, "
                                                      f"or one snapshot fewer (the last without a following step), "
                                                      f"got {arr.shape}")
                setattr(self, name, arr)
        if self.gradients is not None and self.updates is not None and self.gradients.shape != self.updates.shape:
            raise TrajectoryFormatError("updates", f"must have the shape of gradients {self.gradients.shape}, got "
                                                   f"{self.updates.shape}")
        if not isinstance(self.meta, dict):
            raise TrajectoryFormatError("meta", f"must be a dict, got {type(self.meta).__name__}")
        try:
            json.dumps(self.meta)
        except (TypeError, ValueError) as exc:
            raise TrajectoryFormatError("meta", f"is not JSON-serialisable: {exc}") from None
        if (self.train_pairs is None) != (self.train_labels is None):
            given, missing = ("train_pairs", "train_labels") if self.train_labels is None else \
                ("train_labels", "train_pairs")
            raise TrajectoryFormatError(missing, f"is missing while {given} is given (both or neither)")
        if self.train_pairs is not None:
            try:
                data = self._check_train((self.train_pairs, self.train_labels), "train")
            except ValueError as exc:
                raise TrajectoryFormatError("train_pairs", str(exc)) from None
            self.train_pairs, self.train_labels = data.pairs, data.labels

    def _check_train(self, train: Any, name: str) -> PairDataset:
        """``train`` checked against this run: tokens, ``meta["task"]``, ``meta["n_train"]``."""
        size = self.meta.get("n_train")
        if size is None and isinstance(self.meta.get("train_indices"), list):
            size = len(self.meta["train_indices"])
        task = self.meta.get("task")
        return as_training_set(train, self.p, task=task if isinstance(task, str) else None,
                               size=size if isinstance(size, int) and not isinstance(size, bool) else None, name=name)

    @property
    def train(self) -> PairDataset | None:
        """The run's training set as a :class:`~particles.PairDataset` (named
        after ``meta["task"]``), or None when the file does not hold one."""
        if self.train_pairs is None:
            return None
        task = self.meta.get("task")
        return PairDataset(self.train_pairs, self.train_labels, self.p, task if isinstance(task, str) else "pairs")

    def with_train(self, train: Any, *, name: str = "train") -> "Trajectory":
        """A copy holding the training set ``train`` (a PairDataset or
        ``(pairs, labels)``), checked against this run first: pairs in
        ``0..p-1``, labels that follow ``meta["task"]`` and a size equal to
        ``meta["n_train"]`` where those are recorded; a ``ValueError`` naming
        ``train`` (or ``name``) otherwise."""
        data = self._check_train(train, name)
        return Trajectory(self.embeddings, self.snapshot_steps, steps=self.steps, signals=self.signals,
                          scalars=dict(self.scalars), meta={**self.meta, "n_train": len(data)},
                          snapshot_arrays=dict(self.snapshot_arrays), gradients=self.gradients,
                          updates=self.updates, train_pairs=data.pairs, train_labels=data.labels,
                          curves=dict(self.curves))

    # convenient views -------------------------------------------------
    @property
    def p(self) -> int:
        return int(self.embeddings.shape[1])

    @property
    def d(self) -> int:
        return int(self.embeddings.shape[2])

    @property
    def nbytes(self) -> int:
        """The bytes of its arrays (embeddings, series, gradients, training set, curves, ...)."""
        arrays = [self.embeddings, self.signals, self.steps, self.snapshot_steps, self.gradients, self.updates,
                  self.train_pairs, self.train_labels, *self.scalars.values(), *self.snapshot_arrays.values()]
        arrays += [a for pair in self.curves.values() for a in pair]
        return int(sum(np.asarray(a).nbytes for a in arrays if a is not None))

    @property
    def final(self) -> np.ndarray:
        """The last embedding snapshot, shape (p, d)."""
        if len(self.embeddings) == 0:
            raise ValueError("the trajectory has no snapshots")
        return self.embeddings[-1]

    @property
    def energy(self) -> np.ndarray:
        """Energy per step (particle trajectories)."""
        if "energy" not in self.scalars:
            raise AttributeError("this trajectory has no 'energy' series")
        return self.scalars["energy"]

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])

    def __repr__(self) -> str:
        series = ", ".join(sorted(self.scalars))
        return (f"Trajectory(snapshots={len(self)}, p={self.p}, d={self.d}, steps={len(self.steps)}, "
                f"signals={None if self.signals is None else self.signals.shape}, scalars=[{series}], "
                f"source={self.meta.get('source')!r})")

    # files --------------------------------------------------------------
    def _arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "schema_version": np.array(SCHEMA_VERSION, dtype=np.int64),
            "steps": self.steps,
            "snapshot_steps": self.snapshot_steps,
            "embeddings": self.embeddings,
            "meta": np.array(json.dumps(self.meta, sort_keys=True)),
        }
        if self.signals is not None:
            arrays["signals"] = self.signals
        for name, series in self.scalars.items():
            arrays[f"scalar_{name}"] = series
        for name, value in self.snapshot_arrays.items():
            arrays[f"snapshot_{name}"] = value
        for name in ("gradients", "updates", "train_pairs", "train_labels"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        for name, (steps, values) in self.curves.items():
            arrays[f"curve_{name}"] = np.stack([steps.astype(np.float64), values])
        return arrays

    def to_xarray(self):
        """The trajectory as an ``xarray.Dataset`` (needs xarray).

        ``embeddings`` has dimensions (snapshot_step, token, dim); per-step
        series (``signals`` with dimension ``frequency`` = 1..K, and every
        scalar) share the dimension ``step``; snapshot arrays get
        ``snapshot_step`` and dimensions of their own; ``gradients`` and
        ``updates`` the dimension ``gradient_step`` (the snapshots that have
        one); the training set ``train_pairs`` (pair, operand) and
        ``train_labels`` (pair); ``meta`` goes into the attributes as JSON
        text (``attrs["meta"]``).
        """
        try:
            import xarray as xr
        except ImportError as exc:
            raise ImportError("Trajectory.to_xarray needs xarray: pip install '.[interop]' in the repository root (or pip install xarray)") from exc
        data = {"embeddings": (("snapshot_step", "token", "dim"), self.embeddings)}
        if self.signals is not None:
            data["signals"] = (("step", "frequency"), self.signals)
        for name, series in self.scalars.items():
            data[name] = (("step",), series)
        for name, arr in self.snapshot_arrays.items():
            data[name] = (("snapshot_step", *(f"{name}_dim{i}" for i in range(1, arr.ndim))), arr)
        forces = [n for n in ("gradients", "updates") if getattr(self, n) is not None]
        for name in forces:  # their own step axis: the last snapshot may have none
            data[name] = (("gradient_step", "token", "dim"), getattr(self, name))
        if self.train_pairs is not None:
            data["train_pairs"] = (("pair", "operand"), self.train_pairs)
            data["train_labels"] = (("pair",), self.train_labels)
        coords = {"snapshot_step": self.snapshot_steps, "token": np.arange(self.embeddings.shape[1]),
                  "dim": np.arange(self.embeddings.shape[2])}
        if forces:
            coords["gradient_step"] = self.snapshot_steps[: len(getattr(self, forces[0]))]
        if self.signals is not None or self.scalars:
            coords["step"] = self.steps
        if self.signals is not None:
            coords["frequency"] = np.arange(1, self.signals.shape[1] + 1)
        return xr.Dataset(data, coords=coords, attrs={"meta": json.dumps(self.meta, default=str)})

    def save(self, path: str | os.PathLike, compress: bool = True) -> Path:
        """Write the ``.npz`` atomically (temporary file in the same folder,
        then rename): a reader never sees a half-written file. Missing parent
        folders are created."""
        path = check_path(path, "path")
        compress = check_bool(compress, "compress")
        if path.suffix != ".npz":
            raise ValueError(f"path must end in .npz, got {str(path)!r}")
        arrays = self._arrays()
        atomic_write(path, lambda fh: (np.savez_compressed if compress else np.savez)(fh, **arrays))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes: int | None = None) -> "Trajectory":
        """Read and validate a trajectory file; errors name the bad field.

        A file of another kind says so (a ``TrajectoryFormatError`` for the
        field ``"file"``), from the zip's directory and before any member is
        read or unpickled: a ``torch.save`` checkpoint, or an ``.npz`` that
        holds none of a trajectory's own arrays (a training set's ``pairs``
        and ``labels``, ...), whose arrays the message lists. A member stored
        twice (numpy would keep the last copy) and a ``meta["p"]`` or
        ``meta["d"]`` that contradicts the embeddings' shape are refused too.

        ``max_bytes``: the most memory the file may take once read and
        converted to float64, estimated from its headers before anything is
        read (default :func:`default_memory_budget`, a quarter of the
        machine's memory); a larger file is a ``TrajectoryFormatError`` with
        the figure and the limit."""
        path = check_path(path, "path")
        budget = default_memory_budget() if max_bytes is None else check_int(max_bytes, "max_bytes", 1)
        if not path.exists():
            raise FileNotFoundError(f"no trajectory file at {str(path)!r}")
        if not path.is_file():
            raise ValueError(f"path must be a trajectory file, got the folder {str(path)!r}")
        own = ("schema_version", "snapshot_steps", "embeddings", "meta")
        members = _core_io.zip_members(path)  # the zip's directory only: nothing is read or unpickled
        if members is not None and _core_io.is_torch_checkpoint(members):
            raise TrajectoryFormatError("file", f"{str(path)!r} is a torch checkpoint, not a trajectory file: load it "
                                                "with fitting.training.load_checkpoints")
        held = [name.removesuffix(".npy") for name in members or ()]
        if members is not None and not set(own) & set(held):  # another kind of .npz (a training set, ...)
            shown = ", ".join(held[:8]) + (f", ... ({len(held)} in all)" if len(held) > 8 else "") or "nothing"
            raise TrajectoryFormatError("file", f"{str(path)!r} is not a trajectory file (it holds {shown}; a "
                                                f"trajectory holds {', '.join(own)})")
        _check_npz_headers(path, budget)
        try:
            archive = np.load(path, allow_pickle=False)
        except Exception as exc:  # zipfile, OS and format errors
            raise TrajectoryFormatError("file", f"{str(path)!r} is not a readable .npz archive ({exc})") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise TrajectoryFormatError("file", f"{str(path)!r} holds a single array (.npy), not an .npz archive")
        with archive:
            names = set(archive.files)
            for required in own:
                if required not in names:
                    raise TrajectoryFormatError(required, "is missing")
            data = {}
            for name in names:
                try:
                    data[name] = archive[name]
                except Exception as exc:
                    # CRC, zlib or zip errors of a damaged member; object arrays refused without pickle
                    raise TrajectoryFormatError(name, f"cannot be read from {str(path)!r} ({exc})") from None
        version = data["schema_version"]
        if version.shape != () or version.dtype.kind not in "iu":
            raise TrajectoryFormatError("schema_version", "must be a scalar integer")
        if int(version) != SCHEMA_VERSION:
            raise TrajectoryFormatError("schema_version", f"is {int(version)}; this version reads {SCHEMA_VERSION}")
        meta_raw = data["meta"]
        if meta_raw.shape != () or meta_raw.dtype.kind != "U":
            raise TrajectoryFormatError("meta", "must be a scalar JSON string")
        try:
            meta = json_loads_bounded(str(meta_raw))
        except json.JSONDecodeError as exc:
            raise TrajectoryFormatError("meta", f"is not valid JSON ({exc})") from None
        except ValueError as exc:  # nested past MAX_JSON_DEPTH
            raise TrajectoryFormatError("meta", str(exc)) from None
        if not isinstance(meta, dict):
            raise TrajectoryFormatError("meta", "must decode to a JSON object")
        known = {"schema_version", "steps", "snapshot_steps", "embeddings", "meta", "signals", "gradients", "updates",
                 "train_pairs", "train_labels"}
        unknown = [n for n in names - known if not n.startswith(("scalar_", "snapshot_", "curve_"))]
        if unknown:
            raise TrajectoryFormatError(sorted(unknown)[0], "is not part of the trajectory format")
        scalars = {n[len("scalar_"):]: data[n] for n in names if n.startswith("scalar_")}
        extra = {n[len("snapshot_"):]: data[n] for n in names
                 if n.startswith("snapshot_") and n != "snapshot_steps"}
        curves = {}
        for n in sorted(names):
            if n.startswith("curve_"):
                if data[n].ndim != 2 or data[n].shape[0] != 2:
                    raise TrajectoryFormatError(n, f"must have shape (2, N): steps and values, got {data[n].shape}")
                curves[n[len("curve_"):]] = (data[n][0], data[n][1])
        traj = cls(embeddings=data["embeddings"], snapshot_steps=data["snapshot_steps"], steps=data.get("steps"),
                   signals=data.get("signals"), scalars=scalars, meta=meta, snapshot_arrays=extra,
                   gradients=data.get("gradients"), updates=data.get("updates"),
                   train_pairs=data.get("train_pairs"), train_labels=data.get("train_labels"), curves=curves)
        _check_loadable(traj)
        return traj
