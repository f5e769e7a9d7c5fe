"""The demo behind ``embdyn demo``: one command from install to a picture of the whole package.

Three stages, each writing figures into the output folder, then a one-page
summary (``summary.md`` and ``summary.html`` with the figures inline):

1. particles: the ``circles`` and ``grids`` presets over a few seeds
   (structure classes, snapshot grids, an animated GIF of one run);
2. effective theory: the critical-fraction curve and the grokking-rate
   curve for addition with p = 10;
3. fitting: Fourier signals, survivors and the survival paper's linear-ODE
   analysis of the survival-MLP run shipped with the package.

A failing stage stops the demo with :class:`DemoError`; the stages finished
before it and a summary saying what failed stay in the folder.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["run_demo", "DemoError", "STAGES", "check_out", "compile_kernels"]

from particles.metrics import STRUCTURES

STAGES = ("particles", "theory", "fitting")
Progress = Callable[[str, int, int], None]


class DemoError(RuntimeError):
    """A demo stage failed or the output folder is not writable."""


def check_out(out: Path) -> Path:
    """The demo's output folder, created and checked before any work
    (:class:`DemoError` naming ``--out`` otherwise)."""
    from particles.core.validation import check_output_folder

    try:
        return check_output_folder(out, "--out")
    except (ValueError, TypeError) as exc:
        raise DemoError(str(exc)) from None


def _save_animation(anim, path: Path) -> None:
    from particles.core.io import atomic_write

    atomic_write(path, lambda name: anim.save(name, writer="pillow", dpi=100), by_name=True)  # ~560 px wide


def _save(fig, out: Path, name: str) -> str:
    from particles.core.figures import save_figure

    save_figure(fig, out / name, dpi=100)
    return name


# ------------------------------------------------------------------ stages
def compile_kernels() -> float:
    """Compile (first run) or load every compiled kernel the demo uses;
    returns the seconds taken."""
    import effective_theory
    import particles

    return particles.warmup(parallel=False, parts=("simulate",)) + effective_theory.warmup()


def _stage_particles(out: Path, quick: bool, progress: Progress | None) -> dict[str, Any]:
    from particles import classify_structure, preset, structure_metrics
    from particles.figures import animate_trajectory, plot_snapshots

    compile_kernels()
    seeds = 2 if quick else 6
    result: dict[str, Any] = {"seeds": seeds, "figures": []}
    total, done = 2 * seeds, 0
    for name in ("circles", "grids"):
        config = preset(name)
        dataset = config.dataset()
        classes = []
        for seed in range(seeds):
            traj = config.run(seed)
            classes.append(classify_structure(traj.final, dataset))
            if seed == 0:  # the figures show seed 0; its numbers go to the summary under the same names
                m = structure_metrics(traj.final, dataset)
                result.setdefault("seed0", {})[name] = {
                    "structure": m["structure"], "circularity": float(m["circularity"]),
                    "accuracy": float(m["accuracy_euclidean"])}
                fig = plot_snapshots(traj, n=4, dataset=dataset, connect=True,
                                     title=f"preset {name!r}, seed 0 (last panel: tokens k -> k+1 joined)")
                result["figures"].append(_save(fig, out, f"particles_{name}.png"))
                if name == "circles":
                    anim = animate_trajectory(traj, dataset=dataset, frames=12 if quick else 40, title=name)
                    _save_animation(anim, out / "particles_circles.gif")
                    result["figures"].append("particles_circles.gif")
            done += 1
            if progress:
                progress("particles", done, total)
        result[name] = {c: classes.count(c) for c in sorted(set(classes))}
    return result


def _stage_theory(out: Path, quick: bool, progress: Progress | None) -> dict[str, Any]:
    from effective_theory import grokking_rate_curve, unique_structure_probability
    from effective_theory.figures import plot_grokking_rate_curve, plot_structure_probability

    samples = 300 if quick else 3000
    prob = unique_structure_probability(10, samples=samples, seed=0)
    if progress:
        progress("theory", 1, 2)
    fractions = np.round(np.linspace(0.2, 1.0, 9 if quick else 17), 3)
    curve = grokking_rate_curve(10, fractions, samples=20 if quick else 100, seed=0)
    if progress:
        progress("theory", 2, 2)
    lo, hi = prob.critical_fraction_interval
    return {
        "samples_per_size": samples, "critical_fraction": float(prob.critical_fraction),
        "critical_fraction_interval": [float(lo), float(hi)],
        "grokking_rate_at_full_data": float(curve.mean[-1]),
        "figures": [_save(plot_structure_probability(prob), out, "theory_critical_fraction.png"),
                    _save(plot_grokking_rate_curve(curve), out, "theory_grokking_rate.png")],
    }


def _stage_fitting(out: Path, quick: bool, progress: Progress | None) -> dict[str, Any]:
    import warnings

    from ..ode.figures import plot_coefficients, plot_fit
    from ..signals import surviving_frequencies, trajectory_signals
    from ..signals.figures import plot_signals
    from ..survival import example_trajectory, survival_ode_analysis

    traj = example_trajectory()
    steps, signals = trajectory_signals(traj)
    survivors = surviving_frequencies(traj)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = survival_ode_analysis(traj, n_steps=1000)
    if progress:
        progress("fitting", 1, 2)
    names = [f"S{k}" for k in range(1, signals.shape[1] + 1)]
    # the numbers in the figure are those of summary.md, under the same names
    fit_title = (f"Lasso linear ODE fitted on steps 0-1000 (shaded), surviving frequencies: derivative R^2 "
                 f"{_fmt(report.lasso_r2)}, trajectory R^2 in sample {_fmt(report.trajectory_r2)}, held out "
                 f"{_fmt(report.heldout_r2)}")
    figures = [
        _save(plot_signals(signals, steps, survivors, title="survival MLP (shipped run): Fourier signals"),
              out, "fitting_signals.png"),
        _save(plot_fit(report.lasso, signals, steps.astype(float), window=(0, 1000), names=names,
                       columns=[int(k) - 1 for k in np.flatnonzero(survivors) + 1],
                       title=fit_title),
              out, "fitting_fit.png"),
        _save(plot_coefficients(report.lasso, names), out, "fitting_coefficients.png"),
    ]
    if progress:
        progress("fitting", 2, 2)
    numbers = report.as_dict()
    numbers.pop("notes")
    return {"source": "survival MLP, p = 59, d = 128, 3000 steps (shipped with the package)",
            "survivors": [int(k) for k in np.flatnonzero(survivors) + 1],
            "final_val_acc": float(traj.scalars["val_acc"][-1]), **numbers, "notes": report.notes,
            "figures": figures, "figure_titles": {"fitting_fit.png": fit_title}}


STAGE_FUNCTIONS = {"particles": _stage_particles, "theory": _stage_theory, "fitting": _stage_fitting}


# ------------------------------------------------------------------ summary
def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def heldout_sentence(f: dict[str, Any]) -> str:
    """One sentence that says what the held-out trajectory R^2 means."""
    held = f.get("heldout_r2")
    if held is None:
        window = f.get("heldout_window")
        notes = [n for n in f.get("notes") or [] if window and f"steps {window[0]}-{window[1]}" in n]
        return "The held-out trajectory R^2 is not available: " + ("; ".join(notes) if notes else
                                                                    "the run ends at the fitting window") + "."
    if held >= 0.5:
        return (f"Held out, the fitted system still follows the run (trajectory R^2 {_fmt(held)} on the next "
                f"1000 steps).")
    grows = f["max_real_eigenvalue"] > 0
    return (f"Held out, the trajectory R^2 is {_fmt(held)}: the linear ODE describes the transient it was fitted "
            f"on, not what follows. " + ("Its largest eigenvalue is positive "
            f"({_fmt(f['max_real_eigenvalue'])}), so past step 1000 its solution grows away from the plateau the "
            "signals actually stay on (right panel of fitting_fit.png)." if grows else "Past step 1000 its "
            "solution drifts away from the signals (right panel of fitting_fit.png).") +
            " R^2 is negative when the prediction is worse than the held-out signals' own mean.")


def _summary_markdown(summary: dict[str, Any]) -> str:
    lines = ["# embedding-dynamics demo", "",
             f"{'Quick' if summary['quick'] else 'Full'} run, {summary['seconds']:.0f} s, "
             f"package version {summary['version']}.", ""]
    st = summary["stages"]
    if "particles" in st:
        p = st["particles"]
        lines += ["## 1. Particle model (clustering and alignment forces)", "",
                  f"Structure of the final embedding over {p['seeds']} seeds per preset:", "",
                  "| preset | " + " | ".join(STRUCTURES) + " |",
                  "|---" * (len(STRUCTURES) + 1) + "|"]
        for name in ("circles", "grids"):
            counts = p[name]
            lines.append(f"| {name} | " + " | ".join(str(counts.get(c, 0)) for c in STRUCTURES) + " |")
        lines += ["", "Seed 0, drawn in the figures (accuracy: leave-one-out nearest-neighbour accuracy of the "
                  "pair sums by label, Euclidean):", "", "| preset | structure | circularity | accuracy |", "|---|---|---|---|"]
        for name, m in p.get("seed0", {}).items():
            lines.append(f"| {name} | {m['structure']} | {m['circularity']:.2f} | {m['accuracy']:.2f} |")
        lines += [""] + [f"![{f}]({f})" for f in p["figures"]] + [""]
    if "theory" in st:
        t = st["theory"]
        lo, hi = t["critical_fraction_interval"]
        lines += ["## 2. Effective theory (addition, p = 10)", "",
                  f"Critical training fraction (P(unique structure) = 1/2, {t['samples_per_size']} random sets a "
                  f"size): **{t['critical_fraction']:.3f}** (bootstrap 95 % [{lo:.3f}, {hi:.3f}]).",
                  f"Mean grokking rate l3 at the full dataset: {t['grokking_rate_at_full_data']:.4f}.", ""]
        lines += [f"![{f}]({f})" for f in t["figures"]] + [""]
    if "fitting" in st:
        f = st["fitting"]
        lines += ["## 3. Fourier signals and a linear ODE (" + f["source"] + ")", "",
                  f"Surviving frequencies: {', '.join(map(str, f['survivors']))} "
                  f"(final validation accuracy {f['final_val_acc']:.3f}).", "",
                  "| linear ODE on the first 1000 steps | value |", "|---|---|",
                  f"| derivative R^2, Lasso alpha = 0.01 (reference) | {_fmt(f['lasso_r2'])} |",
                  f"| derivative R^2, least squares | {_fmt(f['ols_r2'])} |",
                  f"| trajectory R^2 in sample (exact solution) | {_fmt(f['trajectory_r2'])} |",
                  f"| trajectory R^2 held out, steps 1000-2000 | {_fmt(f['heldout_r2'])} |",
                  f"| Lasso coefficients of A and b that are non-zero | {f['lasso_nonzero']} of "
                  f"{f['n_frequencies'] * (f['n_frequencies'] + 1)} ({100 * f['lasso_sparsity']:.1f} % are zero) |",
                  f"| max Re eigenvalue of A (Lasso) | {_fmt(f['max_real_eigenvalue'])} |", ""]
        lines += [heldout_sentence(f), ""]
        lines += [f"![{g}]({g})" for g in f["figures"]] + [""]
    if "failed" in summary:
        lines += ["## Failed", "", f"Stage **{summary['failed']['stage']}** failed: {summary['failed']['error']}", ""]
    lines += ["Numbers: `summary.json`. Figures show the numbers above under the same names. "
              "Documentation: `docs/` in the source distribution (start at docs/index.md); "
              "`help(particles)`, `help(effective_theory)` and `help(fitting)` in Python.", ""]
    return "\n".join(lines)


def inline_html(markdown: str, out: Path) -> str:
    """summary.md as a self-contained HTML page, rendered by markdown-it-py
    (CommonMark with tables); images are embedded as data URIs so the page
    can be mailed or attached on its own."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")  # raw HTML is escaped

    default_image = md.renderer.rules["image"]

    def image(renderer, tokens, idx, options, env):
        token = tokens[idx]
        path = out / str(token.attrGet("src"))
        if path.is_file():
            mime = "image/gif" if path.suffix == ".gif" else "image/png"
            token.attrSet("src", f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode())
        token.attrSet("style", "max-width:100%")
        return default_image(tokens, idx, options, env)

    md.add_render_rule("image", image)
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em}img{display:block}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>embedding-dynamics demo</title>"
            f"<style>{style}</style></head><body>\n" + md.render(markdown) + "</body></html>\n")


