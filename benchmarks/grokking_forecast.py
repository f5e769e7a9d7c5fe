"""Forecast benchmark on grokking runs this project's models never made.

A hand-written plain-torch one-layer transformer (token + position
embedding, one attention block with 4 heads, a ReLU MLP, unembedding; no
code of ``fitting.training``) learns (a + b) mod p with AdamW (lr 1e-3,
weight decay 1, betas (0.9, 0.98)) on a random share of the pairs, full
batch. Its token embedding is copied every ``--every`` steps; the Fourier
signals of those copies (``fitting.fourier_signals``) are the data.

Each run is fitted on the first half of its steps; every model is simulated
from the observed state at the middle over the second half and scored by
the relative error ||x_sim - x_obs|| / ||x_obs|| against persistence
(holding the mid-run state). A fit that blows up scores inf.

    python benchmarks/grokking_forecast.py --p 53 59 --seeds 2 --steps 6000 --json out.json
    python benchmarks/grokking_forecast.py --runs DIR/*.npz        # score saved runs again
    python benchmarks/grokking_forecast.py --runs DIR/*.npz --grid # and the windows x horizons grid
    python benchmarks/grokking_forecast.py --runs A.npz B.npz --figure f.png  # forecasts drawn

``--grid`` also fits the default ``LinearODE(stable=True)`` on windows
ending at 30-70 % of each run and scores ``model.forecast`` from the
window's end over horizons of 0.1, 0.25, 0.5 and 1 times the window's length
(where the run is long enough), counting the cases that beat persistence.

Runs are saved as ``particles.Trajectory`` files (``--save DIR``) so they can
be fitted again with other code.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np


# --------------------------------------------------------------- training
def train_run(p: int, seed: int, steps: int, every: int, frac: float = 0.5, d: int = 128):
    """(steps, signals, embeddings at a few steps, train/val accuracy) of one run."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    pairs = np.array([(a, b) for a in range(p) for b in range(p)])
    order = rng.permutation(len(pairs))
    n_train = int(frac * len(pairs))
    tr, va = order[:n_train], order[n_train:]
    X = torch.tensor(np.column_stack([pairs, np.full(len(pairs), p)]))  # a, b, '='
    Y = torch.tensor((pairs[:, 0] + pairs[:, 1]) % p)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(p + 1, d)
            self.pos = nn.Parameter(torch.randn(3, d) / math.sqrt(d))
            self.attn = nn.MultiheadAttention(d, 4, bias=False, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
            self.out = nn.Linear(d, p, bias=False)

        def forward(self, x):
            h = self.embed(x) + self.pos
            a, _ = self.attn(h, h, h, need_weights=False)
            h = h + a
            h = h + self.mlp(h)
            return self.out(h[:, -1])

    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1.0, betas=(0.9, 0.98))
    lossf = nn.CrossEntropyLoss()
    rec_steps, snaps, accs = [], [], []
    for step in range(steps + 1):
        if step % every == 0:
            rec_steps.append(step)
            snaps.append(model.embed.weight.detach()[:p].double().numpy().copy())
        if step == steps:
            break
        opt.zero_grad()
        loss = lossf(model(X[tr]), Y[tr])
        loss.backward()
        opt.step()
        if step % 500 == 0 or step == steps - 1:
            with torch.no_grad():
                acc_tr = (model(X[tr]).argmax(-1) == Y[tr]).float().mean().item()
                acc_va = (model(X[va]).argmax(-1) == Y[va]).float().mean().item()
            accs.append((step, acc_tr, acc_va))
    return np.array(rec_steps), np.stack(snaps), accs


def save_run(path: Path, steps, snaps, accs, p, seed) -> None:
    from fitting import fourier_signals
    from particles import Trajectory

    keep = np.unique(np.linspace(0, len(steps) - 1, 50).astype(int))
    traj = Trajectory(snaps[keep], steps[keep].astype(np.int64), steps=steps.astype(np.int64),
                      signals=fourier_signals(snaps),
                      meta={"source": "benchmarks/grokking_forecast.py (plain torch)", "p": p, "seed": seed,
                            "accuracy": accs})
    traj.save(path)


