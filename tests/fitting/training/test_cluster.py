"""Training on a Dask cluster (the [cluster] and [torch] extras): a grid and a
seed batch on a LocalCluster of 2 workers give a local run's records bit for
bit; a worker killed mid-unit has its unit redone from its checkpoint; a
client killed mid-grid resumes and redoes only the unfinished units; the
journal shows each unit done once; bad schedulers and foreign journals are
refused before any work."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

if not os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extras: never skip
    pytest.importorskip("torch", reason="needs the [torch] extra")
if os.environ.get("EMBDYN_REQUIRE_DASK"):  # the CI step that installed the extra: never skip
    import dask.distributed as dd
else:
    dd = pytest.importorskip("dask.distributed", reason="needs the [cluster] extra")

from fitting.training import ToyConfig, config_for, train_batched, train_grid  # noqa: E402
from fitting.training.cluster import EVENTS_TOPIC, UnitJournal, check_scheduler, cluster_client  # noqa: E402

TOY = ToyConfig(p=6, d=2, hidden=16, task="regression", group="addition", target_dim=4, embedding_lr=1e-2,
                decoder_lr=1e-2, steps=120, dtype="float64")
GRID = {"decoder_lr": [1e-3, 1e-2], "decoder_weight_decay": [0.0, 1.0]}
SURVIVAL = config_for("survival-mlp", p=13, d=8, hidden=16, steps=20, snapshot_every=5)


@pytest.fixture
def client():
    with dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            dd.Client(cluster) as c:
        yield c


def _text(result) -> str:
    return json.dumps(result.records, sort_keys=True)


def _events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def test_grid_on_a_cluster_equals_local_and_journals_each_unit_once(client, tmp_path):
    local = train_grid(TOY, GRID, seeds=[0, 1], compile="never")
    out = tmp_path / "grid.json"
    remote = train_grid(TOY, GRID, seeds=[0, 1], compile="never", scheduler=client, n_jobs=3, out=out)
    assert _text(remote) == _text(local)
    assert json.loads(out.read_text())["records"] == remote.records
    events = _events(tmp_path / "grid.units")
    assert sorted(e["unit"] for e in events if e["event"] == "done") == [0, 1, 2]
    assert sorted(e["unit"] for e in events if e["event"] == "start") == [0, 1, 2]
    assert not list((tmp_path / "grid.units").glob("unit*.pkl"))  # removed once the result is written


def test_joblib_dask_backend_is_the_same_choice(client):
    import joblib

    local = train_grid(TOY, GRID, compile="never")
    with joblib.parallel_config(backend="dask"):
        remote = train_grid(TOY, GRID, compile="never")
    assert _text(remote) == _text(local)
    assert remote.meta["n_jobs"] == 2  # one unit per worker thread


def test_seed_batch_on_a_cluster_equals_local(client, tmp_path):
    local = train_batched(SURVIVAL, [0, 1, 2])
    remote = train_batched(SURVIVAL, [0, 1, 2], tmp_path, scheduler=client)
    for a, b in zip(local, remote):
        assert a.meta["seed"] == b.meta["seed"]
        np.testing.assert_array_equal(a.embeddings, b.embeddings)
    for seed in (0, 1, 2):
        assert (tmp_path / f"survival-mlp_seed{seed}.npz").is_file()
    journal = next(tmp_path.glob("*.units"))
    assert sorted(e["unit"] for e in _events(journal) if e["event"] == "done") == [0, 1]


def _kill_the_worker_of_a_running_unit(client, killed: list) -> None:
    deadline = time.monotonic() + 120
    while not killed and time.monotonic() < deadline:
        time.sleep(0.1)
        events = [m for _, m in client.get_events(EVENTS_TOPIC) if isinstance(m, dict)]
        starts = {m["unit"]: m["worker"] for m in events if m.get("event") == "start"}
        for m in events:
            if m.get("event") == "progress" and m["done"] >= 40 and m["unit"] in starts:
                pid = client.run(os.getpid, workers=[starts[m["unit"]]])[starts[m["unit"]]]
                os.kill(pid, signal.SIGKILL)
                killed.append(m["unit"])
                return


def test_a_killed_worker_has_its_unit_redone_from_its_checkpoint(tmp_path):
    cfg = TOY.replace(steps=600)
    local = train_grid(cfg, GRID, compile="never")
    killed: list = []
    with dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            dd.Client(cluster) as client:
        killer = threading.Thread(target=_kill_the_worker_of_a_running_unit, args=(client, killed), daemon=True)
        killer.start()
        remote = train_grid(cfg, GRID, compile="never", scheduler=client, n_jobs=2, out=tmp_path / "g.json",
                            checkpoint_every=20)
        killer.join(timeout=5)
    assert killed, "no worker was killed (the units ended before 40 steps were reported)"
    assert _text(remote) == _text(local)
    events = _events(tmp_path / "g.units")
    unit = killed[0]
    starts = [e for e in events if e["event"] == "start" and e["unit"] == unit]
    assert len(starts) == 2 and starts[1]["resumed"]  # again, from its checkpoint
    assert [e["unit"] for e in events if e["event"] == "done"].count(unit) == 1


CHILD = """
import sys
from fitting.training import ToyConfig, train_grid
if __name__ == "__main__":
    cfg = ToyConfig(p=6, d=2, hidden=16, task="regression", group="addition", target_dim=4, embedding_lr=1e-2,
                    decoder_lr=1e-2, steps=int(sys.argv[2]), dtype="float64")
    grid = {"decoder_lr": [1e-3, 1e-2], "decoder_weight_decay": [0.0, 1.0]}
    train_grid(cfg, grid, compile="never", scheduler="local:1", n_jobs=4, out=sys.argv[1], checkpoint_every=10)
