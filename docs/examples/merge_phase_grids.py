"""Merge toy phase-grid results of the same grid run with different seeds,
and redraw the majority-phase diagram (needs the [torch] extra).

    python docs/examples/merge_phase_grids.py A.json B.json --out merged.json

Writes merged.json, merged.csv, merged.png (majority phase per cell) and
merged_per_seed.png (one panel per seed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fitting.training.grid import GridResult
from fitting.training.figures import plot_phase_grid
from particles.core.figures import save_figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="GridResult JSON files")
    parser.add_argument("--out", type=Path, required=True, help="merged JSON file")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    merged = GridResult.merge([GridResult.load(p) for p in args.results])
    merged.save(args.out)
    merged.save(args.out.with_suffix(".csv"))
    m = merged.meta
    title = args.title or (f"{args.out.stem}: {m['steps']} steps, {len(m['seeds'])} seeds, majority phase; "
                           f"{m['seconds'] / 60:.0f} min in all")
    save_figure(plot_phase_grid(merged.records, title=title), args.out.with_suffix(".png"), dpi=120)
    from matplotlib.figure import Figure

    seeds = sorted({r["seed"] for r in merged.records})
    fig = Figure(figsize=(6.2 * len(seeds), 4.6), layout="constrained")
    for ax, seed in zip(fig.subplots(1, len(seeds), squeeze=False)[0], seeds):
        plot_phase_grid([r for r in merged.records if r["seed"] == seed], ax=ax, title=f"seed {seed}")
    save_figure(fig, args.out.with_name(args.out.stem + "_per_seed.png"), dpi=100)
    print(", ".join(f"{k} {v}" for k, v in merged.phase_counts().items()) + f" -> {args.out}")


if __name__ == "__main__":
    main()
