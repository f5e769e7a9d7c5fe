"""Does the force law explain the constant-attention network's training?
(docs/force_fit.md, "The constant-attention network").

For each weight decay and seed: train the network of ``embdyn compare-network``
(p = 17, d = 2, 80 % of the unordered pairs, AdamW on every parameter) with
the loss gradient recorded at every snapshot; fit minus the gradient with
the built-in law's terms, nested: clustering alone (attraction + repulsion),
plus alignment (same and other class), plus decay; each run's G divided by
its RMS (normalize="rms"), so strengths are per unit RMS force. Then run the
particle model from the network's snapshots at a few training steps, once
with the fitted law (alignment halves tied, so it is a ForceParams) and once
with the preset law of compare-network, and compare the structure class it
ends in with the network's final class.

Each run's result is one JSON file in ``OUT/runs`` (a rerun skips the runs
already there); ``OUT/force_fit_network.json`` summarises them with
intervals, and the figures go next to it.

    python docs/examples/force_fit_network.py --out docs/figures/force_fit/network          # 4 x 20 runs
    python docs/examples/force_fit_network.py --quick --out /tmp/ffn                        # CI
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import particles as P
from fitting.training import ConstantAttentionConfig, train
from fitting.training.configs import training_set
from fitting.forcefit import ForceLawFit
from effective_theory.montecarlo import mean_interval as mean_ci, wilson_interval
from fitting.ode import FitQualityWarning

#: the nested models: name -> terms
MODELS = {
    "clustering": ("attraction", "repulsion"),
    "+ alignment": ("attraction", "repulsion", "alignment_same", "alignment_other"),
    "+ decay": ("attraction", "repulsion", "alignment_same", "alignment_other", "wd"),
}
PRESET = "clustering-alignment"


def start_law() -> P.ForceParams:
    """The preset's law as the search's start: its ranges and axial alignment,
    wd on the particles (the fit measures the softening eps freely)."""
    pr = P.preset(PRESET).params
    return P.ForceParams(k_a=pr.k_a, sig_a=pr.sig_a, k_r=pr.k_r, sig_r=pr.sig_r, lam=pr.lam, sig_t=pr.sig_t, eps=1.0,
                         wd=0.0, alignment_form=pr.alignment_form)


#: wide boxes: the network's best ranges lie outside the preset's /10..x10 (a first run hit those bounds)
BOUNDS = {"sig_a": (0.03, 30.0), "sig_r": (0.05, 100.0), "sig_t": (0.05, 5.0), "eps": (0.01, 100.0)}


def one_run(wd: float, seed: int, steps: int, snapshot_every: int, n_bootstrap: int, sim_starts: list[int]) -> dict:
    config = ConstantAttentionConfig(weight_decay=wd, steps=steps, snapshot_every=snapshot_every)
    t0 = time.perf_counter()
    traj = train(config, seed, gradients=True)
    seconds_train = time.perf_counter() - t0
    data = training_set(traj.meta)
    full = P.modular_addition(config.p)
    final_class = P.classify_structure(traj.final, full)
    out = {"wd": wd, "seed": seed, "steps": steps, "snapshots": len(traj), "network_class": final_class,
           "train_seconds": seconds_train, "fits": {}, "warnings": []}
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitQualityWarning)
        law = start_law()
        for name, terms in MODELS.items():  # each model starts from the ranges of the one before
            f = ForceLawFit(law, terms=terms, bounds=BOUNDS, normalize="rms", n_bootstrap=n_bootstrap,
                            windows=6, seed=seed).fit(traj)
            out["fits"][name] = {"r2": f.r2_, "coef": dict(zip(f.terms_, map(float, f.coef_))), "ranges": f.ranges_,
                                 "rms_forces": f.rms_forces_,
                                 "intervals": f.intervals_, "shares": f.shares_,
                                 "windows": [{"start": w["start"], "stop": w["stop"], "r2": w["r2"]}
                                             for w in f.windows_]}
            law = law.replace(**f.ranges_)
        tied = ForceLawFit(law, tie_alignment=True, bounds=BOUNDS, normalize="rms", n_bootstrap=0,
                           seed=seed).fit(traj)
    out["warnings"] = sorted({str(w.message) for w in caught})
    out["fit_seconds"] = time.perf_counter() - t0
    law = tied.to_law()
    out["tied_law"] = law.to_dict()
    preset_law = P.preset(PRESET).params.replace(wd=wd)
    pr = P.preset(PRESET)
    sims = []
    for start in sim_starts:
        k = int(np.searchsorted(traj.snapshot_steps, start))
        x0 = traj.embeddings[min(k, len(traj) - 1)]
        row = {"start_step": int(traj.snapshot_steps[min(k, len(traj) - 1)])}
        for label, use in (("fitted", law), ("preset", preset_law)):
            try:
                end = P.simulate(x0, data, use, steps=pr.steps, dt=pr.dt, record_every=pr.steps).final
                row[label] = P.classify_structure(end, full)
            except (FloatingPointError, ValueError) as exc:  # a blow-up counts as its own outcome
                row[label] = "diverged"
                row[f"{label}_error"] = type(exc).__name__
        sims.append(row)
    out["simulations"] = sims
    return out


def wilson(k: int, n: int) -> list[float]:
    lo, hi = wilson_interval(np.array([k]), n)
    return [float(lo[0]), float(hi[0])]


def summarise(runs: list[dict]) -> dict:
    out = {"models": {name: list(terms) for name, terms in MODELS.items()}, "by_wd": []}
    for wd in sorted({r["wd"] for r in runs}):
        mine = [r for r in runs if r["wd"] == wd]
        row = {"wd": wd, "runs": len(mine),
               "network_classes": {c: sum(r["network_class"] == c for r in mine)
                                   for c in sorted({r["network_class"] for r in mine})}, "r2": {}, "r2_windows": {}}
        for name in MODELS:
            row["r2"][name] = mean_ci([r["fits"][name]["r2"] for r in mine])
            n_win = len(mine[0]["fits"][name]["windows"])
            row["r2_windows"][name] = [mean_ci([r["fits"][name]["windows"][i]["r2"] for r in mine])
                                       for i in range(n_win)]
        full = mine[0]["fits"]["+ decay"]
        row["coef"] = {t: mean_ci([r["fits"]["+ decay"]["coef"][t] for r in mine]) for t in full["coef"]}
        row["coef_median"] = {t: float(np.median([r["fits"]["+ decay"]["coef"][t] for r in mine])) for t in full["coef"]}
        row["rms_forces"] = {t: mean_ci([r["fits"]["+ decay"]["rms_forces"][t] for r in mine]) for t in full["coef"]}
        row["ranges"] = {t: mean_ci([np.log10(r["fits"]["+ decay"]["ranges"][t]) for r in mine])
                         for t in full["ranges"]}
        row["shares"] = {t: mean_ci([r["fits"]["+ decay"]["shares"][t] for r in mine]) for t in full["shares"]}
        sims = {}
        for start in sorted({s["start_step"] for r in mine for s in r["simulations"]}):
            cell = {}
            for label in ("fitted", "preset"):
                hits = [s[label] == r["network_class"] for r in mine for s in r["simulations"]
                        if s["start_step"] == start]
                cell[label] = {"agree": int(sum(hits)), "n": len(hits), "rate": float(np.mean(hits)),
                               "interval": wilson(sum(hits), len(hits)),
                               "classes": {c: sum(s[label] == c for r in mine for s in r["simulations"]
                                                  if s["start_step"] == start)
                                           for c in sorted({s[label] for r in mine for s in r["simulations"]})}}
            sims[str(start)] = cell
        row["simulations"] = sims
        out["by_wd"].append(row)
    return out


def plot(summary: dict, folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    rows = summary["by_wd"]
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.2), sharey=True, squeeze=False)
    for ax, row in zip(axes[0], rows):
        for name, series in row["r2_windows"].items():
            mids = np.arange(len(series)) + 0.5
            mean = np.array([s["mean"] if s["mean"] is not None else np.nan for s in series])
            lo = np.array([s["ci"][0] if s["ci"][0] is not None else np.nan for s in series])
            hi = np.array([s["ci"][1] if s["ci"][1] is not None else np.nan for s in series])
            ax.errorbar(mids, mean, yerr=[mean - lo, hi - mean], marker="o", capsize=3, label=name, alpha=0.85)
        ax.set_title(f"weight decay {row['wd']:g} ({row['runs']} seeds)\nmean, t 95 % interval; "
                     "below -0.3 not shown", fontsize=9)
        ax.set_xlabel("window of training (first to last sixth)")
        ax.set_ylim(-0.3, 1.0)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("R$^2$ of the embedding gradient")
    axes[0, -1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    paths.append(folder / "force_fit_network_r2.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    wds = [r["wd"] for r in rows]
    for name in rows[0]["ranges"]:
        m = [r["ranges"][name]["mean"] for r in rows]
        e = [[r["ranges"][name]["mean"] - r["ranges"][name]["ci"][0] for r in rows],
             [r["ranges"][name]["ci"][1] - r["ranges"][name]["mean"] for r in rows]]
        axes[0].errorbar(wds, m, yerr=e, marker="o", capsize=3, label=name)
    pred = [np.log10(np.hypot(0.1, 1.0 / w)) if w > 0 else np.nan for w in wds]
    axes[0].plot(wds, pred, "k--", label="eps the classifier variant assumes")
    axes[0].set_xlabel("weight decay")
    axes[0].set_ylabel("log10 fitted range")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[0].grid(alpha=0.3)
    for name in rows[0]["rms_forces"]:
        m = [r["rms_forces"][name]["mean"] for r in rows]
        e = [[r["rms_forces"][name]["mean"] - r["rms_forces"][name]["ci"][0] for r in rows],
             [r["rms_forces"][name]["ci"][1] - r["rms_forces"][name]["mean"] for r in rows]]
        axes[1].errorbar(wds, m, yerr=e, marker="o", capsize=3, label=name)
    axes[1].set_xlabel("weight decay")
    axes[1].set_ylabel("RMS force of the fitted term\n(unit: the RMS gradient)")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[1].grid(alpha=0.3)
    fig.tight_layout()
    paths.append(folder / "force_fit_network_params.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--wd", type=float, nargs="+", default=[0.0, 0.3, 0.6, 1.0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--snapshot-every", type=int, default=25)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="2 weight decays x 2 seeds x 300 steps")
    ap.add_argument("--summarise", action="store_true", help="only summarise the runs already in OUT/runs")
    args = ap.parse_args(argv)
    if args.quick:
        args.wd, args.seeds, args.steps, args.snapshot_every, args.bootstrap = [0.0, 1.0], 2, 300, 10, 20
    starts = [0, args.steps // 4, args.steps // 2]
    runs_dir = args.out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for wd in args.wd:
        for seed in range(args.seeds):
            path = runs_dir / f"wd{wd:g}_seed{seed}.json"
            if path.exists():
                runs.append(json.loads(path.read_text()))
                continue
            if args.summarise:
                continue
            result = one_run(wd, seed, args.steps, args.snapshot_every, args.bootstrap, starts)
            path.write_text(json.dumps(result, indent=1))
            runs.append(result)
            print(f"wd {wd:g} seed {seed}: R2 " + ", ".join(f"{k} {v['r2']:.3f}" for k, v in result["fits"].items())
                  + f" ({result['train_seconds'] + result['fit_seconds']:.0f} s)", file=sys.stderr)
    summary = summarise(runs)
    summary["command"] = "python docs/examples/force_fit_network.py " + " ".join(argv if argv is not None
                                                                                  else sys.argv[1:])
    summary["settings"] = {"wd": args.wd, "seeds": args.seeds, "steps": args.steps,
                           "snapshot_every": args.snapshot_every, "bootstrap": args.bootstrap, "preset": PRESET,
                           "normalize": "rms (each run's G divided by its RMS)", "sim_starts": starts}
    (args.out / "force_fit_network.json").write_text(json.dumps(summary, indent=1))
    plot(summary, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
