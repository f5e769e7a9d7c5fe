"""The Gram path (particles.kernels.gram, particles.pair_path): forces,
energies, term forces and runs against the direct kernels and the NumPy
references at d = 1 to 256, every built-in variant and custom laws; the
automatic choice; bad input."""
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from particles import (EffectiveLoss, ForceParams, PairEnergy, PairTerm, energy_and_forces, force_terms,
                       modular_addition, simulate, unit_term_forces)
from particles.energy import Engine, pair_system
from particles.kernels.gram import (pair_gram_reference, token_gram, token_gram_reference, token_pair_products,
                                   token_pair_products_reference)
from particles.pair_path import GRAM_MIN_DIMENSION, use_gram
from particles.reference import energy_reference, forces_reference
from particles.testing.strategies import SoftParams, cubic_pull, exp_push, soft_bump, soft_well

PROPS = settings(deadline=None, max_examples=25)
#: dimensions drawn by the properties (the kernels' loops do not depend on d beyond g and M x)
DIMS = st.sampled_from([1, 2, 3, 5, 8, 17, 64, 128, 256])


def _system(p, d, seed, fraction=0.7, shuffled=False):
    """A split (its pairs sorted by first token) or, ``shuffled``, the same
    pairs in a random order (a user's own training set need not be sorted)."""
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(fraction, seed=rng)[0]
    if shuffled:
        train = train.subset(rng.permutation(len(train)))
    return rng.normal(scale=1.5, size=(p, d)), train, rng


def _builtin(rng, polar, axial, classifier):
    extra = dict(wd_target="classifier", bias_scale=rng.uniform(0.5, 2.0), particle_wd=rng.uniform(0, 0.3)) \
        if classifier else dict(wd=rng.uniform(0, 0.3))
    return ForceParams(k_a=rng.uniform(0.5, 3), sig_a=rng.uniform(0.5, 3), k_r=rng.uniform(0.5, 3),
                       sig_r=rng.uniform(0.5, 3), lam=rng.uniform(0.5, 3), sig_t=rng.uniform(0.2, 1),
                       eps=rng.uniform(0.1, 2), alignment="polar" if polar else "gradient",
                       alignment_form="axial" if axial else "cosine", **extra)


def _custom(rng, kind):
    distance = PairTerm(same=soft_well, other=soft_bump, params=SoftParams(rng.uniform(0.5, 2), rng.uniform(0.5, 2)))
    cosine = PairTerm(same=cubic_pull, other=exp_push, variable="cosine",
                      params=SoftParams(rng.uniform(0.5, 2), rng.uniform(0.5, 2)))
    return PairEnergy(distance=distance if kind != "cosine" else None, cosine=cosine if kind != "distance" else None,
                      eps=rng.uniform(0.2, 1.0), wd=rng.uniform(0, 0.3))


def _rel(a, b):
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))


@PROPS
@given(p=st.integers(3, 15), d=DIMS, seed=st.integers(0, 2**31 - 1), polar=st.booleans(), axial=st.booleans(),
       classifier=st.booleans(), shuffled=st.booleans())
def test_builtin_forces_equal_direct_and_reference(p, d, seed, polar, axial, classifier, shuffled):
    x, train, rng = _system(p, d, seed, shuffled=shuffled)
    law = _builtin(rng, polar, axial, classifier)
    if d < 2 and law.lam > 0:
        law = law.replace(lam=0.0)
    e_gram, f_gram = energy_and_forces(x, train, law, path="gram", parallel=False)
    e_direct, f_direct = energy_and_forces(x, train, law, path="direct", parallel=False)
    f_ref = forces_reference(x, train.pairs, train.labels, law)
    e_ref = energy_reference(x, train.pairs, train.labels, law)
    assert _rel(f_gram, f_direct) <= 1e-11
    assert _rel(f_gram, f_ref) <= 1e-11
    assert abs(e_gram - e_direct) <= 1e-11 * max(1.0, abs(e_direct))
    assert abs(e_gram - e_ref) <= 1e-11 * max(1.0, abs(e_ref))


