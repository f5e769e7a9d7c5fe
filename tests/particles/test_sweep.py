"""Sweeps (particles.sweep): journals that resume a killed sweep, shards
that merge into one sweep, the joblib backend taken from parallel_config,
the CLI's shard/merge commands, and the table of results."""
import json

import joblib
import numpy as np
import pytest
from joblib._parallel_backends import SequentialBackend

from particles import preset
from particles.cli import main
from particles.sweep import JournalError, merge_journals, parse_shard, read_journal, sweep

BASE = preset("grids").replace(steps=60)
GRID = {"lam": [0.0, 0.5], "wd": [1.0, 4.0]}


def _same(a, b):
    assert a.parameters == b.parameters and len(a) == len(b)
    for ra, rb in zip(a.rows, b.rows):
        assert ra.keys() == rb.keys()
        for k in ra:
            if isinstance(ra[k], float) and np.isnan(ra[k]):
                assert np.isnan(rb[k])
            else:
                assert ra[k] == rb[k], k


@pytest.fixture(scope="module")
def full():
    return sweep(GRID, 2, base=BASE, n_jobs=1)


class Stop(Exception):
    pass


def test_killed_sweep_resumes_from_its_journal(tmp_path, full):
    journal = tmp_path / "j.jsonl"

    def kill_after_three(done, total):
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        sweep(GRID, 2, base=BASE, n_jobs=1, journal=journal, callback=kill_after_three)
    _, rows = read_journal(journal)
    assert len(rows) == 3
    with open(journal, "ab") as fh:  # a record cut short by the kill
        fh.write(b'{"row": {"lam": 0.5, "se')
    calls = []
    table = sweep(GRID, 2, base=BASE, n_jobs=1, journal=journal, callback=lambda d, t: calls.append(d))
    assert calls[0] == 3 and calls[-1] == 8  # the three journal runs count as done, five more ran
    _same(table, full)
    _, rows = read_journal(journal)
    assert len(rows) == 8
    again = sweep(GRID, 2, base=BASE, n_jobs=1, journal=journal, callback=lambda d, t: calls.append(("x", d)))
    assert calls[-1] == ("x", 8) and len(calls) == len([c for c in calls if c != ("x", 8)]) + 1  # nothing re-ran
    _same(again, full)


def test_journal_of_another_sweep_or_damaged_is_refused(tmp_path):
    journal = tmp_path / "j.jsonl"
    sweep({"lam": [0.0]}, 1, base=BASE, n_jobs=1, journal=journal)
    with pytest.raises(JournalError, match="belongs to another sweep"):
        sweep({"lam": [0.5]}, 1, base=BASE, n_jobs=1, journal=journal)
    lines = journal.read_text().splitlines()
    journal.write_text(lines[0] + "\n" + "{not json}\n" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(JournalError, match="line 2: damaged record"):
        read_journal(journal)
    other = tmp_path / "x.jsonl"
    other.write_text('{"format": "something else"}\n')
    with pytest.raises(JournalError, match="line 1: not a sweep journal"):
        read_journal(other)


def test_shards_merge_into_the_whole_sweep(tmp_path, full):
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"s{i}.jsonl")
        part = sweep(GRID, 2, base=BASE, n_jobs=1, journal=paths[-1], shard=f"{i}/3")
        assert len(part) == len(range(i, 8, 3))
    _same(merge_journals(paths), full)
    with pytest.raises(JournalError, match="2 of 8 runs are missing"):
        merge_journals(paths[:2])
    with pytest.raises(JournalError, match="appears twice"):
        merge_journals(paths + paths[:1])


@pytest.mark.parametrize("shard, err", [("3/3", ValueError), ("1-2", ValueError), ((0, 0), ValueError),
                                        ((0.5, 2), TypeError), (5, TypeError)])
def test_bad_shards(shard, err):
    with pytest.raises(err, match="shard"):
        parse_shard(shard)


class CountingBackend(SequentialBackend):
    used = 0

    def configure(self, *args, **kwargs):
        CountingBackend.used += 1
        return super().configure(*args, **kwargs)


def test_backend_comes_from_parallel_config(full):
    joblib.register_parallel_backend("counting", CountingBackend)
    with joblib.parallel_config(backend="counting"):
        table = sweep(GRID, 2, base=BASE)
    assert CountingBackend.used >= 1
    _same(table, full)
    with joblib.parallel_config(backend="threading", n_jobs=2):
        _same(sweep(GRID, 2, base=BASE), full)


def test_bad_n_jobs_and_backend():
    with pytest.raises(ValueError, match="n_jobs must be"):
        sweep(GRID, 1, base=BASE, n_jobs=0)
    with pytest.raises(TypeError, match="backend must be"):
        sweep(GRID, 1, base=BASE, backend=3)


