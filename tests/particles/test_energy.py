"""The compiled force law against the NumPy reference (whole model; the
kernels' separate jobs are tested in tests/particles/kernels/test_jobs.py);
the same-class partner lists, compile_for and the engines a dataset keeps
(particles.energy)."""
import copy
import dataclasses
import importlib
import math
import pickle
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import (ForceParams, addition, energy_and_forces, energy_reference, forces, forces_reference,
                       modular_addition)
from particles.energy import (ENGINES_PER_SYSTEM, engine_bytes, engine_for, kept_engines, pair_system,
                              same_class_partners)

energy_module = importlib.import_module("particles.energy")  # the module (particles.energy is also a function)


PARAM_CASES = [
    ForceParams(),
    ForceParams(lam=2.0, sig_t=0.3, eps=0.7),
    ForceParams(lam=1.5, alignment="polar", k_a=0.5, sig_a=1.2),
    ForceParams(lam=3.0, alignment_form="axial", k_a=0.0, k_r=0.0, sig_t=0.5, wd=0.3),
    ForceParams(lam=1.0, alignment="polar", alignment_form="axial", wd=0.0),
    ForceParams(k_a=6.0, sig_a=3.0, sig_r=2.0, lam=3.0, alignment_form="axial", sig_t=0.5, eps=0.1, wd=0.6,
                wd_target="classifier", bias_scale=1.0, particle_wd=1.0),
    ForceParams(lam=3.0, alignment_form="axial", wd=0.0, wd_target="classifier", particle_wd=0.5),
]


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@pytest.mark.parametrize("params", PARAM_CASES)
@pytest.mark.parametrize("d", [2, 3])
def test_compiled_matches_reference(params, d):
    rng = np.random.default_rng(7)
    train = modular_addition(11).split(0.7, seed=1)[0]
    x = rng.standard_normal((11, d))
    f_ref = forces_reference(x, train.pairs, train.labels, params)
    u_ref = energy_reference(x, train.pairs, train.labels, params)
    for parallel in (False, True):
        u, f = energy_and_forces(x, train, params, parallel=parallel)
        assert _rel_err(f, f_ref) < 1e-10
        assert abs(u - u_ref) <= 1e-10 * max(1.0, abs(u_ref))


@settings(deadline=None, max_examples=30)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(2, 12), d=st.integers(2, 4), case=st.integers(0, 4))
def test_compiled_matches_reference_random(seed, p, d, case):
    rng = np.random.default_rng(seed)
    train = modular_addition(p)
    x = rng.normal(scale=rng.uniform(0.1, 3.0), size=(p, d))
    params = PARAM_CASES[case]
    f_ref = forces_reference(x, train.pairs, train.labels, params)
    u, f = energy_and_forces(x, train, params, parallel=bool(seed % 2))
    assert _rel_err(f, f_ref) < 1e-10
    assert abs(u - energy_reference(x, train.pairs, train.labels, params)) <= 1e-10 * max(1.0, abs(u))


def test_d1_clustering_only():
    train = addition(6)
    x = np.random.default_rng(0).standard_normal((6, 1))
    params = ForceParams()
    _, f = energy_and_forces(x, train, params)
    assert _rel_err(f, forces_reference(x, train.pairs, train.labels, params)) < 1e-10


def test_classifier_weight_decay_is_a_softened_alignment():
    """wd_target="classifier": the forces are those of the SPEC energy with
    eps -> sqrt(eps^2 + (bias_scale / wd)^2) and particle decay particle_wd."""
    rng = np.random.default_rng(3)
    train = modular_addition(11).split(0.8, seed=4)[0]
    x = rng.standard_normal((11, 2))
    base = dict(k_a=6.0, sig_a=3.0, sig_r=2.0, lam=3.0, alignment_form="axial", sig_t=0.5, eps=0.1)
    for wd in (0.3, 1.0, 5.0):
        variant = ForceParams(**base, wd=wd, wd_target="classifier", bias_scale=1.5, particle_wd=0.7)
        plain = ForceParams(**{**base, "eps": math.hypot(0.1, 1.5 / wd)}, wd=0.7)
        u1, f1 = energy_and_forces(x, train, variant)
        u2, f2 = energy_and_forces(x, train, plain)
        assert u1 == u2 and np.array_equal(f1, f2)


