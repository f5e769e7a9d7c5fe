"""The constant-attention network and the particle model side by side over
weight decay (needs torch for the network half).

For every weight decay w the network (``train_network_sweep``: trained until
its validation accuracy stops changing) and the particle preset
``preset(name).replace(wd=w)`` are run for the same seeds (the same 80/20
split for a given seed), the final token embeddings are classified with
``particles.structure_metrics``, and the two class distributions are compared:
shares with Wilson 95 % intervals, mean accuracies with t intervals, and the
total-variation distance 1/2 sum_k |p_k - q_k| between the distributions.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from particles import STRUCTURES, preset, structure_metrics
from particles.sweep import DIVERGED, sweep
from particles.core.io import atomic_write_text

from particles.core.validation import check_float_list, check_seeds

from .configs import ConstantAttentionConfig
from .network_sweep import NetworkSweep, train_network_sweep

__all__ = ["compare_network", "NetworkComparison", "structure_summary", "total_variation", "check_same_split"]

KINDS = tuple(STRUCTURES) + (DIVERGED,)


def _wilson(k: int, n: int) -> list[float]:
    ci = stats.binomtest(int(k), int(n)).proportion_ci(0.95, method="wilson")
    return [float(ci.low), float(ci.high)]


def _mean_ci(values: Sequence[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"mean": None, "ci": [None, None]}
    mean = float(v.mean())
    if v.size < 2 or np.all(v == v[0]):
        return {"mean": mean, "ci": [mean, mean]}
    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return {"mean": mean, "ci": [max(0.0, mean - half), min(1.0, mean + half)]}  # accuracies lie in [0, 1]


def structure_summary(structures: Sequence[str], **accuracies: Sequence[float]) -> dict[str, Any]:
    """Counts, shares and Wilson 95 % intervals of each structure class, and
    the mean and t 95 % interval (clipped to [0, 1]) of each named accuracy
    series."""
    n = len(structures)
    if n == 0:
        raise ValueError("structures must not be empty")
    unknown = set(structures) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown structure class(es) {sorted(unknown)}; expected {KINDS}")
    counts = {k: int(sum(s == k for s in structures)) for k in KINDS}
    out: dict[str, Any] = {"n": n, "counts": counts, "shares": {k: c / n for k, c in counts.items()},
                           "intervals": {k: _wilson(c, n) for k, c in counts.items()}}
    for name, values in accuracies.items():
        out[name] = _mean_ci(values)
    return out


def total_variation(a: dict[str, float], b: dict[str, float]) -> float:
    """1/2 sum_k |a_k - b_k| over the union of the classes of two share dicts."""
    keys = set(a) | set(b)
    return 0.5 * float(sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys))


@dataclass
class NetworkComparison:
    """Result of :func:`compare_network`.

    ``rows``: one dict per weight decay with ``weight_decay``, ``network``
    and ``particles`` (see :func:`structure_summary`; the network with
    ``val_acc``, ``pair_sum_accuracy``, ``pair_sum_accuracy_angular`` and
    ``converged``, the particles with ``pair_sum_accuracy`` and
    ``pair_sum_accuracy_angular``) and ``tv_distance``. ``runs``: every run's
    class and accuracies. ``meta``: the settings.
    """

    rows: list[dict[str, Any]]
    runs: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def save(self, path: str | os.PathLike) -> Path:
        """Write JSON atomically."""
        text = json.dumps({"meta": self.meta, "rows": self.rows, "runs": self.runs}, indent=1)
        return atomic_write_text(Path(path), text)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "NetworkComparison":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a readable comparison file ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a comparison file holds a JSON object, got {type(data).__name__}")
        for key in ("rows", "meta"):
            if key not in data:
                raise ValueError(f"{path}: field {key!r} is missing")
        return cls(data["rows"], data.get("runs", []), data["meta"])

    def to_markdown(self) -> str:
        """The side-by-side table: shares (95 % interval) per class, the
        accuracies (validation for the network; 1-NN pair-sum accuracy,
        euclidean and angular, for both) and the total-variation distance at
        each weight decay."""
        kinds = [k for k in KINDS if k != DIVERGED or any(r[s]["counts"][DIVERGED] for r in self.rows
                                                            for s in ("network", "particles"))]

        def acc(summary: dict[str, Any] | None) -> str:
            if summary is None or summary["mean"] is None:
                return "-"
            return f"{summary['mean']:.2f} ({summary['ci'][0]:.2f}-{summary['ci'][1]:.2f})"

        head = ("| wd | model | n | " + " | ".join(kinds)
                + " | val acc | pair-sum acc (euclidean) | pair-sum acc (angular) | TV distance |")
        lines = [head, "|" + "---|" * (len(kinds) + 7)]
        for r in self.rows:
            for side in ("network", "particles"):
                s = r[side]
                cells = [f"{s['shares'][k]:.2f} ({s['intervals'][k][0]:.2f}-{s['intervals'][k][1]:.2f})"
                         for k in kinds]
                tv = f"{r['tv_distance']:.2f}" if side == "network" else ""
                lines.append(f"| {r['weight_decay']:g} | {side} | {s['n']} | " + " | ".join(cells)
                             + f" | {acc(s.get('val_acc'))} | {acc(s.get('pair_sum_accuracy'))}"
                             f" | {acc(s.get('pair_sum_accuracy_angular'))} | {tv} |")
        return "\n".join(lines)

    def plot(self, title: str | None = None):
        """Share of each class, network against particles, at each weight
        decay (bars with 95 % intervals); returns the figure."""
        from matplotlib.figure import Figure  # no pyplot: the caller's matplotlib backend stays as it is

        kinds = [k for k in STRUCTURES]
        fig = Figure(figsize=(3.2 * len(self.rows), 3.4))
        axes = np.atleast_1d(fig.subplots(1, len(self.rows), sharey=True))
        x = np.arange(len(kinds))
        for ax, r in zip(axes, self.rows):
            for j, (side, color) in enumerate((("network", "C0"), ("particles", "C1"))):
                s = r[side]
                share = np.array([s["shares"][k] for k in kinds])
                lo = np.array([s["intervals"][k][0] for k in kinds])
                hi = np.array([s["intervals"][k][1] for k in kinds])
                ax.bar(x + (j - 0.5) * 0.4, share, 0.4, color=color, label=side,
                       yerr=np.vstack([share - lo, hi - share]), capsize=2)
            ax.set_xticks(x, [k.replace("imperfect grid", "imperfect") for k in kinds], rotation=45, ha="right")
            ax.set_title(f"wd = {r['weight_decay']:g}  (TV {r['tv_distance']:.2f})", fontsize=9)
            ax.set_ylim(0, 1)
        axes[0].set_ylabel("share of seeds")
        axes[0].legend(fontsize=8)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        return fig


def _network_runs(sweep_result: NetworkSweep) -> list[dict[str, Any]]:
    runs = []
    for rec in sweep_result.records:
        if rec.get("diverged", False):
            m = {"structure": DIVERGED, "accuracy_euclidean": np.nan, "accuracy_angular": np.nan,
                 "circularity": np.nan}
        else:
            m = structure_metrics(np.asarray(rec["embedding"], dtype=float))
        runs.append({"model": "network", "weight_decay": float(rec["weight_decay"]), "seed": int(rec["seed"]),
                     "structure": m["structure"], "val_acc": rec["val_acc"], "train_acc": rec["train_acc"],
                     "pair_sum_accuracy": m["accuracy_euclidean"],
                     "pair_sum_accuracy_angular": m["accuracy_angular"], "circularity": m["circularity"],
                     "converged": bool(rec["converged"]), "steps_run": int(rec["steps_run"])})
    return runs


def check_same_split(p: int, train_fraction: float, base, source: str = "network") -> None:
    """The network's p and training fraction must be the preset's, so that a
    seed gives both models the same split (ValueError naming ``source``)."""
    if p != base.p or train_fraction != base.fraction:
        raise ValueError(f"{source} has p = {p}, train_fraction = {train_fraction}, but preset {base.name!r} has "
                         f"p = {base.p}, fraction = {base.fraction}; they must agree")


def _check_sweep_matches(network: NetworkSweep, base) -> None:
    """A reused network sweep: its config (meta) and its embeddings must have the preset's setting."""
    cfg = network.meta.get("config", {}) if isinstance(network.meta, dict) else {}
    default = ConstantAttentionConfig()
    check_same_split(cfg.get("p", default.p), cfg.get("train_fraction", default.train_fraction), base)
    for rec in network.records:
        if rec["embedding"] is not None and len(rec["embedding"]) != base.p:
            raise ValueError(f"network embeddings have {len(rec['embedding'])} tokens, the preset p = {base.p}")


