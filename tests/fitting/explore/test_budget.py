"""Issue 69, item 2: one memory budget per server, shared by its runs and the work of its requests;
every request that computes reserves its estimate before it starts and returns it when it ends."""

import numpy as np
import pytest
from starlette.testclient import TestClient

import particles as pt
from fitting.signals import memory
from fitting.explore import make_app
from fitting.explore.budget import MemoryLedger, OverBudget


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("budget")
    run = pt.preset("circles").replace(p=11, steps=400, record_every=20).run(seed=1)
    run.save(folder / "circles.npz")
    return folder / "circles.npz"


def test_ledger_refuses_what_does_not_fit_and_gives_back_what_ends():
    held = {"bytes": 300}
    ledger = MemoryLedger(1000, held=lambda: held["bytes"])
    with ledger.reserve(500, "a"):
        assert ledger.reserved == 500
        with pytest.raises(OverBudget) as busy:  # fits an idle server, not now
            with ledger.reserve(400, "the second request"):
                pass
        assert busy.value.status == 503 and "try again" in str(busy.value)
    assert ledger.reserved == 0
    with pytest.raises(OverBudget) as large:  # never fits next to the kept runs
        with ledger.reserve(701, "this summary"):
            pass
    assert large.value.status == 413 and "this summary" in str(large.value) and "EMBDYN_MEMORY_BUDGET" in str(large.value)
    release = ledger.hold(700, "metrics")
    assert ledger.reserved == 700
    release()
    release()  # a second call gives nothing back twice
    assert ledger.reserved == 0


def test_a_failing_request_returns_its_reservation():
    ledger = MemoryLedger(1000)
    with pytest.raises(RuntimeError):
        with ledger.reserve(600, "a fit"):
            raise RuntimeError("the fit failed")
    assert ledger.reserved == 0


def test_server_refuses_work_over_its_budget_before_it_starts(run_file):
    """A budget smaller than a summary's estimate: 413 with the estimate and the budget, and nothing computed."""
    traj = pt.Trajectory.load(run_file)
    need = memory.signals_bytes(traj) + memory.BASE
    app = make_app([run_file], [], memory_budget=traj.nbytes + need // 2)
    with TestClient(app, base_url="http://127.0.0.1:8050") as c:
        r = c.get("/api/runs/0")
        assert r.status_code == 413, r.text
        assert "budget" in r.json()["error"] and "MiB" in r.json()["error"]
        run = app.state.explorer.runs.get(0)
        assert "signals" not in run.cache  # refused before any work
        assert app.state.explorer.ledger.reserved == 0
        frame = c.get("/api/runs/0/frame?step=0")
        assert frame.status_code == 413


def test_server_work_within_its_budget_is_answered_and_released(run_file):
    app = make_app([run_file], [])
    with TestClient(app, base_url="http://127.0.0.1:8050") as c:
        assert c.get("/api/runs/0").status_code == 200
        assert c.get("/api/runs/0/stages").status_code == 200
        steps = np.asarray(pt.Trajectory.load(run_file).steps)
        r = c.post("/api/runs/0/fit", json={"start": int(steps[0]), "stop": int(steps[-1])})
        assert r.status_code == 200, r.text
        ledger = app.state.explorer.ledger
        assert ledger.reserved == 0
        # the run and its computed views count against the budget while they are kept
        assert ledger.state()["held"] >= pt.Trajectory.load(run_file).nbytes


def test_an_upload_reserves_its_reading(run_file):
    traj = pt.Trajectory.load(run_file)
    app = make_app([], [], memory_budget=traj.nbytes // 2)
    with TestClient(app, base_url="http://127.0.0.1:8050") as c:
        r = c.post("/api/runs?name=big.npz", content=run_file.read_bytes())
        assert r.status_code == 413 and "reading this upload" in r.json()["error"]
        assert list(app.state.explorer.runs.folder.iterdir()) == []  # its file is gone too