def test_classifier_weight_decay_switches_alignment_on_continuously():
    """At wd = 0 alignment is off (lam has no effect); as wd -> 0 the forces
    tend to the clustering-only forces, as wd grows the softening tends to eps."""
    rng = np.random.default_rng(4)
    train = modular_addition(13).split(0.8, seed=5)[0]
    x = rng.standard_normal((13, 2))
    base = dict(k_a=6.0, sig_a=3.0, sig_r=2.0, alignment_form="axial", sig_t=0.5, eps=0.1,
                wd_target="classifier", particle_wd=1.0)
    clustering = forces(x, train, ForceParams(**base, lam=0.0, wd=0.0))
    assert np.array_equal(forces(x, train, ForceParams(**base, lam=3.0, wd=0.0)), clustering)
    gaps = [np.abs(forces(x, train, ForceParams(**base, lam=3.0, wd=w)) - clustering).max() for w in (1e-3, 1e-2, 1e-1)]
    assert gaps[0] < gaps[1] < gaps[2] and gaps[0] < 1e-4
    assert ForceParams(**base, lam=3.0, wd=1e6).effective_eps == pytest.approx(0.1)


def test_partner_lists_are_built_once_per_dataset():
    train = modular_addition(11)
    assert pair_system(train) is pair_system(train)
    ptr, idx = same_class_partners(train.labels)
    assert np.array_equal(pair_system(train).same_ptr, ptr) and np.array_equal(pair_system(train).same_idx, idx)


@pytest.mark.parametrize("path,tol,d", [("gram", None, 16), ("direct", None, 3), ("auto", 1e-12, 2)])
def test_repeated_calls_reuse_one_engine_with_the_same_bits(path, tol, d):
    train = modular_addition(13).split(0.6, seed=1)[0]
    x, y = np.random.default_rng(0).normal(size=(2, 13, d))
    law = ForceParams(lam=1.0) if tol is None else ForceParams()

    def fresh(z):  # a copy of the training set starts without engines
        return energy_and_forces(z, pickle.loads(pickle.dumps(train)), law, path=path, repulsion_tol=tol)

    first = energy_and_forces(x, train, law, path=path, repulsion_tol=tol)
    kept = kept_engines(train)
    assert len(kept) == 1
    # another state in between, then an equal law: the same engine, each call the bits of a fresh one
    for z in (y, x):
        again = energy_and_forces(z, train, dataclasses.replace(law), path=path, repulsion_tol=tol)
        want = fresh(z)
        assert again[0] == want[0] and np.array_equal(again[1], want[1])
        assert kept_engines(train) == kept
    assert first[0] == again[0] and np.array_equal(first[1], again[1])


def test_engines_kept_are_few_unlocked_and_not_pickled():
    train = modular_addition(13).split(0.6, seed=1)[0]
    law = ForceParams(lam=1.0)
    for d in (2, 3, 4, 5, 6):
        forces(np.ones((13, d)), train, law)
    engines = kept_engines(train)
    assert len(engines) == ENGINES_PER_SYSTEM and not any(e.lock.locked() for e in engines.values())
    # kept beside the frozen dataset, not in it (issue 70): a copy or pickle carries the fields only
    fields = {f.name for f in dataclasses.fields(train)}
    for twin in (pickle.loads(pickle.dumps(train)), copy.deepcopy(train), copy.copy(train)):
        assert set(vars(twin)) == set(vars(train)) == fields and kept_engines(twin) == {}
    # while one call holds its engine, another gets a new one
    x = np.ones((13, 6))
    held = engine_for(x, train, law, None, "auto")
    try:
        other = engine_for(x, train, law, None, "auto")
        assert other is not held
        other.lock.release()
    finally:
        held.lock.release()


def test_what_is_kept_for_a_dataset_goes_with_it():
    """The table beside the datasets holds none of them: a dataset no longer
    used is freed, and its pair system and engines with it."""
    import gc
    import weakref

    train = modular_addition(13).split(0.6, seed=1)[0]
    forces(np.ones((13, 3)), train, ForceParams(lam=1.0))
    engine = weakref.ref(next(iter(kept_engines(train).values())))
    dataset = weakref.ref(train)
    del train
    gc.collect()
    assert dataset() is None and engine() is None


