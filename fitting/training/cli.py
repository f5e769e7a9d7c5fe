"""``embdyn train``: train one of the papers' models for several seeds."""

from __future__ import annotations

import argparse
import math
import sys

from particles.core.cli import add_quiet
from particles.core.validation import check_output_folder

from .schedule import AUTO, GEOMETRIC, check_snapshot_every

__all__ = ["register_train", "register_toy_phases", "register_compare_network"]


def _snapshot_every(text: str) -> int | str:
    """``--snapshot-every``: an int >= 1, "geometric" or "auto" (argparse prints a refusal as a usage line)."""
    try:
        value = int(text)
    except ValueError:
        value = text
    try:  # the configs' own check, in the flag's words
        return check_snapshot_every(value, "--snapshot-every", auto=True)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be an int >= 1, {GEOMETRIC!r} or {AUTO!r}, got {text!r}") from None


def _check_seed_flags(args: argparse.Namespace) -> range:
    """The seeds of ``--seeds``/``--first-seed`` as a range (nothing listed,
    so a huge count costs nothing before it is refused), after checking
    those and ``--checkpoint-every`` (ValueError naming the flag)."""
    if args.seeds < 1 or args.first_seed < 0:
        raise ValueError(f"--seeds must be >= 1 and --first-seed >= 0, got {args.seeds} and {args.first_seed}")
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be >= 1, got {args.checkpoint_every}")
    return range(args.first_seed, args.first_seed + args.seeds)


def _summary(seed: int, traj, path) -> str:
    s = traj.scalars
    return (f"seed {seed}: train loss {s['train_loss'][-1]:.4g} acc {s['train_acc'][-1]:.3f}, "
            f"val loss {s['val_loss'][-1]:.4g} acc {s['val_acc'][-1]:.3f} -> {path}")


def _skipped(command: str, seed: int, path, quiet: bool) -> None:
    if not quiet:
        print(f"embdyn {command}: seed {seed}: the finished run {path} is there; skipped (--resume)", file=sys.stderr)


def _checkpointed_seeds(out, model: str, seeds: range) -> list[int]:
    """The seeds of ``seeds`` whose checkpoint (``<model>_seed<n>.ckpt.pt``) is in ``out``, from one
    listing of the folder (not one look-up per seed)."""
    import re

    found = []
    for entry in out.iterdir():
        match = re.fullmatch(rf"{re.escape(model)}_seed(\d+)\.ckpt\.pt", entry.name)
        if match and int(match[1]) in seeds:
            found.append(int(match[1]))
    return sorted(found)


def add_cluster_arguments(p: argparse.ArgumentParser, jobs_help: str | None) -> None:
    """``--jobs`` (unless ``jobs_help`` is None), ``--scheduler``/``--cluster`` and ``--device`` of a multi-run
    training command."""
    if jobs_help is not None:
        p.add_argument("--jobs", type=int, default=None, help=jobs_help)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://host:8786; needs "
                            "the [cluster] extra); --jobs is then the number of units (default one per worker "
                            "thread); finished units are journaled beside the output")
    where.add_argument("--cluster", default=None, metavar="local:N",
                       help="run on a Dask LocalCluster of N one-thread worker processes started for this command")
    p.add_argument("--device", default=None, help="torch device to train on: cpu (default), cuda, cuda:1, mps; on a "
                                                  "cluster without it, each worker's EMBDYN_DEVICE")


def cluster_choice(args: argparse.Namespace) -> str | None:
    """The ``scheduler=`` of a command's ``--scheduler``/``--cluster`` (checked)."""
    from .cluster import check_scheduler

    if args.cluster is not None:
        if not args.cluster.startswith("local:"):
            raise ValueError(f"--cluster must be local:N with N >= 1 worker processes, got {args.cluster!r}")
        return check_scheduler(args.cluster, "--cluster")
    return None if args.scheduler is None else check_scheduler(args.scheduler, "--scheduler")


def _check_jobs_flag(args: argparse.Namespace, top: int, what: str) -> int | None:
    """``--jobs`` checked: at most ``top`` locally (``what`` says why), at most the runs on a cluster."""
    scheduler = cluster_choice(args)
    if args.jobs is None:
        return None if scheduler is not None else 1
    if not 1 <= args.jobs <= top:
        raise ValueError(f"--jobs must be in [1, {top}] ({what}), got {args.jobs}")
    return args.jobs