@pytest.mark.slow  # compiles three custom laws' kernels on both paths (about a minute)
@PROPS
@given(p=st.integers(3, 13), d=DIMS, seed=st.integers(0, 2**31 - 1),
       kind=st.sampled_from(["distance", "cosine", "both"]))
def test_custom_law_forces_equal_direct_and_reference(p, d, seed, kind):
    if d < 2 and kind != "distance":
        d = 2  # a cosine term needs d >= 2
    x, train, rng = _system(p, d, seed)
    law = _custom(rng, kind)
    e_gram, f_gram = energy_and_forces(x, train, law, path="gram", parallel=False)
    e_direct, f_direct = energy_and_forces(x, train, law, path="direct", parallel=False)
    assert _rel(f_gram, f_direct) <= 1e-11
    assert _rel(f_gram, forces_reference(x, train.pairs, train.labels, law)) <= 1e-11
    assert abs(e_gram - e_direct) <= 1e-11 * max(1.0, abs(e_direct))


@PROPS
@given(p=st.integers(3, 13), d=DIMS, seed=st.integers(0, 2**31 - 1), polar=st.booleans(), axial=st.booleans(),
       shuffled=st.booleans())
def test_term_forces_equal_direct(p, d, seed, polar, axial, shuffled):
    check_term_forces(p, d, seed, polar, axial, False, shuffled)


@pytest.mark.slow  # a custom law's term kernels on both paths
@PROPS
@given(p=st.integers(3, 13), d=DIMS, seed=st.integers(0, 2**31 - 1))
def test_custom_term_forces_equal_direct(p, d, seed):
    check_term_forces(p, d, seed, False, False, True)


def check_term_forces(p, d, seed, polar, axial, custom, shuffled=False):
    d = max(d, 2)
    x, train, rng = _system(p, d, seed, shuffled=shuffled)
    law = _custom(rng, "both") if custom else _builtin(rng, polar, axial, False)
    X = np.stack([x, 0.5 * x + rng.normal(size=x.shape)])
    gram = unit_term_forces(law, X, train, path="gram")
    direct = unit_term_forces(law, X, train, path="direct")
    for k in range(gram.shape[1]):
        assert _rel(gram[:, k], direct[:, k]) <= 1e-11
    # the terms with the law's strengths add up to the total force on either path
    total = energy_and_forces(x, train, law, path="direct")[1]
    assert _rel(sum(force_terms(law, x, train, path="gram").values()), total) <= 1e-11


