"""The force-law protocol: what the engine, :mod:`particles.law_terms` and
the force-law fit (:mod:`fitting.forcefit`) ask of a force law, answered
by the law itself. :class:`~particles.ForceParams`,
:class:`~particles.PairEnergy` and :class:`~particles.effective.EffectiveLoss`
implement it; nothing tells them apart by type. A new kind of law
implements these names (``check_force_law`` checks that they are there).

Attributes (class-level declarations):

``pair_terms``
    The terms the pair kernels compute, in the order of their outputs
    (``()`` for a law that computes its own unit forces).
``tied_terms``
    Names that stand for several terms fitted with one strength, e.g. the
    built-in law's ``alignment`` for its two halves (``{}``: none).
``simulates``
    Whether the particle engine runs it (``simulate``, ``minimize``).
``cell_lists``
    Whether the cell-list cut-off of the repulsion applies (the built-in law).

Methods:

``term_names()``, ``strengths()``
    The terms, in order, and each one's strength (the factor on its force at
    strength 1).
``active_terms(d)``, ``check_dimension(d)``
    The terms that exist at dimension d (a ValueError when the law needs
    more), and the refusal of a dimension its terms cannot be computed in.
``range_names(terms)``, ``range_fields(terms)``, ``range_dependencies(term)``
    The range parameters searched by default for ``terms``, every range they
    could search, and the ranges one term's force depends on.
``range_values(names)``, ``with_ranges(names, values)``, ``with_strengths(strengths)``
    Current values, and the law rebuilt with other ranges or strengths
    (``with_strengths`` may return None when this kind cannot hold them;
    :func:`particles.law_terms.with_strengths` then builds a PairEnergy).
``kernels()``, ``unit_record()``
    For pair laws: the compiled functions (:mod:`particles.kernels.bundle`,
    the slots of :mod:`particles.kernels.slots` filled) and the kernel
    record with every strength 1.
``unit_term_forces(X, train, terms)`` (optional)
    A law whose forces are not pair kernels' computes its own.
``term_invariances`` (optional class-level dict)
    Term name to the motions of the whole embedding its force can never
    produce: ``"translation"`` (the common drift of all tokens: the term's
    forces sum to zero) and ``"scale"`` (a change of overall size about the
    centroid). The force fit's gauge projects off only what every fitted
    term admits (:mod:`fitting.forcefit.gauge`); a term not listed admits
    nothing.
"""

from __future__ import annotations

__all__ = ["FORCE_LAW_ATTRIBUTES"]

#: the names every force law answers (the optional ``unit_term_forces`` aside)
FORCE_LAW_ATTRIBUTES = ("pair_terms", "tied_terms", "simulates", "cell_lists", "term_names", "strengths",
                        "active_terms", "check_dimension", "range_names", "range_fields", "range_dependencies",
                        "range_values", "with_ranges", "with_strengths")
