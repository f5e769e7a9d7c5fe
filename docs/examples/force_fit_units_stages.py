"""The force-law fit's answer in either unit, and per stage, on recorded runs
(issue 68): normalize=None against "rms" (R^2, ranges, verdict), then
windows="stages" with each stage's verdict.

    python docs/examples/force_fit_units_stages.py runs/grad/*.npz --out docs/figures/fitting/force_fit_units

Runs made with `python docs/examples/stages_runs.py --gradients --out runs/grad --only ...`.
"""
import argparse
import json
import time
import warnings
from pathlib import Path

import fitting
from particles.trajectory import Trajectory


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out", default="force-fit-units")
    ap.add_argument("--null", type=int, default=10)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in args.runs:
        traj = Trajectory.load(path)
        row = {"run": Path(path).stem}
        for normalize in (None, "rms"):
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fit = fitting.ForceLawFit(normalize=normalize, n_bootstrap=0, null=args.null).fit(traj)
            row[str(normalize)] = {"r2": fit.r2_, "null_r2": fit.null_r2_,
                                   "null_interval": list(fit.null_r2_interval_), "verdict": fit.verdict_,
                                   "ranges": fit.ranges_, "range_status": fit.range_status_,
                                   "seconds": round(time.perf_counter() - t0, 1),
                                   "warnings": [" ".join(str(w.message).split()) for w in caught]}
        a, b = row["None"], row["rms"]
        row["r2_relative_difference"] = abs(a["r2"] - b["r2"]) / max(abs(b["r2"]), 1e-300)
        row["same_verdict"] = a["verdict"] == b["verdict"]
        row["same_ranges"] = all(abs(a["ranges"][k] - b["ranges"][k]) <= 1e-6 * abs(b["ranges"][k])
                                 for k in b["ranges"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            staged = fitting.ForceLawFit(n_bootstrap=0, null=args.null, windows="stages").fit(traj)
        row["stages"] = [{"name": w["name"], "start": w["start"], "stop": w["stop"], "r2": w.get("r2"),
                          "verdict": w.get("verdict")} for w in staged.windows_]
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("run", "r2_relative_difference", "same_verdict", "same_ranges")}),
              flush=True)
    (out / "force_fit_units.json").write_text(json.dumps(rows, indent=1, default=float))


if __name__ == "__main__":
    main()
