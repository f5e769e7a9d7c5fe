"""Bad input over the whole public API (issue 14): every exported function,
class and public method with parameters is enumerated (tests/api_battery.py),
each parameter gets bad values of its kind, and every call must raise a
ValueError/TypeError naming the parameter, or return a value listed with its
documented meaning in ``api_battery.ACCEPT``. No call may return NaN/inf or
outlive the time limit.

The fixed bad values run in the quick suite; hypothesis-generated ones
(random positions of NaN/inf, random complex parts, random wrong shapes,
random out-of-range numbers and strings) run with a few examples here and
many in the slow step.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import api_battery as battery

#: seconds per call: a huge size must be refused, not attempted (a hang never
#: ends, so a generous limit still catches it on a busy machine)
TIME_LIMIT = 30.0


def _torch() -> bool:
    import fitting.training as fb

    return fb.torch_available()


@functools.cache  # built once, at collection, for both batteries and the fixture (it compiles nothing)
def _registry():
    return battery.all_entries(_torch())


@pytest.fixture(scope="module")
def entries():
    found = _registry()
    for fn, kwargs in found.values():  # compile once, so no bad call pays for compilation
        fn(**kwargs)
    for name, param, label, bad in battery.cases(found):  # documented values may compile more
        if label in battery.ACCEPT.get((name, param), {}):
            battery.classify(name, *found[name], param, label, bad, timeout=600.0)
    return found


def test_every_public_entry_is_covered_or_skipped_with_a_reason(entries):
    api = battery.public_api(include_backend=_torch())
    missing = sorted(set(api) - set(entries) - set(battery.SKIP))
    assert not missing, f"public entries without a good call in api_battery.registry() or a SKIP reason: {missing}"
    stale = sorted(set(entries) - set(api))
    assert not stale, f"registry entries that are no longer public: {stale}"
    assert all(len(reason) > 20 for reason in battery.SKIP.values())


def test_allow_list_names_real_entries_and_parameters(entries):
    """Every documented exception in api_battery.ACCEPT points at a parameter
    that the battery really calls, so the allow-list cannot go stale."""
    stale = sorted(f"{name}({param})" for name, param in battery.ACCEPT
                   if name in entries and param not in entries[name][1])
    unknown = sorted(name for name, _ in battery.ACCEPT
                     if name not in entries and not name.startswith("fitting.training"))
    assert not stale and not unknown, (stale, unknown)
    assert all(len(reason) > 15 for reasons in battery.ACCEPT.values() for reason in reasons.values())


def _check(name, fn, kwargs, param, label, bad):
    kind, detail = battery.classify(name, fn, kwargs, param, label, bad, TIME_LIMIT)
    assert kind in ("named", "accepted"), f"{name}({param}={label}): {kind} {detail}"


def test_fixed_bad_values_are_named(entries):
    failures = []
    for name, param, label, bad in battery.cases(entries):
        fn, kwargs = entries[name]
        kind, detail = battery.classify(name, fn, kwargs, param, label, bad, TIME_LIMIT)
        if kind not in ("named", "accepted"):
            failures.append(f"{kind:9s} {name}({param}={label}) {detail}")
    assert not failures, f"{len(failures)} bad calls not refused by name:\n" + "\n".join(failures)


def bad_strategy(good):
    """(label, value) pairs of bad values of the kind of ``good``; labels as
    in api_battery.bad_values so the ACCEPT list applies to both."""
    common = st.sampled_from([("None", None), ("object", object())])
    if isinstance(good, (bool, np.bool_)):
        return st.one_of(common, st.integers(2, 10**6).map(lambda v: ("int 2", v)))
    if isinstance(good, (int, np.integer)):
        return st.one_of(
            common,
            st.integers(max_value=-1).map(lambda v: ("negative", v)),
            st.integers(min_value=10**13, max_value=10**18).map(lambda v: ("huge", v)),
            st.floats(allow_nan=True).filter(lambda v: not float(v).is_integer()).map(lambda v: ("float", v)),
            st.text(min_size=1, max_size=5).map(lambda v: ("string", "\x00" + v)),
        )
    if isinstance(good, (float, np.floating)):
        return st.one_of(
            common,
            st.sampled_from([("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf)]),
            st.complex_numbers(min_magnitude=1e-3, max_magnitude=1e6, allow_nan=False, allow_infinity=False)
            .filter(lambda z: z.imag != 0).map(lambda z: ("complex", z)),
            st.text(min_size=1, max_size=5).map(lambda v: ("string", "\x00" + v)),
        )
    if isinstance(good, str):
        return st.text(min_size=1, max_size=8).map(lambda v: ("unknown", "\x00" + v))
    if isinstance(good, np.ndarray) and good.size:
        index = st.integers(0, good.size - 1)

        def poke(value, label):
            def make(i):
                out = good.astype(float if good.dtype.kind != "c" else complex).copy()
                out.flat[i] = value
                return (label, out)
            return index.map(make)

        options = [common, st.integers(1, 3).map(lambda k: ("extra dim", good.reshape((1,) * k + good.shape))),
                   st.just(("objects", good.astype(object)))]
        if good.dtype.kind == "f":
            options += [poke(math.nan, "nan"), poke(math.inf, "inf"), poke(-math.inf, "inf"),
                        st.floats(1e-6, 1e6).map(lambda v: ("complex", good + 1j * v))]
        elif good.dtype.kind in "iu":
            options += [st.floats(0.01, 0.99).map(lambda v: ("float", good + v))]
        elif good.dtype.kind == "b":
            options += [st.just(("ints", good.astype(int) + 2))]
        return st.one_of(*options)
    return common


def _parameters():
    return [(name, param) for name, (_, kwargs) in _registry().items() for param in kwargs]


def _generated(examples):
    @pytest.mark.parametrize("name,param", _parameters())
    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.filter_too_much])
    @given(data=st.data())
    def run(entries, name, param, data):
        fn, kwargs = entries[name]
        label, bad = data.draw(bad_strategy(kwargs[param]), label="bad value")
        _check(name, fn, kwargs, param, label, bad)
    return run


test_generated_bad_values_are_named = _generated(3)
test_generated_bad_values_are_named_many = pytest.mark.slow(_generated(40))
