"""The hand-over from a network to the particle panel (no torch needed: the
network's recorded steps are made by the particle engine under a known law):
the fitted law is ForceLawFit's on those steps, the particle session starts
from the embedding under it, runs as particles.simulate does, and a reset comes
back to the handed-over state."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import particles as pt
from fitting.explore.handover import HANDOVER_NULL, MIN_SNAPSHOTS, fitted_law, handover_law
from fitting.explore.live import LiveSimulation
from fitting.forcefit import ForceLawFit
from particles.core.controls import ControlError


def recorded_from(law, p=11, seed=3, steps=60, dt=0.01):
    """What LiveNetwork.recorded gives, from a particle run of ``law``: each step's state and its force."""
    config = pt.preset("clustering-alignment").replace(p=p)
    x, train, _ = config.sample(seed)
    traj = pt.simulate(x, train, law, steps=steps, dt=dt, record_every=1)
    X = traj.embeddings[:-1]
    G = np.array([pt.forces(s, train, law) for s in X])
    return {"steps": np.arange(steps), "X": X, "G": G, "train": train, "now": traj.final, "step": steps}


def test_the_fitted_law_is_forcelawfit_on_the_recorded_steps():
    law = pt.preset("clustering-alignment").params.replace(k_a=5.0, sig_a=2.0)
    rec = recorded_from(law)
    fitted, info = fitted_law(rec, "clustering-alignment")
    ref = ForceLawFit("clustering-alignment", tie_alignment=True, normalize="rms", n_bootstrap=0,
                      null=HANDOVER_NULL).fit(rec["X"], rec["G"], train=rec["train"], steps=rec["steps"])
    assert fitted == ref.to_law() and info["r2"] == ref.r2_ and info["null_r2"] == ref.null_r2_
    assert info["verdict"] == ref.verdict_ and info["verdict"] in ("above chance", "at chance", "below chance")
    assert info["snapshots"] == 60 and info["steps"] == [0, 59]
    # the data are the preset's own terms: the fit explains them, well above its null
    assert info["r2"] > 0.999 and info["null_r2"] < info["r2"] - 0.1
    # per unit RMS force: the fitted field is the true one divided by the run's RMS force
    scale = np.sqrt(np.mean(rec["G"] ** 2))
    np.testing.assert_allclose(pt.forces(rec["now"], rec["train"], fitted),
                               pt.forces(rec["now"], rec["train"], law) / scale, rtol=1e-3, atol=1e-3)


def test_the_particle_session_runs_the_handed_over_law_from_the_embedding():
    law = pt.preset("clustering-alignment").params.replace(k_a=5.0, sig_a=2.0)
    rec = recorded_from(law)
    sim = LiveSimulation(steps_per_frame=9)
    for kind in ("preset", "fitted"):
        handed, info = handover_law(kind, "circles", rec)
        values = sim.start_from(rec["now"], rec["train"], handed, f"{kind} test", "circles")
        assert sim.law == handed and values["preset"] == "circles" and values["dt"] == pt.preset("circles").dt
        assert (info is None) == (kind == "preset")
        np.testing.assert_array_equal(sim.x, rec["now"])
        sim.advance()
        ref = pt.simulate(rec["now"], rec["train"], handed, steps=9, dt=values["dt"], record_every=9)
        np.testing.assert_array_equal(sim.x, ref.final)
        header, arrays = sim.frame()
        assert header["origin"] == f"{kind} test" and header["step"] == 9
        sim.reset()
        np.testing.assert_array_equal(sim.x, rec["now"])
        assert sim.step == 0 and sim.law == handed
    # a change of a law's control acts on the handed-over law; a restart control goes back to a seed's state
    sim.update({"k_a": 2.0})
    assert sim.law == handed.replace(k_a=2.0)
    np.testing.assert_array_equal(sim.x, rec["now"])
    sim.update({"seed": 5})
    assert sim.frame()[0]["origin"] is None
    assert not np.array_equal(sim.x, rec["now"])


def test_term_forces_in_the_frames_sum_to_the_force():
    sim = LiveSimulation(p=13, d=3, seed=1, force_terms="on")
    header, arrays = sim.frame()
    terms = header["terms"]
    assert tuple(terms) == tuple(pt.law_terms.term_names(sim.law))[:len(terms)]
    total = sum(arrays[f"term:{t}"] for t in terms)
    from fitting.explore.projection import principal_plane
    _, basis, _ = principal_plane(sim.x)
    np.testing.assert_allclose(total, pt.forces(sim.x, sim.train, sim.law) @ basis, atol=1e-10)
    sim.update({"force_terms": "off"})
    header, arrays = sim.frame()
    assert "terms" not in header and set(arrays) == {"positions", "pair_sums"}


