"""particles.force_terms: each term's force; the terms sum to the total
force; strengths and ranges changed by name; bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import (EffectiveLoss, ForceParams, PairEnergy, cosine_alignment, effective_loss_gradient,
                       forces, gaussian_clustering, modular_addition)
from particles.testing import example_custom_law
from particles.law_terms import (BUILTIN_TERMS, force_terms, range_names, range_values, term_names,
                                   unit_term_forces, with_ranges, with_strengths)

PROPS = settings(deadline=None, max_examples=25)


def _system(p, d, seed):
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(0.8, seed=rng)[0]
    return rng, rng.normal(scale=1.5, size=(p, d)), train


def _rel(a, b):
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))


@PROPS
@given(p=st.integers(3, 17), d=st.integers(2, 5), seed=st.integers(0, 10_000), polar=st.booleans(),
       axial=st.booleans(), classifier=st.booleans())
def test_builtin_terms_sum_to_the_force(p, d, seed, polar, axial, classifier):
    rng, x, train = _system(p, d, seed)
    extra = dict(wd_target="classifier", particle_wd=rng.uniform(0, 1)) if classifier else {}
    law = ForceParams(k_a=rng.uniform(0, 3), sig_a=rng.uniform(0.3, 3), k_r=rng.uniform(0, 3),
                      sig_r=rng.uniform(0.3, 3), lam=rng.uniform(0, 3), sig_t=rng.uniform(0.2, 1),
                      eps=rng.uniform(0.1, 2), wd=rng.uniform(0, 1), alignment="polar" if polar else "gradient",
                      alignment_form="axial" if axial else "cosine", **extra)
    terms = force_terms(law, x, train)
    assert tuple(terms) == BUILTIN_TERMS
    assert _rel(sum(terms.values()), forces(x, train, law)) <= 1e-12


@PROPS
@given(p=st.integers(3, 17), seed=st.integers(0, 10_000))
def test_clustering_terms_in_one_dimension(p, seed):
    rng, x, train = _system(p, 1, seed)
    law = ForceParams(k_a=2.0, k_r=1.5, wd=0.3)
    terms = force_terms(law, x, train)
    assert tuple(terms) == ("attraction", "repulsion", "wd")
    assert _rel(sum(terms.values()), forces(x, train, law)) <= 1e-12


#: one law for the whole module: its kernels compile once
CUSTOM = example_custom_law()


def _custom():
    return CUSTOM


@pytest.mark.slow
@PROPS
@given(p=st.integers(3, 13), d=st.integers(2, 4), seed=st.integers(0, 10_000))
def test_custom_terms_sum_to_the_force(p, d, seed):
    _, x, train = _system(p, d, seed)
    law = _custom()
    terms = force_terms(law, x, train)
    assert tuple(terms) == ("attraction", "repulsion", "alignment_same", "alignment_other", "wd")
    assert _rel(sum(terms.values()), forces(x, train, law)) <= 1e-12


@pytest.mark.slow
def test_builtin_law_as_custom_terms_gives_the_same_fields():
    _, x, train = _system(11, 2, 3)
    builtin = force_terms(ForceParams(k_a=2, sig_a=2, k_r=1, sig_r=1, lam=1.5, sig_t=0.3, eps=0.5, wd=0.2), x, train)
    custom = force_terms(gaussian_clustering(2, 2, 1, 1, 0.2) + cosine_alignment(1.5, 0.3, 0.5), x, train)
    for a, b in zip(BUILTIN_TERMS, ("attraction", "repulsion", "alignment_same", "alignment_other", "wd")):
        assert _rel(custom[b], builtin[a]) <= 1e-12, a


def test_effective_loss_as_a_law():
    _, x, train = _system(9, 2, 4)
    terms = force_terms("effective", x, train)
    assert np.allclose(terms["effective"], -effective_loss_gradient(x, train)[1], rtol=0, atol=1e-14)
    assert not terms["wd"].any()
    loss = EffectiveLoss.from_pairs(train)
    assert np.array_equal(force_terms(loss, x, train)["effective"], terms["effective"])


def test_unit_forces_scale_with_strength():
    _, x, train = _system(11, 3, 5)
    law = ForceParams(k_a=2.5, k_r=0.5, lam=1.5, wd=0.3)
    unit = unit_term_forces(law, x[None], train)[0]
    terms = force_terms(law, x, train)
    for k, (name, c) in enumerate(zip(BUILTIN_TERMS, (2.5, 0.5, 1.5, 1.5, 0.3))):
        assert _rel(c * unit[k], terms[name]) <= 1e-12, name


def test_ranges_and_strengths_by_name():
    law = ForceParams(lam=1.0)
    names = range_names(law)
    assert names == ("sig_a", "sig_r", "sig_t", "eps")
    assert range_names(ForceParams(lam=1.0, wd=0.5, wd_target="classifier"), ["alignment_same"]) == ("bias_scale",)
    changed = with_ranges(law, names, [1.5, 0.5, 0.3, 2.0])
    assert list(range_values(changed, names)) == [1.5, 0.5, 0.3, 2.0]
    strong = with_strengths(changed, {"attraction": 4.0, "alignment_same": 2.0, "alignment_other": 2.0})
    assert isinstance(strong, ForceParams) and strong.k_a == 4.0 and strong.lam == 2.0
    with pytest.raises(ValueError, match="polar"):
        with_strengths(law.replace(alignment="polar"), {"alignment_same": 2.0, "alignment_other": 0.5})


@pytest.mark.slow  # compiles the split law's kernels (~8 s)
def test_alignment_halves_apart_make_a_pair_energy():
    changed = with_ranges(ForceParams(lam=1.0), ("sig_a", "sig_r", "sig_t", "eps"), [1.5, 0.5, 0.3, 2.0])
    split = with_strengths(changed, {"alignment_same": 2.0, "alignment_other": 0.5})
    assert isinstance(split, PairEnergy)  # a ForceParams has one lam
    _, x, train = _system(11, 2, 6)
    t = force_terms(changed, x, train)
    expected = t["attraction"] + t["repulsion"] + 2.0 * t["alignment_same"] + 0.5 * t["alignment_other"] + t["wd"]
    assert _rel(forces(x, train, split), expected) <= 1e-10


@pytest.mark.slow  # compiles a scaled copy of the law's kernels (~10 s)
def test_custom_law_scaled_by_term():
    law = _custom()
    _, x, train = _system(11, 2, 7)
    t = force_terms(law, x, train)
    scaled = with_strengths(law, {"attraction": 3.0, "alignment_other": 0.25, "wd": 0.5})
    expected = 3.0 * t["attraction"] + t["repulsion"] + t["alignment_same"] + 0.25 * t["alignment_other"] \
        + 5.0 * t["wd"]
    assert _rel(forces(x, train, scaled), expected) <= 1e-12
    assert term_names(law) == term_names(scaled)


def test_bad_input_names_the_parameter():
    _, x, train = _system(7, 2, 0)
    with pytest.raises(TypeError, match="law"):
        force_terms("clustering", x, train)
    with pytest.raises(TypeError, match="train"):
        force_terms(ForceParams(), x, None)
    with pytest.raises(ValueError, match="x"):
        force_terms(ForceParams(), x[:3], train)
    with pytest.raises(ValueError, match="x"):
        force_terms(ForceParams(), np.full_like(x, np.nan), train)
    with pytest.raises(ValueError, match="d >= 2"):
        force_terms(ForceParams(lam=1.0), x[:, :1], train)
    with pytest.raises(ValueError, match="terms"):
        unit_term_forces(ForceParams(), x[None], train, ["gravity"])
    with pytest.raises(ValueError, match="terms"):
        unit_term_forces(ForceParams(), x[None], train, [])
    with pytest.raises(ValueError, match="X"):
        unit_term_forces(ForceParams(), x, train)


def test_a_new_kind_of_law_plugs_in_through_the_protocol():
    """A law kind the package does not know (here the built-in law at half
    strength, written as its own class) answers particles.law_protocol and
    works in force_terms, unit_term_forces and the force-law fit with no
    other change: nothing dispatches on the type of a law."""
    import particles as P
    from fitting import ForceLawFit
    from particles.law_protocol import FORCE_LAW_ATTRIBUTES

    class Halved:
        pair_terms, tied_terms, simulates, cell_lists = P.ForceParams.pair_terms, {}, False, False

        def __init__(self, base):
            self.base = base

        def __getattr__(self, name):  # term names, ranges, kernels, record: the base law's
            return getattr(self.base, name)

        def strengths(self):
            return {k: 0.5 * v for k, v in self.base.strengths().items()}

        def with_ranges(self, names, values):
            return Halved(self.base.with_ranges(names, values))

        def with_strengths(self, strengths):
            return Halved(self.base.with_strengths({k: 2.0 * v for k, v in strengths.items()}))

    assert all(hasattr(Halved(P.ForceParams()), name) for name in FORCE_LAW_ATTRIBUTES)
    law = P.ForceParams(k_a=2.0, k_r=1.3, lam=1.7, wd=0.2)
    train = P.modular_addition(11).split(0.8, seed=0)[0]
    x = np.random.default_rng(0).normal(size=(11, 2))
    half, full = force_terms(Halved(law), x, train), force_terms(law, x, train)
    assert list(half) == list(full)
    for name in full:
        np.testing.assert_allclose(half[name], 0.5 * full[name], rtol=1e-12, atol=1e-15)
    X = P.simulate(x, train, law, steps=300, dt=0.01, record_every=20).embeddings
    G = np.stack([P.forces(s, train, law) for s in X])
    fit = ForceLawFit(Halved(law), ranges=(), n_bootstrap=0).fit(X, G, train=train)
    np.testing.assert_allclose(fit.coef_, [2.0, 1.3, 1.7, 1.7, 0.2], rtol=1e-6)  # the base law's strengths
