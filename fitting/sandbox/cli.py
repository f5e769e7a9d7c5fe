"""``embdyn sandbox``: every layer of a recorded run at one step (a figure),
over its recorded steps (an animation), and its loss spikes and stages (a
table) (docs/sandbox.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from particles.core.cli import ProgressBar, add_quiet
from particles.core.validation import check_path

__all__ = ["register_sandbox"]


def _writable_file(value: str, flag: str, suffixes: tuple[str, ...]) -> Path:
    """``value`` as a path that can be written: one of ``suffixes``, in an existing folder one may write to."""
    path = check_path(value, flag)
    if path.suffix.lower() not in suffixes:
        raise ValueError(f"{flag} must end in {' or '.join(suffixes)}, got {str(path)!r}")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"{flag}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{flag}: the folder {str(folder)!r} cannot be written")
    if path.is_dir():
        raise ValueError(f"{flag} must be a file, got the folder {str(path)!r}")
    return path


def _cmd_sandbox(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from particles.core.figures import save_figure

    from .data import load_layers

    if args.frame_out is not None and args.step is None:
        raise ValueError("--frame-out goes with --step N (the step whose frame it holds)")
    if args.step is None and args.animate is None and not args.report:
        raise ValueError("say what to make: --step N (a frame), --animate PATH (an animation) or --report "
                         "(the spikes and stages)")
    frame_out = _writable_file(args.frame_out or "sandbox_frame.png", "--frame-out", (".png", ".pdf", ".svg")) \
        if args.step is not None else None
    anim_out = _writable_file(args.animate, "--animate", (".gif", ".mp4")) if args.animate is not None else None
    if args.every < 1:
        raise ValueError(f"--every must be >= 1, got {args.every}")
    if args.fps is not None and not 1 <= args.fps <= 60:
        raise ValueError(f"--fps must be in [1, 60], got {args.fps}")
    layers = load_layers(args.run)  # no layer states: one line saying how to record them
    if args.step is not None:
        try:  # a step not recorded: the nearest recorded ones, before any drawing
            layers.index(args.step)
        except ValueError as exc:
            raise ValueError(f"--step: {exc}") from None
    if args.report and layers.curve("train_loss") is None:  # before anything is drawn or written
        raise ValueError("--report reads the run's per-step train_loss, which it does not have (log it with "
                         "LayerRecorder.log(step, train_loss=...)); draw it with --step or --animate")
    if anim_out is not None and anim_out.suffix.lower() == ".mp4":
        from .animation import check_encoder
        check_encoder(anim_out)
    if args.step is not None:
        from .frame import draw_frame

        save_figure(draw_frame(layers, args.step), frame_out)
        print(f"wrote {frame_out} (step {args.step})")
    if anim_out is not None:
        from .animation import animate

        bar = None if args.quiet else ProgressBar("sandbox animation", unit="frames")
        steps = [int(s) for s in layers.steps[::args.every]]
        if steps[-1] != int(layers.steps[-1]):  # the run's last state always ends the animation
            steps.append(int(layers.steps[-1]))
        writer = animate(layers, anim_out, steps=steps, fps=args.fps or 8, progress=bar)
        print(f"wrote {anim_out} ({len(steps)} of {len(layers)} recorded steps, {writer})")
    if args.report:
        from .spikes import find_stages, report_table, trace_spikes

        print(report_table(trace_spikes(layers), find_stages(layers)))
    return 0


def register_sandbox(subparsers: argparse._SubParsersAction) -> None:
    """Add ``embdyn sandbox``."""
    p = subparsers.add_parser("sandbox", help="every layer of a recorded run: a frame, an animation, its spikes",
                              description="The clustering-head sandbox: every layer of a d = 2 network recorded "
                                          "with 'embdyn train MODEL --layers' (or a LayerRecorder): one step's "
                                          "panels as a figure (--step), all recorded steps as an animation "
                                          "(--animate), the loss spikes traced to their layer and the two stages "
                                          "as a table (--report).")
    p.add_argument("run", help="trajectory .npz recorded with layer states")
    p.add_argument("--step", type=int, default=None, help="draw every panel at this recorded step")
    p.add_argument("--frame-out", default=None,
                   help="where --step's figure goes (.png, .pdf or .svg; default ./sandbox_frame.png)")
    p.add_argument("--animate", default=None, metavar="PATH",
                   help="write an animation over the recorded steps: PATH.gif (Pillow) or PATH.mp4 (ffmpeg)")
    p.add_argument("--fps", type=int, default=None, help="frames a second of the animation (1-60, default 8)")
    p.add_argument("--every", type=int, default=1,
                   help="animate every N-th recorded step and the last (default 1: all of them)")
    p.add_argument("--report", action="store_true", help="print the loss spikes and the two stages as a table")
    add_quiet(p)
    p.set_defaults(func=_cmd_sandbox)
