"""How often the particle model, started from a network's embedding, reaches
the network's own structure class: the Network tab's hand-over measured over
many seeds.

For each seed a live network (``fitting.training.live``: the constant-attention
network, and the survival MLP at d = 2) trains ``--steps`` steps; the particle
model then runs ``--particle-steps`` Euler steps from its embedding under (a)
the preset's law and (b) the law fitted to the network's last 200 steps
(``fitting.explore.handover``). Each is compared with the network's structure
class at the hand-over and after as many more training steps again.

The null (chance level): the same law run from a random embedding of the
same seed's split (the particle engine's own start), compared with the same
network classes: how often the classes agree when the start carries nothing
of the network. Rates with 95 % Wilson intervals.

    python benchmarks/handover_agreement.py --out docs/figures/explore/handover_agreement.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def one_seed(model: str, seed: int, steps: int, particle_steps: int, preset_name: str) -> dict:
    import warnings

    import particles as pt
    from fitting.explore.handover import handover_law
    from fitting.explore.network import live_network_class

    net = live_network_class(model)(seed=seed)
    net.advance(steps)
    rec = net.recorded()
    at_handover = pt.structure_metrics(rec["now"], rec["train"])["structure"]
    val_acc = net.frame()[0]["val_acc"]
    net.advance(steps)
    later = pt.structure_metrics(net.embedding(), rec["train"])["structure"]
    config = pt.preset(preset_name)
    rng = np.random.default_rng(seed)
    x_random = config.init_scale * rng.standard_normal(rec["now"].shape)
    out = {"model": model, "seed": seed, "network": at_handover, "network_later": later, "val_acc": val_acc}
    for kind in ("preset", "fitted"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fit's own warnings are in its info
            law, info = handover_law(kind, preset_name, rec)
        for start, x0 in (("network", rec["now"]), ("random", x_random)):
            try:
                traj = pt.simulate(x0, rec["train"], law, steps=particle_steps, dt=config.dt,
                                   record_every=particle_steps)
                structure = pt.structure_metrics(traj.final, rec["train"])["structure"]
            except (ValueError, FloatingPointError) as exc:  # a run that blew up: counted as no agreement
                structure = f"failed: {type(exc).__name__}"
            out[f"{kind}_{start}"] = structure
        if info is not None:
            out["fit"] = {"r2": info["r2"], "null_r2": info["null_r2"], "warnings": len(info["warnings"])}
    return out


def rates(rows: list[dict]) -> dict:
    from effective_theory.montecarlo import wilson_interval

    def rate(hits: int, n: int) -> dict:
        lo, hi = wilson_interval(np.array(hits), n)
        return {"hits": int(hits), "n": n, "rate": hits / n, "interval": [float(lo), float(hi)]}

    out = {}
    n = len(rows)
    for kind in ("preset", "fitted"):
        for start in ("network", "random"):
            for against in ("network", "network_later"):
                hits = sum(r[f"{kind}_{start}"] == r[against] for r in rows)
                out[f"{kind} law from the {start} embedding vs the {against.replace('_', ' ')}"] = rate(hits, n)
    fits = [r["fit"] for r in rows if "fit" in r]
    if fits:
        out["fitted R2 (median, null median)"] = [float(np.median([f["r2"] for f in fits])),
                                                  float(np.median([f["null_r2"] for f in fits]))]
        out["fits above their null"] = rate(sum(f["r2"] > f["null_r2"] for f in fits), len(fits))
    classes: dict[str, int] = {}
    for r in rows:
        classes[r["network"]] = classes.get(r["network"], 0) + 1
    out["network classes"] = classes
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--survival-seeds", type=int, default=12)
    ap.add_argument("--steps", type=int, default=3000, help="training steps before the hand-over")
    ap.add_argument("--particle-steps", type=int, default=5000)
    ap.add_argument("--preset", default="clustering-alignment")
    ap.add_argument("--first-seed", type=int, default=100, help="seeds used: first-seed, first-seed + 1, ...")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from timing import write_json

    results = {"command": " ".join(["python", "benchmarks/handover_agreement.py", *(argv or sys.argv[1:])]),
               "settings": vars(args), "models": {}}
    began = time.perf_counter()
    for model, n in (("constant-attention", args.seeds), ("survival-mlp", args.survival_seeds)):
        rows = [one_seed(model, args.first_seed + k, args.steps, args.particle_steps, args.preset) for k in range(n)]
        results["models"][model] = {"rows": rows, "rates": rates(rows)}
        print(model, json.dumps(results["models"][model]["rates"], indent=1))
    results["seconds"] = time.perf_counter() - began
    if args.out:
        write_json(args.out, results)
        print(f"-> {args.out}")


if __name__ == "__main__":
    main()
