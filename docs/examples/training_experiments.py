"""Three training experiments of the torch backend (needs the [torch] extra).

    python docs/examples/training_experiments.py survival --out docs/figures/training
    python docs/examples/training_experiments.py weight-decay --out docs/figures/training
    python docs/examples/training_experiments.py clustering-heads --out docs/figures/training

Each writes ``<name>.json`` (all measured numbers) and figures into --out;
``--quick`` runs a tiny version (CI). Runs are spread over the cores with
joblib, one torch thread per worker.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from particles.core.figures import save_figure  # noqa: E402


def _train(config, seed, path):
    """One run; long runs write a checkpoint every 2000 steps and continue
    from it when the experiment is started again after an interruption."""
    import sys

    import torch

    from fitting.training import train

    torch.set_num_threads(1)
    every = 2000 if config.steps > 4000 else None

    def report(done, total):
        if every and (done % every == 0 or done == total):
            print(f"seed {seed}: step {done} of {total}", file=sys.stderr, flush=True)

    return train(config, seed, path, checkpoint_every=every, resume=every is not None, callback=report)


def _train_batched(config, seeds, out: Path, jobs: int):
    """The seeds as ``jobs`` stacks in as many processes (each with the
    cores // jobs torch threads); long runs checkpoint every 2000 steps and
    resume."""
    from fitting.training import train_batched

    every = 2000 if config.steps > 4000 else None
    return train_batched(config, list(seeds), out, n_jobs=min(jobs, len(seeds)), checkpoint_every=every,
                         resume=every is not None)


def _runs(config, seeds, out: Path, jobs: int, batched: bool = False):
    """Train one run per seed; a run whose file is already there (same config) is loaded, not retrained.
    ``batched`` trains the missing seeds with ``train_batched`` (the same runs; in float32 with 2 processes x 1
    thread, 2.3x the speed of the float64 sequential loop; docs/training.md)."""
    from particles import Trajectory

    out.mkdir(parents=True, exist_ok=True)
    paths = {s: out / f"{config.model}_seed{s}.npz" for s in seeds}
    done = {}
    for s, path in paths.items():
        if path.exists():
            t = Trajectory.load(path)
            if t.meta.get("config") == json.loads(json.dumps(config.to_dict())):
                done[s] = t
    todo = [s for s in seeds if s not in done]
    if batched and todo:
        trained = _train_batched(config, todo, out, jobs)
    else:
        trained = Parallel(n_jobs=jobs)(delayed(_train)(config, s, paths[s]) for s in todo)
    for s, t in zip(todo, trained):
        done[s] = t
    return [done[s] for s in seeds]


def _first_reach(series: np.ndarray, threshold: float) -> int | None:
    hit = np.flatnonzero(series >= threshold)
    return int(hit[0]) if hit.size else None


# ---------------------------------------------------------------- survival
def survival(args) -> dict:
    from fitting import (fitness_correlation, initial_gradient, survival_classifier, survival_ode_analysis,
                         survival_rate, surviving_frequencies)
    from fitting.ode.figures import plot_coefficients
    from fitting.signals.figures import plot_signals
    from fitting.training import config_for

    seeds = range(4 if args.quick else 32)
    steps = 300 if args.quick else args.steps
    cfg = config_for("survival-mlp", steps=steps, embedding_seed=0, dtype=args.dtype,
                     **({"p": 23, "d": 32} if args.quick else {}))
    runs = _runs(cfg, seeds, args.out / "survival_runs", args.jobs, batched=args.batched)
    survived = np.stack([surviving_frequencies(t) for t in runs])
    settled = []
    for t in runs:  # first step from which the survivor set no longer changes
        sets = [tuple(surviving_frequencies(t.signals[i], dc=t.scalars["signal_dc"][i])) for i in range(len(t.steps))]
        change = [i for i in range(1, len(sets)) if sets[i] != sets[i - 1]]
        settled.append(int(change[-1]) if change else 0)
    s0 = runs[0].signals[0]  # the same initial embedding in every run
    rate = survival_rate(survived)
    grads = np.stack([initial_gradient(t.signals, step=4) for t in runs])
    s0_all = np.stack([t.signals[0] for t in runs])
    try:
        r, pval = fitness_correlation(rate, s0)
    except ValueError as exc:  # e.g. every frequency with the same rate in a tiny run
        r, pval = None, str(exc)
    try:
        svm = survival_classifier(np.column_stack([s0_all.ravel(), grads.ravel()]), survived.ravel(), rng=0)
        svm_result = {"test_accuracy": svm.test_accuracy, "majority_baseline": svm.majority_baseline,
                      "n_test": svm.n_test}
    except ValueError as exc:
        svm_result = {"error": str(exc)}
    fit_steps = min(1000, steps - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analyses = [survival_ode_analysis(t, n_steps=fit_steps) for t in runs]
    result = {
        "config": cfg.to_dict(), "runs": len(runs),
        "survivors_per_run": survived.sum(axis=1).tolist(),
        "survivor_count_range": [int(survived.sum(axis=1).min()), int(survived.sum(axis=1).max())],
        "survivor_set_settled_by_step": {"median": float(np.median(settled)), "max": int(max(settled))},
        "final_val_acc": [float(t.scalars["val_acc"][-1]) for t in runs],
        "pearson_rate_vs_initial_signal": [r, pval],
        "svm_signal_gradient": svm_result,
        "ode_first_steps": fit_steps,
        "lasso_r2": [a.lasso_r2 for a in analyses], "ols_r2": [a.ols_r2 for a in analyses],
        "lasso_r2_median": float(np.median([a.lasso_r2 for a in analyses])),
        "ols_r2_median": float(np.median([a.ols_r2 for a in analyses])),
        "trajectory_r2_in_sample_median": float(np.median([a.trajectory_r2 for a in analyses
                                                           if a.trajectory_r2 is not None])),
        "heldout_r2_median": (float(np.median([a.heldout_r2 for a in analyses if a.heldout_r2 is not None]))
                              if any(a.heldout_r2 is not None for a in analyses) else None),
        "lasso_stable_share": float(np.mean([a.stable for a in analyses])),
    }
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(s0, rate)
    ax.set_xlabel("initial signal S_k(0)")
    ax.set_ylabel(f"survival rate over {len(runs)} runs")
    ax.set_title("survival vs initial signal" + ("" if r is None else f": Pearson r = {r:.2f}"))
    save_figure(fig, args.out / "survival_rate_vs_signal.png", dpi=110)
    save_figure(plot_signals(runs[0].signals, runs[0].steps, survived[0], title="survival MLP, run 0"),
                args.out / "survival_signals.png", dpi=110)
    lasso = analyses[0].lasso
    save_figure(plot_coefficients(lasso, [f"S{k}" for k in range(1, lasso.n_features_in_ + 1)]),
                args.out / "survival_lasso_coefficients.png", dpi=110)
    return result


# ---------------------------------------------------------------- weight decay
def weight_decay(args) -> dict:
    from fitting.training import config_for
    from particles import classify_structure, modular_addition

    decays = (0.0, 0.3, 0.6, 1.0)
    seeds = range(3 if args.quick else 20)
    steps = 300 if args.quick else 3000
    dataset = modular_addition(17)
    table = {}
    for wd in decays:
        runs = _runs(config_for("constant-attention", weight_decay=wd, steps=steps), seeds,
                     args.out / f"wd_{wd}", args.jobs)
        classes = [classify_structure(t.final, dataset) for t in runs]
        acc = [float(t.scalars["val_acc"][-1]) for t in runs]
        table[str(wd)] = {"val_acc_mean": float(np.mean(acc)), "val_acc_min": float(np.min(acc)),
                          "classes": {c: classes.count(c) for c in sorted(set(classes))}}
    return {"steps": steps, "seeds": len(seeds), "by_weight_decay": table}


# ---------------------------------------------------------------- clustering heads
def clustering_heads(args) -> dict:
    from fitting.sandbox import within_class_share
    from fitting.training import config_for

    seeds = range(args.first_seed, args.first_seed + (2 if args.quick else args.seeds))
    steps = 300 if args.quick else args.steps
    cfg = config_for("sparse-modular", p=2, steps=steps, snapshot_every=32)
    runs = _runs(cfg, seeds, args.out / "clustering_runs", args.jobs)
    steps_per_epoch = cfg.n_train // cfg.batch_size
    rows, residual_shares = [], []
    for seed, t in zip(seeds, runs):
        labels = np.array(t.meta["probe_labels"])
        cluster_epochs, final_ratio, half_epochs = {}, {}, {}
        for name in ("sequence_embedding", "attention_output"):
            ratios = within_class_share(t.snapshot_arrays[name], labels)  # the sandbox's stage rule reads the same
            if name == "sequence_embedding":
                residual_shares.append(ratios)
            for bound, out in ((0.05, cluster_epochs), (0.5, half_epochs)):
                hit = np.flatnonzero(ratios < bound)
                out[name] = None if not hit.size else float(t.snapshot_steps[hit[0]] / steps_per_epoch)
            final_ratio[name] = float(ratios[-1])
        full_step = _first_reach(t.scalars["val_acc"], 1.0)
        loss = t.scalars["train_loss"]
        spikes = [int(i) for i in range(1, len(loss)) if loss[i] > 2 * loss[i - 1] and loss[i] > 0.05]
        grad_names = [n for n in t.scalars if n.startswith("grad_norm_")]
        rows.append({
            "seed": seed, "success": bool(t.scalars["val_acc"][-1] >= 0.99),
            "final_val_acc": float(t.scalars["val_acc"][-1]),
            "cluster_epoch": cluster_epochs, "half_cluster_epoch": half_epochs,
            "final_within_class_share": final_ratio,
            "full_accuracy_epoch": None if full_step is None else full_step / steps_per_epoch,
            "loss_spikes": [{"step": s, "loss": float(loss[s]),
                             "grad_norms": {n: float(t.scalars[n][s]) for n in grad_names}} for s in spikes[:5]],
            "n_loss_spikes": len(spikes),
            # failure diagnosis: the last tenth of the run
            "final_train_loss": float(np.median(loss[-len(loss) // 10:])),
            "final_grad_norms": {n[len("grad_norm_"):]: float(np.median(t.scalars[n][-len(loss) // 10:]))
                                 for n in grad_names},
            "token_embedding_distance": [float(np.linalg.norm(t.embeddings[i][0] - t.embeddings[i][1]))
                                         for i in (0, -1)],
        })
        row = rows[-1]
        grads = max(row["final_grad_norms"].values()) if grad_names else None
        chance = 1.0 / cfg.p + 0.1
        row["failure"] = (None if row["success"] else
                          "stalled (gradients below 1e-4 at chance loss)" if grads is not None and grads < 1e-4
                          else "noisy plateau at chance (gradients alive)" if row["final_val_acc"] < chance
                          else "still learning (above chance, below 0.99 at the end)")
        full = row["full_accuracy_epoch"]
        for key, epochs in (("stage_order", cluster_epochs), ("stage_order_half", half_epochs)):
            clustered = epochs["sequence_embedding"]
            if not row["success"]:
                row[key] = None
            elif clustered is None:
                row[key] = "accuracy without residual clustering"
            else:
                row[key] = ("clustering first" if clustered < full else
                            "accuracy first" if clustered > full else "same snapshot")
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax_acc, ax_share = fig.subplots(1, 2)
    kinds = {"success": ("C2", 0.8, 1), "still learning": ("C1", 0.8, 2), "chance (gradients alive)": ("0.6", 0.8, 0),
             "stalled": ("C3", 1.6, 3)}  # colour, width, drawing order (stalled on top: it is flat at chance)
    successes = [i for i, r in enumerate(rows) if r["success"]]
    seed_colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, max(len(successes), 1)))
    for seed, t, row, share in zip(seeds, runs, rows, residual_shares):
        kind = ("success" if row["success"] else "stalled" if row["failure"].startswith("stalled")
                else "still learning" if row["failure"].startswith("still") else "chance (gradients alive)")
        colour, width, order = kinds[kind]
        v = t.scalars["val_acc"]
        every = max(1, len(v) // 2000)
        ax_acc.plot(np.arange(len(v))[::every] / steps_per_epoch, v[::every], color=colour, lw=width, zorder=order)
        if row["success"]:
            c = seed_colours[successes.index(seeds.index(seed))]
            ax_share.semilogy(np.asarray(t.snapshot_steps) / steps_per_epoch, share, lw=0.8, color=c,
                              label=f"seed {seed}")
            if row["full_accuracy_epoch"] is not None:
                ax_share.axvline(row["full_accuracy_epoch"], color=c, lw=0.6, ls="--")
    for kind, (colour, width, _) in kinds.items():
        ax_acc.plot([], [], color=colour, lw=width, label=kind)
    ax_acc.legend(fontsize=7, title="seed outcome", title_fontsize=7)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("validation accuracy")
    ax_acc.set_title("every seed", fontsize=9)
    ax_share.axhline(0.5, color="k", lw=0.5, ls=":", label="clustering thresholds 0.5 / 0.05")
    ax_share.axhline(0.05, color="k", lw=0.5, ls=":")
    ax_share.plot([], [], color="0.5", lw=0.6, ls="--", label="full accuracy (seed's colour)")
    ax_share.set_xlabel("epoch")
    ax_share.set_ylabel("within-class share (residual)")
    ax_share.set_title("successful seeds (colours: seeds, not outcomes)", fontsize=9)
    if any(r["success"] for r in rows):
        ax_share.legend(fontsize=7)
    save_figure(fig, args.out / "clustering_heads.png", dpi=110)

    from effective_theory import wilson_interval

    wins = sum(r["success"] for r in rows)
    low, high = wilson_interval(np.array([wins]), len(rows))
    orders = [r["stage_order"] for r in rows if r["success"]]
    halves = [r["stage_order_half"] for r in rows if r["success"]]
    return {"steps": steps, "epochs": steps / steps_per_epoch, "steps_per_epoch": steps_per_epoch,
            "config": cfg.to_dict(), "seeds": len(rows), "threshold": 0.05,
            "measured_how": {
                "success": "final validation accuracy >= 0.99",
                "residual_clustering": "first snapshot (every 32 steps) at which the within-class share of "
                                       "variance of the normalised sequence-embedding (residual) vectors of "
                                       "the probe sequences, grouped by label, is below 0.05 (stage_order); "
                                       "below 0.5 for stage_order_half",
                "failure": "stalled if every layer's median gradient norm over the last tenth of the run "
                           "is below 1e-4; else at chance if the final validation accuracy is below 1/p + 0.1; "
                           "else still learning",
                "full_accuracy": "first step at which validation accuracy reaches 1.0"},
            "successes": int(wins), "success_rate": wins / len(rows),
            "success_rate_wilson95": [float(low[0]), float(high[0])],
            "stage_orders": {o: orders.count(o) for o in sorted(set(orders))},
            "stage_orders_half": {o: halves.count(o) for o in sorted(set(halves))},
            "failures": {f: [r["failure"] for r in rows].count(f)
                         for f in sorted({r["failure"] for r in rows if r["failure"]})},
            "runs": rows}


EXPERIMENTS = {"survival": survival, "weight-decay": weight_decay,
               "clustering-heads": clustering_heads}


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an int >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an int >= {low}, got {value}")
        return value
    return parse


def main() -> None:
    from particles.core.io import atomic_write_text

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiment", choices=list(EXPERIMENTS))
    parser.add_argument("--out", type=Path, default=Path("embdyn-training"))
    parser.add_argument("--steps", type=_int_at_least(2), default=3000, help="steps of the survival / clustering runs")
    parser.add_argument("--seeds", type=_int_at_least(1), default=20, help="seeds of the clustering-heads runs")
    parser.add_argument("--first-seed", type=_int_at_least(0), default=0,
                        help="first seed of the clustering-heads runs (to split a long run over processes)")
    parser.add_argument("--jobs", type=_int_at_least(1), default=2)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                        help="survival runs' dtype (float64: the paper's setting; float32 survivor sets drift from "
                             "float64's after ~10 000 steps, docs/training.md)")
    parser.add_argument("--batched", action="store_true",
                        help="train the survival seeds with train_batched, --jobs stacks")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result = EXPERIMENTS[args.experiment](args)
    text = json.dumps(result, indent=1)
    atomic_write_text(args.out / f"{args.experiment}.json", text)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