def _cmd_train(args: argparse.Namespace) -> int:
    from particles.core.cli import key_values

    from . import INSTALL_HINT, config_for, torch_available

    if not torch_available():
        print(f"embdyn train: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from .devices import device_arg
    changes = key_values(args.set or [], "--set")
    if args.steps is not None:
        changes["steps"] = args.steps
    if args.snapshot_every is not None:
        changes["snapshot_every"] = args.snapshot_every
    config = config_for(args.model, **changes)
    seeds = _check_seed_flags(args)
    if args.batched and args.model != "survival-mlp":
        raise ValueError("--batched exists for survival-mlp only")
    if (args.compile or args.jobs is not None or args.scheduler or args.cluster) and not args.batched:
        raise ValueError("--compile, --jobs, --scheduler and --cluster exist with --batched only")
    if args.layers and args.batched:
        raise ValueError("--layers records one run at a time: drop --batched")
    scheduler = cluster_choice(args)
    jobs = _check_jobs_flag(args, args.seeds, f"at most --seeds={args.seeds}")
    device = device_arg(args.device, "--device", here=scheduler is None)
    from .trainer import check_training_disk, check_training_memory

    # one run in memory at a time (all seeds with --batched), measured before the folder is made; the seeds'
    # files on the disk that will hold them
    if args.layers:  # another model or d, or layer states over their budget: before the folder is made
        from .trainer import check_layers
        check_layers(config, seeds[0], args.gradients)
    check_training_memory(config, args.seeds if args.batched else 1, gradients=args.gradients, seed=seeds[0],
                          layers=args.layers)
    check_training_disk(config, args.seeds, args.out, gradients=args.gradients, seed=seeds[0], layers=args.layers)
    from .cluster import cluster_client

    with cluster_client(scheduler, _scheduler_flag(args)) as client:  # an address that does not answer: before the folder
        return _train_in(args, config, seeds, jobs, client, device)


def _train_in(args: argparse.Namespace, config, seeds: range, jobs: int | None, client, device) -> int:
    """``embdyn train`` once its arguments are checked (``client``: the cluster of --batched, or None)."""
    from particles.core.cli import ProgressBar

    from .trainer import check_checkpoint, finished_run

    out = check_output_folder(args.out, "--out")
    from .batched import finished_seeds, train_batched
    from .trainer import train

    def path_of(seed: int):
        return out / f"{config.model}_seed{seed}.npz"

    if args.batched:
        done = finished_seeds(config, seeds, out, jobs or 1, args.gradients) if args.resume and jobs else {}
        for seed in done:
            _skipped("train", seed, path_of(seed), args.quiet)
        bar = None if args.quiet or len(done) == len(seeds) else ProgressBar(
            f"{args.model} x {len(seeds)} seeds (batched)")
        trajectories = train_batched(config, list(seeds), out, callback=bar,
                                     compile="auto" if args.compile else "never",
                                     checkpoint_every=args.checkpoint_every, resume=args.resume, n_jobs=jobs,
                                     gradients=args.gradients, device=device, scheduler=client)
        for seed, traj in zip(seeds, trajectories):
            print(_summary(seed, traj, path_of(seed)))
        return 0
    if args.resume:  # every checkpoint that cannot be used is refused before any seed trains
        for seed in _checkpointed_seeds(out, config.model, seeds):
            if finished_run(path_of(seed), config, seed, args.gradients, args.layers) is None:
                check_checkpoint(config, seed, path_of(seed), args.gradients, args.layers)
    for seed in seeds:  # one seed at a time: its summary, and nothing else, is kept
        path = path_of(seed)
        traj = finished_run(path, config, seed, args.gradients, args.layers) if args.resume else None
        if traj is not None:
            _skipped("train", seed, path, args.quiet)
        else:
            bar = None if args.quiet else ProgressBar(f"{args.model} seed {seed}")
            traj = train(config, seed, path, checkpoint_every=args.checkpoint_every, resume=args.resume,
                         callback=bar, gradients=args.gradients, layers=args.layers, device=device)
        print(_summary(seed, traj, path), flush=True)
    return 0


def register_train(subparsers: argparse._SubParsersAction) -> None:
    from .configs import MODEL_CONFIGS

    p = subparsers.add_parser("train", help="train a paper's network and export trajectories (needs [torch])",
                              description="Train one of the papers' networks for several seeds and write one "
                                          "trajectory file per seed (signals every step, embedding snapshots). "
                                          "Needs the torch extra: pip install '.[torch]' in the repository root.")
    p.add_argument("model", choices=list(MODEL_CONFIGS), help="which paper's network to train")
    p.add_argument("--seeds", type=int, default=1, help="number of seeds (default 1)")
    p.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--steps", type=int, default=None, help="override the model's number of steps")
    p.add_argument("--snapshot-every", type=_snapshot_every, default=None, metavar="N|geometric",
                   help="store an embedding snapshot every N steps, or 'geometric' (every step below 100, then "
                        "90 a decade); default 'auto': geometric with --gradients, else the model's spacing")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a config field (repeatable), e.g. --set weight_decay=0.6")
    p.add_argument("--batched", action="store_true", help="train all seeds as one batched computation "
                                                          "(survival-mlp)")
    p.add_argument("--compile", action="store_true", help="with --batched: fuse the stacked forward with "
                                                          "torch.compile")
    p.add_argument("--checkpoint-every", type=int, default=None, help="checkpoint every N steps")
    p.add_argument("--resume", action="store_true", help="continue from checkpoints in --out")
    p.add_argument("--gradients", action="store_true",
                   help="also record the loss gradient on the embedding and the optimiser's update at every "
                        "snapshot (for embdyn force-fit)")
    p.add_argument("--layers", action="store_true",
                   help="also record every layer's state on a probe set at every snapshot, for embdyn sandbox "
                        "(sparse-modular and constant-attention at d = 2)")
    p.add_argument("--out", default="embdyn-train", help="output folder (default ./embdyn-train)")
    add_cluster_arguments(p, "with --batched: split the seeds over this many processes (default 1)")
    add_quiet(p)
    p.set_defaults(func=_cmd_train)


def _cmd_toy_phases(args: argparse.Namespace) -> int:

    from . import INSTALL_HINT, torch_available
    from .configs import toy_phase_setting

    if not torch_available():
        print(f"embdyn toy-phases: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from .devices import device_arg
    changes = {} if args.steps is None else {"steps": args.steps}
    if args.dtype is not None:
        changes["dtype"] = args.dtype
    config, grid = toy_phase_setting(args.variant, **changes)
    if args.quick:
        grid = {k: v[:: max(1, len(v) // 4)] for k, v in grid.items()}
    seeds = _check_seed_flags(args)
    cells = len(seeds) * math.prod(len(v) for v in grid.values())
    from .grid_parts import max_jobs
    scheduler = cluster_choice(args)
    jobs = _check_jobs_flag(args, cells if scheduler else max_jobs(cells),
                            "at most one unit per cell" if scheduler else "at most one process per cell and per CPU")
    device = device_arg(args.device, "--device", here=scheduler is None)
    from .cluster import cluster_client
    from .grid import check_grid_memory

    check_grid_memory(config, cells, "--seeds")  # before the seeds are listed or the folder is made
    seeds = list(seeds)
    with cluster_client(scheduler, _scheduler_flag(args)) as client:  # an address that does not answer: before the folder
        return _toy_phases_in(args, config, grid, seeds, cells, jobs, client, device)


def _scheduler_flag(args: argparse.Namespace) -> str:
    return "--cluster" if args.cluster is not None else "--scheduler"


def _toy_phases_in(args: argparse.Namespace, config, grid: dict, seeds: list[int], cells: int, jobs: int | None,
                   client, device) -> int:
    """``embdyn toy-phases`` once its arguments are checked (``client``: the cluster, or None)."""
    from particles.core.cli import ProgressBar

    from .grid import finished_grid, train_grid

    out = check_output_folder(args.out, "--out")
    from particles.core.figures import save_figure

    from .figures import plot_phase_grid

    stem = (f"toy_phases_{args.variant}" + ("_quick" if args.quick else "")
            + ("" if seeds == [0] else f"_seeds{seeds[0]}-{seeds[-1]}"))
    if args.resume and not args.quiet and finished_grid(out / f"{stem}.json", config, grid, seeds, tanh=args.tanh):
        print(f"embdyn toy-phases: the finished grid {out / (stem + '.json')} is there ({cells} cells); "
              "not trained again (--resume)", file=sys.stderr)
    bar = None if args.quiet else ProgressBar(f"toy-phases {args.variant}: {cells} cells")
    result = train_grid(config, grid, seeds, out=out / f"{stem}.json", checkpoint_every=args.checkpoint_every,
                        resume=args.resume, callback=bar, tanh=args.tanh, n_jobs=jobs, scheduler=client,
                        device=device)
    counts = result.phase_counts()
    title = (f"toy {args.variant}: {config.steps} steps, {len(seeds)} seed(s), majority phase, {args.tanh} tanh; "
             f"{result.meta['seconds'] / 60:.1f} min")
    save_figure(plot_phase_grid(result.records, title=title), out / f"{stem}.png", dpi=120)
    print(f"{cells} cells in {result.meta['seconds']:.0f} s: " + ", ".join(f"{k} {v}" for k, v in counts.items())
          + f" -> {out / (stem + '.json')}")
    return 0


def register_toy_phases(subparsers: argparse._SubParsersAction) -> None:
    from .configs import TOY_PHASE_SETTINGS

    p = subparsers.add_parser("toy-phases", help="the toy's learning-phase diagram at the paper's setting "
                                                 "(needs [torch])",
                              description="Train the effective-theory toy over the paper's grid of decoder "
                                          "learning rate x decoder weight decay as one stacked model "
                                          "(fitting.training.train_grid) and write the table (JSON, CSV) and "
                                          "the phase diagram (PNG). Needs the torch extra.")
    p.add_argument("variant", choices=list(TOY_PHASE_SETTINGS),
                   help="addition regression, addition classification or S_3 regression")
    p.add_argument("--seeds", type=int, default=1, help="seeds per cell (default 1)")
    p.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--steps", type=int, default=None, help="step budget (default 100000, the paper's)")
    p.add_argument("--dtype", choices=["float32", "float64"], default=None, help="default float32")
    p.add_argument("--quick", action="store_true", help="every 4th learning rate and every 2nd weight decay (4 x 6)")
    p.add_argument("--tanh", choices=["fast", "exact"], default="fast",
                   help="decoder activation: fast (default, within 2 machine epsilons of tanh) or exact (torch.tanh)")
    p.add_argument("--checkpoint-every", type=int, default=None, help="checkpoint every N steps")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--out", default="embdyn-toy-phases", help="output folder (default ./embdyn-toy-phases)")
    add_cluster_arguments(p, "processes, each training its share of the cells with threads // jobs torch threads "
                             "(default 1; 2 on 2 cores ran ~1.1x faster, more with other work on the machine; "
                             "--resume needs the same --jobs)")
    add_quiet(p)
    p.set_defaults(func=_cmd_toy_phases)


def _float_list(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--weight-decays must be comma-separated numbers, got {text!r}") from None


def _cmd_compare_network(args: argparse.Namespace) -> int:
    from particles.core.cli import ProgressBar

    from . import INSTALL_HINT, torch_available

    if not torch_available():
        print(f"embdyn compare-network: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from particles.core.io import atomic_write_text

    from particles.core.figures import save_figure
    from .compare import check_same_split, compare_network
    from particles.core.validation import check_float_list
    from .network_sweep import NetworkSweep

    wds = check_float_list(_float_list(args.weight_decays), "--weight-decays", 0.0, distinct=True)
    if args.seeds < 1 or args.first_seed < 0:
        raise ValueError(f"--seeds must be >= 1 and --first-seed >= 0, got {args.seeds} and {args.first_seed}")
    if args.max_steps < 1 or args.jobs < 1:
        raise ValueError(f"--max-steps and --jobs must be >= 1, got {args.max_steps} and {args.jobs}")
    if args.window < 250:
        raise ValueError(f"--window must be >= 250 (the check interval), got {args.window}")
    from .devices import STACK_FLOAT64, device_arg

    scheduler = cluster_choice(args)
    device = device_arg(args.device, "--device", here=scheduler is None, dtype="float64", why=STACK_FLOAT64)
    from particles.sweep import check_sweep_size

    # the particle sweep's rows and the stacked network runs, before the seeds are listed
    check_sweep_size([{"wd": w} for w in wds], args.seeds, names=("--weight-decays", "--seeds"))
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    network = NetworkSweep.load(args.network_results) if args.network_results else None
    from particles import preset
    from particles.core.cli import key_values

    from .configs import ConstantAttentionConfig

    base = preset(args.preset)
    changes = key_values(args.set or [], "--set")
    if network is not None and changes:
        raise ValueError("--set changes the network's training; it cannot apply to --network-results")
    config = ConstantAttentionConfig(p=base.p, train_fraction=base.fraction).replace(**changes)
    check_same_split(config.p, config.train_fraction, base, "--set")
    if network is None:
        from .network_sweep import check_network_memory

        check_network_memory(config, len(wds) * len(seeds), args.max_steps, 250, "--seeds")
    seeds = list(seeds)
    from contextlib import ExitStack

    from .cluster import cluster_client

    with ExitStack() as stack:  # an address that does not answer: refused before the folder is made
        client = stack.enter_context(cluster_client(scheduler, _scheduler_flag(args))) if network is None else None
        out = check_output_folder(args.out, "--out")
        if network is None:
            from .network_sweep import train_network_sweep

            network = train_network_sweep(config, wds, seeds, max_steps=args.max_steps, window=args.window,
                                          callback=None if args.quiet else ProgressBar("compare-network: network "
                                                                                       "steps"),
                                          device=device, scheduler=client)
            try:
                network.save(out / "network_sweep.json")
            except OSError as exc:  # keep going: the comparison is still printed
                print(f"embdyn compare-network: cannot write the network sweep: {exc}", file=sys.stderr)
    result = compare_network(wds, seeds, preset_name=args.preset, network=network, n_jobs=args.jobs,
                             callback=None if args.quiet else ProgressBar("compare-network: particle runs"))
    result.save(out / "compare_network.json")
    atomic_write_text(out / "compare_network.md", (result.to_markdown() + "\n"))
    save_figure(result.plot(f"constant-attention network vs preset {args.preset!r}, {len(seeds)} seeds"),
                out / "compare_network.png", dpi=120)
    print(result.to_markdown())
    print(f"-> {out / 'compare_network.json'}")
    return 0


def register_compare_network(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compare-network", help="the constant-attention network and a particle preset side by "
                                                      "side over weight decay (needs [torch])",
                              description="Train the constant-attention network (N = 17, 80/20, hidden ReLU 64, "
                                          "AdamW lr 0.01, full batch) until its validation accuracy stops changing, "
                                          "run the particle preset at the same weight decays and seeds, and write "
                                          "the structure shares with 95 % intervals, accuracies and the "
                                          "total-variation distance (JSON, Markdown, PNG). Needs the torch extra.")
    p.add_argument("--weight-decays", default="0,0.3,0.6,1.0", help="comma-separated (default 0,0.3,0.6,1.0)")
    p.add_argument("--seeds", type=int, default=100, help="seeds per weight decay (default 100)")
    p.add_argument("--first-seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--preset", default="clustering-alignment", help="particle preset (default clustering-alignment)")
    p.add_argument("--max-steps", type=int, default=50_000, help="network step budget (default 50000)")
    p.add_argument("--window", type=int, default=5000,
                   help="converged when validation accuracy moved by at most one pair over this many steps "
                        "(default 5000)")
    p.add_argument("--network-results", default=None, help="reuse a network_sweep.json instead of training")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="network setting (repeatable), e.g. --set embedding_weight_decay=0 for decay on the "
                        "classifier only, --set lr=0.003")
    p.add_argument("--jobs", type=int, default=1, help="processes for the particle runs (default 1)")
    p.add_argument("--out", default="embdyn-compare-network", help="output folder (default ./embdyn-compare-network)")
    add_cluster_arguments(p, None)
    add_quiet(p)
    p.set_defaults(func=_cmd_compare_network)
