"""Check the own-run path on runs made by docs/examples/own_network.py
(docs/bring_your_own_run.md, docs/fitting.md key frequencies):

- key frequencies against the frequencies named by eye from each run's final
  spectrum (``--by-eye FILE``: {"run": {"clear": [...], "ambiguous": [...]}},
  written before the rule was run on the run), with the rule on the initial
  state beside it (the chance level: nothing should stand out at random
  initialisation) and the survival paper's rule;
- the same fit through the command line, the Python API and the explorer
  (LinearODE(stable=True) on the first half, forecast over the second): the
  same columns and the same numbers;
- the force-law fit from the command line on runs recorded with gradients
  (the training set read from the file), timed.

    python docs/examples/own_network_check.py RUN_DIR [RUN_DIR ...] --by-eye by_eye.json --out DIR
"""
import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from fitting import LinearODE, key_frequencies, select_frequencies, surviving_frequencies, trajectory_signals
from fitting.explore.runs import Run
from particles import Trajectory
from particles.cli import main as cli
from particles.core.io import atomic_write_text


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, round(float(centre - half), 3)), min(1.0, round(float(centre + half), 3))]


def check_run(folder: Path, by_eye: dict, out: Path, force: bool, bootstrap: int) -> dict:
    traj = Trajectory.load(folder / "run.npz")
    steps, signals = trajectory_signals(traj)
    name = folder.name
    key = [int(k) for k in key_frequencies(traj)]
    row = {"run": name, "arch": traj.meta.get("arch"), "p": traj.p, "d": traj.d, "val_acc": traj.meta.get("val_acc"),
           "grokked": bool((traj.meta.get("val_acc") or 0) >= 0.95), "key": key,
           "key_at_init": [int(k) for k in key_frequencies(signals[0], d=traj.d)],
           "survivors": [int(k) for k in surviving_frequencies(traj, output="frequencies")]}
    eye = by_eye.get(name)
    if eye is not None:
        clear, ambiguous = set(eye["clear"]), set(eye.get("ambiguous", []))
        row.update(by_eye_clear=sorted(clear), by_eye_ambiguous=sorted(ambiguous),
                   missed=sorted(clear - set(key)), extra=sorted(set(key) - clear - ambiguous),
                   agrees=clear <= set(key) <= clear | ambiguous)
    # one request, three surfaces
    half = int(steps[len(steps) // 2])
    selection = select_frequencies(traj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = LinearODE(stable=True, window=(0, half)).fit(traj)
        api_forecast = api.forecast(traj)
        explorer = Run(name, traj).fit(0, half)
        code = cli(["fit", str(folder / "run.npz"), "--stable", "--window", "0", str(half), "--quiet",
                    "--out", str(out / name / "fit")])
    report = json.loads((out / name / "fit" / "fit.json").read_text()) if code == 0 else {}
    row["fit"] = {"selection": selection.message, "rule": selection.rule, "frequencies": selection.frequencies,
                  "cli_frequencies": report.get("fitted_frequencies"), "explorer_frequencies": explorer["frequencies"],
                  "api_frequencies": api.frequencies_, "forecast_error": {"api": api_forecast.error,
                                                                          "cli": report.get("forecast_error"),
                                                                          "explorer": explorer["forecast"]["error"]},
                  "skill": api_forecast.skill}
    errors = [v for v in row["fit"]["forecast_error"].values() if v is not None]
    row["fit"]["same"] = (row["fit"]["cli_frequencies"] == row["fit"]["explorer_frequencies"] == api.frequencies_
                          and len(errors) == 3 and max(errors) - min(errors) <= 1e-12 * max(1.0, max(errors)))
    if force and traj.gradients is not None:
        start = time.perf_counter()
        code = cli(["force-fit", str(folder / "run.npz"), "--bootstrap", str(bootstrap), "--quiet",
                    "--out", str(out / name / "force")])
        seconds = time.perf_counter() - start
        result = json.loads((out / name / "force" / "force_fit.json").read_text()) if code == 0 else {}
        row["force_fit"] = {"exit": code, "seconds": round(seconds, 1), "r2": result.get("r2"),
                            "bootstrap": bootstrap, "snapshots": (result.get("fit_info") or {}).get("snapshots")}
    return row


def plot_spectra(folders: list[Path], rows: list[dict], path: Path) -> None:
    """Each run's final spectrum as bars: key frequencies in colour, survivors of the paper's rule marked,
    the frequencies named by eye underlined."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    n = len(rows)
    cols = 4
    fig = Figure(figsize=(4.0 * cols, 2.5 * ((n + cols - 1) // cols)), layout="constrained")
    axes = fig.subplots((n + cols - 1) // cols, cols, squeeze=False).ravel()
    for ax, folder, row in zip(axes, folders, rows):
        steps, signals = trajectory_signals(Trajectory.load(folder / "run.npz"))
        final = signals[-1]
        k = np.arange(1, len(final) + 1)
        colours = ["tab:orange" if kk in row["key"] else "0.7" for kk in k]
        ax.bar(k, final, color=colours, width=0.8)
        for kk in row["survivors"]:
            ax.plot(kk, final[kk - 1] * 1.05, "kv", ms=4)
        for kk in row.get("by_eye_clear", []):
            ax.plot(kk, -0.04 * final.max(), "s", color="tab:blue", ms=3)
        verdict = "" if "agrees" not in row else (" - agrees with eye" if row["agrees"] else " - MISS")
        ax.set_title(f"{row['run']} (d = {row['d']}, val {row['val_acc']:.2f}){verdict}", fontsize=8)
        ax.set_xlabel("frequency k", fontsize=8)
        ax.set_ylabel("final |F_k|", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.suptitle("Final spectra of plain-torch runs: key frequencies in orange, survivors of the paper's rule "
                 "marked with a triangle, frequencies named by eye with a blue square below the axis", fontsize=10)
    fig.savefig(path, dpi=90)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", help="folders written by own_network.py (run.npz inside)")
    parser.add_argument("--by-eye", default=None, help="JSON of the frequencies named by eye per run")
    parser.add_argument("--force", action="store_true", help="also run the force-law fit on runs with gradients")
    parser.add_argument("--bootstrap", type=int, default=20, help="bootstrap replicates of the force fit")
    parser.add_argument("--figure", default=None, help="PNG of every run's final spectrum with the rules' answers")
    parser.add_argument("--out", default="own-run-check")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    by_eye = json.loads(Path(args.by_eye).read_text()) if args.by_eye else {}
    rows = [check_run(Path(folder), by_eye, out, args.force, args.bootstrap) for folder in args.runs]
    judged = [r for r in rows if "agrees" in r]
    agree = sum(r["agrees"] for r in judged)
    null_hits = sum(bool(r["key_at_init"]) for r in rows)
    same = sum(r["fit"]["same"] for r in rows)
    summary = {"runs": len(rows), "key_agrees_with_eye": agree, "judged": len(judged),
               "key_agrees_interval": wilson(agree, len(judged)),
               "key_at_init_nonempty": null_hits, "key_at_init_interval": wilson(null_hits, len(rows)),
               "survivors_nonempty_when_grokked": sum(bool(r["survivors"]) for r in rows if r["grokked"]),
               "grokked": sum(r["grokked"] for r in rows), "fits_identical_on_three_surfaces": same}
    text = json.dumps({"summary": summary, "rows": rows,
                       "command": "python docs/examples/own_network_check.py " + " ".join(args.runs)
                       + (f" --by-eye {args.by_eye}" if args.by_eye else "") + (" --force" if args.force else "")},
                      indent=2)
    atomic_write_text(out / "own_runs.json", text)
    if args.figure:
        plot_spectra([Path(f) for f in args.runs], rows, Path(args.figure))
    for r in rows:
        verdict = "" if "agrees" not in r else ("agrees" if r["agrees"] else f"MISS missed={r['missed']} extra={r['extra']}")
        print(f"{r['run']:18s} d={r['d']:3d} val={r['val_acc']:.2f} key={r['key']} survivors={r['survivors']} "
              f"{verdict}; fit same on 3 surfaces: {r['fit']['same']}"
              + (f"; force fit {r['force_fit']['seconds']} s R^2 {r['force_fit']['r2']}" if "force_fit" in r else ""))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