"""


def test_a_killed_client_resumes_and_redoes_only_unfinished_units(tmp_path):
    steps = 400
    cfg = TOY.replace(steps=steps)
    out = tmp_path / "grid.json"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen([sys.executable, str(script), str(out), str(steps)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    journal = tmp_path / "grid.units"
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        if (journal / "events.jsonl").exists() and any(e["event"] == "done" for e in _events(journal)):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    before = {e["unit"] for e in _events(journal) if e["event"] == "done"}
    assert before and len(before) < 4, f"the client was not killed mid-grid (units done: {sorted(before)})"
    time.sleep(1.0)
    with cluster_client("local:1") as client:
        remote = train_grid(cfg, GRID, compile="never", scheduler=client, n_jobs=4, out=out, checkpoint_every=10,
                            resume=True)
    assert _text(remote) == _text(train_grid(cfg, GRID, compile="never"))
    events = _events(journal)
    second = events[max(i for i, e in enumerate(events) if e["event"] == "session"):]
    assert not [e for e in second if e["event"] == "start" and e["unit"] in before]  # finished units not redone
    done = [e["unit"] for e in events if e["event"] == "done"]
    assert sorted(done) == [0, 1, 2, 3]  # each once, none lost


def test_a_journal_holding_units_of_another_grid_is_refused_and_an_empty_one_restarts(tmp_path):
    journal = UnitJournal(tmp_path / "j", {"grid": 1}, 2, resume=False)
    journal.record(0, {"steps": np.arange(3), "seconds": 1.5}, {})
    assert UnitJournal(tmp_path / "j", {"grid": 1}, 2, resume=True).finished()[0]["seconds"] == 1.5
    with pytest.raises(ValueError, match="holds units of another run"):
        UnitJournal(tmp_path / "j", {"grid": 2}, 2, resume=True)
    journal.remove()  # a finished run's log: another grid starts afresh there
    assert UnitJournal(tmp_path / "j", {"grid": 2}, 2, resume=True).finished() == {}


def test_a_scheduler_address_without_a_default_client_and_a_one_unit_resume(tmp_path):
    """An address is connected to without becoming dask's default client;
    a one-unit grid's checkpoint is the local run's (same file, same identity)."""
    local = train_grid(TOY, GRID, compile="never", out=tmp_path / "local.json", checkpoint_every=40)
    with pytest.raises(ValueError, match="No clients found"):
        dd.default_client()
    with dd.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        remote = train_grid(TOY, GRID, compile="never", scheduler=cluster.scheduler_address, n_jobs=1,
                            out=tmp_path / "g.json", checkpoint_every=40)
        assert _text(remote) == _text(local)
        again = train_grid(TOY, GRID, compile="never", scheduler=cluster.scheduler_address,
                           out=tmp_path / "g.json", checkpoint_every=40, resume=True)
        assert _text(again) == _text(local)


def test_two_clients_on_one_journal_are_refused(tmp_path):
    code = ("import sys, time; from fitting.training.cluster import UnitJournal; "
            "UnitJournal(sys.argv[1], {'grid': 1}, 2, resume=False); print('held', flush=True); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "j")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match="being written by process"):
            UnitJournal(tmp_path / "j", {"grid": 1}, 2, resume=True)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("bad, kind, match", [
    ("local:0", ValueError, "N >= 1"), ("local:x", ValueError, "N >= 1"), ("nohost", ValueError, "port"),
    (3, TypeError, "scheduler must be"), ("", TypeError, "scheduler must be")])
def test_bad_schedulers_are_refused(bad, kind, match):
    with pytest.raises(kind, match=match):
        check_scheduler(bad)
    with pytest.raises(kind, match=match):
        train_grid(TOY, GRID, scheduler=bad)


def test_a_scheduler_that_does_not_answer_is_refused_in_one_line():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(ValueError, match=f"no Dask scheduler answered at 'tcp://127.0.0.1:{port}'"):
        train_grid(TOY, GRID, scheduler=f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - start < 30


def test_unit_count_on_a_cluster_is_checked_against_the_cells():
    with pytest.raises(ValueError, match=r"n_jobs must be None or an int in \[1, 4\] \(at most one unit per cell"):
        train_grid(TOY, GRID, scheduler="local:1", n_jobs=5)


def test_network_sweep_in_groups_locally_and_on_a_cluster(client):
    """The same split gives the same bits locally and on a cluster; a split
    of the stack agrees with one stack to float rounding (the stacked
    AdamW's vectorised loop rounds a run's slice by where it lies)."""
    from fitting.training import ConstantAttentionConfig, train_network_sweep

    cfg = ConstantAttentionConfig(p=11, hidden=16)
    args = dict(max_steps=300, check_every=50, window=100)
    one = train_network_sweep(cfg, [0.0, 1.0], [0, 1, 2], **args)
    local = train_network_sweep(cfg, [0.0, 1.0], [0, 1, 2], n_jobs=2, **args)
    remote = train_network_sweep(cfg, [0.0, 1.0], [0, 1, 2], scheduler=client, **args)
    assert json.dumps(remote.records) == json.dumps(local.records)
    assert remote.meta["n_jobs"] == 2 and local.meta["seeds"] == [0, 1, 2]
    assert [(r["weight_decay"], r["seed"], r["steps_run"], r["val_acc"]) for r in local.records] == \
        [(r["weight_decay"], r["seed"], r["steps_run"], r["val_acc"]) for r in one.records]
    np.testing.assert_allclose(local.embeddings(), one.embeddings(), rtol=0, atol=1e-12)
