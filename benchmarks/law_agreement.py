"""Results of this tree against another checkout, bit for bit where they can
be: energies and forces on random states and 300-step runs of every preset,
every variant of the built-in law and two custom laws, on every path (direct
serial and parallel, Gram, cell list). Each tree computes in its own process;
the report gives, per case, whether the arrays are identical and their
largest difference relative to the array's largest entry (max |a - b| /
max |b|: forces that cancel to near 0 carry the rounding of the others).

    python benchmarks/law_agreement.py --other /path/to/other/checkout [--json out.json] [--quick]

Made for issue 70 (the built-in law defined once): the tree before it is the
``--other``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = r"""
import sys, numpy as np
import particles as P
from particles import ForceParams, energy_and_forces, preset, simulate, modular_addition

quick = sys.argv[2] == "1"
out = {}

def classifier(**kw):  # the classifier variant, under either tree's name for the particles' own decay
    try:
        return ForceParams(**kw, wd_target="classifier", bias_scale=1.5, particle_wd=0.7)
    except TypeError:
        return ForceParams(**kw, wd_target="classifier", bias_scale=1.5, particle_decay=0.7)

base = dict(k_a=2.0, sig_a=1.5, k_r=1.2, sig_r=0.8, lam=0.9, sig_t=0.4, eps=0.5, wd=0.2)
laws = {
    "builtin": ForceParams(**base),
    "clustering": ForceParams(**{**base, "lam": 0.0}),
    "alignment": ForceParams(**{**base, "k_a": 0.0, "k_r": 0.0}),
    "axial": ForceParams(**base, alignment_form="axial"),
    "polar": ForceParams(**base, alignment="polar"),
    "classifier": classifier(**base),
    "custom_gaussian": P.gaussian_clustering(2.0, 1.5, 1.2, 0.8, 0.2) + P.cosine_alignment(0.9, 0.4, 0.5),
}
def soft_well(q, prm):
    return -prm[0] / (1.0 + q / prm[1])
def soft_bump(q, prm):
    return prm[2] / (1.0 + q * q)
laws["custom_rational"] = P.PairEnergy(distance=P.PairTerm(same=soft_well, other=soft_bump, params=(1.5, 2.0, 0.7)),
                                       wd=0.1)
rng = np.random.default_rng(0)
for p in ((11, 23) if quick else (11, 23, 41)):
    train = modular_addition(p)
    for d in (2, 3, 128):
        x = rng.normal(size=(p, d))
        for name, law in laws.items():
            for path in ("direct", "gram"):
                for parallel in (False, True):
                    try:
                        e, f = energy_and_forces(x, train, law, parallel=parallel, path=path)
                    except ValueError:  # a path a law does not take
                        continue
                    out[f"state p{p} d{d} {name} {path} {'parallel' if parallel else 'serial'}"] = \
                        np.concatenate([[e], f.ravel()])
            if d == 2 and not name.startswith("custom") and law.k_r > 0:
                e, f = energy_and_forces(x, train, law, repulsion_tol=1e-16)
                out[f"state p{p} d2 {name} cells"] = np.concatenate([[e], f.ravel()])
for name in ("grids", "circles", "clustering-alignment"):
    cfg = preset(name).replace(p=23, steps=300, record_every=50)
    for parallel in (False, True):
        out[f"run {name} {'parallel' if parallel else 'serial'}"] = cfg.run(0, parallel=parallel).embeddings
    if cfg.params.k_r > 0:
        out[f"run {name} cells"] = cfg.run(0, repulsion_tol=1e-16).embeddings
x0, train, _ = preset("grids").replace(p=23).sample(0)
for name in ("custom_gaussian", "custom_rational", "polar", "classifier"):
    try:
        out[f"run {name}"] = simulate(x0, train, laws[name], steps=300, dt=0.001, record_every=50).embeddings
    except (P.RunawayError, P.NonFiniteStateError) as exc:  # compared as the step it stopped at
        print(f"run {name}: {exc}", file=sys.stderr)
        out[f"run {name} stopped"] = np.array([float(getattr(exc, "step", -1))])
np.savez(sys.argv[1], **out)
"""


def compute(tree: Path, quick: bool, folder: Path) -> dict[str, np.ndarray]:
    target = folder / f"{tree.name}.npz"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", CHILD, str(target), "1" if quick else "0"], env=env, cwd=tree, check=True)
    with np.load(target) as data:
        return {k: data[k] for k in data.files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--other", required=True, type=Path, help="the other checkout (the tree before)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    this = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "a").mkdir()
        (folder / "b").mkdir()
        mine = compute(this, args.quick, folder / "a")
        theirs = compute(args.other.resolve(), args.quick, folder / "b")
    rows = []
    for key in sorted(set(mine) | set(theirs)):
        if key not in mine or key not in theirs:
            rows.append({"case": key, "missing_in": "this" if key not in mine else "other"})
            continue
        a, b = mine[key], theirs[key]
        top = max(float(np.max(np.abs(b))), 1e-300)
        # relative to the array's largest entry (entries that cancel to near 0 carry the others' rounding)
        rel = float(np.max(np.abs(a - b))) / top
        rows.append({"case": key, "identical": bool(np.array_equal(a, b)), "max_relative": rel})
    compared = [r for r in rows if "identical" in r]
    summary = {"cases": len(compared), "identical": sum(r["identical"] for r in compared),
               "worst_relative": max(r["max_relative"] for r in compared),
               "within_1e-12": sum(r["max_relative"] <= 1e-12 for r in compared),
               "missing": [r for r in rows if "missing_in" in r]}
    report = {"command": "python benchmarks/law_agreement.py --other <checkout before>" + (" --quick" if args.quick
                                                                                          else ""),
              "summary": summary, "cases": rows}
    for r in compared:
        if not r["identical"]:
            print(f"{r['case']}: max relative {r['max_relative']:.2e}")
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
