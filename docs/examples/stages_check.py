"""Stages of every run in a folder (made by stages_runs.py, or your own), with
the lead time of circuit formation over generalisation at three onset levels
and a null: the same rule on random frequency sets of the circuit's size.

    python docs/examples/stages_check.py runs/stages --out docs/figures/fitting/stages_check

Writes stages_check.json (every run, every stage, the rates with Wilson 95 %
intervals) and stages_check.png (lead times per run).
"""
import argparse
import json
from pathlib import Path

import numpy as np

import fitting
from particles.trajectory import Trajectory


def wilson(k, n, z=1.96):
    if n == 0:
        return [None, None]
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(centre - half, 3), round(centre + half, 3)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--out", default="stages-check")
    ap.add_argument("--null", type=int, default=20, help="random frequency sets per run")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in sorted(Path(args.folder).glob("*.npz")):
        traj = Trajectory.load(path)
        st = fitting.stages(traj)
        K = traj.signals.shape[1]
        row = {"run": path.stem, "arch": traj.meta.get("arch"), "p": traj.p, "d": traj.d,
               "val_acc": float(fitting.network_curves(traj)["val_acc"][1][-1]),
               "grokking": st.grokking, "stages": st.to_dict()["stages"],
               "circuit_frequencies": st.circuit_frequencies, "key_frequencies": st.key_frequencies,
               "lead": {}}
        for level in (0.05, 0.1, 0.2):
            row["lead"][str(level)] = fitting.stages(traj, levels=(level, 0.9)).lead_time
        leads_null = []
        m = len(st.share_frequencies)  # the null draws sets of the size the share is read over
        for _ in range(args.null if m < K else 0):
            ks = sorted(rng.choice(np.arange(1, K + 1), size=m, replace=False).tolist())
            lt = fitting.stages(traj, frequencies=ks).lead_time
            leads_null.append(None if lt is None else lt["steps"])
        row["null_leads"] = leads_null
        rows.append(row)
        print(path.stem, (st.grokking or {}).get("sentence", "-"), "| lead", st.lead_time, flush=True)
    grokked = [r for r in rows if r["grokking"] and r["grokking"]["grokked"]]
    not_gen = [r for r in rows if not r["stages"][3]["found"]]
    lead_pos = sum(1 for r in grokked if r["lead"]["0.1"] and r["lead"]["0.1"]["low"] > 0)
    null_total = sum(len([v for v in r["null_leads"]]) for r in grokked)
    null_pos = sum(1 for r in grokked for v in r["null_leads"] if v is not None and v > 0)
    summary = {
        "runs": len(rows), "grokked": len(grokked), "not_generalised": len(not_gen),
        "circuit_first_on_grokked": {"k": lead_pos, "n": len(grokked), "wilson95": wilson(lead_pos, len(grokked))},
        "null_random_frequency_sets": {"k": null_pos, "n": null_total, "share": None if not null_total
                                       else round(null_pos / null_total, 3), "wilson95": wilson(null_pos, null_total),
                                       "what": "circuit formation placed and starting before generalisation with "
                                               "random frequency sets of the circuit's size"},
        "generalisation_reported_on_not_generalised": sum(1 for r in not_gen if r["stages"][3]["found"]),
    }
    (out / "stages_check.json").write_text(json.dumps({"summary": summary, "runs": rows}, indent=1))
    print(json.dumps(summary, indent=1))
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7.5, 0.45 * len(rows) + 1.5), layout="constrained")
    ax = fig.add_subplot()
    labelled = set()

    def label(text):
        if text in labelled:
            return None
        labelled.add(text)
        return text

    for i, r in enumerate(rows):
        for level, colour in (("0.05", "tab:gray"), ("0.1", "tab:blue"), ("0.2", "tab:cyan")):
            lt = r["lead"][level]
            if lt is not None:
                ax.errorbar(lt["steps"], i, xerr=[[lt["steps"] - lt["low"]], [lt["high"] - lt["steps"]]], fmt="o",
                            color=colour, ms=4, label=label(f"onset at {float(level):.0%} of each rise"))
        nl = [v for v in r["null_leads"] if v is not None]
        if nl:
            ax.plot(nl, [i - 0.25] * len(nl), "|", color="tab:red", alpha=0.5,
                    label=label("null: random frequency sets (10 %)"))
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{r['run']} ({'grokked' if r['grokking'] and r['grokking']['grokked'] else 'not grokked' if r['grokking'] else 'did not generalise'})" for r in rows], fontsize="small")
    ax.set_ylabel("run (architecture, p, d, seed)")
    ax.set_xlabel("lead of circuit formation over generalisation (steps)\n> 0: the circuit starts forming first")
    if labelled:
        fig.legend(fontsize="small", loc="outside upper center", ncol=2)
    fig.savefig(out / "stages_check.png", dpi=110)


if __name__ == "__main__":
    main()
