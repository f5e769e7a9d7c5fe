"""fitting.stages on a short plain-torch grokking run (issue 68): a sum-MLP of
our own on (a + b) mod 31, recorded with EmbeddingRecorder and its curves
logged with recorder.log; nothing from the package's trainers."""
import os

import numpy as np
import pytest

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import fitting  # noqa: E402
from fitting.training import EmbeddingRecorder  # noqa: E402
from particles.cli import main  # noqa: E402


def _grokking_run(p=31, d=64, frac=0.5, steps=1500, seed=0, every=25):
    torch.manual_seed(seed)
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], 1)
    labels = pairs.sum(1) % p
    perm = torch.randperm(len(pairs))
    tr, va = perm[: int(frac * len(pairs))], perm[int(frac * len(pairs)):]
    embed = nn.Embedding(p, d)
    head = nn.Sequential(nn.Linear(d, 512), nn.GELU(), nn.Linear(512, p))
    model = lambda ab: head(embed(ab[:, 0]) + embed(ab[:, 1]))  # noqa: E731
    opt = torch.optim.AdamW(list(embed.parameters()) + list(head.parameters()), lr=3e-3, weight_decay=1.0,
                            betas=(0.9, 0.98))
    rec = EmbeddingRecorder(embed.weight, tokens=range(p), snapshot_every=100,
                            train=(pairs[tr].numpy(), labels[tr].numpy()))
    rec.attach(opt)

    def log(step):
        with torch.no_grad():
            lt, lv = model(pairs[tr]), model(pairs[va])
            rec.log(step, train_loss=nn.functional.cross_entropy(lt, labels[tr]).item(),
                    train_acc=(lt.argmax(1) == labels[tr]).float().mean().item(),
                    val_loss=nn.functional.cross_entropy(lv, labels[va]).item(),
                    val_acc=(lv.argmax(1) == labels[va]).float().mean().item())

    log(0)
    for step in range(1, steps + 1):
        loss = nn.functional.cross_entropy(model(pairs[tr]), labels[tr])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0:
            log(step)
    return rec.trajectory(meta={"task": "modular_addition"})


@pytest.mark.slow
def test_a_plain_torch_grokking_run_forms_its_circuit_before_it_generalises(tmp_path, capsys):
    torch.set_num_threads(1)
    traj = _grokking_run()
    run = fitting.stages(traj)
    assert run.grokking["grokked"], run.table()
    assert all(run[name].found for name in ("memorisation", "circuit formation", "generalisation")), run.table()
    assert run.lead_time["low"] > 0, run.table()  # the circuit starts forming before the validation accuracy moves
    assert run["memorisation"].stop < run["generalisation"].start
    # the same stages on the command line, from the file
    path = traj.save(tmp_path / "run.npz")
    assert main(["stages", str(path), "--out", str(tmp_path / "st")]) == 0
    import json

    assert json.loads((tmp_path / "st" / "stages.json").read_text())["stages"] == run.to_dict()["stages"]
    assert "grokked" in capsys.readouterr().out


def test_the_same_run_without_generalisation_reports_none():
    """A few hundred steps of the same run: memorised, not generalised, and said so."""
    torch.set_num_threads(1)
    traj = _grokking_run(steps=200, every=5)
    run = fitting.stages(traj)
    assert run["memorisation"].found and not run["generalisation"].found
    assert "did not generalise" in run["generalisation"].reason and run.lead_time is None
    assert np.isfinite(run.series["circuit_share"]).all()
