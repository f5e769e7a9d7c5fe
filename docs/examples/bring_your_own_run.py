"""Bring your own run: train a small plain-torch transformer on modular
addition, record its token embedding with EmbeddingRecorder, and fit ODEs to
the Fourier signals (docs/bring_your_own_run.md).

    python docs/examples/bring_your_own_run.py [--quick] [--out DIR]

Needs the torch extra: pip install '.[torch]' (in the repository root).
"""
import argparse
import json
from pathlib import Path

import torch
from torch import nn

from fitting import LinearODE, LotkaVolterra, select_frequencies
from fitting.training import EmbeddingRecorder
from particles.core.io import atomic_write_text


class OneLayerTransformer(nn.Module):
    """Tokens a, b and '=' -> attention -> MLP -> logits over p residues."""

    def __init__(self, p: int, d: int = 64, heads: int = 4, hidden: int = 256):
        super().__init__()
        self.embed = nn.Embedding(p + 1, d)  # token p is '='
        self.pos = nn.Parameter(torch.randn(3, d) / d**0.5)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, d))
        self.unembed = nn.Linear(d, p)

    def forward(self, ab: torch.Tensor) -> torch.Tensor:
        eq = torch.full_like(ab[:, :1], self.unembed.out_features)
        h = self.embed(torch.cat([ab, eq], dim=1)) + self.pos
        h = h + self.attn(h, h, h, need_weights=False)[0]
        h = h + self.mlp(h)
        return self.unembed(h[:, -1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (CI)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 3000, --quick 300)")
    parser.add_argument("--out", default="byo-run", help="output folder (default ./byo-run)")
    args = parser.parse_args()
    steps = args.steps or (300 if args.quick else 3000)
    torch.manual_seed(0)
    p = 23
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], dim=1)
    labels = pairs.sum(dim=1) % p
    perm = torch.randperm(len(pairs))
    train, val = perm[: len(pairs) // 2], perm[len(pairs) // 2:]

    model = OneLayerTransformer(p)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1.0, betas=(0.9, 0.98))
    # the first p rows of the embedding are the tokens; signals every step, snapshots every 50
    recorder = EmbeddingRecorder(model.embed.weight, tokens=range(p), every=1, snapshot_every=50,
                                 train=(pairs[train], labels[train]))
    recorder.attach(opt)
    for step in range(steps):
        loss = nn.functional.cross_entropy(model(pairs[train]), labels[train])
        opt.zero_grad()
        loss.backward()
        opt.step()  # the recorder records after every step
    with torch.no_grad():
        val_acc = (model(pairs[val]).argmax(1) == labels[val]).float().mean().item()
    traj = recorder.trajectory(meta={"model": "one-layer transformer", "p": p, "val_acc": val_acc,
                                     "task": "modular_addition"})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    traj.save(out / "run.npz")

    # the frequencies every fit of the package uses by default: the survivors, else the key frequencies, else all
    selection = select_frequencies(traj)
    linear = LinearODE(stable=True).fit(traj)  # a Trajectory is fitted on that selection
    lv = LotkaVolterra().fit(traj)
    report = {"steps": steps, "val_acc": val_acc, "survivors": selection.survivors, "key_frequencies": selection.key,
              "frequencies": selection.frequencies, "selection": selection.message,
              "linear": {"derivative_r2": linear.score(traj), "equations": linear.equations()},
              "lotka_volterra": {"derivative_r2": lv.score(traj), "equations": lv.equations()}}
    text = json.dumps(report, indent=2)
    atomic_write_text(out / "fits.json", text)
    print(f"validation accuracy {val_acc:.2f}; {selection.message}")
    for kind in ("linear", "lotka_volterra"):
        print(f"{kind} (derivative R^2 {report[kind]['derivative_r2']:.3f}):")
        for line in report[kind]["equations"]:
            print("  " + line)
    print(f"wrote {out / 'run.npz'} and {out / 'fits.json'}")


if __name__ == "__main__":
    main()
