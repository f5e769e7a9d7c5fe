"""The ``embdyn simulate`` and ``embdyn sweep`` commands (registered
through the ``embdyn.commands`` entry points). The root of ``embdyn`` is
:mod:`particles.core.cli`; ``python -m particles.cli`` runs it too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .core.cli import key_lists, key_values, main, parse_value
from .core.cli import QUIET_HELP, CompileNote, ProgressBar, add_quiet
from .core.figures import save_figure
from .core.io import write_json
from .core.validation import check_output_folder, check_seeds

__all__ = ["register_simulate", "register_sweep", "main", "parse_value", "QUIET_HELP"]


# ---------------------------------------------------------------- simulate
def _cmd_simulate(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from .metrics import structure_metrics
    from .figures import plot_energy, plot_snapshots
    from .presets import preset

    config = preset(args.preset)
    changes = key_values(args.set or [], "--set")
    if args.steps is not None:
        changes["steps"] = args.steps
    if args.dt is not None:
        changes["dt"] = args.dt
    config = config.replace(**changes)
    config.sample(args.seed)  # the dataset, the split and the seed, checked before compiling
    out = check_output_folder(args.out, "--out")
    stem = f"{config.name}_seed{args.seed}"
    _compile_kernels(config, quiet=args.quiet)
    bar = None if args.quiet else ProgressBar(f"simulate {config.name} seed {args.seed}")
    traj = config.run(args.seed, callback=bar)
    dataset = config.dataset()
    metrics = structure_metrics(traj.final, dataset)
    traj_path = traj.save(out / f"{stem}.npz")
    fig = plot_snapshots(traj, dataset=dataset, title=f"preset {config.name!r}, seed {args.seed}")
    save_figure(fig, out / f"{stem}.png", dpi=110)
    save_figure(plot_energy(traj), out / f"{stem}_energy.png", dpi=110)
    summary = {"preset": config.name, "seed": args.seed, "steps": config.steps, **metrics,
               "final_energy": float(traj.energy[-1]), "trajectory": str(traj_path),
               "figure": str(out / f"{stem}.png")}
    write_json(out / f"{stem}.json", summary, indent=2)
    print(f"preset {config.name}, seed {args.seed}: {metrics['structure']} "
          f"(circularity {metrics['circularity']:.3f} at k={metrics['frequency']}, "
          f"pair-sum accuracy on {metrics['accuracy_pairs']}: euclidean {metrics['accuracy_euclidean']:.3f}, "
          f"angular {metrics['accuracy_angular']:.3f}, grid defects {metrics['grid_defects']}"
          + (f"; the circle's plane holds {metrics['plane_share']:.0%} of the variance" if traj.d > 2 else "") + ")")
    print(f"wrote {traj_path}, {out / f'{stem}.png'}, {out / f'{stem}_energy.png'}, {out / f'{stem}.json'}")
    return 0


def register_simulate(subparsers: argparse._SubParsersAction) -> None:
    from .presets import preset_names

    p = subparsers.add_parser("simulate", help="run a particle preset and plot it",
                              description="Run a particle-model preset from one seed; write the trajectory "
                                          "(.npz), snapshot and energy figures and a JSON summary.")
    p.add_argument("--preset", default="circles", choices=preset_names(), help="particle preset (default circles)")
    p.add_argument("--seed", type=int, default=0, help="random seed, an int >= 0 (default 0)")
    p.add_argument("--steps", type=int, default=None, help="override the preset's number of steps")
    p.add_argument("--dt", type=float, default=None, help="override the preset's time step")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a force parameter or run setting (repeatable), e.g. --set lam=2")
    p.add_argument("--out", default="embdyn-out", help="output folder (default ./embdyn-out)")
    add_quiet(p)
    p.set_defaults(func=_cmd_simulate)


# ---------------------------------------------------------------- sweep
def _write_sweep(table, out: Path, grid_axes: list | None, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from .figures import plot_phase_diagram

    table.to_csv(out / "sweep.csv")
    rates = table.rates()
    write_json(out / "rates.json", [{**dict(zip(table.parameters, key)), **value} for key, value in rates.items()],
               indent=2)
    for key, value in rates.items():
        setting = ", ".join(f"{n}={v}" for n, v in zip(table.parameters, key))
        shares = ", ".join(f"{k} {v:.2f}" for k, v in value.items() if v > 0)
        print(f"{setting}: {shares}")
    if grid_axes is not None and len(grid_axes) == 2:
        (x_name, xs), (y_name, ys) = grid_axes
        fig = plot_phase_diagram(rates, xs, ys, x_name=x_name, y_name=y_name, title=title)
        save_figure(fig, out / "phase_diagram.png", dpi=120, bbox_inches="tight")
        print(f"wrote {out / 'phase_diagram.png'}")
    print(f"wrote {out / 'sweep.csv'} and {out / 'rates.json'}")


def _cmd_sweep_merge(args: argparse.Namespace, journals: list[str]) -> int:
    from .sweep import merge_journals, read_journal

    if not journals:
        raise ValueError("embdyn sweep merge needs the journal files of the shards")
    for path in journals:
        if not Path(path).is_file():
            raise ValueError(f"journal {path!r} does not exist")
    out = check_output_folder(args.out, "--out")
    table = merge_journals(journals)
    header, _ = read_journal(journals[0])
    axes: dict[str, list] = {}
    for point in header["grid"]:
        for name, value in point.items():
            axes.setdefault(name, [])
            if value not in axes[name]:
                axes[name].append(value)
    _write_sweep(table, out, list(axes.items()),
                 f"base preset {header['base'].get('name')!r}, {len(header['seeds'])} seeds a cell")
    return 0


def _compile_kernels(config, both: bool = False, quiet: bool = False) -> None:
    """Compile (or load from Numba's cache) the kernels a preset runs before
    it starts, so that no call stalls in the middle of a run; a note on
    stderr when that takes long (compiling, not loading the cache)."""
    from .precompile import warmup
    from .energy import PARALLEL_MIN_PAIRS

    pairs = round(config.fraction * len(config.dataset()))
    with CompileNote(quiet=quiet):  # the parallel kernels too when the run (or with both, a sweep) may call them
        warmup(parts=("simulate",), d=config.d, pairs=max(pairs, PARALLEL_MIN_PAIRS) if both else max(pairs, 1),
               law=config.params)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .presets import preset
    from .sweep import check_sweep_size, parse_shard, sweep

    extra = list(args.action or [])
    if extra and extra[0] == "merge":
        return _cmd_sweep_merge(args, extra[1:])
    if extra:
        raise ValueError(f"unexpected argument {extra[0]!r} (the only action is 'merge')")
    grid = key_lists(args.grid or [], "--grid")
    if not grid:
        raise ValueError("give at least one --grid NAME=V1,V2,...")
    base = preset(args.preset).replace(**key_values(args.set or [], "--set"))
    shard = parse_shard(args.shard)
    if args.seeds < 1:
        check_seeds(args.seeds, "--seeds", count=True)  # names --seeds
    check_sweep_size(grid, args.seeds, shard, names=("--grid", "--seeds"))  # before the folder or any list
    # claimed before the journal is read or removed: a second sweep into the folder is refused (shards share it)
    out = check_output_folder(args.out, "--out", lock="" if shard is None else f"shard-{shard[0]}-of-{shard[1]}")
    journal = out / ("sweep.journal.jsonl" if shard is None else f"sweep.shard-{shard[0]}-of-{shard[1]}.jsonl")
    if args.restart and journal.exists():
        journal.unlink()
    elif journal.exists() and not args.quiet:
        from .sweep import read_journal

        print(f"embdyn sweep: resuming from {journal} ({len(read_journal(journal)[1])} runs done; --restart "
              "starts afresh)", file=sys.stderr)
    check_seeds(args.seeds, "--seeds", count=True, distinct=False)  # refused before compiling
    # workers load the kernels from the cache this fills
    _compile_kernels(base, both=any(name in grid for name in ("p", "fraction")), quiet=args.quiet)
    bar = None if args.quiet else ProgressBar("sweep")
    table = sweep(grid, args.seeds, base=base, n_jobs=args.jobs, callback=bar, journal=journal, shard=shard)
    if shard is not None:
        print(f"wrote {journal} ({len(table)} runs of shard {shard[0]}/{shard[1]}); when every shard is done: "
              f"embdyn sweep merge {out}/sweep.shard-*-of-{shard[1]}.jsonl --out DIR")
        return 0
    fixed = ", ".join(args.set or [])
    _write_sweep(table, out, list(grid.items()),
                 f"base preset {args.preset!r}{' with ' + fixed if fixed else ''}, {args.seeds} seeds a cell")
    return 0


def register_sweep(subparsers: argparse._SubParsersAction) -> None:
    from .presets import preset_names

    p = subparsers.add_parser("sweep", help="sweep parameters over seeds; phase diagram for two axes",
                              description="Run a preset over a grid of parameters and seeds in parallel; write "
                                          "sweep.csv, rates.json and, for two grid axes, phase_diagram.png. Each "
                                          "finished run is appended to OUT/sweep.journal.jsonl, so the same command "
                                          "after an interruption runs only what is missing. With --shard i/n only "
                                          "every n-th run is done (one shard per machine); "
                                          "'embdyn sweep merge JOURNAL... --out DIR' puts the shards together.")
    p.add_argument("action", nargs="*", metavar="merge JOURNAL",
                   help="'merge' followed by the shards' journal files")
    p.add_argument("--preset", default="grids", choices=preset_names(), help="base preset")
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2,...", help="a swept parameter (repeatable)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="fixed override of the base preset")
    p.add_argument("--seeds", type=int, default=10, help="seeds per grid cell (default 10)")
    p.add_argument("--jobs", type=int, default=-1,
                   help="worker processes (default -1: all cores; -2: all but one)")
    p.add_argument("--shard", default=None, metavar="I/N", help="run only shard I of N (0 <= I < N)")
    p.add_argument("--restart", action="store_true",
                   help="discard the journal of an earlier run in --out instead of resuming it")
    p.add_argument("--out", default="embdyn-sweep", help="output folder (default ./embdyn-sweep)")
    add_quiet(p)
    p.set_defaults(func=_cmd_sweep)


if __name__ == "__main__":
    raise SystemExit(main())