@settings(deadline=None, max_examples=10)
@given(p=st.integers(3, 12), d=DIMS, seed=st.integers(0, 2**31 - 1))
def test_token_and_pair_gram_equal_numpy(p, d, seed):
    x, train, _ = _system(p, d, seed)
    g = np.empty((p, p))
    token_gram(x, g)
    assert np.allclose(g, token_gram_reference(x), rtol=1e-13, atol=1e-12)
    assert np.array_equal(g, g.T)  # one sum per entry, mirrored
    G = pair_gram_reference(x, train.pairs)
    a, b = train.pairs[:, 0], train.pairs[:, 1]
    assert np.allclose(G, g[a][:, a] + g[a][:, b] + g[b][:, a] + g[b][:, b], rtol=1e-12, atol=1e-11)
    # the token-pair products the pair loop reads its rows of G from: G[u] = H[a_u] + H[b_u]
    H = np.empty((p, len(a)))
    token_pair_products(g, np.ascontiguousarray(a, dtype=np.int64), np.ascontiguousarray(b, dtype=np.int64), H)
    assert np.allclose(H, token_pair_products_reference(x, train.pairs), rtol=1e-12, atol=1e-11)
    assert np.allclose(H[a] + H[b], G, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("polar", [False, True])
@pytest.mark.parametrize("shuffled", [False, True])
def test_blocked_system_parallel_equals_serial_bit_for_bit(polar, shuffled):
    # 23 tokens, 0.9 of the pairs: over MIN_BLOCKED_PAIRS, so 16 row blocks spread over threads
    x, train, rng = _system(23, 40, 5, fraction=0.9, shuffled=shuffled)
    law = _builtin(rng, polar, False, False)
    e_s, f_s = energy_and_forces(x, train, law, path="gram", parallel=False)
    e_p, f_p = energy_and_forces(x, train, law, path="gram", parallel=True)
    assert e_s == e_p and np.array_equal(f_s, f_p)
    assert _rel(f_s, energy_and_forces(x, train, law, path="direct", parallel=False)[1]) <= 1e-11


def test_runs_agree_between_paths_and_are_reproducible():
    x, train, rng = _system(17, 64, 9)
    law = _builtin(rng, False, False, False)
    a = simulate(x, train, law, steps=60, dt=0.01, path="gram", temperature=0.01, seed=3)
    b = simulate(x, train, law, steps=60, dt=0.01, path="gram", temperature=0.01, seed=3, parallel=True)
    c = simulate(x, train, law, steps=60, dt=0.01, path="direct", temperature=0.01, seed=3)
    assert np.array_equal(a.embeddings, b.embeddings)
    assert np.max(np.abs(a.embeddings - c.embeddings)) <= 1e-10 * np.max(np.abs(c.embeddings))


def test_automatic_choice_follows_the_dimension():
    _, train, _ = _system(11, 2, 1)
    law = ForceParams(lam=1.0)
    for d in (1, 2, GRAM_MIN_DIMENSION - 1, GRAM_MIN_DIMENSION, 128):
        assert Engine(d, pair_system(train), law, None, "auto", 11).gram == (d >= GRAM_MIN_DIMENSION)
        assert Engine(d, pair_system(train), law, None, "gram", 11).gram
        assert not Engine(d, pair_system(train), law, None, "direct", 11).gram
    assert not use_gram("auto", 128, cell_lists=True)


def test_a_token_in_no_pair_gets_only_its_decay():
    x, _, _ = _system(6, 16, 2)
    train = modular_addition(6).subset(np.array([0, 1, 2, 6, 7]))  # pairs of tokens 0-2 only
    law = ForceParams(lam=1.0, wd=0.2)
    f_gram = energy_and_forces(x, train, law, path="gram")[1]
    assert _rel(f_gram, energy_and_forces(x, train, law, path="direct")[1]) <= 1e-12
    lonely = sorted(set(range(6)) - set(train.pairs.ravel().tolist()))
    assert lonely and np.allclose(f_gram[lonely], -0.2 * x[lonely])


def test_bad_paths_are_refused_by_name():
    x, train, _ = _system(7, 2, 3)
    with pytest.raises(ValueError, match="path must be one of"):
        energy_and_forces(x, train, ForceParams(), path="fast")
    with pytest.raises(TypeError, match="path must be one of"):
        energy_and_forces(x, train, ForceParams(), path=None)
    with pytest.raises(ValueError, match="path='gram' cannot run the cell-list"):
        energy_and_forces(x, train, ForceParams(), path="gram", repulsion_tol=1e-12)
    with pytest.raises(ValueError, match="path='gram' cannot run the cell-list"):
        simulate(x, train, ForceParams(), steps=3, dt=0.01, path="gram", repulsion_tol=1e-12)
    with pytest.raises(ValueError, match="path='gram' runs the pair kernels"):
        unit_term_forces(EffectiveLoss.from_pairs(train), x[None], train, path="gram")
    with pytest.raises(ValueError, match="path must be one of"):
        force_terms(ForceParams(), x, train, path="GRAM")


def test_auto_stays_direct_far_from_the_origin_and_for_few_pairs():
    from particles.pair_path import GRAM_MAX_OFFSET, offset_ratio

    x, train, _ = _system(9, 16, 4)
    assert offset_ratio(x) < GRAM_MAX_OFFSET
    far = x + 1e4  # the centroid 1e4 spreads away: the Gram path's distances would cancel
    assert offset_ratio(far) > GRAM_MAX_OFFSET
    law = ForceParams(lam=0.0, wd=0.0)
    assert Engine(16, pair_system(train), law, None, "auto", 9, x).gram
    assert not Engine(16, pair_system(train), law, None, "auto", 9, far).gram
    exact = energy_and_forces(far, train, law, path="direct")[1]
    assert np.array_equal(energy_and_forces(far, train, law)[1], exact)
    # many tokens, few pairs: the p x p work would exceed the pair loop
    assert not use_gram("auto", 64, pairs=30, tokens=500)
    assert use_gram("auto", 64, pairs=344, tokens=41)


def test_a_law_whose_kernels_have_no_gram_path_runs_direct():
    from particles.kernels.bundle import BUILTIN_KERNELS, Kernels

    class OldKernels(ForceParams):
        def kernels(self):
            return Kernels(*BUILTIN_KERNELS[:7])  # the seven fields of before: no Gram kernels

    x, train, _ = _system(9, 16, 6)
    law = OldKernels(lam=1.0)
    assert not Engine(16, pair_system(train), law, None, "auto", 9).gram
    assert _rel(energy_and_forces(x, train, law)[1], energy_and_forces(x, train, ForceParams(lam=1.0))[1]) <= 1e-11
    with pytest.raises(ValueError, match="no Gram path"):
        energy_and_forces(x, train, law, path="gram")
    with pytest.raises(ValueError, match="no Gram path"):
        unit_term_forces(law, x[None], train, path="gram")


@settings(deadline=None, max_examples=30)
@given(p=st.integers(3, 13), d=DIMS, seed=st.integers(0, 2**31 - 1), reach=st.floats(0.05, 1.5))
@example(p=13, d=5, seed=221, reach=1.0)  # every exponent at the limit (found by hypothesis, 2026-11-29)
def test_repulsion_factors_give_the_gaussian_or_decline(p, d, seed, reach):
    """The repulsion's factors (particles.kernels.clustering.repulsion_factors)
    multiply to exp(-r^2 / 2 sig_r^2) for every pair where every exponent is
    within FACTOR_LIMIT, and are declined where one is not; ``reach`` puts
    the largest exponent from a twentieth of the limit to past it."""
    from particles.kernels.clustering import FACTOR_LIMIT, repulsion_factors
    from particles.kernels.gram import pair_geometry
    from particles.kernels.records import PairGeometry

    x, train, rng = _system(p, d, seed)
    pairs = np.asarray(train.pairs)
    first, second = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
    n = len(pairs)
    g, N, rho, H = np.empty((p, p)), np.empty(n), np.empty(n), np.empty((p, n))
    pair_geometry(x, 1.0, PairGeometry(first, second, g, H, N, rho))
    top = max(float(N.max()), 2.0 * float(np.abs(H).max()))
    sig_r = np.sqrt(0.5 * top / (reach * FACTOR_LIMIT))  # inv * top = reach * FACTOR_LIMIT
    prm = ForceParams(sig_r=sig_r).kernel_params()
    eN, EH = np.empty(n), np.empty((p, n))
    taken = repulsion_factors(prm, N, H, eN, EH)
    inv = 0.5 / sig_r ** 2
    within = inv * N.max() <= FACTOR_LIMIT and 2.0 * inv * np.abs(H).max() <= FACTOR_LIMIT
    assert taken == within
    if taken:
        # against the per-pair form of the Gram path (r^2 from the same N and H): the factors' own
        # rounding, of the exponents' size (300 random cases: at most 6e-16 inv top, relative)
        r2 = np.maximum(N[:, None] + N[None] - 2.0 * (H[first] + H[second]), 0.0)
        # in the kernel's order, (eN[u] eN[v]) (EH[a_u, v] EH[b_u, v]): at the limit, the product taken left
        # to right underflows to 0 where the whole is a normal number (exp(-659) at p=13, d=5, seed=221)
        product = (eN[:, None] * eN[None]) * (EH[first] * EH[second])
        exact = np.exp(-inv * r2)
        assert np.all(np.abs(product - exact) <= 2e-15 * max(1.0, inv * top) * np.maximum(exact, 1e-300))
        f_gram = energy_and_forces(x, train, ForceParams(sig_r=sig_r, lam=0.0), path="gram", parallel=False)[1]
        f_direct = energy_and_forces(x, train, ForceParams(sig_r=sig_r, lam=0.0), path="direct", parallel=False)[1]
        assert _rel(f_gram, f_direct) <= 1e-11
