"""The clustering-head paper's remarks on initialisation and curriculum, measured (issue 71, item 5).

Trains the sparse-modular transformer (p = 2, T = 12, k = 5, the paper's budget of 1 000 epochs = 64 000
steps) for 20 seeds under each option of ``SparseModularConfig`` (``init_scale``, ``init="apart"``,
``curriculum``) and counts successes (final validation accuracy >= 0.99) and the kinds of failure with the
rules of ``training_experiments.py clustering-heads`` (stalled: the token embeddings merged, or every layer's
median gradient norm over the last tenth below 1e-4; at chance: final validation accuracy below 1/p + 0.1; else still learning), with
Wilson 95 % intervals, against the default's 7 of 20 (docs/figures/training/clustering-heads.json).

Each run takes the trainer's own steps (``SparseModularTask.minibatch_step`` and ``apply_update``: the
arithmetic of ``fitting.training.train``, bit for bit) but measures the validation accuracy every 500 steps
(the final one, like ``train``'s last record, before the last update) and the gradient norms every
10 steps of the last tenth instead of the full training loss at every step,
which is three quarters of ``train``'s time here; ``--check`` reruns default seeds and compares their final
accuracy with the recorded experiment's. Finished runs are kept in ``--out`` and not redone.

    python docs/examples/clustering_heads_remarks.py --jobs 2 --out docs/figures/training/remarks
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

CONDITIONS = {
    "default": {},
    "init_scale=0.25": {"init_scale": 0.25},
    "init=apart": {"init": "apart"},
    "curriculum=16000": {"curriculum": 16000},
}
EVAL_EVERY = 500
#: token embeddings closer than this at the end have merged (the tied output then cannot separate the classes)
MERGED = 0.01


def wilson(k: int, n: int, z: float = 1.959964) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    phat = k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def one_run(condition: str, seed: int, steps: int, out: str) -> dict:
    from fitting.training import config_for
    from fitting.training.models import make_task
    from fitting.training.threads import torch_threads

    path = Path(out) / f"{condition}_seed{seed}_{steps}.json"
    if path.exists():
        return json.loads(path.read_text())
    cfg = config_for("sparse-modular", p=2, steps=steps, **CONDITIONS[condition])
    task = make_task(cfg, seed)
    start = time.perf_counter()
    E0 = task.embedding()
    curve, grads = [], {g: [] for g in task.layer_groups}
    last_tenth = steps - steps // 10
    with torch_threads(1):
        for t in range(steps):
            task.minibatch_step()
            if t >= last_tenth and t % 10 == 0:
                for g, v in task.grad_norms().items():
                    grads[g].append(v)
            if t + 1 == steps:  # the last step's accuracy before its update, as train() records it
                final = task.evaluate()
            task.apply_update()
            if (t + 1) % EVAL_EVERY == 0:
                curve.append([t + 1, task.evaluate()["val_acc"]])
    E1 = task.embedding()
    median_grads = {g: float(np.median(v)) for g, v in grads.items()}
    val_acc = float(final["val_acc"])
    reached = next((s for s, a in curve if a >= 0.99), None)
    row = {"condition": condition, "seed": seed, "steps": steps, "final_val_acc": val_acc,
           "first_step_at_0.99": reached, "median_grad_norms_last_tenth": median_grads,
           "token_embedding_distance": [float(np.linalg.norm(E0[0] - E0[1])), float(np.linalg.norm(E1[0] - E1[1]))],
           "val_acc_curve": curve, "seconds": time.perf_counter() - start}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row))
    tmp.replace(path)
    return row


def kind_of(row: dict, p: int = 2) -> str:
    """success (final validation accuracy >= 0.99); stalled (the token embeddings merged, closer than
    MERGED, or every layer's median gradient norm over the last tenth below 1e-4); at chance (final
    validation accuracy below 1/p + 0.1, gradients alive); else still learning."""
    if row["final_val_acc"] >= 0.99:
        return "success"
    if row["token_embedding_distance"][1] < MERGED or max(row["median_grad_norms_last_tenth"].values()) < 1e-4:
        return "stalled"
    return "chance (gradients alive)" if row["final_val_acc"] < 1.0 / p + 0.1 else "still learning"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conditions", default=",".join(c for c in CONDITIONS if c != "default"))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=64000)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--check", type=str, default="", help="default seeds to rerun against the recorded "
                                                              "experiment, e.g. 0,2")
    parser.add_argument("--out", default="docs/figures/training/remarks")
    args = parser.parse_args()
    from joblib import Parallel, delayed

    conditions = [c for c in args.conditions.split(",") if c]
    for c in conditions:
        if c not in CONDITIONS:
            raise SystemExit(f"--conditions: {c!r} is not one of {', '.join(CONDITIONS)}")
    check = [int(s) for s in args.check.split(",") if s]
    # seeds interleaved over the conditions: a measurement cut short has as many seeds of each
    jobs = [("default", s) for s in check] + [(c, s) for s in range(args.seeds) for c in conditions]
    rows = Parallel(n_jobs=args.jobs)(delayed(one_run)(c, s, args.steps, args.out) for c, s in jobs)
    for row in rows:
        row["kind"] = kind_of(row)
    recorded = json.loads(Path("docs/figures/training/clustering-heads.json").read_text())
    by_seed = {r["seed"]: r for r in recorded["runs"]}
    summary = {"steps": args.steps, "seeds": args.seeds, "eval_every": EVAL_EVERY,
               "default_recorded": {"successes": recorded["successes"], "seeds": recorded["seeds"],
                                    "wilson95": wilson(recorded["successes"], recorded["seeds"])},
               "check": [{"seed": r["seed"], "final_val_acc": r["final_val_acc"],
                          "recorded_final_val_acc": by_seed[r["seed"]]["final_val_acc"], "kind": r["kind"],
                          "recorded_failure": by_seed[r["seed"]]["failure"]}
                         for r in rows if r["condition"] == "default" and r["seed"] in by_seed],
               "conditions": {}}
    for c in conditions:
        mine = [r for r in rows if r["condition"] == c]
        k = sum(r["kind"] == "success" for r in mine)
        kinds = {}
        for r in mine:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        summary["conditions"][c] = {"changes": CONDITIONS[c], "successes": k, "runs": len(mine),
                                    "wilson95": wilson(k, len(mine)), "kinds": kinds,
                                    "merged_tokens_at_end": sum(r["token_embedding_distance"][1] < MERGED for r in mine),
                                    "seeds_succeeding": [r["seed"] for r in mine if r["kind"] == "success"],
                                    # paired with the default's run of the same seed (the recorded experiment)
                                    "paired_with_default": {
                                        "both": sum(r["kind"] == "success" and by_seed[r["seed"]]["success"]
                                                    for r in mine),
                                        "only_this": sum(r["kind"] == "success" and not by_seed[r["seed"]]["success"]
                                                         for r in mine),
                                        "only_default": sum(r["kind"] != "success" and by_seed[r["seed"]]["success"]
                                                            for r in mine),
                                        "neither": sum(r["kind"] != "success" and not by_seed[r["seed"]]["success"]
                                                       for r in mine)}}
    from scipy.stats import binomtest

    for c, row in summary["conditions"].items():  # McNemar's exact test on the seeds whose outcomes differ
        b, d = row["paired_with_default"]["only_this"], row["paired_with_default"]["only_default"]
        row["paired_with_default"]["mcnemar_exact_p"] = binomtest(b, b + d).pvalue if b + d else 1.0
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({c: {k: v for k, v in s.items() if k in ("successes", "runs", "wilson95", "kinds",
                                                               "paired_with_default")}
                      for c, s in summary["conditions"].items()}, indent=1))
    for row in summary["check"]:
        print(f"check seed {row['seed']}: {row['final_val_acc']} (recorded {row['recorded_final_val_acc']})")


if __name__ == "__main__":
    main()
