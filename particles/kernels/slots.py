"""The slot contract between a law and the compiled kernels.

A slot is a global name the kernels call or read and that a custom law may
bind to something else in its copies of them (:func:`.rebind.rebind`, used
by :meth:`particles.PairEnergy.kernels`). Every slot is listed here with the
module that defines its built-in binding; binding a name that is not a slot
is an error, so a typo cannot silently run the built-in law.
"""

from __future__ import annotations

__all__ = ["SLOTS", "check_slots"]

#: slot name -> (kernel module defining the built-in binding, what it is)
SLOTS = {
    "EXACT_SAME": ("clustering", "compile-time flag: a same-label pair's interaction is computed exactly"),
    "GAUSSIAN_REPULSION": ("clustering", "compile-time flag: the term in the repulsion's place declares the gaussian "
                           "capability (law.TERMS), which the Gram path factors over token-pair products "
                           "(repulsion_factors)"),
    "distance_params": ("clustering", "the distance term's parameters, unpacked from the record"),
    "attraction": ("law", "distance term between pair sums of the same label: (value, derivative)"),
    "repulsion": ("law", "distance term between pair sums of different labels"),
    "cosine_params": ("alignment", "the cosine term's parameters, unpacked from the record"),
    "alignment_same": ("law", "cosine term between pair sums of the same label: (value, derivative)"),
    "alignment_other": ("law", "cosine term between pair sums of different labels"),
    "clustering_block": ("clustering", "the distance term's loop over a block of rows"),
    "alignment_block": ("alignment", "the cosine term's loop over a block of rows"),
    "run_term": ("forces", "one term's share of a row block (the parallel kernel's split by term)"),
    "law_forces": ("forces", "the force kernel the step loop calls"),
}


def check_slots(slots: dict) -> None:
    """Refuse bindings of names that are not slots (ValueError naming them
    and the slots there are)."""
    unknown = sorted(set(slots) - set(SLOTS))
    if unknown:
        raise ValueError(f"slots {unknown} are not slots of the kernels; the slots are {sorted(SLOTS)} "
                         "(particles/kernels/slots.py)")
