"""Your own network, end to end: a plain-torch MLP or one-layer transformer
learns addition mod p, recorded with EmbeddingRecorder (training set stored
in the file), then signals, key frequencies, an ODE fit and a force-law fit
(docs/bring_your_own_run.md).

    python docs/examples/own_network.py --arch mlp --p 41 --d 64 --seed 0 --out runs/mlp41
    python docs/examples/own_network.py --arch transformer --p 37 --d 128 --frac 0.3 --out runs/tf37

Nothing here uses the package's trainers: the model, the split and the loop
are ten-line plain torch, as a user would write them. Needs the torch extra:
pip install '.[torch]' (in the repository root).
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

# the one-layer transformer with an '=' token (embedding of p + 1 rows) of the shorter worked example
from bring_your_own_run import OneLayerTransformer as Transformer  # noqa: E402 (same folder as this script)


class MLP(nn.Module):
    """Embed a and b, concatenate, one hidden ReLU layer, logits over p."""

    def __init__(self, p: int, d: int, hidden: int = 256):
        super().__init__()
        self.embed = nn.Embedding(p, d)
        self.net = nn.Sequential(nn.Linear(2 * d, hidden), nn.ReLU(), nn.Linear(hidden, p))

    def forward(self, ab: torch.Tensor) -> torch.Tensor:
        return self.net(self.embed(ab).flatten(1))


def train(args) -> tuple:
    """The user's own training loop; returns the recorder's trajectory and the training set."""
    from fitting.training import EmbeddingRecorder  # the one line that touches the package

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    p = args.p
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], dim=1)
    labels = pairs.sum(dim=1) % p
    perm = torch.randperm(len(pairs))
    n_train = int(round(args.frac * len(pairs)))
    tr, va = perm[:n_train], perm[n_train:]
    model = MLP(p, args.d) if args.arch == "mlp" else Transformer(p, args.d)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd, betas=(0.9, 0.98))
    train_set = (pairs[tr].numpy(), labels[tr].numpy())
    recorder = EmbeddingRecorder(model.embed.weight, tokens=range(p), every=1, snapshot_every=args.snapshot_every,
                                 gradients=args.gradients, train=train_set)
    recorder.attach(opt)
    val_curve = []
    for step in range(args.steps):
        loss = nn.functional.cross_entropy(model(pairs[tr]), labels[tr])
        opt.zero_grad()
        loss.backward()
        opt.step()  # the recorder records after every step
        if (step + 1) % 250 == 0 or step + 1 == args.steps:
            with torch.no_grad():
                val_logits = model(pairs[va])
                val_acc = (val_logits.argmax(1) == labels[va]).float().mean().item()
                train_acc = (model(pairs[tr]).argmax(1) == labels[tr]).float().mean().item()
                val_curve.append([step + 1, val_acc])
                # the network's own curves, stored in the file (fitting.stages and the explorer read them)
                recorder.log(step + 1, train_loss=loss.item(), train_acc=train_acc, val_acc=val_acc,
                             val_loss=nn.functional.cross_entropy(val_logits, labels[va]).item())
    meta = {"model": f"plain-torch {args.arch}", "arch": args.arch, "p": p, "d": args.d, "seed": args.seed,
            "frac": args.frac, "lr": args.lr, "wd": args.wd, "val_acc": val_curve[-1][1], "val_curve": val_curve,
            "task": "modular_addition"}
    return recorder.trajectory(meta=meta), train_set


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", choices=["mlp", "transformer"], default="mlp")
    parser.add_argument("--p", type=int, default=41)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frac", type=float, default=0.4, help="share of all ordered pairs used for training")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--wd", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--snapshot-every", type=int, default=50)
    parser.add_argument("--gradients", action="store_true", help="also record gradients (for the force-law fit)")
    parser.add_argument("--out", default="own-run")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    traj, (pairs, labels) = train(args)
    traj.save(out / "run.npz")
    # the same training set as a separate file, for `embdyn force-fit RUN --train FILE`
    np.savez(out / "train.npz", pairs=pairs, labels=labels)
    print(json.dumps({"out": str(out), "val_acc": traj.meta["val_acc"], "seconds": round(time.perf_counter() - start, 1)}))


if __name__ == "__main__":
    main()
