"""Record every layer of your own one-block, 2-D transformer for the sandbox (docs/sandbox.md).

A plain-torch model of the clustering-head shape, trained on sparse modular addition; a LayerRecorder
reads its states through forward hooks on the modules named in ``taps``, at every 50th step, and the
run goes to a file that ``embdyn sandbox`` and the explorer's Layers tab read.

    python docs/examples/sandbox_own_model.py --out my_run.npz
    embdyn sandbox my_run.npz --step 2000 --report
"""

import argparse

import numpy as np
import torch
from torch import nn

from fitting.training.layers import LayerRecorder


class Block(nn.Module):
    def __init__(self, p=2, T=12, width=32):
        super().__init__()
        self.tok = nn.Embedding(p, 2)
        self.pos = nn.Parameter(torch.randn(T, 2))
        self.query = nn.Parameter(torch.randn(2))
        self.value = nn.Linear(2, 2)
        self.mlp = nn.Sequential(nn.Linear(2, width), nn.GELU(), nn.Linear(width, 2))
        self.norm_in = nn.RMSNorm(2, elementwise_affine=False)
        self.norm_mlp = nn.RMSNorm(2, elementwise_affine=False)  # its own module: a hook reads one call
        self.attn_weights = nn.Softmax(dim=-1)
        self.seq = nn.Identity()      # named points for the hooks: the identity, no arithmetic
        self.resid = nn.Identity()

    def body(self, s):                # attention output -> residual stream
        return self.resid(s + self.mlp(self.norm_mlp(s)))

    def forward(self, tokens):
        h = self.norm_in(self.tok(tokens) + self.pos)
        a = self.attn_weights(h @ self.query / 2 ** 0.5)
        s = self.seq(torch.einsum("bt,btd->bd", a, self.value(h)))
        return self.body(s) @ self.tok.weight.T


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--out", default="my_run.npz")
    args = parser.parse_args()
    torch.manual_seed(0)
    p, T, k = 2, 12, 5
    rng = np.random.default_rng(0)
    tokens = torch.as_tensor(rng.integers(0, p, size=(2560, T)))
    labels = tokens[:, :k].sum(1) % p
    train_x, train_y, val_x, val_y = tokens[:2048], labels[:2048], tokens[2048:], labels[2048:]
    model = Block(p, T)
    rec = LayerRecorder(
        model, torch.cat([train_x[:128], val_x[:128]]).numpy(), torch.cat([train_y[:128], val_y[:128]]).numpy(),
        p=p, split=["train"] * 128 + ["val"] * 128,
        taps={"sequence": model.seq, "normed_sequence": model.norm_mlp, "mlp": model.mlp, "residual": model.resid,
              "attention": model.attn_weights, "values": model.value, "normed_inputs": model.norm_in,
              "logits": model},  # the model itself: its output is the logits
        parameters={"token_embedding": lambda: model.tok.weight, "position": lambda: model.pos,
                    "query": lambda: model.query},
        regions={"sequence": lambda s: model.body(s) @ model.tok.weight.T,
                 "residual": lambda r: r @ model.tok.weight.T})
    rec.check()  # every tapped module's output has its state's shape, before any training
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(args.steps + 1):
        if step % 50 == 0:
            rec.record(step)
        idx = torch.randint(0, 2048, (32,))
        loss = nn.functional.cross_entropy(model(train_x[idx]), train_y[idx])
        opt.zero_grad()
        loss.backward()
        with torch.no_grad():
            val_acc = (model(val_x).argmax(1) == val_y).float().mean()
        rec.log(step, train_loss=loss.item(), val_acc=val_acc.item(),
                **{f"grad_norm_{name}": float(sum(q.grad.norm() ** 2 for q in mod.parameters()) ** 0.5)
                   for name, mod in (("value", model.value), ("mlp", model.mlp))})
        opt.step()
    rec.trajectory({"model": "my block"}).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
