"""Readmission of pruned terms after a misfit, on and off, over many seeds.

For one benchmark system, noise level and scale (the data of
``bench_fitting.compare``), fits the default model twice: as it is, and
with the readmission search switched off (``READMIT_MAX_TERMS = 0``, the
behaviour before 2026-11-25); PySINDy as in the benchmark. Prints and
saves the derivative error ratio to PySINDy's and the support F1 of both.

    python benchmarks/fitting_readmission.py lorenz 0.05 1 40000 40 docs/figures/fitting/readmission_lorenz5.json

Benchmark-only: needs PySINDy (``pip install '.[bench]'``).
"""
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fitting as bf  # noqa: E402

from fitting.ode import weighted as W  # noqa: E402
from particles.core.io import atomic_write_text  # noqa: E402

name, noise, scale = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
first, n, path = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
S = {s.name: s for s in bf.systems()}[name]


def deriv_f1(model, test_x):
    return bf.derivative_error(model, S, scale, test_x), bf.support_scores(model, S)[2]


rows = []
default_max = W.READMIT_MAX_TERMS
for seed in range(first, first + n):
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(5):
        t, x = S.run(S.x0(rng)); x = scale * x; rms = np.sqrt(np.mean(x**2, axis=0))
        runs.append(x + noise * rms * rng.standard_normal(x.shape))
    test_t, test_x = S.run(S.x0(rng)); test_x = scale * test_x
    out = dict(seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for label, mx in (('on', default_max), ('off', 0)):
            W.READMIT_MAX_TERMS = mx
            m = bf.ours(S).fit(runs, S.dt)
            out[label], out[label + '_f1'] = deriv_f1(m, test_x)
            w = getattr(m, 'fit_info_', {}).get('weighting', {})
            out[label + '_status'] = w.get('status'); out[label + '_readmitted'] = w.get('readmitted')
        W.READMIT_MAX_TERMS = default_max
        p = bf.PySINDyFit(S.degree).fit(runs, S.dt)
        out['pysindy'], out['pysindy_f1'] = deriv_f1(p, test_x)
    rows.append(out)
    print(seed, 'on %.3f off %.3f' % (out['on'] / out['pysindy'], out['off'] / out['pysindy']),
          'f1 %.2f %.2f' % (out['on_f1'], out['off_f1']), out['off_status'], out['on_readmitted'] or '', flush=True)
    atomic_write_text(path, json.dumps(dict(system=name, noise=noise, scale=scale, rows=rows,
                                            command='python ' + ' '.join(sys.argv)), indent=1))
r_on = np.array([r['on'] / r['pysindy'] for r in rows]); r_off = np.array([r['off'] / r['pysindy'] for r in rows])
print('on: <=0.8 %d/%d max %.3f | off: <=0.8 %d/%d max %.3f | readmitted in %d'
      % ((r_on <= 0.8).sum(), n, r_on.max(), (r_off <= 0.8).sum(), n, r_off.max(),
         sum(bool(r['on_readmitted']) for r in rows)))
