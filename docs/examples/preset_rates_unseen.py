"""Structure rates of the three particle presets on seeds never used while
choosing their settings (default 20000-20099), and of clustering-alignment
over the classifier weight decay.

    python docs/examples/preset_rates_unseen.py --first-seed 20000 --seeds 100 --out docs/figures/particles_unseen.json

About 12 minutes on one core (--jobs 2 halves it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import particles as pt
from particles.core.io import atomic_write_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--first-seed", type=int, default=20000)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--weight-decays", type=float, nargs="+", default=[0.0, 0.3, 0.6, 1.0, 2.0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("particles_unseen.json"))
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    start = time.perf_counter()
    out: dict = {"seeds": [seeds.start, seeds.stop - 1]}
    for name in ("grids", "circles"):
        table = pt.sweep([{}], seeds, base=name, n_jobs=args.jobs)
        out[name] = list(table.rates().values())[0]
        print(name, {k: v for k, v in out[name].items() if v}, flush=True)
    table = pt.sweep([{"wd": w} for w in args.weight_decays], seeds, base="clustering-alignment", n_jobs=args.jobs)
    out["clustering-alignment"] = {str(k[0]): v for k, v in table.rates().items()}
    for w, rates in out["clustering-alignment"].items():
        print(f"clustering-alignment wd = {w}", {k: v for k, v in rates.items() if v}, flush=True)
    out["seconds"] = time.perf_counter() - start
    text = json.dumps(out, indent=1)
    atomic_write_text(args.out, text)


if __name__ == "__main__":
    main()
