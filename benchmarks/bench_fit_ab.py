"""The ODE fit of this tree against another checkout of the project, in one
run, on the polynomial dysts systems (``bench_dysts``): for every system,
noise level and seed, the default ``ODEModel(library=degree)`` is fitted
in each tree, in that tree's own fresh process, and so is PySINDy's default
``SINDy()`` in the same process; the processes alternate (this, other,
other, this, ...) and each case keeps its best CPU time over the rounds.

Reported per tree: the median over cases of (our fit time / PySINDy's),
both in the same process; and between the trees, case by case: the ratio
of derivative errors (this / other), support F1, and the fits whose status
("converged", "misfit", "not converged", ...) changed.

    pip install '.[bench]'
    git worktree add /tmp/base <commit>
    python benchmarks/bench_fit_ab.py --other /tmp/base [--noise 0.01 0.05] [--seeds 1] [--rounds 2] [--json out.json]

Times are process CPU times (one BLAS thread), so a neighbour slows them
less than wall times; ratios inside one process cancel most of what is
left. The trajectories come from ``bench_dysts``'s cache (this tree's
``benchmarks/.cache``), so both trees fit the same data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, sys.argv[2])  # this tree's benchmarks folder: the systems and their cached data
import fitting
import bench_dysts as bd
from threadpoolctl import threadpool_limits
cases = json.loads(sys.argv[1])
systems = {s.name: s for s in bd.polynomial_systems(sorted({c[0] for c in cases}))}
clock = time.process_time
out = []
with threadpool_limits(1), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, noise, seed, repeats in cases:
        s = systems[name]
        t, x = s.data()
        n = int(bd.FIT_SHARE * len(t))
        rms = np.sqrt(np.mean(x[:n] ** 2, axis=0))
        xf = x[:n] + noise * rms * np.random.default_rng(seed).standard_normal((n, s.K))
        ours = fd = float("inf")
        for _ in range(repeats):
            t0 = clock(); model = fitting.ODEModel(library=s.degree).fit(xf, t[:n]); ours = min(ours, clock() - t0)
            t0 = clock(); bd.PySINDyFit("fd", s.degree, s.K).fit(xf, t[:n]); fd = min(fd, clock() - t0)
        truth = s.f(x[n:])
        err = float(np.linalg.norm(model.predict(x[n:]) - truth) / np.linalg.norm(truth))
        true, found = s.coef != 0, np.asarray(model.coef_) != 0
        tp = int(np.sum(true & found)); prec, rec = tp / max(int(found.sum()), 1), tp / int(true.sum())
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        status = getattr(model, "fit_info_", {}).get("weighting", {}).get("status")
        out.append({"system": name, "noise": noise, "seed": seed, "ours_seconds": ours, "fd_seconds": fd,
                    "derivative_error": err, "f1": f1, "status": status})
print(json.dumps(out))
"""


def run(tree: Path, cases: list) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases), str(HERE)], capture_output=True,
                          text=True, env=env, cwd=tree, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def merge(rounds: list[list[dict]]) -> list[dict]:
    """Case by case, the best times over rounds (the fits themselves are the same every round)."""
    out = [dict(r) for r in rounds[0]]
    for other in rounds[1:]:
        for row, again in zip(out, other):
            row["ours_seconds"] = min(row["ours_seconds"], again["ours_seconds"])
            row["fd_seconds"] = min(row["fd_seconds"], again["fd_seconds"])
    return out


def summary(this: list[dict], other: list[dict]) -> tuple[str, dict]:
    lines, numbers = [], {}
    for noise in sorted({r["noise"] for r in this}):
        a = [r for r in this if r["noise"] == noise]
        b = [r for r in other if r["noise"] == noise]
        ta = np.array([r["ours_seconds"] / r["fd_seconds"] for r in a])
        tb = np.array([r["ours_seconds"] / r["fd_seconds"] for r in b])
        err = np.array([x["derivative_error"] / y["derivative_error"] for x, y in zip(a, b)])
        changed = [f"{x['system']} seed {x['seed']}: {y['status']} -> {x['status']}" for x, y in zip(a, b)
                   if x["status"] != y["status"]]
        f1a, f1b = np.mean([r["f1"] for r in a]), np.mean([r["f1"] for r in b])
        numbers[str(noise)] = {"cases": len(a), "time_ratio_to_pysindy_this": float(np.median(ta)),
                               "time_ratio_to_pysindy_other": float(np.median(tb)),
                               "error_ratio_median": float(np.median(err)), "error_ratio_min": float(err.min()),
                               "error_ratio_max": float(err.max()), "f1_this": float(f1a), "f1_other": float(f1b),
                               "status_changes": changed}
        lines.append(f"noise {noise:g} ({len(a)} cases): our fit time / PySINDy's, median per case: this "
                     f"{np.median(ta):.2f}x, other {np.median(tb):.2f}x; derivative error this / other: median "
                     f"{np.median(err):.3f} ({err.min():.2f}-{err.max():.2f}); F1 {f1b:.3f} -> {f1a:.3f}; "
                     f"{len(changed)} status changes" + (": " + "; ".join(changed) if changed else ""))
    return "\n".join(lines), numbers


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other", required=True, help="another checkout of the project (the baseline)")
    parser.add_argument("--noise", type=float, nargs="*", default=[0.01, 0.05])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=1, help="every N-th polynomial system")
    parser.add_argument("--repeats", type=int, default=3, help="fits per case and round (best of)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the two trees, alternating")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    other = Path(args.other).resolve()
    if not (other / "fitting" / "__init__.py").is_file():
        parser.exit(2, f"bench_fit_ab.py: --other must be a checkout of the project, got {args.other}\n")
    sys.path.insert(0, str(HERE))
    import bench_dysts

    names = [s.name for s in bench_dysts.polynomial_systems()][:: args.every]
    cases = [[n, noise, args.first_seed + s, args.repeats] for n in names for noise in args.noise
             for s in range(args.seeds)]
    trees = {"this": HERE.parent, "other": other}
    results: dict[str, list] = {"this": [], "other": []}
    for k in range(args.rounds):
        order = ("this", "other") if k % 2 == 0 else ("other", "this")
        for name in order:
            results[name].append(run(trees[name], cases))
            print(f"round {k + 1}: {name} done", flush=True)
    this, base = merge(results["this"]), merge(results["other"])
    text, numbers = summary(this, base)
    print(text)
    if args.json:
        from timing import write_json

        write_json(args.json, {"command": "python " + " ".join(sys.argv), "other": str(other),
                               "summary": numbers, "this": this, "other_rows": base})


if __name__ == "__main__":
    main()
