"""More seeds where the paper puts grokking: the regression toy's fast-decoder
corner (decoder lr >= 1e-3, decoder weight decay 0-4), the cells around our
seed-0 memorization/comprehension boundary (needs the [torch] extra).

    python docs/examples/toy_phases_boundary.py --seeds 1 2 --out docs/figures/training

Writes toy_phases_regression_boundary_seeds<..>.{json,csv,png}.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fitting.training import toy_phase_setting, train_grid
from fitting.training.figures import plot_phase_grid
from particles.core.figures import save_figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("embdyn-toy-phases"))
    parser.add_argument("--tanh", choices=["fast", "exact"], default="exact",
                        help="decoder tanh (default exact: torch.tanh, as the committed results)")
    args = parser.parse_args()
    config, grid = toy_phase_setting("regression", steps=args.steps)
    grid = {"decoder_lr": [lr for lr in grid["decoder_lr"] if lr >= 1e-3 * 0.999],
            "decoder_weight_decay": [0.0, 1.0, 2.0, 3.0, 4.0]}
    stem = f"toy_phases_regression_boundary_seeds{'-'.join(map(str, args.seeds))}"
    result = train_grid(config, grid, args.seeds, out=args.out / f"{stem}.json", checkpoint_every=2000,
                        resume=True, tanh=args.tanh)
    title = (f"regression, fast-decoder corner: seeds {args.seeds}, {args.steps} steps (majority phase), "
             f"{args.tanh} tanh")
    save_figure(plot_phase_grid(result.records, title=title), args.out / f"{stem}.png", dpi=120)
    print(", ".join(f"{k} {v}" for k, v in result.phase_counts().items()) + f" in {result.meta['seconds']:.0f} s")


if __name__ == "__main__":
    main()