def _write_summary(out: Path, summary: dict[str, Any]) -> None:
    from particles.core.io import atomic_write_text, write_json

    markdown = _summary_markdown(summary)
    atomic_write_text(out / "summary.md", markdown)
    atomic_write_text(out / "summary.html", inline_html(markdown, out))
    write_json(out / "summary.json", summary, indent=1)


# ------------------------------------------------------------------ entry points
def run_demo(out: str | Path = "embdyn-demo", quick: bool = False, progress: Progress | None = None
             ) -> dict[str, Any]:
    """Run the three stages into ``out`` and write the summary.

    Parameters
    ----------
    out : folder
    quick : bool
        Fewer seeds and samples (about 30 s once the kernels are compiled).
    progress : callable(stage, done, total), optional

    Returns
    -------
    dict with the numbers of every stage (also in ``summary.json``).

    Raises
    ------
    DemoError
        if ``out`` is not writable or a stage fails (finished stages and a
        summary naming the failure are kept).
    """
    from particles.core.version import package_version

    out = Path(out)
    check_out(out)
    start = time.perf_counter()
    summary: dict[str, Any] = {"quick": bool(quick), "version": package_version(), "stages": {}, "seconds": 0.0}
    for stage in STAGES:
        try:
            summary["stages"][stage] = STAGE_FUNCTIONS[stage](out, quick, progress)
        except Exception as exc:
            summary["failed"] = {"stage": stage, "error": f"{type(exc).__name__}: {exc}"}
            summary["seconds"] = time.perf_counter() - start
            _write_summary(out, summary)
            raise DemoError(f"demo stage {stage!r} failed: {type(exc).__name__}: {exc}; finished stages and "
                            f"summary.md are in {str(out)!r}") from exc
    summary["seconds"] = time.perf_counter() - start
    _write_summary(out, summary)
    return summary