def test_large_engines_are_not_kept():
    train = modular_addition(13).split(0.6, seed=1)[0]
    x = np.ones((13, 4))
    engine = engine_for(x, train, ForceParams(), None, "direct")
    engine.lock.release()
    assert engine_bytes(engine) > 0 and kept_engines(train)
    train = modular_addition(13).split(0.6, seed=1)[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(energy_module, "KEPT_ENGINE_MAX_BYTES", engine_bytes(engine) - 1)
        forces(x, train, ForceParams(), path="direct")
    assert not kept_engines(train)


def test_calls_from_several_threads_do_not_share_a_workspace():
    train = modular_addition(17).split(0.7, seed=2)[0]
    law = ForceParams(lam=0.8, alignment="polar")
    X = np.random.default_rng(3).normal(size=(8, 17, 24))
    want = [forces(x, pickle.loads(pickle.dumps(train)), law, parallel=False) for x in X]

    def run(k):
        return [np.array_equal(forces(X[(k + i) % 8], train, law, parallel=False), want[(k + i) % 8])
                for i in range(40)]

    with ThreadPoolExecutor(4) as pool:
        assert all(all(ok) for ok in pool.map(run, range(4)))


def test_same_class_partners():
    labels = np.array([2, 0, 2, 1, 0, 2])
    ptr, idx = same_class_partners(labels)
    partners = [list(idx[ptr[u]:ptr[u + 1]]) for u in range(len(labels))]
    assert partners == [[2, 5], [4], [5], [], [], []]


class FakeKernel:
    """A stand-in for a Numba dispatcher: records what compile_for compiles."""

    def __init__(self):
        self.signatures, self.compiled = [], []

    def compile(self, signature):
        self.compiled.append(signature)
        self.signatures.append(signature)

    def __call__(self, *args):
        raise AssertionError("compile_for must not run the kernel")


def test_compile_for_compiles_each_kernel_once_without_running_it():
    from particles.energy import compile_for

    a, b = FakeKernel(), FakeKernel()
    args = (np.zeros((3, 2)), 1.5)
    compile_for((a, args), (b, args))
    compile_for((a, args), (b, args))
    assert len(a.compiled) == len(b.compiled) == 1
    compile_for((len, args))  # not a dispatcher: skipped


def test_compile_for_types_a_seen_call_once_and_a_new_type_again(monkeypatch):
    import importlib

    energy_module = importlib.import_module("particles.energy")  # the module, not the function of that name

    typed = []
    real_typeof = numba.typeof
    monkeypatch.setattr(energy_module.numba, "typeof", lambda v: typed.append(v) or real_typeof(v))
    k = FakeKernel()
    record = (np.zeros((3, 2)), (np.zeros(4, dtype=np.int64), 2.0))
    energy_module.compile_for((k, record))
    first = len(typed)
    energy_module.compile_for((k, (np.ones((5, 7)), (np.ones(9, dtype=np.int64), 3.0))))  # same types, other sizes
    assert len(typed) == first and len(k.compiled) == 1
    energy_module.compile_for((k, (np.zeros((3, 2), dtype=np.float32), (np.zeros(4, dtype=np.int64), 2.0))))
    assert len(k.compiled) == 2  # another dtype: typed and compiled again


def test_compile_for_tells_records_of_one_name_apart_and_takes_any_kernel():
    from collections import namedtuple

    from particles.energy import compile_for

    first, second = namedtuple("Rec", "x"), namedtuple("Rec", "x")  # one name and fields, two classes
    k = FakeKernel()
    compile_for((k, (first(1.0),)))
    compile_for((k, (second(1.0),)))
    assert len(k.compiled) == 2

    class Slotted:  # dispatcher-like, but no weak reference: typed every time, never an error
        __slots__ = ("signatures", "compiled")

        def __init__(self):
            self.signatures, self.compiled = [], []

        def compile(self, signature):
            self.compiled.append(signature)
            self.signatures.append(signature)

    s = Slotted()
    compile_for((s, (np.zeros(3),)))
    compile_for((s, (np.zeros(3),)))
    assert len(s.compiled) == 1


@pytest.mark.parametrize("name", ["energy_reference", "forces_reference"])
def test_reference_names_pairs_when_labels_do_not_match(name):
    import particles
    fn = getattr(particles, name)
    # pairs without rows against 3 labels: the message used to name labels only
    with pytest.raises(ValueError, match=r"labels must have shape \(0,\) to match pairs, got \(3,\)"):
        fn(np.zeros((3, 2)), np.zeros((0, 2), int), np.zeros(3, int), particles.ForceParams())