def test_refusals_name_the_field_and_change_nothing():
    law = pt.preset("clustering-alignment").params
    rec = recorded_from(law, steps=MIN_SNAPSHOTS - 1)
    with pytest.raises(ControlError, match="at least 20") as err:
        handover_law("fitted", "clustering-alignment", rec)
    assert err.value.parameter == "law"
    with pytest.raises(ControlError, match="preset, fitted") as err:
        handover_law("oracle", "clustering-alignment", rec)
    sim = LiveSimulation(p=11, seed=2)
    x0, version = sim.x.copy(), sim.version
    with pytest.raises(TypeError, match="law must be a ForceParams"):
        sim.start_from(rec["now"], rec["train"], "grids", "x")
    with pytest.raises(ValueError, match="x must be a finite"):
        sim.start_from(rec["now"][:5], rec["train"], law, "x")
    with pytest.raises(ValueError, match="x must be a finite"):
        sim.start_from(np.full_like(rec["now"], np.nan), rec["train"], law, "x")
    with pytest.raises(ControlError, match="preset"):
        sim.start_from(rec["now"], rec["train"], law, "x", "spirals")
    np.testing.assert_array_equal(sim.x, x0)
    assert sim.version == version


@settings(max_examples=25, deadline=None)
@given(k_a=st.floats(0, 20), sig_a=st.floats(0.1, 10), lam=st.floats(0, 10), bias=st.floats(0.05, 5),
       decay=st.floats(0, 5), target=st.sampled_from(["classifier", "particles"]),
       form=st.sampled_from(["axial", "cosine"]))
def test_every_builtin_law_survives_the_controls(k_a, sig_a, lam, bias, decay, target, form):
    """Invariant: the controls hold any built-in law handed over, exactly (the frames run that law)."""
    base = pt.preset("clustering-alignment").params
    if target == "particles":
        bias, decay = 1.0, 0.0
    law = base.replace(k_a=k_a, sig_a=sig_a, lam=lam, bias_scale=bias, particle_wd=decay, wd_target=target,
                       alignment_form=form)
    rec = recorded_from(base, p=7, steps=2)
    sim = LiveSimulation(p=7)
    sim.start_from(rec["now"], rec["train"], law, "x")
    assert sim.law == law


def test_a_change_staged_before_or_during_a_hand_over_builds_on_it():
    """A control change staged while a frame ran is kept by the hand-over, and one made while the hand-over
    runs builds on the handed-over law: the old law never comes back and the version never goes backwards."""
    import threading

    law = pt.preset("circles").params.replace(k_a=3.0)
    rec = recorded_from(pt.preset("clustering-alignment").params, steps=2)
    sim = LiveSimulation(p=11)
    with sim._lock:  # a frame running: the change is staged
        sim.update({"dt": 0.02})
    values = sim.start_from(rec["now"], rec["train"], law, "x", "circles")
    assert values["preset"] == "circles" and sim.law == law
    assert values["dt"] == pt.preset("circles").dt  # the preset's time step replaces the staged one
    version = sim.version
    sim.frame()
    assert sim.law == law and sim.version == version
    # a change sent while the hand-over runs (injected where it builds the law, given 0.2 s to be staged)
    changer = []
    law_for = LiveSimulation.law_for

    def building(base, values):
        if not changer:
            changer.append(threading.Thread(target=sim.update, args=({"lam": 0.5},)))
            changer[0].start()
            changer[0].join(0.2)
        return law_for(base, values)

    sim.law_for = building
    sim.start_from(rec["now"], rec["train"], law, "y", "circles")
    changer[0].join()
    sim.frame()
    assert sim.values["preset"] == "circles" and sim.law == law.replace(lam=0.5)
    assert sim.version == sim.staged_version >= version + 2


def test_a_law_outside_the_controls_ranges_is_refused_by_name():
    rec = recorded_from(pt.preset("clustering-alignment").params, steps=2)
    sim = LiveSimulation(p=11)
    law, version = sim.law, sim.version
    with pytest.raises(ControlError, match="k_a") as err:
        sim.start_from(rec["now"], rec["train"], law.replace(k_a=500.0), "x")
    assert err.value.parameter == "k_a" and sim.law == law and sim.version == version
