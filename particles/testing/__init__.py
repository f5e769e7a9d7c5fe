"""Property-test your force law: invariant checks and hypothesis strategies.

Checks (:mod:`particles.testing.checks`) raise an ``AssertionError`` naming
the property and the measured and allowed values; they work for the built-in
law (:class:`~particles.ForceParams`) and custom ones
(:class:`~particles.PairEnergy`) alike. Strategies
(:mod:`particles.testing.strategies`, needs hypothesis) draw datasets,
splits, embeddings, laws, whole systems, effective-loss systems and
trajectories. :mod:`particles.testing.runs` makes known-law data for force-law
fits (``law_run``, ``example_custom_law``).

Example (a pytest file)::

    from hypothesis import given, settings
    from particles.testing import check_forces_are_gradient, strategies as pst

    @settings(deadline=None)
    @given(pst.systems(law=pst.pair_energies()))
    def test_my_law_is_a_gradient(system):
        law, x, train = system
        check_forces_are_gradient(law, x, train)
"""

from .checks import (check_centroid_conserved, check_effective_centroid_conserved, check_effective_loss_invariance,
                     check_effective_spread_conserved, check_energy_decreases, check_forces_are_gradient,
                     check_relabelling_equivariance, check_same_seed_same_trajectory, check_total_force_vanishes,
                     check_zero_torque, rotation_invariant, translation_invariant)
from .runs import Well, example_custom_law, law_run

__all__ = ["check_forces_are_gradient", "check_total_force_vanishes", "check_centroid_conserved",
           "check_zero_torque", "check_energy_decreases", "check_relabelling_equivariance",
           "check_same_seed_same_trajectory", "check_effective_loss_invariance",
           "check_effective_centroid_conserved", "check_effective_spread_conserved", "translation_invariant",
           "rotation_invariant", "strategies", "law_run", "Well", "example_custom_law"]


def __getattr__(name):
    # the strategies need hypothesis; import them only when asked for
    if name == "strategies":
        import importlib

        return importlib.import_module(f"{__name__}.strategies")
    raise AttributeError(f"module 'particles.testing' has no attribute {name!r}")
