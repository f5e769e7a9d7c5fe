"""Which law explains how the representation moves, when, at which time
scale, and how far above chance? The three force-fit studies of
docs/force_fit.md measured again with windows, gauge, null and time scales.

- **toy**: the effective-theory toy model (the regression setting of
  ``embdyn toy-phases regression``: p = 10, d = 1, 45 training pairs, 40 000
  steps, float64) in one cell of each phase, every step recorded; fitted with
  the effective loss alone, per window of steps [0, 100), [100, 1000),
  [1000, 10 000), [10 000, 40 000], in the translation and the similarity
  gauge, against minus the gradient, the optimiser's update and the
  displacement over 10, 100 and 1 000 steps; and the old way (a snapshot
  every 500 steps, one strength for the whole run, no gauge) beside it.
- **network**: the constant-attention network of ``embdyn compare-network``
  (p = 17, d = 2, 3 000 steps) at weight decay 0, 0.3, 0.6 and 1, snapshots
  on the geometric schedule; the built-in law's clustering and alignment
  (the search's start and boxes of force_fit_network.py), against minus the
  gradient and the displacement to the next snapshot.
- **survival**: the survival MLP in the reduced setting of
  force_fit_toy_survival.py (p = 23, d = 16, hidden 64, 4 000 steps, weight
  decay 0.5), geometric snapshots; the built-in law and the effective loss.

Every fit has a null (the law refitted on relabelled tokens, ``null=``).
Each run's result is one JSON file in ``OUT/runs`` (a rerun skips finished
runs); ``OUT/force_fit_dynamics.json`` summarises them (means with t 95 %
intervals over seeds, and how many seeds lie above their null's 95 %
interval); ``force_fit_dynamics.png`` draws R^2 against the null per window.

    python docs/examples/force_fit_dynamics.py --out docs/figures/force_fit/dynamics --jobs 2   # ~1 h on 2 cores
    python docs/examples/force_fit_dynamics.py --quick --out /tmp/ffd                          # CI, ~2 min
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the network study's start law and boxes

#: toy cells (decoder_lr, decoder_weight_decay) as the three-seed phase grid labels them by majority
TOY_CELLS = {"comprehension": (2.5e-5, 1.0), "grokking": (2.5e-5, 8.0), "memorization": (2.5e-3, 0.0)}
NETWORK_WD = (0.0, 0.3, 0.6, 1.0)
FIRST_SEED = 100  # seeds none of the earlier studies used


def window_edges(steps: int) -> list[int]:
    """Windows [0, 100), [100, 1000), [1000, 10 000), ... up to the run's last step."""
    return [e for e in (0, 100, 1000, 10_000) if e < steps] + [steps + 1]


def toy_fits(steps: int) -> dict:
    """Label -> (ForceLawFit keywords, snapshot spacing used, windows)."""
    edges = window_edges(steps)
    eff = dict(law="effective", terms=("effective",), n_bootstrap=0)
    return {
        "old: every 500 steps, whole run, no gauge": (dict(eff, gauge=None), 500, 1),
        "every 10 steps, whole run, no gauge": (dict(eff, gauge=None), 10, 1),
        "gradient, translation gauge": (dict(eff, gauge="translation", null=20), 1, edges),
        "gradient, similarity gauge": (dict(eff, gauge="similarity", null=20), 1, edges),
        "update, similarity gauge": (dict(eff, gauge="similarity", target="update", null=10), 1, edges),
        "displacement over 10 steps, similarity gauge":
            (dict(eff, gauge="similarity", target="displacement", horizon=10, null=10), 1, edges),
        "displacement over 100 steps, similarity gauge":
            (dict(eff, gauge="similarity", target="displacement", horizon=100, null=10), 1, edges),
        "displacement over 1000 steps, similarity gauge":
            (dict(eff, gauge="similarity", target="displacement", horizon=1000, null=10), 1, edges),
    }


