"""The serial/parallel kernel chooser (particles.threads.KernelChoice)."""
import numpy as np
import pytest

from particles.threads import KernelChoice


def _feed(choice, key, times):
    """Call choose() and report the given time for whichever kernel it picked."""
    picks = []
    for serial_t, parallel_t in times:
        use = choice.choose(key, None, True)
        choice.report(key, use, parallel_t if use else serial_t)
        picks.append(use)
    return picks


def test_chooser_times_both_then_uses_the_faster(monkeypatch):
    monkeypatch.setattr("particles.threads.usable_threads", lambda: 2)
    choice = KernelChoice(retry_every=5, window=4, trial=3)
    assert choice.choose(10, None) is False  # one block and no term split: always serial
    assert choice.choose((300, "blocks"), True, True) is True and choice.choose((300, "blocks"), False, True) is False
    assert choice.choose((300, "blocks"), True, False) is False  # nothing to split
    key = (300, "blocks")
    # trials: 3 serial calls, then 3 parallel calls; the first of each dropped
    picks = _feed(choice, key, [(1.0, 9.0)] * 6)
    assert picks == [False] * 3 + [True] * 3
    assert choice.timings(key) == {"serial": 1.0, "parallel": 9.0}
    # then serial, with a parallel trial every 5th call
    picks = _feed(choice, key, [(1.0, 0.1)] * 10)
    assert picks[:4] == [False] * 4 and picks[4:7] == [True] * 3
    # the trial's fast timings (first dropped) replace the old slow ones: parallel now wins
    assert choice.timings(key)["parallel"] == pytest.approx(0.1)
    picks = _feed(choice, key, [(1.0, 0.1)] * 12)
    assert picks.count(True) >= 7  # parallel, but for a 3-call serial trial every 5th call


def test_chooser_keeps_serial_when_parallel_is_slow_on_average(monkeypatch):
    """Under load the parallel kernel is fast most of the time and very slow
    sometimes: the mean decides."""
    monkeypatch.setattr("particles.threads.usable_threads", lambda: 2)
    choice = KernelChoice()
    key = (300, "blocks")
    rng = np.random.default_rng(0)
    times = [(1.0, 0.5 if rng.random() < 0.7 else 5.0) for _ in range(400)]
    picks = _feed(choice, key, times)
    assert picks[-300:].count(False) >= 240


def test_chooser_checks_less_often_while_its_choice_holds(monkeypatch):
    monkeypatch.setattr("particles.threads.usable_threads", lambda: 2)
    choice = KernelChoice(retry_every=4, window=4, trial=3, max_retry_every=32)
    key = (300, "blocks")
    picks = _feed(choice, key, [(1.0, 2.0)] * 200)  # serial always faster
    trials = [i for i in range(1, len(picks)) if picks[i] and not picks[i - 1]]
    gaps = np.diff(trials)
    # a trial of 3 parallel calls after retry - 1 serial ones; retry doubles to its cap
    assert list(gaps[:4]) == [4 + 2, 8 + 2, 16 + 2, 32 + 2] and set(gaps[4:]) == {32 + 2}


@pytest.mark.parametrize("kwargs", [dict(trial=1), dict(window=0), dict(retry_every=0), dict(retry_every=64, max_retry_every=32),
                                    dict(window=2.5)])
def test_chooser_settings_checked(kwargs):
    with pytest.raises(ValueError, match="KernelChoice"):
        KernelChoice(**kwargs)


def test_chooser_trials_of_tiny_calls_span_min_seconds(monkeypatch):
    """Calls of about 1 ms with a 20 ms minimum: a trial goes on past its 3
    calls until it spans 20 ms, so a slow call every so often is seen in
    the mean."""
    monkeypatch.setattr("particles.threads.usable_threads", lambda: 2)
    choice = KernelChoice(min_seconds=0.02)
    key = (300, "blocks")
    # serial 1.0 ms; parallel 0.5 ms, but 20 ms every 10th call: mean 2.45 ms
    times = [(1e-3, 20e-3 if i % 10 == 9 else 0.5e-3) for i in range(400)]
    picks = _feed(choice, key, times)
    first_parallel = picks.index(True)
    run = next(i for i in range(first_parallel, len(picks)) if not picks[i]) - first_parallel
    assert run > 3  # longer than a 3-call trial: it lasted until the slow call came
    assert picks[-300:].count(False) >= 280
