"""Training units on a Dask cluster, journaled where the client writes.

A multi-run trainer (:func:`fitting.training.train_grid`,
:func:`fitting.training.train_batched`) splits its runs into *units* (a stack
of grid cells, a group of seeds). Locally each unit runs in a process of
joblib's loky pool (:mod:`fitting.training.processes`); on a cluster each
unit is one Dask task (``Client.submit``), chosen as for particle sweeps:

- ``scheduler=None`` and ``joblib.parallel_config(backend="dask")`` active:
  that backend's client;
- ``scheduler=`` a ``dask.distributed.Client``, an address
  (``"tcp://host:8786"``) or ``"local:N"`` (a ``LocalCluster`` of ``N``
  one-thread worker processes, closed after the run).

**The journal.** With an output location, the client keeps a folder
``<stem>.units/`` beside it: ``header.json`` (what the run is and how it
was split), one ``unit<k>`` file per finished unit (written atomically, as
the client receives it; never unpickled) and ``events.jsonl``, one line per event: a unit's
start on a worker (``"start"``, with the step it resumed from), its end
(``"done"``) and each session of the client (``"session"``). A client
started again with ``resume=True`` loads the finished units and submits
only the others; two clients on one journal are refused (an advisory lock,
as for sweeps).

**Kills.** A worker that dies mid-unit has that unit run again by Dask
(``distributed.scheduler.allowed-failures``, 3 by default); with
checkpoints the unit continues from its last one. Workers write
checkpoints at the paths the client names: checkpoints on a cluster need
the workers to share the client's file system (a ``LocalCluster``, or a
shared one). A unit finished on a worker that dies before its
result reaches the client is run again (Dask keeps results in the worker's
memory); the client journals each result as soon as it arrives, so that
window is the time of one transfer. A client killed while its units run
on a cluster of its own (``"local:N"``) takes them with it; on a remote
cluster Dask drops the units of a client that is gone, but a unit already
running finishes its step loop there (a worker thread cannot be stopped),
and may write its checkpoint beside the resumed one's: resume once the old
units have ended (the scheduler's dashboard shows them).

Each unit runs its torch on the cores of its host shared over the worker
threads of that host (workers with one thread each are the intended use,
``dask worker --nthreads 1``: torch's thread count is per process).
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from particles.core.io import atomic_write
from particles.core.validation import check_output_folder, describe

from .processes import travelling_error
from .threads import torch_threads

__all__ = ["cluster_client", "check_scheduler", "on_cluster", "LOCAL_WORKER_CONFIG", "UnitJournal", "save_arrays",
           "load_arrays", "run_units", "cluster_slots", "JOURNAL_FORMAT",
           "CONNECT_TIMEOUT", "EVENTS_TOPIC"]

#: Dask settings of the workers of a ``"local:N"`` cluster. Dask's nanny
#: sets ``MALLOC_TRIM_THRESHOLD_`` in every worker, which turns glibc's
#: adaptive mmap threshold off: a training step's tensors are then mapped
#: and unmapped at every step (half the CPU time in the kernel), and the
#: 176-cell grid took 1.3x longer (67 s against 54 s, 1000 steps); the
#: statistical profiler samples the training thread every 10 ms. A cluster
#: of your own can be started with the same settings (docs/training.md).
LOCAL_WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                       "distributed.worker.profile.enabled": False}
#: seconds a scheduler address gets to answer before it is refused
CONNECT_TIMEOUT = 10.0
#: first field of a journal's header.json
JOURNAL_FORMAT = "embdyn-training-units/1"
#: the scheduler's event topic the units' starts are logged under
EVENTS_TOPIC = "embdyn-training-units"
#: seconds between two progress reports of a unit (and two looks of the client at its units), and
#: between two looks of a unit at the stop event; each is a message through the scheduler, which in a
#: ``"local:N"`` cluster shares the client's process and the workers' cores
REPORT_EVERY, STOP_CHECK = 1.0, 1.0
#: seconds the units get to write their checkpoints once asked to stop
GRACE = 60


def check_scheduler(scheduler: Any, name: str = "scheduler") -> Any:
    """``scheduler`` checked before any work: None, a Dask ``Client`` (any
    object with ``submit`` and ``scheduler_info``), ``"local:N"`` with N >= 1,
    or a scheduler address (``"tcp://host:port"``, ``"host:port"``)."""
    if scheduler is None or (hasattr(scheduler, "submit") and hasattr(scheduler, "scheduler_info")):
        return scheduler
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise TypeError(f"{name} must be None, a dask.distributed.Client, 'local:N' or a scheduler address "
                        f"such as 'tcp://host:8786', got {describe(scheduler)}")
    if scheduler.startswith("local:"):
        count = scheduler[len("local:"):]
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{name} 'local:N' needs N >= 1 worker processes, got {scheduler!r}")
        return scheduler
    host = scheduler.split("://", 1)[-1]
    if ":" not in host or not host.rsplit(":", 1)[1].isdigit():
        raise ValueError(f"{name} must be 'local:N' or a scheduler address with a port such as "
                         f"'tcp://host:8786', got {scheduler!r}")
    return scheduler


def on_cluster(scheduler: Any) -> bool:
    """Whether a trainer given ``scheduler`` runs on a Dask cluster
    (``scheduler`` checked; None: whether joblib's dask backend is active)."""
    return check_scheduler(scheduler) is not None or _joblib_client() is not None


def _dask():
    try:
        import dask.distributed as dd
    except ImportError:
        raise ValueError("scheduler: a Dask cluster needs the [cluster] extra: pip install 'embedding-dynamics[cluster]'"
                         ) from None
    return dd


def _joblib_client() -> Any:
    """The client of an active ``joblib.parallel_config(backend="dask")``, else None."""
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    return getattr(backend, "client", None)


@contextmanager
def cluster_client(scheduler: Any, name: str = "scheduler") -> Iterator[Any]:
    """The Dask client a trainer's units run on, or None for local processes
    (``scheduler`` as :func:`check_scheduler`; None also looks at joblib's
    active backend). A ``"local:N"`` cluster is started here and closed on
    leaving; an address is refused in one line when no scheduler answers
    within :data:`CONNECT_TIMEOUT` seconds."""
    scheduler = check_scheduler(scheduler, name)
    if scheduler is None:
        yield _joblib_client()
        return
    if not isinstance(scheduler, str):
        yield scheduler
        return
    dd = _dask()
    if scheduler.startswith("local:"):
        import dask

        with dask.config.set(LOCAL_WORKER_CONFIG):  # read when the nannies are made (restarts included)
            cluster = dd.LocalCluster(n_workers=int(scheduler[6:]), threads_per_worker=1, processes=True,
                                      dashboard_address=":0")
        with cluster, dd.Client(cluster) as client:
            yield client
        return
    try:
        client = dd.Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"{name}: no Dask scheduler answered at {scheduler!r} within {CONNECT_TIMEOUT:g} s "
                         f"({type(exc).__name__})") from None
    with client:
        yield client


