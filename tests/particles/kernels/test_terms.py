"""The force law split by term (particles.kernels.terms): the compiled
kernel against its NumPy reference on random pair sums."""
import numpy as np
from hypothesis import given, settings, strategies as st

from particles import ForceParams, modular_addition
from particles.energy import pair_system
from particles.kernels.pair_sums import pair_sums
from particles.kernels.law import PAIR_TERMS
from particles.kernels.records import PairSums
from particles.kernels.terms import TermSums, pair_term_forces, pair_term_reference

PROPS = settings(deadline=None, max_examples=30)


@PROPS
@given(p=st.integers(3, 13), d=st.integers(2, 4), seed=st.integers(0, 10_000),
       polar=st.booleans(), axial=st.booleans(), which=st.lists(st.booleans(), min_size=4, max_size=4))
def test_kernel_matches_reference(p, d, seed, polar, axial, which):
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(0.8, seed=rng)[0]
    law = ForceParams(k_a=rng.uniform(0.5, 3), sig_a=rng.uniform(0.5, 3), k_r=rng.uniform(0.5, 3),
                      sig_r=rng.uniform(0.5, 3), lam=rng.uniform(0.5, 3), sig_t=rng.uniform(0.2, 1),
                      eps=rng.uniform(0.1, 2), alignment="polar" if polar else "gradient",
                      alignment_form="axial" if axial else "cosine")
    prm = law.kernel_params()
    x = rng.normal(scale=1.5, size=(p, d))
    system = pair_system(train)
    n = len(train)
    S, U, rho = np.empty((d, n)), np.empty((d, n)), np.empty(n)
    pair_sums(x, system.pairs, prm.eps, S, U, rho)
    out = np.empty((4, d, n))
    pair_term_forces(PairSums(S, U, rho), system, prm, np.array(which),
                     TermSums(out, np.empty((2, d, n)), np.empty((2, n))))
    ref = pair_term_reference(S, train.labels, prm)
    scale = max(1.0, float(np.abs(ref).max()))
    for t, name in enumerate(PAIR_TERMS):
        expected = ref[t] if which[t] else np.zeros_like(ref[t])
        assert np.max(np.abs(out[t] - expected)) <= 1e-12 * scale, name
