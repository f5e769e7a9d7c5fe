"""Plain-torch grokking runs (and runs that do not grok) for checking
`fitting.stages` on networks the package did not train (docs/bring_your_own_run.md,
stages of a run).

    python docs/examples/stages_runs.py --out runs/stages            # the whole set (about an hour on 1 core)
    python docs/examples/stages_runs.py --out runs/stages --quick    # two short runs (CI)
    python docs/examples/stages_runs.py --out runs/stages --only mlp-p43-d96-s0

Three architectures of our own, written here in plain torch (nothing from the
package's trainers): an MLP on the concatenated embeddings, an MLP on their
sum, and a one-layer transformer with an '=' token. Each run is recorded with
`EmbeddingRecorder` (signals every step) and logs its own train / validation
loss and accuracy every 25 steps with `recorder.log`; a finished run's file is
kept and skipped on the next call, so the script resumes after a kill.
"""
import argparse
import json
import time
from pathlib import Path

import torch
from torch import nn


class ConcatMLP(nn.Module):
    def __init__(self, p, d, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(p, d)
        self.net = nn.Sequential(nn.Linear(2 * d, hidden), nn.ReLU(), nn.Linear(hidden, p))

    def forward(self, ab):
        return self.net(self.embed(ab).flatten(1))


class SumMLP(nn.Module):
    def __init__(self, p, d, hidden=512):
        super().__init__()
        self.embed = nn.Embedding(p, d)
        self.net = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, p))

    def forward(self, ab):
        e = self.embed(ab)
        return self.net(e[:, 0] + e[:, 1])


class Transformer(nn.Module):
    """One block, pre-norm free, an '=' token (row p of the embedding), read out at '='."""

    def __init__(self, p, d, heads=4, hidden=None):
        super().__init__()
        hidden = hidden or 4 * d
        self.p = p
        self.embed = nn.Embedding(p + 1, d)
        self.pos = nn.Parameter(torch.randn(3, d) * 0.02)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, d))
        self.out = nn.Linear(d, p, bias=False)

    def forward(self, ab):
        eq = torch.full((ab.shape[0], 1), self.p, dtype=ab.dtype)
        x = self.embed(torch.cat([ab, eq], 1)) + self.pos
        x = x + self.attn(x, x, x, need_weights=False)[0]
        x = x + self.mlp(x)
        return self.out(x[:, -1])


ARCHS = {"mlp": ConcatMLP, "summlp": SumMLP, "transformer": Transformer}