#: seconds a cluster gets to have its first worker before a run is refused
WORKER_WAIT = 60.0


def cluster_slots(client: Any) -> dict[str, int]:
    """Worker threads per host of the cluster (what a unit shares its host's cores with),
    once it has a worker (a ValueError after :data:`WORKER_WAIT` s without one)."""
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise ValueError(f"scheduler: the Dask cluster has no worker after {WORKER_WAIT:g} s; start workers "
                         "(dask worker ADDRESS --nthreads 1)") from None
    slots: dict[str, int] = {}
    for info in client.scheduler_info(n_workers=-1)["workers"].values():
        slots[info["host"]] = slots.get(info["host"], 0) + int(info["nthreads"])
    return slots


def save_arrays(folder: Path, unit: int, result: dict) -> None:
    """The default codec of a journal: a unit's result, a dict of NumPy
    arrays and JSON values, as ``unit<k>.npz`` (read without pickle)."""
    arrays = {k: v for k, v in result.items() if isinstance(v, np.ndarray)}
    rest = {k: v for k, v in result.items() if k not in arrays}
    text = np.frombuffer(json.dumps(rest).encode(), dtype=np.uint8)
    atomic_write(folder / f"unit{unit}.npz", lambda fh: np.savez(fh, **arrays, __json__=text))


