"""The sandbox's spike rule and cause attribution on real sparse-modular runs
(fitting.sandbox.spikes), on seeds that were not used to choose its defaults.

For each seed, one run at a time: train ``--steps`` steps with every
layer's state recorded (``layers=True``; skipped when the run is already in
``--runs``), find and trace its loss spikes, place its two stages, and draw
its log loss with the found spikes marked (``--plots``/<run>_spikes.png)
and, for each spike, the probe sequences over the region map of the
sequence plane at the two bracketing snapshots (<run>_spike<step>.png).

Each named cause is checked against records it was not read from:

* decision boundary: the full training set's accuracy at every step
  (``train_acc``, not the snapshots): confirmed when it fell during the
  spike below its median over the 100 steps before (training sequences
  crossed a decision boundary), which snapshots far apart can miss.
* normalisation: the angle by which the near-zero input's normalised
  version (the recorded ``normed_inputs`` or ``normed_sequence``) turned
  between the bracketing snapshots, against the median turn of the other
  points of its kind; confirmed when it turned at least 5 times as far
  (x / ||x|| moves far for a small step of x).

Spikes by eye: ``--eye`` is a JSON file {seed: [steps, ...]} of the spikes
one sees on the log-loss plots (the owner's reading); a found spike matches
an eye spike within [onset - 20, end + 20]. Without it, the eye columns are
left empty (null). The readings of the first evaluation (spikes at least
doubling the loss, on the whole run's log-loss plot): none in seeds 5, 6,
7, 10 (12 000 steps), 14 (27 000), 13 (34 000), 15 (24 000), p = 3 seeds
0 and 1, lr = 0.01 seed 15, batch_size = 16 seed 2 and lr = 0.006 seed 2;
{"15": [3820, 3885]} with lr = 0.006; {"2": [9790, 10570]} at the defaults
(the run the defaults were reasoned with in view).

    python benchmarks/sandbox_spikes.py --seeds 5 6 7 --steps 12000 --out /tmp/sandbox_spikes.json
    python benchmarks/sandbox_spikes.py --seeds 15 14 13 --steps 12000 27000 34000 --out ...
    python benchmarks/sandbox_spikes.py --seeds 0 1 --steps 12000 --set p=3 --out ...
        [--runs /tmp/sandbox_spikes_runs] [--plots /tmp/sandbox_spikes_plots] [--eye EYE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from timing import write_json  # noqa: E402

#: a found spike matches an eye spike within this many steps of its [onset, end]
MATCH = 20
#: a normalisation cause is confirmed when its point turned this many times the median turn
TURN = 5.0


def run_path(runs: Path, seed: int, steps: int, changes: dict) -> Path:
    tag = "".join(f"_{k}{v}" for k, v in changes.items())
    return runs / f"sparse-modular{tag}_seed{seed}_{steps}.npz"


def ensure_run(runs: Path, seed: int, steps: int, changes: dict) -> tuple[Path, float]:
    """The run's file, trained here when missing (seconds spent)."""
    path = run_path(runs, seed, steps, changes)
    if path.exists():
        return path, 0.0
    from fitting.training import train
    from fitting.training.configs import config_for

    start = time.perf_counter()
    train(config_for("sparse-modular", steps=steps, **changes), seed=seed, out=str(path), layers=True)
    return path, time.perf_counter() - start


def parse_set(items: list[str]) -> dict:
    """``KEY=VALUE`` config changes (values as Python literals)."""
    import ast

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set takes KEY=VALUE, got {item!r}")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The angle between the directions of a and b (..., 2), radians (NaN where either is not finite)."""
    ta, tb = np.arctan2(a[..., 1], a[..., 0]), np.arctan2(b[..., 1], b[..., 0])
    return np.abs((tb - ta + np.pi) % (2 * np.pi) - np.pi)


def confirm(layers, report) -> dict:
    """Check the report's causes against records they were not read from."""
    out: dict = {}
    s = report.spike
    acc = layers.curve("train_acc")
    if acc is not None:  # the full training set's accuracy at every step: did training sequences change class?
        steps, values = np.asarray(acc[0]), np.asarray(acc[1], dtype=float)
        before = values[(steps < s.onset) & (steps >= s.onset - 100)]
        during = values[(steps >= s.onset) & (steps <= s.end)]
        if before.size and during.size:
            out["train_acc_before"] = float(np.median(before))
            out["train_acc_min_during"] = float(during.min())
            out["boundary_confirmed"] = bool(during.min() < np.median(before))
    if report.before is None:
        out["named_cause_confirmed"] = None
        return out
    i, j = layers.index(report.before), layers.index(report.after)
    st = layers.states
    if report.norm_input is not None:
        normed = st.get({"inputs": "normed_inputs", "sequence": "normed_sequence"}[report.norm_input])
        if normed is not None:
            turn = _angles(normed[i], normed[j])
            where = report.norm_where.split(",")[0].split()
            at = (int(where[1]), int(where[4])) if report.norm_input == "inputs" else (int(where[1]),)
            mine = float(turn[at])
            rest = np.delete(turn.reshape(-1), np.ravel_multi_index(at, turn.shape))
            med = float(np.nanmedian(rest))
            out["norm_turn"] = mine
            out["norm_turn_median_others"] = med
            out["norm_turn_ratio"] = mine / med if med > 0 else float("inf")
            out["normalisation_confirmed"] = bool(mine >= TURN * med)
    named = report.cause
    out["named_cause_confirmed"] = (None if named in ("neither", "not recorded") else
                                    out.get("boundary_confirmed") if named == "decision boundary" else
                                    out.get("normalisation_confirmed"))
    return out