# --------------------------------------------------------------- scoring
def models():
    from fitting import LinearODE, LotkaVolterra

    return {
        "LinearODE(stable=True) [default]": lambda: LinearODE(stable=True),
        "LinearODE(stable=True, derivative='weak')": lambda: LinearODE(stable=True, derivative="weak"),
        "LinearODE()": lambda: LinearODE(),
        "LotkaVolterra()": lambda: LotkaVolterra(),
        "LotkaVolterra(form='logistic')": lambda: LotkaVolterra(form="logistic"),
    }


def second_half(make, steps: np.ndarray, signals: np.ndarray) -> tuple[int, np.ndarray | None, float, float]:
    """``make()`` fitted on the first half of a run and simulated from the
    observed state at the middle: (middle row, simulation or None where the
    fit failed or blew up, relative error (inf then), persistence's)."""
    from fitting.ode import BlowUpError

    t = steps.astype(float)
    mid = int(np.searchsorted(t, t[0] + (t[-1] - t[0]) / 2))
    obs = signals[mid:]
    norm = np.linalg.norm(obs)
    persistence = float(np.linalg.norm(obs - signals[mid]) / norm)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sim = make().fit(signals[: mid + 1], t[: mid + 1]).simulate(signals[mid], t[mid:])
    except (BlowUpError, ValueError, FloatingPointError, np.linalg.LinAlgError):
        return mid, None, float("inf"), persistence
    return mid, sim, float(np.linalg.norm(sim - obs) / norm), persistence


def forecast_errors(steps: np.ndarray, signals: np.ndarray) -> dict:
    """Relative error over the second half for every model and persistence."""
    out = {}
    for name, make in models().items():
        start = time.perf_counter()
        _, _, out[name], out["persistence"] = second_half(make, steps, signals)
        out[name + " seconds"] = time.perf_counter() - start
    return {"persistence": out.pop("persistence"), **out}


#: where the fitted windows end (share of the run) and how far they forecast (share of the window) with --grid
GRID_ENDS = (0.3, 0.4, 0.5, 0.6, 0.7)
GRID_HORIZONS = (0.1, 0.25, 0.5, 1.0)


def forecast_grid(steps: np.ndarray, signals: np.ndarray) -> list[dict]:
    """The default stable fit on [0, end] forecast over end * h from the
    observed state at the end (``LinearODE.forecast``), for every end of
    GRID_ENDS and h of GRID_HORIZONS that the run covers."""
    from fitting import LinearODE

    t = steps.astype(float)
    out = []
    for end in GRID_ENDS:
        t_end = float(t[int(end * (len(t) - 1))])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LinearODE(stable=True, window=(None, t_end)).fit(signals, t)
        for h in GRID_HORIZONS:
            horizon = h * (t_end - t[0])
            if t_end + horizon > t[-1]:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f = model.forecast(signals, t, horizon=horizon)
            out.append({"end": end, "horizon": h, "error": f.error, "persistence": f.persistence_error,
                        "beats": f.beats_persistence})
    return out


def grid_summary(rows: list[dict]) -> str:
    """Wins over persistence by horizon, with Wilson 95 % intervals."""
    from effective_theory.montecarlo import wilson_interval

    lines = ["default LinearODE(stable=True) against persistence, windows ending at "
             + "/".join(f"{e:g}" for e in GRID_ENDS) + " of each run:"]
    cases = [c for r in rows for c in r["grid"]]
    for h in GRID_HORIZONS + (None,):
        sub = [c for c in cases if h is None or c["horizon"] == h]
        if not sub:
            continue
        wins = sum(c["beats"] for c in sub)
        lo, hi = wilson_interval(np.array(wins), len(sub))
        what = "all horizons" if h is None else f"horizon {h:g} x window"
        lines.append(f"  {what}: beats persistence in {wins} of {len(sub)} ({100 * wins / len(sub):.0f} %, "
                     f"95 % [{100 * float(lo):.0f} %, {100 * float(hi):.0f} %]); median error "
                     f"{np.median([c['error'] for c in sub]):.3g} vs persistence "
                     f"{np.median([c['persistence'] for c in sub]):.3g}")
    return "\n".join(lines)