def load_arrays(folder: Path, unit: int) -> dict | None:
    """What :func:`save_arrays` wrote for ``unit``, or None."""
    path = folder / f"unit{unit}.npz"
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        result = {k: data[k] for k in data.files if k != "__json__"}
        result.update(json.loads(data["__json__"].tobytes().decode()))
    return result


class UnitJournal:
    """The folder ``folder`` where a client journals a run's finished units
    (see the module's docstring). ``identity`` (JSON) is what the run is;
    ``units`` how many units it was split into. A fresh journal
    (``resume=False``) replaces what is there; ``resume=True`` keeps the
    finished units of the same run and refuses a journal holding another
    run's finished units (one holding none, the log of a finished run, is
    started afresh). ``save(folder, unit, result)`` and ``load(folder,
    unit)`` (None when not there) write and read a unit's result, by
    default :func:`save_arrays` and :func:`load_arrays`; results are never
    unpickled."""

    def __init__(self, folder: str | os.PathLike, identity: dict, units: int, *, resume: bool,
                 save: Callable[[Path, int, Any], None] = save_arrays,
                 load: Callable[[Path, int], Any] = load_arrays):
        self.folder = check_output_folder(folder, "journal")  # claimed: two clients on one journal are refused
        self.header = json.loads(json.dumps({"format": JOURNAL_FORMAT, "identity": identity, "units": int(units)},
                                            default=str))
        self.save, self.load = save, load
        header_path = self.folder / "header.json"
        if resume and self._unit_files():
            if self.read_header(self.folder) != self.header:
                raise ValueError(f"resume: the journal {str(self.folder)!r} holds units of another run (its header "
                                 "differs: another grid, seeds, settings or split); resume that run, or start "
                                 "this one without resume")
        else:
            for path in self._unit_files():
                path.unlink()
            (self.folder / "events.jsonl").unlink(missing_ok=True)
            atomic_write(header_path, lambda fh: fh.write(json.dumps(self.header).encode()))
        self.event({"event": "session", "pid": os.getpid(), "resume": bool(resume)})

    @staticmethod
    def read_header(folder: str | os.PathLike) -> dict | None:
        """The header of the journal in ``folder``, or None."""
        try:
            return json.loads((Path(folder) / "header.json").read_text())
        except (OSError, ValueError):
            return None

    @staticmethod
    def units_of(folder: str | os.PathLike, identity: dict) -> int | None:
        """The split of the journal in ``folder`` when it is ``identity``'s, else None."""
        header = UnitJournal.read_header(folder)
        if not isinstance(header, dict) or header.get("identity") != json.loads(json.dumps(identity, default=str)):
            return None
        return int(header["units"]) if isinstance(header.get("units"), int) else None

    def _unit_files(self) -> list[Path]:
        return [p for p in self.folder.glob("unit*") if p.is_file()]

    def finished(self) -> dict[int, Any]:
        """The results of the units finished before, by unit."""
        found = {}
        for k in range(self.header["units"]):
            result = self.load(self.folder, k)
            if result is not None:
                found[k] = result
        return found

    def record(self, unit: int, result: Any, info: dict) -> None:
        """Journal ``unit``'s result (atomically), then its ``"done"`` event."""
        self.save(self.folder, unit, result)
        self.event({"event": "done", "unit": unit, **info})

    def event(self, event: dict) -> None:
        """Append one line to ``events.jsonl`` (one write of one whole line)."""
        line = json.dumps({"time": time.time(), **event}, default=str) + "\n"
        with open(self.folder / "events.jsonl", "a") as fh:
            fh.write(line)

    def events(self) -> list[dict]:
        """Every event so far, oldest first."""
        path = self.folder / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def remove(self) -> None:
        """Remove the unit files once the run's result is written (the header and events stay as its log)."""
        for path in self._unit_files():
            path.unlink()