def network_fits(steps: int) -> dict:
    from force_fit_network import BOUNDS, start_law

    terms = ("attraction", "repulsion", "alignment_same", "alignment_other")
    base = dict(law=start_law(), terms=terms, bounds=BOUNDS, normalize="rms", n_bootstrap=0, null=10)
    edges = window_edges(steps)
    return {"gradient, clustering + alignment": (base, 1, edges),
            "displacement to the next snapshot, clustering + alignment": (dict(base, target="displacement"), 1, edges)}


def survival_fits(steps: int) -> dict:
    edges = window_edges(steps)
    return {"gradient, built-in law": (dict(law="builtin", search_snapshots=8, n_bootstrap=0, null=10), 1, edges),
            "gradient, effective loss": (dict(law="effective", terms=("effective",), n_bootstrap=0, null=10), 1,
                                         edges),
            "displacement to the next snapshot, built-in law":
                (dict(law="builtin", search_snapshots=8, n_bootstrap=0, null=10, target="displacement"), 1, edges)}


def settings(quick: bool) -> list[tuple[str, str, object]]:
    """(part, cell, config) of every setting."""
    from fitting.training import ConstantAttentionConfig, SurvivalMLPConfig
    from fitting.training.configs import toy_phase_setting

    toy, _ = toy_phase_setting("regression")
    toy_steps = 3000 if quick else 40_000
    out = [("toy", name, toy.replace(decoder_lr=lr, decoder_weight_decay=wd, steps=toy_steps, snapshot_every=1,
                                     dtype="float64")) for name, (lr, wd) in TOY_CELLS.items()]
    net_steps = 300 if quick else 3000
    out += [("network", f"wd {wd:g}", ConstantAttentionConfig(weight_decay=wd, steps=net_steps,
                                                              snapshot_every="geometric"))
            for wd in (NETWORK_WD[::3] if quick else NETWORK_WD)]
    out.append(("survival", "p 23, d 16", SurvivalMLPConfig(p=23, d=16, hidden=64, steps=300 if quick else 4000,
                                                            snapshot_every="geometric", weight_decay=0.5)))
    return out


def fits_of(part: str, config) -> dict:
    return {"toy": toy_fits, "network": network_fits, "survival": survival_fits}[part](config.steps)


def arrays(traj, every: int) -> dict:
    """The run's snapshots (those at steps divisible by ``every``) as arrays for ForceLawFit.fit."""
    n = len(traj.gradients)
    keep = traj.snapshot_steps[:n] % every == 0
    return {"X": traj.embeddings[:n][keep], "steps": traj.snapshot_steps[:n][keep],
            "gradient": -traj.gradients[keep], "update": traj.updates[keep]}


def one_fit(traj, kwargs: dict, every: int, windows, seed: int) -> dict:
    from fitting.forcefit import ForceLawFit

    f = ForceLawFit(**kwargs, windows=windows, seed=seed)
    target = kwargs.get("target", "gradient")
    if every == 1:
        f.fit(traj)
    else:
        a = arrays(traj, every)
        f.fit(a["X"], None if target == "displacement" else a[target], train=traj.train, steps=a["steps"])
    return {"r2": f.r2_, "null_r2": f.null_r2_, "null_r2_interval": f.null_r2_interval_,
            "coef": dict(zip(f.terms_, map(float, f.coef_))),
            "coef_unconstrained": dict(zip(f.terms_, map(float, f.coef_unconstrained_))), "gauge": f.gauge_,
            "ranges": f.ranges_, "snapshots": f.fit_info_["snapshots"],
            "windows": [{k: w.get(k) for k in ("start", "stop", "snapshots", "r2", "null_r2", "null_r2_interval",
                                                "force_share", "defined")} for w in f.windows_]}


def one_run(part: str, cell: str, config, seed: int, path: Path) -> str:
    import torch

    from fitting.ode import FitQualityWarning
    from fitting.training import train

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    traj = train(config, seed, gradients=True)
    out = {"part": part, "cell": cell, "seed": seed, "config": config.to_dict(), "snapshots": len(traj),
           "train_seconds": time.perf_counter() - t0,
           "final": {k: float(v[-1]) for k, v in traj.scalars.items() if k in ("train_acc", "val_acc", "train_loss")},
           "fits": {}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitQualityWarning)
        for label, (kwargs, every, windows) in fits_of(part, config).items():
            t1 = time.perf_counter()
            out["fits"][label] = one_fit(traj, kwargs, every, windows, seed)
            out["fits"][label]["seconds"] = time.perf_counter() - t1
    out["warnings"] = sorted({str(w.message) for w in caught})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, default=float))
    os.replace(tmp, path)
    return f"{part} {cell} seed {seed}: {time.perf_counter() - t0:.0f} s"