def test_cli_shards_and_merge(tmp_path, capsys):
    args = ["sweep", "--preset", "grids", "--grid", "lam=0,0.5", "--grid", "wd=1,4", "--set", "steps=60",
            "--seeds", "2", "--quiet", "--jobs", "1", "--out", str(tmp_path / "shards")]
    for i in range(2):
        assert main(args + ["--shard", f"{i}/2"]) == 0
    journals = sorted(str(p) for p in (tmp_path / "shards").glob("sweep.shard-*-of-2.jsonl"))
    assert len(journals) == 2
    assert main(["sweep", "merge", *journals, "--out", str(tmp_path / "merged")]) == 0
    assert main(args[:-1] + [str(tmp_path / "whole")]) == 0
    merged = (tmp_path / "merged" / "sweep.csv").read_text()
    assert merged == (tmp_path / "whole" / "sweep.csv").read_text()
    assert (tmp_path / "merged" / "phase_diagram.png").stat().st_size > 0
    capsys.readouterr()
    assert main(["sweep", "merge", journals[0], "--out", str(tmp_path / "m2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "runs are missing" in err[0]
    assert main(args + ["--shard", "2/2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "0 <= i < n" in err[0]
    assert main(["sweep", "merge", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "m3")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_journal_records_are_one_json_object_per_line(tmp_path):
    journal = tmp_path / "j.jsonl"
    sweep({"lam": [0.0, 3.0]}, 1, base=BASE, n_jobs=1, journal=journal)
    lines = journal.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["grid"] == [{"lam": 0.0}, {"lam": 3.0}] and header["seeds"] == [0]
    assert all("row" in json.loads(line) for line in lines[1:])


def test_numpy_grid_values_resume_and_a_header_only_journal_restarts(tmp_path):
    journal = tmp_path / "j.jsonl"
    grid = {"lam": list(np.array([0.0, 0.5])), "wd": list(np.array([1, 4]))}  # NumPy scalars

    def kill_after_one(done, total):
        if done == 1:
            raise Stop

    with pytest.raises(Stop):
        sweep(grid, 1, base=BASE, n_jobs=1, journal=journal, callback=kill_after_one)
    table = sweep(grid, 1, base=BASE, n_jobs=1, journal=journal)  # resumes (no "another sweep")
    _same(table, sweep({"lam": [0.0, 0.5], "wd": [1, 4]}, 1, base=BASE, n_jobs=1))
    empty = tmp_path / "e.jsonl"
    with pytest.raises(ValueError):  # fails before any run finishes: only the header is written
        sweep({"lam": [0.0]}, 1, base=BASE.replace(dt=-1.0), n_jobs=1, journal=empty)
    assert len(sweep({"lam": [0.0]}, 1, base=BASE, n_jobs=1, journal=empty)) == 1


def test_shard_journal_is_not_reused_by_another_shard(tmp_path):
    journal = tmp_path / "j.jsonl"
    sweep(GRID, 1, base=BASE, n_jobs=1, journal=journal, shard="0/2")
    with pytest.raises(JournalError, match="another sweep"):
        sweep(GRID, 1, base=BASE, n_jobs=1, journal=journal, shard="1/2")


def test_sweep_table():
    table = sweep({"lam": [0.0, 1.0], "steps": [100]}, seeds=2, base="grids", n_jobs=1)
    assert len(table) == 4
    assert table.parameters == ["lam", "steps"]
    assert sorted(table.column("seed")) == [0, 0, 1, 1]
    rates = table.rates()
    assert set(rates) == {(0.0, 100), (1.0, 100)}
    for shares in rates.values():
        assert sum(shares.values()) == pytest.approx(1.0)


def test_sweep_parallel_equals_serial():
    grid = [{"wd": 0.1}, {"wd": 0.3}]
    a = sweep(grid, [0, 1], base=preset("circles").replace(steps=200), n_jobs=2)
    b = sweep(grid, [0, 1], base=preset("circles").replace(steps=200), n_jobs=1)
    assert [r["circularity"] for r in a] == [r["circularity"] for r in b]


def test_sweep_validates_before_work():
    with pytest.raises(ValueError, match="unknown preset or force parameter"):
        sweep({"nonsense": [1]}, seeds=1)
    with pytest.raises(ValueError, match="seeds"):
        sweep({"lam": [1.0]}, seeds=[])


def test_sweep_table_csv_round_trip(tmp_path):
    from particles import SweepTable
    table = sweep({"lam": [0.0, 0.5]}, seeds=1, base=preset("grids").replace(steps=50), n_jobs=1)
    back = SweepTable.from_csv(table.to_csv(tmp_path / "t.csv"))
    assert back.parameters == ["lam"]
    assert back.rates() == table.rates()
    assert list(back.column("circularity")) == pytest.approx(list(table.column("circularity")))


def test_sweep_table_with_a_diverged_first_run_writes_csv(tmp_path):
    base = preset("circles").replace(dt=50.0, steps=400, record_every=10)  # x grows 14-fold a step
    table = sweep([{"lam": 3.0}], [0], base=base, n_jobs=1)
    assert table.column("structure")[0] == "diverged"
    text = table.to_csv(tmp_path / "s.csv").read_text()
    assert "line_ratio" in text.splitlines()[0]


@pytest.mark.parametrize("bad, err", [("5", TypeError), (2.5, TypeError), ([1, "2"], TypeError), (True, TypeError)])
def test_sweep_seeds_checked(bad, err):
    from particles import sweep
    with pytest.raises(err, match="seeds"):
        sweep({"wd": [0.1]}, bad, base="grids")


def test_sweep_table_from_csv_refuses_a_file_descriptor():
    from particles.sweep import SweepTable
    with pytest.raises(TypeError, match="path"):
        SweepTable.from_csv(3)


def test_sweep_table_prints_readably():
    from particles.sweep import SweepTable

    rows = [dict(lam=lam, seed=s, circularity=0.5 + s / 100, structure="circle" if s % 2 else "grid")
            for lam in (1, 3) for s in range(10)]
    text = repr(SweepTable(rows, ["lam"]))
    lines = text.splitlines()
    assert lines[0] == "SweepTable: 20 runs, parameters lam"
    assert "  lam=1: circle 0.50, grid 0.50" in lines
    assert len(lines) <= 20 and all(len(line) < 120 for line in lines)
    assert any(line.split()[:2] == ["...", "..."] for line in lines)  # 20 rows: the middle is cut
    assert repr(SweepTable()) == "SweepTable: 0 runs, parameters (none)"


# --- issue 69 (part): counts are bounded by a memory budget, checked before anything is expanded -----------

def _peak_while(fn):
    """The peak of Python allocations while ``fn()`` runs (it must raise ValueError), and the error."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            fn()
        return tracemalloc.get_traced_memory()[1], str(info.value)
    finally:
        tracemalloc.stop()


def test_sweep_counts_over_the_memory_budget_are_refused_before_any_allocation():
    peak, message = _peak_while(lambda: sweep({"lam": [0.0, 1.0]}, 10**12, base=BASE))
    assert peak < 10 * 2**20
    assert message.startswith("seeds 1000000000000 x 2 grid points = 2000000000000 runs would hold about ")
    assert "over the budget of" in message and "and more than this machine's" in message and "shard" in message
    # a Cartesian product too large is refused before it is expanded
    peak, message = _peak_while(lambda: sweep({"lam": range(10**6), "wd": range(10**6)}, 1, base=BASE))
    assert peak < 10 * 2**20 and "seeds 1 x 1000000000000 grid points" in message


def test_the_memory_budget_comes_from_the_environment(monkeypatch):
    from particles.sweep import SWEEP_RUN_BYTES, SWEEP_TASK_BYTES, check_sweep_size

    monkeypatch.setenv("EMBDYN_MEMORY_BUDGET", "1MiB")
    runs = 2**20 // (SWEEP_RUN_BYTES + SWEEP_TASK_BYTES)
    assert check_sweep_size({"lam": [0.0]}, runs) == runs
    with pytest.raises(ValueError, match=r"budget of 1 MiB \(EMBDYN_MEMORY_BUDGET=1MiB\); .* raise the budget .*"
                                         r"EMBDYN_MEMORY_BUDGET=1GiB\)$"):
        check_sweep_size({"lam": [0.0]}, runs + 1)
    # shards keep only their own rows
    assert check_sweep_size({"lam": [0.0]}, 4 * runs, shard="0/8") == 4 * runs
    monkeypatch.setenv("EMBDYN_MEMORY_BUDGET", "lots")
    with pytest.raises(ValueError, match="EMBDYN_MEMORY_BUDGET must be a size"):
        check_sweep_size({"lam": [0.0]}, 1)


def test_cli_sweep_with_too_many_seeds_is_one_line_exit_2_before_any_output(tmp_path, capsys):
    for argv in (["--seeds", "1000000000000", "--grid", "lam=0,1"], ["--seeds", "100000000", "--grid", "lam=0,1"]):
        assert main(["sweep", *argv, "--out", str(tmp_path / "o"), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1
        assert err.startswith("embdyn sweep: --seeds ") and "x 2 --grid points" in err and "over the budget of" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("grid, kind, message", [
    (None, TypeError, "grid must be a dict of value lists or a list of dicts, got None"),
    ([None], TypeError, "grid must be a dict of value lists or a list of dicts of parameter name -> value, got None "
                        "at index 0"),
    ([{"lam": 1.0}, 5], TypeError, "grid must be .* got 5 at index 1"),
    ({3: [1.0]}, TypeError, "grid must be keyed by parameter names \\(str\\), got the key 3"),
    ([{"lam": "x"}], TypeError, "grid point 0 \\(\\{'lam': 'x'\\}\\): ForceParams.lam must be a real number"),
    ([{"wd": 0.1}, {"nonsense": 1}], ValueError, "grid point 1 .*unknown preset or force parameter"),
])
def test_sweep_names_grid_for_every_bad_shape(grid, kind, message):
    with pytest.raises(kind, match=message):
        sweep(grid, seeds=1, n_jobs=1)
