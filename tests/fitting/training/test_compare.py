"""fitting.training: the stacked constant-attention sweep agrees with single
runs; the network-vs-particles comparison and its command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch  # noqa: F401
else:
    pytest.importorskip("torch")

from fitting.training import ConstantAttentionConfig, train  # noqa: E402
from fitting.training.compare import compare_network, structure_summary, total_variation  # noqa: E402
from fitting.training.network_sweep import NetworkSweep, NetworkSweepFormatError, train_network_sweep  # noqa: E402

SMALL = ConstantAttentionConfig(p=7, hidden=16, steps=150)


@pytest.mark.parametrize("embedding_weight_decay", [None, 0.0])
def test_stacked_sweep_matches_single_runs(embedding_weight_decay):
    cfg = SMALL.replace(embedding_weight_decay=embedding_weight_decay)
    result = train_network_sweep(cfg, [0.0, 1.0], [0, 5], max_steps=150, check_every=50, window=10_000)
    assert len(result.records) == 4
    for rec in result.records:
        single = train(cfg.replace(weight_decay=rec["weight_decay"]), rec["seed"])
        np.testing.assert_allclose(np.array(rec["embedding"]), single.embeddings[-1], rtol=0, atol=1e-9)
        assert rec["steps_run"] == 150 and not rec["converged"]


def test_converged_runs_stop_early_and_the_rest_continue():
    result = train_network_sweep(SMALL, [0.0, 1.0], [0, 1, 2], max_steps=3000, check_every=50, window=500)
    steps = [r["steps_run"] for r in result.records]
    assert min(steps) < 3000  # someone converged
    for rec in result.records:
        if rec["converged"]:
            assert rec["steps_run"] >= 500
        single = train(SMALL.replace(weight_decay=rec["weight_decay"], steps=rec["steps_run"]), rec["seed"])
        np.testing.assert_allclose(np.array(rec["embedding"]), single.embeddings[-1], rtol=0, atol=1e-8)


def test_sweep_round_trip_and_damaged_files(tmp_path):
    result = train_network_sweep(SMALL, [0.3], [0], max_steps=20, check_every=10, window=10)
    path = result.save(tmp_path / "net.json")
    back = NetworkSweep.load(path)
    assert back.records == result.records and back.embeddings().shape == (1, 7, 2)
    data = json.loads(path.read_text())
    data["records"][0]["embedding"] = [[1.0, float("nan")]]
    path.write_text(json.dumps(data))
    with pytest.raises(NetworkSweepFormatError, match="embedding"):
        NetworkSweep.load(path)
    del data["records"][0]["val_acc"]
    path.write_text(json.dumps(data))
    with pytest.raises(NetworkSweepFormatError, match="val_acc"):
        NetworkSweep.load(path)
    path.write_text("{not json")
    with pytest.raises(NetworkSweepFormatError):
        NetworkSweep.load(path)


@pytest.mark.parametrize("kwargs, match", [
    (dict(weight_decays=[-1.0]), "weight_decays"), (dict(weight_decays=[]), "weight_decays"),
    (dict(seeds=[0, 0]), "seeds"), (dict(seeds=[-1]), "seeds"), (dict(max_steps=0), "max_steps"),
    (dict(window=10, check_every=50), "window"), (dict(tolerance=-1), "tolerance"),
])
def test_sweep_bad_arguments_name_the_parameter(kwargs, match):
    args = dict(weight_decays=[0.0], seeds=[0], max_steps=10, check_every=5, window=10)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        train_network_sweep(SMALL, **args)


def test_summary_intervals_and_total_variation():
    s = structure_summary(["circle"] * 3 + ["grid"], acc=[0.5, 0.7, 0.9, 1.0])
    assert s["counts"]["circle"] == 3 and s["shares"]["grid"] == 0.25
    lo, hi = s["intervals"]["circle"]
    assert lo < 0.75 < hi and 0 <= lo and hi <= 1
    assert 0 <= s["acc"]["ci"][0] <= s["acc"]["mean"] <= s["acc"]["ci"][1] <= 1
    assert total_variation({"circle": 1.0}, {"grid": 1.0}) == 1.0
    assert total_variation({"circle": 0.5, "grid": 0.5}, {"grid": 0.5, "circle": 0.5}) == 0.0
    with pytest.raises(ValueError, match="structure"):
        structure_summary(["square"])


def test_compare_network_end_to_end(tmp_path):
    cfg = ConstantAttentionConfig(steps=100)
    net = train_network_sweep(cfg, [0.0, 1.0], [0, 1], max_steps=100, check_every=50, window=10_000)
    result = compare_network([0.0, 1.0], [0, 1], network=net)
    assert [r["weight_decay"] for r in result.rows] == [0.0, 1.0]
    for row in result.rows:
        assert row["network"]["n"] == row["particles"]["n"] == 2
        assert 0.0 <= row["tv_distance"] <= 1.0
        assert sum(row["particles"]["counts"].values()) == 2
    assert "TV distance" in result.to_markdown()
    back = type(result).load(result.save(tmp_path / "c.json"))
    assert back.rows == result.rows
    result.plot("t").savefig(tmp_path / "c.png")
    with pytest.raises(ValueError, match="no run"):
        compare_network([0.0, 0.3], [0, 1], network=net)


def test_diverged_network_runs_are_flagged_and_counted():
    cfg = ConstantAttentionConfig(lr=1e37, dtype="float32")  # float32 overflow within a few steps
    net = train_network_sweep(cfg, [0.0], [0, 1], max_steps=200, check_every=10, window=100)
    assert all(r["diverged"] and r["embedding"] is None and not r["converged"] for r in net.records)
    result = compare_network([0.0], [0, 1], network=net)
    assert result.rows[0]["network"]["counts"]["diverged"] == 2


def test_reused_network_must_match_the_preset(tmp_path):
    net = train_network_sweep(SMALL, [0.0], [0], max_steps=10, check_every=5, window=5)
    with pytest.raises(ValueError, match="p = 7"):
        compare_network([0.0], [0], network=net)  # the preset has p = 17


def _damage(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("field, value", [("seed", None), ("seed", -1), ("weight_decay", "x"), ("converged", 1),
                                          ("val_acc", 2.0), ("train_loss", None), ("embedding", [[1.0]])])
def test_wrongly_typed_fields_are_named(tmp_path, field, value):
    result = train_network_sweep(SMALL, [0.3], [0], max_steps=20, check_every=10, window=10)
    path = _damage(result.save(tmp_path / "net.json"), lambda d: d["records"][0].__setitem__(field, value))
    with pytest.raises(NetworkSweepFormatError, match=field):
        NetworkSweep.load(path)


def test_compare_network_command_bad_values_one_line_exit_2(tmp_path, capsys):
    from particles.cli import main

    net = train_network_sweep(SMALL, [0.0], [0], max_steps=10, check_every=5, window=5)
    damaged = _damage(net.save(tmp_path / "net.json"), lambda d: d["records"][0].__setitem__("seed", None))
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    cases = [(["--weight-decays", "0,x"], "--weight-decays"), (["--seeds", "0"], "--seeds"),
             (["--preset", "nope"], "preset"), (["--window", "10"], "--window"),
             (["--network-results", str(tmp_path / "missing.json")], "missing.json"),
             (["--network-results", str(damaged)], "seed"), (["--out", str(not_a_folder)], "--out"),
             (["--set", "hidden"], "--set"), (["--set", "nope=1"], "nope"), (["--set", "p=11"], "p = 11"),
             (["--set", "lr=0.1", "--network-results", str(damaged)], "seed")]
    # the first case in a fresh process (what a user runs), the rest in this
    # one through the same main() (11 fresh processes took about a minute)
    proc = subprocess.run([sys.executable, "-m", "particles.cli", "compare-network", *cases[0][0]],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and cases[0][1] in proc.stderr, proc.stderr
    for args, named in cases:
        capsys.readouterr()
        try:
            code = main(["compare-network", *args])
        except SystemExit as exc:  # argparse's own errors
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2, args
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert named in err, (named, err)
