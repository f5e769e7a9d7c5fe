"""``embdyn stages``: the stages of a recorded run, as a table, a figure and
JSON (docs/bring_your_own_run.md, stages of a run)."""

from __future__ import annotations

import argparse

from particles.core.cli import add_quiet, word_or_ints
from particles.core.validation import check_output_folder

__all__ = ["register_stages"]


def _cmd_stages(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from particles.core.figures import save_figure
    from particles.core.io import write_json
    from particles.trajectory import Trajectory

    from .stages import stages

    frequencies = word_or_ints(args.frequencies, "--frequencies", "auto")
    traj = Trajectory.load(args.trajectory)
    result = stages(traj, frequencies=frequencies)  # a run too short: one line, exit 2
    out = check_output_folder(args.out, "--out")
    write_json(out / "stages.json", result.to_dict(), indent=2)
    save_figure(result.figure(), out / "stages.png")
    circuit = ", ".join(map(str, result.circuit_frequencies)) or "none (no circuit formed)"
    print(f"trajectory: {args.trajectory} (steps {result.first_step}..{result.last_step}; circuit frequencies "
          f"{circuit}; key frequencies "
          f"{', '.join(map(str, result.key_frequencies)) or 'none stand out'})")
    print(result.table())
    print("fit windows (--windows stages): " + ", ".join(
        f"{name} [{a}, {b})" for name, a, b in zip(result.window_names, result.edges, result.edges[1:])))
    print(f"wrote {out / 'stages.json'}, {out / 'stages.png'}")
    return 0


def register_stages(subparsers: argparse._SubParsersAction) -> None:
    """Add ``embdyn stages``."""
    p = subparsers.add_parser("stages", help="when a run memorised, formed its circuit, cleaned up and generalised",
                              description="The stages of a recorded run (memorisation, circuit formation, cleanup, "
                                          "generalisation) from its Fourier signals and, when recorded, the "
                                          "network's own curves: a table on stdout, stages.json and stages.png.")
    p.add_argument("trajectory", help="trajectory .npz (particles.Trajectory format)")
    p.add_argument("--frequencies", default="auto", metavar="auto|K1,K2,...",
                   help="the circuit's frequencies: auto (default: the final spectrum's m strongest, m its effective number) or these k")
    p.add_argument("--out", default="embdyn-stages", help="output folder (default ./embdyn-stages)")
    add_quiet(p)
    p.set_defaults(func=_cmd_stages)
