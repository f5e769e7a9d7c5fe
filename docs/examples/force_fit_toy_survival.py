"""How much of the embedding gradient do the laws explain in the effective-
theory toy model and in the survival MLP? (docs/force_fit.md)

Toy model (the regression setting of ``embdyn toy-phases regression``: p = 10,
d = 1, 45 training pairs): one cell of each phase as the three-seed phase
grid (docs/figures/training/toy_phases_regression_3seeds.json) labels it by
majority; the gradient on the representation is fitted with the effective
(parallelogram) loss, ``-d l_eff / dE``, plus a decay term, over training.

Survival MLP (ordered pairs, input [E_a, E_b]): a reduced setting (p = 23,
d = 16, 4000 steps) so that the builtin law's range search fits in the
budget; fitted with the builtin law (clustering + alignment + decay) and with
the effective loss.

Each run's result is one JSON file in ``OUT/runs`` (reruns skip finished
runs); ``OUT/force_fit_toy_survival.json`` summarises with t intervals over
seeds, ``force_fit_toy_survival.png`` shows R^2 over training.

    python docs/examples/force_fit_toy_survival.py --out docs/figures/force_fit/toy_survival
    python docs/examples/force_fit_toy_survival.py --quick --out /tmp/fts
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from fitting.training import SurvivalMLPConfig, ToyConfig, train
from fitting.training.configs import toy_phase_setting
from fitting.forcefit import ForceLawFit
from effective_theory.montecarlo import mean_interval as mean_ci
from fitting.ode import FitQualityWarning

#: toy cells (decoder_lr, decoder_weight_decay) and the phase the 3-seed grid gives them by majority
TOY_CELLS = {"comprehension": (2.5e-5, 1.0), "grokking": (2.5e-5, 8.0), "memorization": (2.5e-3, 0.0)}


def settings(quick: bool) -> dict:
    toy, _ = toy_phase_setting("regression")
    steps = 2000 if quick else 40_000
    cells = {name: toy.replace(decoder_lr=lr, decoder_weight_decay=wd, steps=steps, snapshot_every=steps // 80,
                               dtype="float64")
             for name, (lr, wd) in TOY_CELLS.items()}
    survival = SurvivalMLPConfig(p=23, d=16, hidden=64, steps=400 if quick else 4000,
                                 snapshot_every=10 if quick else 100, weight_decay=0.5)
    return {**{f"toy {k}": v for k, v in cells.items()}, "survival-mlp (p 23, d 16)": survival}


def fits_for(config) -> dict:
    """The laws fitted to one setting: name -> ForceLawFit keyword arguments."""
    if isinstance(config, ToyConfig):
        return {"effective": dict(law="effective", terms=("effective",)),
                "effective + decay": dict(law="effective")}
    return {"builtin": dict(law="builtin", search_snapshots=8),
            "effective + decay": dict(law="effective")}


def one_run(name: str, config, seed: int, bootstrap: int) -> dict:
    t0 = time.perf_counter()
    traj = train(config, seed, gradients=True)
    out = {"setting": name, "seed": seed, "config": config.to_dict(), "snapshots": len(traj),
           "train_seconds": time.perf_counter() - t0, "final": {k: float(v[-1]) for k, v in traj.scalars.items()
                                                                 if k in ("train_acc", "val_acc", "train_loss")},
           "fits": {}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitQualityWarning)
        for label, kwargs in fits_for(config).items():
            t1 = time.perf_counter()
            f = ForceLawFit(**kwargs, normalize="rms", n_bootstrap=bootstrap, windows=8, seed=seed).fit(traj)
            out["fits"][label] = {"r2": f.r2_, "coef": dict(zip(f.terms_, map(float, f.coef_))),
                                  "ranges": f.ranges_, "intervals": f.intervals_,
                                  "windows": [{"start": w["start"], "stop": w["stop"], "r2": w["r2"]}
                                              for w in f.windows_], "seconds": time.perf_counter() - t1}
        # the effective loss with its strength refitted in each window: is the direction right while the scale moves?
        label = "effective, strength per window"
        out["fits"][label] = {"r2": None, "windows": []}
        for w in out["fits"]["effective + decay"]["windows"]:
            start, stop = int(np.ceil(w["start"])), int(np.ceil(w["stop"]))
            try:
                f = ForceLawFit("effective", terms=("effective",), normalize="rms", n_bootstrap=0).fit(
                    traj, window=(start, stop))
                r2 = f.r2_
            except ValueError:  # an empty window
                r2 = None
            out["fits"][label]["windows"].append({"start": w["start"], "stop": w["stop"], "r2": r2})
    out["warnings"] = sorted({str(w.message) for w in caught})
    return out


def summarise(runs: list[dict]) -> list[dict]:
    rows = []
    for name in dict.fromkeys(r["setting"] for r in runs):
        mine = [r for r in runs if r["setting"] == name]
        row = {"setting": name, "runs": len(mine), "val_acc": mean_ci([r["final"].get("val_acc") for r in mine]),
               "fits": {}}
        for label in mine[0]["fits"]:
            if mine[0]["fits"][label]["r2"] is None:  # refitted per window: windows only
                row["fits"][label] = {"r2": None, "coef": {}, "windows": [
                    {"start": w["start"], "stop": w["stop"],
                     "r2": mean_ci([r["fits"][label]["windows"][i]["r2"] for r in mine])}
                    for i, w in enumerate(mine[0]["fits"][label]["windows"])]}
                continue
            n_win = len(mine[0]["fits"][label]["windows"])
            row["fits"][label] = {
                "r2": mean_ci([r["fits"][label]["r2"] for r in mine]),
                "windows": [{"start": mine[0]["fits"][label]["windows"][i]["start"],
                             "stop": mine[0]["fits"][label]["windows"][i]["stop"],
                             "r2": mean_ci([r["fits"][label]["windows"][i]["r2"] for r in mine])}
                            for i in range(n_win)],
                "coef": {t: mean_ci([r["fits"][label]["coef"][t] for r in mine])
                         for t in mine[0]["fits"][label]["coef"]}}
        rows.append(row)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(3.3 * len(rows), 3.3), squeeze=False)
    for ax, row in zip(axes[0], rows):
        for label, fit in row["fits"].items():
            mids = [(w["start"] + w["stop"]) / 2 for w in fit["windows"]]
            mean = np.array([w["r2"]["mean"] if w["r2"]["mean"] is not None else np.nan for w in fit["windows"]])
            lo = np.array([w["r2"]["ci"][0] if w["r2"]["ci"][0] is not None else np.nan for w in fit["windows"]])
            hi = np.array([w["r2"]["ci"][1] if w["r2"]["ci"][1] is not None else np.nan for w in fit["windows"]])
            ax.errorbar(mids, mean, yerr=[mean - lo, hi - mean], marker="o", capsize=3, label=label, alpha=0.85)
        ax.set_title(f"{row['setting']} ({row['runs']} seeds)\nmean and t 95 % interval", fontsize=9)
        ax.set_xlabel("training step (window centre)")
        ax.set_ylim(-0.3, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    axes[0, 0].set_ylabel("R$^2$ of the embedding gradient")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="1 seed, short runs")
    ap.add_argument("--summarise", action="store_true", help="only summarise the runs already in OUT/runs")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.bootstrap = 1, 20
    runs_dir = args.out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, config in settings(args.quick).items():
        for seed in range(args.seeds):
            path = runs_dir / f"{name.split(' (')[0].replace(' ', '_')}_seed{seed}.json"
            if path.exists():
                runs.append(json.loads(path.read_text()))
                continue
            if args.summarise:
                continue
            result = one_run(name, config, seed, args.bootstrap)
            path.write_text(json.dumps(result, indent=1))
            runs.append(result)
            print(f"{name} seed {seed}: " + ", ".join(f"{k} R2 {v['r2']:.3f}" for k, v in result["fits"].items()
                                                       if v["r2"] is not None)
                  + f" (train {result['train_seconds']:.0f} s)", file=sys.stderr)
    rows = summarise(runs)
    summary = {"command": "python docs/examples/force_fit_toy_survival.py "
                          + " ".join(argv if argv is not None else sys.argv[1:]),
               "normalize": "rms (each run's G divided by its RMS)", "toy_cells": TOY_CELLS, "rows": rows}
    (args.out / "force_fit_toy_survival.json").write_text(json.dumps(summary, indent=1))
    plot(rows, args.out / "force_fit_toy_survival.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