def plot_forecasts(items: list, path: str) -> None:
    """Observed signals (solid) and the default fit's forecast of the second
    half (dashed, same colour) for the first four runs of ``items``
    ((name, steps, signals) each), written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from fitting import LinearODE

    shown = items[:4]
    cols = 2 if len(shown) > 1 else 1
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.9 * rows), squeeze=False)
    for ax, (name, steps, signals) in zip(axes.flat, shown):
        t = steps.astype(float)
        mid, sim, err, pers = second_half(lambda: LinearODE(stable=True), steps, signals)  # sim None: not drawn
        colours = plt.cm.viridis(np.linspace(0, 0.9, signals.shape[1]))
        for k in range(signals.shape[1]):
            ax.plot(t, signals[:, k], color=colours[k], lw=0.9)
            if sim is not None:
                ax.plot(t[mid:], sim[:, k], color=colours[k], lw=1.1, ls="--")
        ax.axvline(t[mid], color="k", lw=0.8)
        ax.set_title(f"{name}: forecast error {err:.2f}, persistence {pers:.2f}", fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel("Fourier signal of the embedding")
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    fig.suptitle("Grokking runs: observed (solid) and LinearODE(stable=True) fitted on the first half, "
                 "forecast from the middle (dashed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--p", type=int, nargs="*", default=[53, 59])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--save", default=None, help="folder for the runs' trajectory files")
    parser.add_argument("--runs", nargs="*", default=None, help="score these saved runs instead of training")
    parser.add_argument("--grid", action="store_true", help="also score windows x horizons (see the module notes)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--figure", default=None, help="PNG of the first four runs' forecasts")
    args = parser.parse_args(argv)
    for option in ("json", "figure"):  # output locations are checked before any work
        where = getattr(args, option)
        if where is not None and not Path(where).resolve().parent.is_dir():
            parser.error(f"--{option}: the folder of {where} does not exist")
    rows = []
    if args.runs:
        from particles import Trajectory

        try:  # a missing or bad file: one line and exit code 2, before any fit
            sources = [(Path(r).stem, Trajectory.load(r)) for r in args.runs]
        except (OSError, ValueError, TypeError) as exc:
            parser.error(str(exc))
        items = [(name, tr.steps, tr.signals) for name, tr in sources]
    else:
        try:
            import torch  # noqa: F401
        except ImportError:
            sys.exit("training needs torch: pip install '.[torch]'")
        from fitting import fourier_signals

        items = []
        for p in args.p:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                start = time.perf_counter()
                steps, snaps, accs = train_run(p, seed, args.steps, args.every)
                name = f"p{p}_seed{seed}"
                print(f"{name}: trained in {time.perf_counter() - start:.0f} s; accuracy (step, train, val) "
                      f"{accs[-1]}", flush=True)
                if args.save:
                    Path(args.save).mkdir(parents=True, exist_ok=True)
                    save_run(Path(args.save) / f"{name}.npz", steps, snaps, accs, p, seed)
                items.append((name, steps, fourier_signals(snaps)))
    for name, steps, signals in items:
        errs = forecast_errors(steps, signals)
        if args.grid:
            errs["grid"] = forecast_grid(steps, signals)
        rows.append({"run": name, **errs})
        print(f"{name}: " + ", ".join(f"{k} {v:.3g}" for k, v in errs.items()
                                      if not k.endswith("seconds") and k != "grid"), flush=True)
    names = ["persistence"] + list(models())
    print("\nbeats persistence (of %d runs):" % len(rows))
    for n in names[1:]:
        wins = sum(r[n] < r["persistence"] for r in rows)
        print(f"  {n}: {wins}; median error {np.median([r[n] for r in rows]):.3g} "
              f"(persistence {np.median([r['persistence'] for r in rows]):.3g})")
    if args.grid:
        print(grid_summary(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"command": "python " + " ".join(sys.argv), "runs": rows}, indent=1))
    if args.figure:
        plot_forecasts(items, args.figure)


if __name__ == "__main__":
    main()