def largest_unflagged_ratio(steps, loss, spikes, window: int) -> tuple[float, int]:
    """The largest loss / running median (over the ``window`` steps before) outside the found spikes, and its
    step: how close the rest of the curve came to the factor."""
    x = np.log(np.maximum(loss, loss[loss > 0].min()))
    view = np.lib.stride_tricks.sliding_window_view(x, window)[:-1]
    ratio = np.exp(x[window:] - np.median(view, axis=1))
    at = steps[window:]
    outside = np.ones(len(at), dtype=bool)
    for s in spikes:
        outside &= (at < s.onset) | (at > s.end)
    if not outside.any():
        return float("nan"), -1
    k = int(np.argmax(np.where(outside, ratio, -np.inf)))
    return float(ratio[k]), int(at[k])


def match(spikes, eye: list[int]) -> tuple[int, int, list[int], list[int]]:
    """(hits, false alarms, missed eye steps, false-alarm steps)."""
    used, false = set(), []
    for s in spikes:
        hit = [e for e in eye if s.onset - MATCH <= e <= s.end + MATCH and e not in used]
        if hit:
            used.update(hit)
        else:
            false.append(s.step)
    missed = [e for e in eye if e not in used]
    return len(spikes) - len(false), len(false), missed, false


def plot_run(layers, spikes, stages, seed: int, path: Path) -> None:
    from matplotlib.figure import Figure

    steps, loss = layers.curve("train_loss")
    fig = Figure(figsize=(12, 4), layout="constrained")
    ax = fig.subplots()
    ax.semilogy(steps, loss, lw=0.6, color="C0", label="train_loss")
    for s in spikes:
        ax.axvspan(s.onset, s.end + 1, color="r", alpha=0.25)
        ax.plot([s.step], [s.loss], "rv", ms=6)
    for stage, colour in ((stages.clustering, "C2"), (stages.fitting, "C1")):
        if stage.step is not None:
            ax.axvline(stage.step, color=colour, lw=0.8, ls="--", label=f"{stage.name} {stage.step}")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (log)")
    ax.set_title(f"seed {seed}: {len(spikes)} spikes found (red)", fontsize=9)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=80)