def summarise(runs: list[dict]) -> list[dict]:
    from effective_theory.montecarlo import mean_interval as mean_ci

    rows = []
    for key in dict.fromkeys((r["part"], r["cell"]) for r in runs):
        mine = sorted((r for r in runs if (r["part"], r["cell"]) == key), key=lambda r: r["seed"])
        row = {"part": key[0], "cell": key[1], "seeds": [r["seed"] for r in mine],
               "val_acc": mean_ci([r["final"].get("val_acc") for r in mine]), "fits": {}}
        for label in mine[0]["fits"]:
            fits = [r["fits"][label] for r in mine]
            wins = []
            for i, w in enumerate(fits[0]["windows"]):
                ws = [f["windows"][i] for f in fits]
                above = [x["r2"] is not None and x["null_r2_interval"] is not None
                         and x["r2"] > x["null_r2_interval"][1] for x in ws]
                wins.append({"start": w["start"], "stop": w["stop"],
                             "r2": mean_ci([x["r2"] for x in ws]),
                             "null_r2": mean_ci([x["null_r2"] for x in ws]),
                             "force_share": mean_ci([x["force_share"] for x in ws]),
                             "above_null": int(sum(above)), "defined": int(sum(bool(x["defined"]) for x in ws))})
            row["fits"][label] = {"r2": mean_ci([f["r2"] for f in fits]),
                                  "null_r2": mean_ci([f["null_r2"] for f in fits]),
                                  "coef_clipped": int(sum(any(c == 0.0 for c in f["coef"].values()) for f in fits)),
                                  "windows": wins}
        rows.append(row)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = {"toy": ["gradient, translation gauge", "gradient, similarity gauge",
                     "displacement over 100 steps, similarity gauge"],
             "network": ["gradient, clustering + alignment"],
             "survival": ["gradient, built-in law", "gradient, effective loss"]}
    fig, axes = plt.subplots(2, (len(rows) + 1) // 2, figsize=(3.4 * ((len(rows) + 1) // 2), 6.4), squeeze=False)
    for ax, row in zip(axes.ravel(), rows):
        for i, label in enumerate(shown[row["part"]]):
            if label not in row["fits"]:
                continue
            wins = row["fits"][label]["windows"]
            x = np.arange(len(wins)) + 0.12 * (i - 1)
            for key, style in (("r2", "-o"), ("null_r2", ":x")):
                mean = np.array([np.nan if w[key]["mean"] is None else w[key]["mean"] for w in wins])
                lo = np.array([np.nan if w[key]["ci"][0] is None else w[key]["ci"][0] for w in wins])
                hi = np.array([np.nan if w[key]["ci"][1] is None else w[key]["ci"][1] for w in wins])
                ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], fmt=style, color=f"C{i}", capsize=2,
                            label=label.replace(", similarity gauge", " (sim.)") if key == "r2" else None,
                            alpha=0.9 if key == "r2" else 0.6, markersize=4)
        ax.set_xticks(np.arange(len(wins)))
        ax.set_xticklabels([f"{w['start']}-{w['stop'] - 1}" for w in wins], fontsize=7, rotation=20)
        ax.set_title(f"{row['part']} {row['cell']} ({len(row['seeds'])} seeds)", fontsize=9)
        ax.set_xlabel("training steps (window)", fontsize=8)
        ax.set_ylabel("R$^2$ (solid) and null R$^2$ (dotted)", fontsize=8)
        ax.set_ylim(-0.1, 1.0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in axes.ravel()[len(rows):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(stat: dict, digits: int = 2) -> str:
    """mean (low-high) of a mean_interval record."""
    if stat["mean"] is None:
        return "undefined"
    if stat["ci"][0] is None:
        return f"{stat['mean']:.{digits}f}"
    return f"{stat['mean']:.{digits}f} ({stat['ci'][0]:.{digits}f} to {stat['ci'][1]:.{digits}f})"


def markdown(rows: list[dict]) -> str:
    """The docs' tables (docs/force_fit.md): per setting and fit, R^2 and null R^2 per window, with the
    seeds above their null's 95 % interval."""
    out = []
    for row in rows:
        fits = row["fits"]
        first = max((f["windows"] for f in fits.values()), key=len)
        heads = [f"[{w['start']}, {w['stop']})" for w in first]
        out.append(f"**{row['part']} {row['cell']}** ({len(row['seeds'])} seeds; validation accuracy "
                   f"{fmt(row['val_acc'])})\n")
        out.append("| fit | whole run | " + " | ".join(heads) + " |")
        out.append("|---|---|" + "---|" * len(heads))
        for label, fit in fits.items():
            if len(fit["windows"]) == 1:  # one strength for the whole run: no windows, no null
                out.append(f"| {label} | {fmt(fit['r2'])} | " + " | ".join("-" for _ in heads) + " |")
                continue
            cells = []
            for w in fit["windows"]:
                if w["null_r2"]["mean"] is None:
                    cells.append(fmt(w["r2"]))
                else:
                    cells.append(f"{fmt(w['r2'])}; null {fmt(w['null_r2'], 3)}; {w['above_null']}/{w['defined']}")
            out.append(f"| {label} | {fmt(fit['r2'])} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=6, help="seeds a setting (default 6)")
    ap.add_argument("--parts", nargs="+", default=["toy", "network", "survival"], choices=["toy", "network", "survival"])
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (processes, one thread each)")
    ap.add_argument("--quick", action="store_true", help="short runs, 2 seeds: the command's smoke test")
    ap.add_argument("--tables", action="store_true", help="print the docs' tables from OUT's summary and stop")
    args = ap.parse_args(argv)
    if args.tables:
        print(markdown(json.loads((args.out / "force_fit_dynamics.json").read_text())["settings"]))
        return 0
    seeds = 2 if args.quick else args.seeds
    if seeds < 1 or args.jobs < 1:
        print("--seeds and --jobs must be >= 1", file=sys.stderr)
        return 2
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    todo = []
    for part, cell, config in settings(args.quick):
        if part not in args.parts:
            continue
        for seed in range(FIRST_SEED, FIRST_SEED + seeds):
            path = args.out / "runs" / f"{part}_{cell.replace(' ', '').replace(',', '_')}_{seed}.json"
            if not path.exists():
                todo.append((part, cell, config, seed, path))
    if args.jobs == 1:
        for job in todo:
            print(one_run(*job), flush=True)
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            for line in pool.map(one_run, *zip(*todo)) if todo else []:
                print(line, flush=True)
    runs = [json.loads(p.read_text()) for p in sorted((args.out / "runs").glob("*.json"))]
    runs = [r for r in runs if r["part"] in args.parts]
    order = {"toy": 0, "network": 1, "survival": 2}
    runs.sort(key=lambda r: (order[r["part"]], float(r["config"].get("weight_decay", 0.0)), r["cell"], r["seed"]))
    rows = summarise(runs)
    (args.out / "force_fit_dynamics.json").write_text(json.dumps(
        {"command": "python docs/examples/force_fit_dynamics.py " + " ".join(argv if argv is not None else sys.argv[1:]),
         "settings": rows}, indent=1, default=float))
    plot(rows, args.out / "force_fit_dynamics.png")
    (args.out / "force_fit_dynamics.md").write_text(markdown(rows))
    for row in rows:
        for label, fit in row["fits"].items():
            wins = "; ".join(f"[{w['start']},{w['stop']}) {w['r2']['mean']:.3f} vs null {w['null_r2']['mean']}"
                             if w["r2"]["mean"] is not None else f"[{w['start']},{w['stop']}) undefined"
                             for w in fit["windows"])
            print(f"{row['part']} {row['cell']} | {label}: whole run {fit['r2']['mean']:.3f} | {wins}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