def compare_network(weight_decays: Sequence[float] = (0.0, 0.3, 0.6, 1.0), seeds: Sequence[int] = tuple(range(100)),
                    *, preset_name: str = "clustering-alignment", config: ConstantAttentionConfig | None = None,
                    network: NetworkSweep | None = None, max_steps: int = 50_000, check_every: int = 250,
                    window: int = 5000, n_jobs: int = 1,
                    callback: Callable[[str, int, int], None] | None = None) -> NetworkComparison:
    """Network and particle model side by side over weight decay.

    Parameters
    ----------
    weight_decays : sequence of float >= 0
        The network's AdamW weight decay and the preset's ``wd``.
    seeds : sequence of distinct ints >= 0
        Seeds of both models (seed s gives both the same training split).
    preset_name : str
        Particle preset, run as ``preset(preset_name).replace(wd=w)``.
    config : ConstantAttentionConfig, optional
        Network settings other than the weight decay (default N = 17, 80/20,
        hidden 64, AdamW lr 0.01, float64).
    network : NetworkSweep, optional
        Reuse a finished network sweep (e.g. ``NetworkSweep.load(path)``)
        instead of training; it must hold every (weight decay, seed) and
        have the preset's p and training fraction (``config``,
        ``max_steps``, ``check_every`` and ``window`` are then unused).
    max_steps, check_every, window : int
        The network's budget and convergence rule (see ``train_network_sweep``).
    n_jobs : int
        Processes for the particle runs.
    callback : callable(done, total), optional
        Progress over the whole comparison, in work units: the network's
        steps (``max_steps``, when it trains) then one per particle run.

    Returns
    -------
    NetworkComparison
    """
    wds = check_float_list(weight_decays, "weight_decays", 0.0, distinct=True)
    seeds = check_seeds(seeds)
    base = preset(preset_name)
    if not isinstance(n_jobs, int) or isinstance(n_jobs, bool) or n_jobs < 1:
        raise ValueError(f"n_jobs must be an int >= 1, got {n_jobs!r}")
    config = ConstantAttentionConfig(p=base.p, train_fraction=base.fraction) if config is None else config
    if not isinstance(config, ConstantAttentionConfig):
        raise TypeError(f"config must be a ConstantAttentionConfig, got {type(config).__name__}")
    if network is not None and not isinstance(network, NetworkSweep):
        raise TypeError(f"network must be a NetworkSweep, got {type(network).__name__}")
    n_particles = len(wds) * len(seeds)
    offset = 0 if network is not None else max_steps  # the network's steps come first when it trains
    if network is None:
        check_same_split(config.p, config.train_fraction, base, "config")
        cb = None if callback is None else (lambda step, total: callback(step, max_steps + n_particles))
        network = train_network_sweep(config, wds, seeds, max_steps=max_steps, check_every=check_every,
                                      window=window, callback=cb)
    _check_sweep_matches(network, base)
    net_runs = [r for r in _network_runs(network) if r["weight_decay"] in wds and r["seed"] in seeds]
    have = {(r["weight_decay"], r["seed"]) for r in net_runs}
    missing = [(w, s) for w in wds for s in seeds if (w, s) not in have]
    if missing:
        raise ValueError(f"network holds no run for (weight_decay, seed) {missing[:3]}"
                         f"{' ...' if len(missing) > 3 else ''}")

    pcb = None if callback is None else (lambda done, total: callback(offset + done, offset + total))
    table = sweep([{"wd": w} for w in wds], seeds, base=base, n_jobs=n_jobs, callback=pcb)
    part_runs = [{"model": "particles", "weight_decay": float(row["wd"]), "seed": int(row["seed"]),
                  "structure": row["structure"], "pair_sum_accuracy": row["accuracy_euclidean"],
                  "pair_sum_accuracy_angular": row["accuracy_angular"], "circularity": row["circularity"]}
                 for row in table]
    rows = []
    for w in wds:
        net = [r for r in net_runs if r["weight_decay"] == w]
        par = [r for r in part_runs if r["weight_decay"] == w]
        ns = structure_summary([r["structure"] for r in net], val_acc=[r["val_acc"] for r in net],
                               pair_sum_accuracy=[r["pair_sum_accuracy"] for r in net],
                               pair_sum_accuracy_angular=[r["pair_sum_accuracy_angular"] for r in net])
        ns["converged"] = int(sum(r["converged"] for r in net))
        ps = structure_summary([r["structure"] for r in par], pair_sum_accuracy=[r["pair_sum_accuracy"] for r in par],
                               pair_sum_accuracy_angular=[r["pair_sum_accuracy_angular"] for r in par])
        rows.append({"weight_decay": w, "network": ns, "particles": ps,
                     "tv_distance": total_variation(ns["shares"], ps["shares"])})
    meta = {"weight_decays": wds, "seeds": seeds, "preset": base.to_dict(), "network": network.meta}
    return NetworkComparison(rows, net_runs + part_runs, meta)
