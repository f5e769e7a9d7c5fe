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
import numpy as np
from scipy import stats

import particles as P
from fitting import FitQualityWarning, ForceLawFit
from particles.testing import Well, example_custom_law, law_run


CUSTOM = example_custom_law()
particle_run = law_run
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
                     "wd": law.wd, "sig_a": law.sig_a, "sig_r": law.sig_r, "sig_t": law.sig_t, "eps": law.eps}
            start = P.ForceParams(lam=1.0); kw = {}
        else:
            w = rng.uniform(1.2, 2.2); e = rng.uniform(0.5, 1.2); wd = rng.uniform(0.05, 0.3)
            law = CUSTOM.replace(distance=CUSTOM.distance.with_params(Well(2.0, w)), eps=e, wd=wd)
            truth = {"attraction": 2.0, "repulsion": 2.0, "alignment_same": 1.0, "alignment_other": 1.0, "wd": wd,
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