def plot_spike(layers, report, seed: int, path: Path) -> None:
    """The probe sequences over the sequence plane's region map at the bracketing snapshots, and the loss."""
    from matplotlib.figure import Figure

    if report.before is None or "regions_sequence" not in layers.states:
        return
    fig = Figure(figsize=(12, 4), layout="constrained")
    axes = fig.subplots(1, 3)
    labels = layers.probe_labels
    for ax, step in zip(axes, (report.before, report.after)):
        k = layers.index(step)
        ext = layers.states["extent_sequence"][k]
        ax.imshow(layers.states["regions_sequence"][k], origin="lower", extent=tuple(ext), cmap="Pastel1",
                  vmin=0, vmax=8, aspect="auto")
        pts = layers.states["sequence"][k]
        ax.scatter(pts[:, 0], pts[:, 1], c=labels, cmap="Set1", vmin=0, vmax=8, s=6)
        if "inputs" in layers.states:
            inp = layers.states["inputs"][k].reshape(-1, 2)
            ax.scatter(inp[:, 0], inp[:, 1], marker="x", c="k", s=10, lw=0.6)
        ax.set_title(f"step {step}: sequence (dots), E+P (x)", fontsize=8)
        ax.set_xlabel("coordinate 1")
        ax.set_ylabel("coordinate 2")
    steps, loss = layers.curve("train_loss")
    s = report.spike
    lo, hi = max(0, s.onset - 150), s.end + 150
    sel = (steps >= lo) & (steps <= hi)
    axes[2].semilogy(steps[sel], loss[sel], ".-", ms=2, lw=0.5)
    axes[2].axvspan(s.onset, s.end + 1, color="r", alpha=0.2)
    for b in (report.before, report.after):
        axes[2].axvline(b, color="k", lw=0.6, ls=":")
    axes[2].set_title(f"seed {seed}, spike {s.step}: {report.cause}", fontsize=8)
    axes[2].set_xlabel("step")
    axes[2].set_ylabel("training loss (log)")
    fig.savefig(path, dpi=80)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[5, 6, 7])
    parser.add_argument("--steps", type=int, nargs="+", default=[12000],
                        help="steps of every run, or one per seed")
    parser.add_argument("--out", type=Path, default=Path("/tmp/sandbox_spikes.json"), help="the results (JSON)")
    parser.add_argument("--runs", type=Path, default=Path("/tmp/sandbox_spikes_runs"),
                        help="where the runs are kept (reused when present)")
    parser.add_argument("--plots", type=Path, default=Path("/tmp/sandbox_spikes_plots"), help="PNGs go here")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a change to the sparse-modular config (e.g. --set lr=0.01 --set p=3)")
    parser.add_argument("--eye", type=Path, default=None, help="JSON {seed: [steps]} of the spikes seen by eye")
    args = parser.parse_args(argv)
    if len(args.steps) not in (1, len(args.seeds)):
        parser.error(f"--steps takes one number or one per seed ({len(args.seeds)}), got {len(args.steps)}")
    if min(args.steps) < 200:
        parser.error("--steps must be at least 200")
    changes = parse_set(args.set)
    steps_of = dict(zip(args.seeds, args.steps * len(args.seeds) if len(args.steps) == 1 else args.steps))
    args.runs.mkdir(parents=True, exist_ok=True)
    args.plots.mkdir(parents=True, exist_ok=True)
    eye = {int(k): [int(s) for s in v] for k, v in json.loads(args.eye.read_text()).items()} if args.eye else {}

    from fitting.sandbox import load_layers
    from fitting.sandbox.spikes import SPIKE_RULE, find_spikes, find_stages, report_table, trace_spikes

    rows = []
    for seed in args.seeds:
        path, seconds = ensure_run(args.runs, seed, steps_of[seed], changes)
        layers = load_layers(path)
        steps, loss = layers.curve("train_loss")
        spikes = find_spikes(steps, loss)
        reports = trace_spikes(layers, spikes)
        stages = find_stages(layers, spikes=spikes)
        name = path.stem  # sparse-modular[_changes]_seed<S>_<steps>
        plot_run(layers, spikes, stages, seed, args.plots / f"{name}_spikes.png")
        for r in reports:
            plot_spike(layers, r, seed, args.plots / f"{name}_spike{r.step}.png")
        row = {"seed": seed, "steps": steps_of[seed], "run": str(path), "train_seconds": round(seconds, 1),
               "final_train_acc": float(layers.curve("train_acc")[1][-1]),
               "found": len(spikes),
               "largest_ratio_outside_spikes": largest_unflagged_ratio(steps, loss, spikes, SPIKE_RULE["window"]),
               "table": report_table(reports, stages),
               "stages": {"clustering": stages.clustering.step, "clustering_first": stages.clustering.first,
                          "fitting": stages.fitting.step, "fitting_first": stages.fitting.first,
                          "order": stages.order},
               "spikes": []}
        for r in reports:
            s = r.spike
            row["spikes"].append({
                "step": s.step, "onset": s.onset, "end": s.end, "ratio": s.ratio, "loss": s.loss,
                "layer": r.layer, "layer_ratio": r.layer_ratio, "grad_ratios": r.grad_ratios,
                "before": r.before, "after": r.after, "gap": r.gap, "cause": r.cause, "causes": list(r.causes),
                "crossings": r.crossings, "crossing_share": r.crossing_share, "crossings_before": r.crossings_before,
                "on_boundary": r.on_boundary, "on_boundary_before": r.on_boundary_before,
                "class_source": r.class_source, "norm_input": r.norm_input,
                "norm_where": r.norm_where, "norm_ratio": r.norm_ratio, "norm_after": r.norm_after,
                "norm_share": r.norm_share, "check": confirm(layers, r)})
        if seed in eye:
            hits, false, missed, false_steps = match(spikes, eye[seed])
            row.update({"eye": eye[seed], "by_eye": len(eye[seed]), "hits": hits, "false_alarms": false,
                        "misses": len(missed), "missed_steps": missed, "false_alarm_steps": false_steps})
        else:
            row.update({"eye": None, "by_eye": None, "hits": None, "false_alarms": None, "misses": None})
        rows.append(row)
        print(f"seed {seed} ({steps_of[seed]} steps, final train_acc {row['final_train_acc']:.3f}): "
              f"{len(spikes)} spikes found; largest loss / running median elsewhere "
              f"{row['largest_ratio_outside_spikes'][0]:.3g} at step {row['largest_ratio_outside_spikes'][1]}" + (f", {row['by_eye']} by eye, {row['misses']} missed, "
                                                           f"{row['false_alarms']} false alarms" if seed in eye else ""))
        print(row["table"])
    write_json(args.out, {"steps": steps_of, "config_changes": changes, "rule": SPIKE_RULE, "match_steps": MATCH, "turn_factor": TURN,
                          "runs": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
