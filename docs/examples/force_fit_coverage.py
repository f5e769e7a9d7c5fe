"""How often ForceLawFit's 95 % intervals hold the true values (docs/force_fit.md).

Random laws (the built-in law in d = 2 and 3, and a custom PairEnergy in
d = 2), a particle run under each, 5 % noise (of the RMS force) added to the
forces, one fit per run; per parameter: the share of runs whose interval
holds the true value, with a Wilson 95 % interval.

    python docs/examples/force_fit_coverage.py 100 docs/figures/force_fit/coverage.json
"""
import json
import sys
import time
import warnings
from typing import NamedTuple

import numpy as np
from scipy import stats

import particles as P
from fitting import FitQualityWarning, ForceLawFit


def particle_run(law, p=13, d=2, seed=0, steps=1500, every=30, noise=0.0):
    rng = np.random.default_rng(seed)
    train = P.modular_addition(p).split(0.8, seed=rng)[0]
    X = P.simulate(rng.normal(size=(p, d)), train, law, steps=steps, dt=0.01, record_every=every).embeddings
    G = np.stack([P.forces(x, train, law) for x in X])
    if noise:
        G = G + noise * np.sqrt(np.mean(G ** 2)) * rng.normal(size=G.shape)
    return X, G, train


class Well(NamedTuple):
    depth: float
    width: float


def _well(r2, prm):
    return -prm.depth * np.exp(-r2 / (2 * prm.width ** 2))


def _soft(r2, prm):
    return prm.depth / (1.0 + r2 / prm.width ** 2)


def _axial(c, q):
    return -q[0] * c * c


def _apart(c, q):
    return q[0] * np.exp((c - 1) / q[1] ** 2)


CUSTOM = P.PairEnergy(distance=P.PairTerm(_well, _soft, params=Well(2.0, 1.7)),
                      cosine=P.PairTerm(_axial, _apart, variable="cosine", params=(1.0, 0.4)), eps=0.8, wd=0.1)
out = {}
N = int(sys.argv[1])
for label, d in (("builtin d=2", 2), ("builtin d=3", 3), ("custom d=2", 2)):
    hits = {}; t0 = time.time()
    for s in range(N):
        rng = np.random.default_rng(5000 + s)
        if label.startswith("builtin"):
            law = P.ForceParams(k_a=rng.uniform(1, 3), sig_a=rng.uniform(1.5, 3), k_r=rng.uniform(0.5, 2),
                                sig_r=rng.uniform(0.5, 1.2), lam=rng.uniform(0.5, 2), sig_t=rng.uniform(0.2, 0.5),
                                eps=rng.uniform(0.5, 1.5), wd=rng.uniform(0.05, 0.3))
            truth = {"attraction": law.k_a, "repulsion": law.k_r, "alignment_same": law.lam, "alignment_other": law.lam,
                     "decay": law.wd, "sig_a": law.sig_a, "sig_r": law.sig_r, "sig_t": law.sig_t, "eps": law.eps}
            start = P.ForceParams(lam=1.0); kw = {}
        else:
            w = rng.uniform(1.2, 2.2); e = rng.uniform(0.5, 1.2); wd = rng.uniform(0.05, 0.3)
            law = CUSTOM.replace(distance=CUSTOM.distance.with_params(Well(2.0, w)), eps=e, wd=wd)
            truth = {"distance_same": 2.0, "distance_other": 2.0, "cosine_same": 1.0, "cosine_other": 1.0, "decay": wd,
                     "distance.width": w, "eps": e}
            start = CUSTOM.replace(distance=CUSTOM.distance.with_params(Well(1.0, 1.5)), eps=1.0)
            kw = {"ranges": ("distance.width", "eps")}
        X, G, train = particle_run(law, d=d, seed=6000 + s, noise=0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitQualityWarning)
            fit = ForceLawFit(start, seed=s, **kw).fit(X, G, train=train)
        for name, value in truth.items():
            lo, hi = fit.intervals_[name]
            hits.setdefault(name, []).append(bool(lo <= value <= hi))
    rows = {}
    for k, v in hits.items():
        ci = stats.binomtest(sum(v), len(v)).proportion_ci(0.95, method="wilson")
        rows[k] = {"covered": sum(v), "runs": len(v), "rate": sum(v) / len(v), "wilson_95": [ci.low, ci.high]}
    out[label] = {"parameters": rows, "all_covered_rate": float(np.mean([all(z) for z in zip(*hits.values())])),
                  "seconds": time.time() - t0}
    print(label, {k: round(r["rate"], 3) for k, r in rows.items()}, "all:", out[label]["all_covered_rate"], flush=True)
out["command"] = f"python docs/examples/force_fit_coverage.py {N} {sys.argv[2]}"
json.dump(out, open(sys.argv[2], "w"), indent=1)