def unit_entry(run: str, unit: int, total: int, slots: dict[str, int], ckpt: str | os.PathLike | None,
               work: Callable, args: tuple, kwargs: dict) -> tuple[int, bool, Any]:
    """One unit on a Dask worker: ``work(*args, callback=report, **kwargs)``
    with the torch threads of its share of the host; ``(unit, True,
    result)`` or ``(unit, False, (error, traceback text))``. ``report``
    logs the unit's step in the scheduler's event log (at most every
    :data:`REPORT_EVERY` s) and raises KeyboardInterrupt once the run's stop
    event is set. A unit whose checkpoint ``ckpt`` exists continues from it
    (``resume=True``): the client removed the checkpoints of earlier runs, so
    one found here is this unit's own, from an attempt on a worker that died
    (or from the session of a client that was killed)."""
    import dask.distributed as dd

    worker = dd.get_worker()
    host = worker.address.split("://", 1)[-1].rsplit(":", 1)[0]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cpus // max(1, slots.get(host, worker.state.nthreads)))
    resumed = ckpt is not None and Path(ckpt).exists()
    if resumed:
        kwargs = {**kwargs, "resume": True}
    worker.log_event(EVENTS_TOPIC, {"run": run, "event": "start", "unit": unit, "worker": worker.address,
                                    "resumed": bool(resumed), "threads": threads})
    stop = dd.Event(f"{run}-stop")
    sent, checked = [-math.inf], [time.monotonic()]

    def report(done: int, steps: int) -> None:
        now = time.monotonic()
        if done >= steps or now - sent[0] >= REPORT_EVERY:
            sent[0] = now
            worker.log_event(EVENTS_TOPIC, {"run": run, "event": "progress", "unit": unit, "done": int(done)})
        if now - checked[0] >= STOP_CHECK:
            checked[0] = now
            if stop.is_set():
                raise KeyboardInterrupt("the work was interrupted")

    try:
        with torch_threads(threads):
            result = work(*args, callback=report, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - returned, so that the client decides (and gives a grace)
        return unit, False, travelling_error(exc)
    return unit, True, result


def run_units(client: Any, work: Callable, units: Sequence[tuple[tuple, dict]], total: int, *,
              callback: Callable[[int, int], None] | None = None, journal: UnitJournal | None = None,
              checkpoints: Sequence[str | os.PathLike | None] | None = None) -> list[Any]:
    """``work(*args, callback=..., **kwargs)`` for every ``(args, kwargs)``
    of ``units``, each a task on ``client``'s cluster; the results in the
    order of ``units``. Units in ``journal`` (finished before) are not
    submitted; each result is journaled as it arrives. ``checkpoints``:
    each unit's checkpoint file, from which a unit run again continues
    (:func:`unit_entry`). ``callback(done, total)`` gets the slowest unit's
    step (``total``: the steps of a unit). On an error in a unit, or a
    Ctrl-C, the other units are asked to stop and get :data:`GRACE` seconds
    to write their checkpoints (those that finish meanwhile are journaled),
    then are cancelled."""
    dd = _dask()
    run = f"embdyn-{uuid.uuid4().hex}"
    results = journal.finished() if journal is not None else {}
    checkpoints = list(checkpoints) if checkpoints is not None else [None] * len(units)
    follow = _Follow(client, run, journal, {k: total for k in results}, len(units), total, callback)
    with client.as_current():  # dask's wait and events find this client, also when it is not the default
        slots = cluster_slots(client)
        try:
            for k, (args, kwargs) in enumerate(units):
                if k not in results:
                    future = client.submit(unit_entry, run, k, total, slots, checkpoints[k], work, args, kwargs,
                                           pure=False, key=f"{run}-unit{k}")
                    follow.remaining[future] = k
            follow.until_done(dd, results)
        except BaseException:
            _stop_units(dd, client, run, follow, results)
            raise
    return [results[k] for k in range(len(units))]


def _stop_units(dd, client: Any, run: str, follow: "_Follow", results: dict) -> None:
    """Ask the running units to stop, give them :data:`GRACE` seconds, journal those that
    finished well, cancel the rest; each step runs even when an earlier one fails."""
    pending = list(follow.remaining)
    try:
        dd.Event(f"{run}-stop", client=client).set()
        if pending:
            dd.wait(pending, timeout=GRACE)  # the units write their checkpoints at their last whole step
    except Exception:  # noqa: BLE001 - a lost scheduler or a timeout: the units are cancelled below
        pass
    finally:
        try:
            follow.collect([f for f in pending if f.done()], results, raise_errors=False)
        finally:
            client.cancel(pending)


class _Follow:
    """The client's side of a run: its unfinished futures, each unit's step,
    the start events already in the journal."""

    def __init__(self, client: Any, run: str, journal: UnitJournal | None, done: dict, n: int, total: int,
                 callback: Callable[[int, int], None] | None):
        self.client, self.run, self.journal, self.done, self.n, self.total = client, run, journal, done, n, total
        self.callback, self.remaining, self.copied = callback, {}, set()
        self.reported = min(done.values()) if len(done) == n else 0
        self.started = time.monotonic()

    def until_done(self, dd, results: dict) -> None:
        """Collect the results as they finish and follow the events, until every unit is in."""
        while self.remaining:
            try:
                finished, _ = dd.wait(list(self.remaining), timeout=REPORT_EVERY, return_when="FIRST_COMPLETED")
            except TimeoutError:  # none finished within REPORT_EVERY
                finished = []
            self.events()
            self.collect(finished, results, raise_errors=True)
            if self.callback is not None and len(self.done) == self.n and min(self.done.values()) > self.reported:
                self.reported = min(self.done.values())
                self.callback(self.reported, self.total)
        self.events()

    def collect(self, finished: list, results: dict, raise_errors: bool) -> None:
        """Journal every unit of ``finished`` that ended well; then raise the
        first error among them (when ``raise_errors``)."""
        from .processes import RemoteTraceback

        errors = []
        for future in finished:
            k = self.remaining.pop(future, None)
            if k is None:
                continue
            try:
                unit, ok, value = future.result()
            except Exception as exc:  # noqa: BLE001 - a cancelled or lost task (KilledWorker)
                errors.append((exc, None))
                continue
            if not ok:
                errors.append(value)
                continue
            results[k] = value
            self.done[k] = self.total
            if self.journal is not None:
                self.journal.record(k, value, {"seconds": round(time.monotonic() - self.started, 3)})
        if errors and raise_errors:
            error, text = errors[0]
            if text is not None:
                raise error from RemoteTraceback(text)
            raise error

    def events(self) -> None:
        """The units' steps from the scheduler's event log, and the new start events into the journal
        (copied at every poll: the log keeps the last ``distributed.admin.low-level-log-length``)."""
        for stamp, message in _run_events(self.client, self.run, stamped=True):
            unit = message.get("unit")
            if message.get("event") == "progress" and unit in self.remaining.values():
                self.done[unit] = max(self.done.get(unit, 0), int(message["done"]))
            elif message.get("event") == "start" and self.journal is not None:
                key = (stamp, unit, message.get("worker"))
                if key not in self.copied:
                    self.copied.add(key)
                    self.journal.event({**{k: v for k, v in message.items() if k != "run"}, "time": stamp})


def _run_events(client: Any, run: str, stamped: bool = False) -> list:
    """This run's messages in the scheduler's event log (with their time when ``stamped``)."""
    try:
        events = client.get_events(EVENTS_TOPIC)
    except Exception:  # noqa: BLE001 - the log is a record and a progress report; its absence fails nothing
        return []
    return [(stamp, message) if stamped else message for stamp, message in events
            if isinstance(message, dict) and message.get("run") == run]
