"""The Run tab's files: trajectories given on the command line or uploaded,
read with :meth:`particles.Trajectory.load` (no pickle) and known to the
server by number only, so no other file of the machine can be reached."""

from __future__ import annotations

import os
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from particles.core.io import json_safe
from particles.core.validation import check_int
from particles.trajectory import Trajectory, TrajectoryFormatError

from .projection import fourier_plane, plane_share, principal_plane, project

__all__ = ["RunStore", "Run", "MAX_UPLOAD_BYTES", "MAX_UPLOADS_MEMORY", "MAX_SERIES_POINTS", "MAX_METRIC_SNAPSHOTS",
           "ACCURACY_LABEL", "accuracy_shown"]

#: the largest upload the server reads (bytes)
MAX_UPLOAD_BYTES = 512 << 20
#: the most an upload may unpack to (the sizes its archive declares, bytes)
MAX_UNPACKED_BYTES = 4 << 30
#: the most memory one uploaded run may take once read and converted to float64 (Trajectory.load's max_bytes)
MAX_UPLOAD_MEMORY = 512 << 20
#: uploaded runs kept at a time (the oldest is closed first)
MAX_UPLOADS = 16
#: the most memory the uploaded runs together hold (their arrays); the oldest uploads are closed to make room
MAX_UPLOADS_MEMORY = 2 << 30
#: series longer than this are thinned to it for the page (every k-th step, the last one kept)
MAX_SERIES_POINTS = 2000
#: structure metrics are computed on at most this many snapshots, evenly spaced
MAX_METRIC_SNAPSHOTS = 60
#: the background metrics wait while frames were asked for less than this long ago (seconds)
INTERACTIVE_PAUSE = 0.3
#: what the structure metrics' "accuracy" is (it is not the network's accuracy)
ACCURACY_LABEL = "pair-sum nearest-neighbour accuracy of the embedding (particle model's metric)"


def is_particle_run(traj: Trajectory) -> bool:
    """A run of the particle model (``particles.simulate`` and the like write ``meta["source"]`` so)."""
    return str(traj.meta.get("source", "")).startswith("particles")


def accuracy_shown(traj: Trajectory, values: Any) -> tuple[bool, str]:
    """Whether the Run tab plots the pair-sum nearest-neighbour accuracy, and why (one clause).

    The rule: shown for a run of the particle model (its own metric: the particle model is trained
    on it), and for any other run (a network's) only when it reaches twice chance (2 / p; the nearest
    of p labels by chance is right 1 / p of the time) at one of the measured snapshots at least.
    A network classifies with its own layers, not with the nearest pair sum, so its embedding's
    pair-sum accuracy can stay at 0 while the network is right on every validation pair."""
    values = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if is_particle_run(traj):
        return True, "shown: a particle-model run, trained on this metric"
    best = float(values.max()) if values.size else float("nan")
    floor = 2.0 / traj.p
    if values.size and best >= floor:
        return True, f"shown: it reaches {best:.3f}, at least twice chance (2/p = {floor:.3f})"
    largest = f"largest {best:.3f}" if values.size else "not measured yet"
    return False, (f"not shown: it stays below twice chance (2/p = {floor:.3f}; {largest}) in this network's run, "
                   f"which classifies with its own layers, not with the nearest pair sum")