# name: arch, p, d, frac, lr, wd, steps, seed  (the grokked and the not-grokked runs)
RUNS = {
    "mlp-p43-d96-s0": ("mlp", 43, 96, 0.4, 3e-3, 1.0, 6000, 0),
    "mlp-p47-d64-s1": ("mlp", 47, 64, 0.4, 3e-3, 1.0, 6000, 1),
    "mlp-p53-d128-s2": ("mlp", 53, 128, 0.4, 3e-3, 1.0, 6000, 2),
    "summlp-p43-d64-s0": ("summlp", 43, 64, 0.4, 3e-3, 1.0, 6000, 0),
    "summlp-p59-d96-s1": ("summlp", 59, 96, 0.4, 3e-3, 1.0, 6000, 1),
    "transformer-p43-d64-s0": ("transformer", 43, 64, 0.4, 3e-3, 1.0, 5000, 0),
    "transformer-p53-d128-s1": ("transformer", 53, 128, 0.4, 3e-3, 1.0, 5000, 1),
    "summlp-p53-d64-s3-frac30": ("summlp", 53, 64, 0.3, 3e-3, 1.0, 6000, 3),
    "mlp-p59-d64-s4": ("mlp", 59, 64, 0.35, 3e-3, 1.0, 6000, 4),
    "transformer-p47-d96-s3": ("transformer", 47, 96, 0.4, 3e-3, 1.0, 5000, 3),
    "mlp-p41-d64-s5": ("mlp", 41, 64, 0.4, 3e-3, 1.0, 6000, 5),
    "mlp-p61-d96-s6": ("mlp", 61, 96, 0.35, 3e-3, 1.0, 6000, 6),
    "summlp-p41-d128-s4-frac30": ("summlp", 41, 128, 0.3, 3e-3, 1.0, 6000, 4),
    "transformer-p41-d64-s4": ("transformer", 41, 64, 0.4, 3e-3, 1.0, 5000, 4),
    "transformer-p37-d96-s5": ("transformer", 37, 96, 0.5, 3e-3, 1.0, 4000, 5),
    # expected not to generalise: too little data, or no weight decay and a low rate
    "mlp-p43-d96-s3-nowd": ("mlp", 43, 96, 0.2, 1e-3, 0.0, 4000, 3),
    "transformer-p43-d64-s2-slow": ("transformer", 43, 64, 0.3, 3e-4, 0.1, 3000, 2),
    "summlp-p47-d64-s2-frac15": ("summlp", 47, 64, 0.15, 1e-3, 1.0, 4000, 2),
    "mlp-p53-d64-s7-frac15": ("mlp", 53, 64, 0.15, 3e-3, 1.0, 4000, 7),
    "transformer-p41-d64-s6-frac20": ("transformer", 41, 64, 0.2, 3e-3, 1.0, 3000, 6),
}
QUICK = {"mlp-p31-d64-quick": ("mlp", 31, 64, 0.5, 3e-3, 1.0, 1500, 0),
         "transformer-p31-d64-quick": ("transformer", 31, 64, 0.5, 3e-3, 1.0, 1200, 0)}


def train(name, arch, p, d, frac, lr, wd, steps, seed, log_every=25, gradients=False):
    from fitting.training import EmbeddingRecorder  # the one line that touches the package

    torch.manual_seed(seed)
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], 1)
    labels = (pairs[:, 0] + pairs[:, 1]) % p
    perm = torch.randperm(len(pairs))
    n_train = int(round(frac * len(pairs)))
    tr, va = perm[:n_train], perm[n_train:]
    model = ARCHS[arch](p, d)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd, betas=(0.9, 0.98))
    rec = EmbeddingRecorder(model.embed.weight, tokens=range(p), every=1, snapshot_every=None if gradients else 100,
                            gradients=gradients, train=(pairs[tr].numpy(), labels[tr].numpy()))
    rec.attach(opt)

    def evaluate(step):
        with torch.no_grad():
            lt, lv = model(pairs[tr]), model(pairs[va])
            rec.log(step, train_loss=nn.functional.cross_entropy(lt, labels[tr]).item(),
                    train_acc=(lt.argmax(1) == labels[tr]).float().mean().item(),
                    val_loss=nn.functional.cross_entropy(lv, labels[va]).item(),
                    val_acc=(lv.argmax(1) == labels[va]).float().mean().item())

    evaluate(0)
    for step in range(1, steps + 1):
        loss = nn.functional.cross_entropy(model(pairs[tr]), labels[tr])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % log_every == 0 or step == steps:
            evaluate(step)
    meta = {"model": f"plain-torch {arch}", "arch": arch, "p": p, "d": d, "seed": seed, "frac": frac, "lr": lr,
            "wd": wd, "task": "modular_addition", "run": name}
    return rec.trajectory(meta=meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="runs/stages")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--gradients", action="store_true", help="also record gradients (for the force-law fit)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = QUICK if args.quick else RUNS
    for name, cfg in runs.items():
        if args.only and name not in args.only:
            continue
        path = out / f"{name}.npz"
        if path.exists():
            continue
        t0 = time.perf_counter()
        traj = train(name, *cfg, gradients=args.gradients)
        traj.save(path)
        va = traj.curves["val_acc"][1]
        print(json.dumps({"run": name, "val_acc": round(float(va[-1]), 3),
                          "seconds": round(time.perf_counter() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