def thin(n: int, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` of ``n`` samples, evenly strided, first and last kept."""
    if n <= limit:
        return np.arange(n)
    idx = np.unique(np.linspace(0, n - 1, limit).round().astype(int))
    return idx


def declared_size(path: str | Path) -> int:
    """The bytes an archive's members declare in its directory (what reading it unpacks), or its own size
    when it is not a zip archive."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return os.path.getsize(path) if os.path.exists(path) else 0


def check_unpacked_size(data: bytes | str | Path, name: str) -> None:
    """Refuse an archive (its bytes, or its path) that declares more than
    :data:`MAX_UNPACKED_BYTES` of contents (a small file can unpack to
    gigabytes). A file that is not a zip archive passes here and is refused by
    :meth:`particles.Trajectory.load` with its own message."""
    import io
    import zipfile

    source = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        with zipfile.ZipFile(source) as archive:
            declared = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    if declared > MAX_UNPACKED_BYTES:
        raise ValueError(f"{name} unpacks to {declared} bytes; the most the explorer opens is {MAX_UNPACKED_BYTES}")


@dataclass
class Run:
    """One trajectory the server shows; views of it are computed once and kept."""

    name: str
    trajectory: Trajectory
    cache: dict[str, Any] = field(default_factory=dict)
    _metrics_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def held_bytes(self) -> int:
        """The memory this run holds: its arrays and the arrays of its computed views."""
        def arrays(value: Any) -> int:
            if isinstance(value, np.ndarray):
                return value.nbytes
            if isinstance(value, (tuple, list)):
                return sum(arrays(v) for v in value)
            if callable(getattr(value, "held_bytes", None)):  # a view of its own (the Layers tab's, .layers)
                return int(value.held_bytes())
            return 0

        return self.trajectory.nbytes + sum(arrays(v) for v in list(self.cache.values()))

    def work_bytes(self, what: str, *, start: Any = None, stop: Any = None) -> int:
        """The memory (bytes; :mod:`fitting.signals.memory`, :mod:`fitting.ode.memory`) a request for ``what`` ("summary", "frame",
        "stages", "metrics", "fit" of the window [start, stop)) computes beyond what the run holds: the
        views it has computed already cost nothing again."""
        from fitting.ode.memory import fit_bytes
        from fitting.signals.memory import BASE, signals_bytes, stages_bytes

        traj = self.trajectory
        signals = 0 if "signals" in self.cache else signals_bytes(traj)
        if what in ("summary", "frame"):
            return signals + BASE + (64 * traj.p * traj.d if what == "frame" else 0)
        if what == "stages":
            return 0 if "stages" in self.cache else stages_bytes(traj)
        if what == "metrics":  # one snapshot at a time: pair sums of every pair of tokens, a few copies
            return signals + BASE + 64 * traj.p * traj.p * traj.d
        if what == "fit":  # LinearODE(stable=True) on the window, simulated from its start to the run's end
            steps = traj.steps if traj.signals is not None else traj.snapshot_steps
            try:
                rows = len(steps) - int(np.searchsorted(steps, float(start)))
            except (TypeError, ValueError):  # a malformed window is refused by the fit, with its message
                rows = len(steps)
            columns = len(self.selection().columns) if "signals" in self.cache else (traj.p - 1) // 2
            return signals + fit_bytes(max(rows, 1), columns, form="flowmap")
        raise ValueError(f"what must be one of 'summary', 'frame', 'stages', 'metrics', 'fit', got {what!r}")

    def signals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(steps, signals (S, K), survivors mask or None)``."""
        if "signals" not in self.cache:
            from fitting.signals import DC_SCALAR, surviving_frequencies, trajectory_signals

            steps, signals = trajectory_signals(self.trajectory)
            survivors = None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if DC_SCALAR in self.trajectory.scalars:
                        survivors = surviving_frequencies(signals, dc=self.trajectory.scalars[DC_SCALAR])
                    else:
                        survivors = surviving_frequencies(self.trajectory)
                except (ValueError, TypeError):
                    survivors = None
            self.cache["signals"] = (steps, signals, None if survivors is None else np.asarray(survivors, bool))
        return self.cache["signals"]

    def selection(self):
        """The frequencies a fit uses: :func:`fitting.select_frequencies`'s default, as everywhere else."""
        if "selection" not in self.cache:
            from fitting.signals import select_frequencies

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.cache["selection"] = select_frequencies(self.trajectory)
        return self.cache["selection"]

    def metric_pairs(self):
        """The pairs the pair-sum accuracy is measured on: the run's training set when its file holds
        one, else None (all unordered pairs of modular addition)."""
        train = self.trajectory.train
        return train if train is not None and train.p == self.trajectory.p else None

    def accuracy_label(self) -> str:
        """What the page's "accuracy" is, in a few words."""
        which = "training pairs" if self.metric_pairs() is not None else "all pairs, no training set in the file"
        return f"{ACCURACY_LABEL}, on {which}"

    def planes(self) -> list[dict[str, Any]]:
        """The views the page offers, the default first: for d > 2 the Fourier plane of each key
        frequency (strongest final signal first; :func:`.projection.fourier_plane` of the final
        snapshot) and the PCA plane of the final snapshot; for d <= 2 the embedding's own plane.
        Each with its share of the final snapshot's variance (centred over tokens)."""
        if "planes" not in self.cache:
            traj = self.trajectory
            out = []
            if traj.d > 2:
                _, signals, _ = self.signals()
                final = signals[-1]
                for k in sorted(self.selection().key, key=lambda k: (-final[k - 1], k)):
                    try:
                        _, basis, share = self.plane(str(k))
                    except ValueError:  # no power at the end: no plane
                        continue
                    out.append({"id": str(k), "k": int(k), "kind": "fourier", "share": share,
                                "label": f"Fourier plane of key frequency k = {k}"})
            _, _, share = self.plane("pca")
            out.append({"id": "pca", "k": None, "kind": "pca" if traj.d > 2 else "embedding", "share": share,
                        "label": "PCA plane" if traj.d > 2 else
                        f"the embedding itself (d = {traj.d})"})
            self.cache["planes"] = out
        return self.cache["planes"]

    def plane(self, plane: str | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """One fixed view for the whole run, from the final snapshot: ``"pca"`` (its principal plane; the
        embedding itself for d <= 2) or ``"k"`` (the Fourier plane of frequency k, any k in 1..K).
        Returns ``(center, basis (d, 2), share of the final snapshot's variance)``; default: the first
        of :meth:`planes`."""
        traj = self.trajectory
        if plane is None:
            plane = self.planes()[0]["id"]
        if not isinstance(plane, str):
            raise TypeError(f"plane must be 'pca' or a frequency k, got {plane!r}")
        K = (traj.p - 1) // 2
        if plane != "pca":
            if traj.d <= 2:
                raise ValueError(f"plane must be 'pca' for a run of d = {traj.d} (the embedding is its own plane), "
                                 f"got {plane!r}")
            if not (plane.isascii() and plane.isdigit() and 1 <= int(plane) <= K):
                raise ValueError(f"plane must be 'pca' or a frequency k in 1..{K}, got {plane[:20]!r}")
            plane = str(int(plane))
        key = "plane:" + plane
        if key not in self.cache:
            if plane == "pca":
                self.cache[key] = principal_plane(traj.final)
            else:
                self.cache[key] = fourier_plane(traj.final, int(plane))
        return self.cache[key]

    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The network's own curves (train/validation loss and accuracy), :func:`fitting.network_curves`:
        name -> (steps, values); empty for a run that records none."""
        if "curves" not in self.cache:
            from fitting import network_curves

            self.cache["curves"] = network_curves(self.trajectory)
        return self.cache["curves"]

    def stages(self) -> dict[str, Any]:
        """:func:`fitting.stages` of the run as its ``to_dict()`` (the numbers of ``embdyn stages RUN``), or
        ``{"stages": None, "error": message}`` when the run cannot be split into stages (ValueError)."""
        if "stages" not in self.cache:
            from fitting import stages

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    self.cache["stages"] = stages(self.trajectory).to_dict()
                except ValueError as exc:
                    self.cache["stages"] = {"stages": None, "error": " ".join(str(exc).split())}
        return self.cache["stages"]

    def summary(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Header and arrays for the page's first paint: thinned signals, scalars, snapshot steps."""
        traj = self.trajectory
        steps, signals, survivors = self.signals()
        keep = thin(len(steps), MAX_SERIES_POINTS)
        arrays = {"snapshot_steps": traj.snapshot_steps.astype(float), "signal_steps": steps[keep].astype(float),
                  "signals": signals[keep]}
        scalars = []
        for name, values in traj.scalars.items():
            values = np.asarray(values, dtype=float)
            if values.ndim == 1 and values.shape[0] == len(steps):
                arrays["scalar:" + name] = values[keep]
                scalars.append(name)
            elif values.ndim == 1 and values.shape[0] == len(traj.snapshot_steps):
                arrays["snapshot_scalar:" + name] = values
                scalars.append(name)
        curves = []
        for name, (curve_steps, values) in self.curves().items():
            pick = thin(len(curve_steps), MAX_SERIES_POINTS)
            arrays["curve_steps:" + name] = np.asarray(curve_steps, dtype=float)[pick]
            arrays["curve:" + name] = np.asarray(values, dtype=float)[pick]
            curves.append(name)
        meta = {k: v for k, v in traj.meta.items() if k not in ("train_indices", "tokens") and not isinstance(v, (list, dict))}
        header = {"kind": "run", "name": self.name, "p": traj.p, "d": traj.d, "snapshots": len(traj.snapshot_steps),
                  "first_step": int(traj.snapshot_steps[0]), "last_step": int(max(traj.snapshot_steps[-1], steps[-1])),
                  "frequencies": list(range(1, signals.shape[1] + 1)), "scalars": scalars,
                  "survivors": None if survivors is None else [int(k + 1) for k in np.flatnonzero(survivors)],
                  "key_frequencies": self.selection().key, "fit_frequencies": self.selection().frequencies,
                  "frequency_selection": self.selection().message, "frequency_rule": self.selection().rule,
                  "accuracy_label": self.accuracy_label(), "particle_run": is_particle_run(traj),
                  "planes": self.planes(), "default_plane": self.planes()[0]["id"], "curves": curves, "meta": meta}
        return header, arrays

    def frame(self, step: Any, plane: str | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The embedding at the last snapshot at or before ``step``, in one of the run's fixed planes
        (:meth:`plane`; default the first of :meth:`planes`). The header's ``explained`` is the share of
        this snapshot's variance (centred over tokens) in the plane, ``final_explained`` the final one's."""
        self.cache["last_frame"] = time.monotonic()
        traj = self.trajectory
        step = check_int(step, "step", int(traj.snapshot_steps[0]), int(max(traj.snapshot_steps[-1],
                                                                            self.signals()[0][-1])))
        try:
            center, basis, final_share = self.plane(plane)
        except (ValueError, TypeError) as exc:
            exc.parameter = "plane"
            raise
        plane = plane if plane is not None else self.planes()[0]["id"]
        plane = plane if plane == "pca" else str(int(plane))
        index = int(np.searchsorted(traj.snapshot_steps, step, side="right") - 1)
        E = traj.embeddings[index]
        explained = plane_share(E, basis) if E.shape[1] > 2 else 1.0
        if plane == "pca":
            axes = ["principal component 1", "principal component 2"] if traj.d > 2 else ["x1", "x2"]
        else:
            axes = [f"cos axis of k = {plane} (final snapshot)", f"sin axis of k = {plane} (orthogonalised)"]
        header = {"kind": "run-frame", "step": step, "snapshot": index, "snapshot_step": int(traj.snapshot_steps[index]),
                  "explained": explained, "final_explained": final_share, "plane": plane, "axes": axes,
                  "p": traj.p, "d": traj.d}
        return header, {"positions": project(E, center, basis)}

    def metrics(self, wait: bool = False, *, reserve: Any = None) -> dict[str, Any]:
        """Structure metrics over (at most :data:`MAX_METRIC_SNAPSHOTS`) snapshots.

        They take up to 0.4 s a snapshot for wide embeddings (d = 128), so the first
        call starts them in a background thread and every call returns the rows
        computed so far with ``done`` (``wait=True`` blocks until all are there).
        ``accuracy_shown`` and ``accuracy_note`` say whether the page plots the
        pair-sum accuracy (:func:`accuracy_shown`, on the rows so far). ``reserve``: called with the
        work's bytes (:meth:`work_bytes`) before the thread starts, it returns the function the thread
        calls when it ends (a server's memory budget, :meth:`.budget.MemoryLedger.hold`; it may raise to
        refuse the work).
        """
        with self._metrics_lock:
            if "metrics" not in self.cache:
                release = reserve(self.work_bytes("metrics")) if reserve is not None else None
                self.cache["metrics"] = {"rows": [], "done": False,
                                         "total": len(thin(len(self.trajectory.snapshot_steps), MAX_METRIC_SNAPSHOTS))}
                self._metrics_thread = threading.Thread(target=self._compute_metrics, args=(release,), daemon=True)
                self._metrics_thread.start()
        if wait:
            self._metrics_thread.join()
        with self._metrics_lock:
            state = self.cache["metrics"]
            rows = list(state["rows"])
            done, total, error = state["done"], state["total"], state.get("error")
        shown, note = accuracy_shown(self.trajectory, [row["accuracy"] for row in rows])
        return {"rows": rows, "done": done, "total": total, "error": error, "accuracy_shown": shown,
                "accuracy_note": note, "accuracy_label": self.accuracy_label()}

    def _compute_metrics(self, release: Any = None) -> None:
        from particles.metrics import structure_metrics

        try:  # a background job: the live frames and scrubbing come first (Linux: niceness per thread)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        traj = self.trajectory
        state = self.cache["metrics"]
        try:
            for i in thin(len(traj.snapshot_steps), MAX_METRIC_SNAPSHOTS):
                while time.monotonic() - self.cache.get("last_frame", -1e9) < INTERACTIVE_PAUSE:
                    time.sleep(0.05)  # someone is scrubbing: the frames first
                m = structure_metrics(traj.embeddings[i], self.metric_pairs())
                row = {"step": int(traj.snapshot_steps[i]), "circularity": m["circularity"],
                       "plane_share": m["plane_share"], "accuracy": m["accuracy_euclidean"],
                       "structure": m["structure"], "frequency": m["frequency"]}
                with self._metrics_lock:
                    state["rows"].append(row)
        except Exception as exc:  # shown in the page instead of the plot
            with self._metrics_lock:
                state["error"] = f"structure metrics failed: {exc}"
        finally:
            with self._metrics_lock:
                state["done"] = True
            if release is not None:
                release()

    def fit(self, start: Any, stop: Any) -> dict[str, Any]:
        """``LinearODE(stable=True)`` (the package's default) on the window [start, stop] of the
        strongest signals; its simulation from the window's first observed state to the end of the
        run, and its forecast from the window's end against persistence."""
        from fitting.ode import LinearODE
        from fitting.ode.report import fit_report

        steps, signals, survivors = self.signals()
        first, last = int(steps[0]), int(steps[-1])
        for name, value in (("start", start), ("stop", stop)):
            try:
                check_int(value, name, first, last)
            except (ValueError, TypeError) as exc:
                exc.parameter = name
                raise
        start, stop = int(start), int(stop)
        inside = (steps >= start) & (steps < stop)  # [start, stop), as embdyn fit --window and LinearODE(window=)
        if stop <= start or inside.sum() < 8:
            raise ValueError(f"the window [start, stop) must hold at least 8 samples with start < stop, "
                             f"got [{start}, {stop}) ({int(inside.sum())} sample{'' if int(inside.sum()) == 1 else 's'})")
        selection = self.selection()
        chosen = selection.columns
        x = signals[:, chosen]
        t = steps.astype(float)
        notes = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = LinearODE(stable=True, window=(float(start), float(stop)))
            model.fit(x, t, names=[f"S{k + 1}" for k in chosen])
            begin = int(np.flatnonzero(inside)[0])
            t_sim = t[begin:]
            keep = thin(len(t_sim), MAX_SERIES_POINTS)
            path = model.simulate(x[begin], t_sim)
            simulated = path[keep]
            # how well the simulation follows the data inside the window (relative to the data's own spread)
            window = inside[begin:]
            observed = x[begin:][window]
            spread = float(np.linalg.norm(observed - observed.mean(axis=0)))
            miss = float(np.linalg.norm(path[window] - observed))
            in_window = miss / spread if spread > 0 else None
            # the command line's report: the same scores, forecast and notes for the same request
            report = fit_report(model, x, t)
            forecast = None
            if "forecast_error" in report["scores"]:
                s = {name: score["value"] for name, score in report["scores"].items()}
                error = float("inf") if s["forecast_error"] is None else s["forecast_error"]
                # persistence that is exact up to rounding makes the skill meaningless: say so (None)
                tiny = s["persistence_error"] <= 1e-9 * max(1.0, error)
                forecast = {"error": error, "persistence_error": s["persistence_error"],
                            "skill": None if tiny else s["forecast_skill"]}
        for w in caught:
            notes.append(" ".join(str(w.message).split()))
        notes.extend(report["notes"])
        return {"frequencies": [int(k + 1) for k in chosen], "selection": selection.message,
                "scores": {name: score["value"] for name, score in report["scores"].items()},
                "frequency_rule": selection.rule, "start": start, "stop": stop, "in_window_error": in_window,
                "steps": t_sim[keep].tolist(), "simulated": simulated.T.tolist(), "forecast": forecast,
                "equations": model.equations() if hasattr(model, "equations") else None, "notes": notes,
                "model": "LinearODE(stable=True)",
                # the verdict, as embdyn fit's fit.json keeps it (its sentence, when it failed, is in the notes)
                "fit_quality": json_safe(model.fit_quality_)}


def check_meta_size(path: str, max_chars: int) -> None:
    """A ``TrajectoryFormatError`` (field ``meta``) when the archive's ``meta.npy`` holds more than
    ``max_chars`` characters, read from the zip directory (a NumPy string takes 4 bytes a character, plus
    its header): a file cannot hold the server's lock for seconds while a huge ``meta`` is parsed."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("meta.npy")
    except (KeyError, zipfile.BadZipFile, OSError, ValueError):
        return  # no meta member, or not a zip: Trajectory.load says what is wrong
    if info.file_size > 4 * max_chars + 4096:
        raise TrajectoryFormatError("meta", f"holds about {(info.file_size - 128) // 4} characters of JSON; the "
                                            f"explorer reads at most {max_chars}")


class RunStore:
    """Trajectories by number. Files come from the command line (:meth:`add_path`)
    or from an upload (:meth:`add_upload`, kept in a private temporary folder)."""

    def __init__(self) -> None:
        self._runs: list[Run | None] = []
        self._uploaded: list[int] = []
        self._lock = threading.Lock()
        self._uploads = tempfile.TemporaryDirectory(prefix="embdyn-explore-")

    def add_path(self, path: str | Path) -> int:
        try:
            traj = Trajectory.load(path)
        except TrajectoryFormatError as exc:  # name the file: several may be given
            message = str(exc).split(": ", 1)[-1]
            raise TrajectoryFormatError(exc.field, f"{message} (in {str(path)!r})") from None
        path = Path(path)
        return self._add(Run(f"{path.parent.name}/{path.name}" if path.parent.name else path.name, traj))

    @property
    def folder(self) -> Path:
        """The store's private folder of uploads being received (empty between uploads)."""
        return Path(self._uploads.name)

    def upload_file(self) -> str:
        """A new file in the store's private folder, for an upload streamed to disk (the server writes
        it chunk by chunk, then calls :meth:`add_upload_file`, which removes it)."""
        handle, tmp = tempfile.mkstemp(suffix=".npz", dir=self._uploads.name)  # a name of its own per upload
        os.close(handle)
        return tmp

    def add_upload(self, name: str, data: bytes) -> int:
        """A file sent by the page, as bytes (see :meth:`add_upload_file`)."""
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("an upload must be bytes")
        tmp = self.upload_file()
        with open(tmp, "wb") as fh:
            fh.write(data)
        return self.add_upload_file(name, tmp)

    def add_upload_file(self, name: str, tmp: str, max_meta_chars: int | None = None) -> int:
        """A file sent by the page, written to ``tmp`` (from :meth:`upload_file`; removed here);
        a damaged or foreign file raises ``TrajectoryFormatError`` (its message names the upload,
        not the server's temporary file). The uploads kept hold at most :data:`MAX_UPLOADS_MEMORY`
        together: the oldest are closed (and freed) to make room. ``max_meta_chars``: the most characters
        of ``meta`` JSON text read (checked from the archive's directory, before it is parsed; None: any)."""
        try:
            size = os.path.getsize(tmp)
            if size == 0:
                raise ValueError("the uploaded file is empty: choose a trajectory .npz file")
            if size > MAX_UPLOAD_BYTES:
                raise ValueError(f"the uploaded file has {size} bytes; the most the explorer reads is "
                                 f"{MAX_UPLOAD_BYTES}")
            safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in Path(str(name)).name)[:100] \
                or "upload.npz"
            check_unpacked_size(tmp, safe)
            if max_meta_chars is not None:
                check_meta_size(tmp, max_meta_chars)
            try:
                traj = Trajectory.load(tmp, max_bytes=MAX_UPLOAD_MEMORY)
            except Exception as exc:  # the same exception, with the upload's name for the temporary path
                message = str(exc).replace(repr(tmp), repr(safe)).replace(tmp, safe)
                if isinstance(exc, TrajectoryFormatError):
                    raise TrajectoryFormatError(exc.field, message.split(": ", 1)[-1]) from None
                raise type(exc)(message) from None
        finally:
            Path(tmp).unlink(missing_ok=True)
        return self._add(Run(safe, traj), uploaded=True)

    def held_bytes(self) -> int:
        """The memory every kept run holds: its arrays and the views computed from them (signals, ...)."""
        with self._lock:
            return sum(r.held_bytes() for r in self._runs if r is not None)

    def uploads_bytes(self) -> int:
        """The memory the uploaded runs kept hold (their arrays)."""
        with self._lock:
            return sum(self._runs[i].trajectory.nbytes for i in self._uploaded)

    def _add(self, run: Run, uploaded: bool = False) -> int:
        with self._lock:
            self._runs.append(run)
            if uploaded:  # keep the newest uploads only, within the count and the memory budget
                self._uploaded.append(len(self._runs) - 1)
                held = sum(self._runs[i].trajectory.nbytes for i in self._uploaded)
                while len(self._uploaded) > 1 and (len(self._uploaded) > MAX_UPLOADS or held > MAX_UPLOADS_MEMORY):
                    oldest = self._uploaded.pop(0)
                    held -= self._runs[oldest].trajectory.nbytes
                    self._runs[oldest] = None  # its arrays and computed views are freed with it
            return len(self._runs) - 1

    def get(self, run_id: Any) -> Run:
        with self._lock:
            n = len(self._runs)
            if isinstance(run_id, bool) or not isinstance(run_id, int) or not 0 <= run_id < n:
                raise KeyError(f"no run {run_id!r}: the server has runs 0 to {n - 1}" if n else
                               f"no run {run_id!r}: the server has no runs yet")
            if self._runs[run_id] is None:
                raise KeyError(f"run {run_id} was closed to make room for newer uploads (the explorer keeps "
                               f"the last {MAX_UPLOADS}, {MAX_UPLOADS_MEMORY >> 20} MiB together): open it again")
            return self._runs[run_id]

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{"id": i, "name": r.name, "p": r.trajectory.p, "d": r.trajectory.d,
                     "snapshots": len(r.trajectory.snapshot_steps),
                     "layers": isinstance(r.trajectory.meta.get("layers"), dict)}  # layer states (the Layers tab)
                    for i, r in enumerate(self._runs) if r is not None]

    def close(self) -> None:
        self._uploads.cleanup()
