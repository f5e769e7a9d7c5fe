"""The compiled functions one force law runs on, as one record
(:class:`Kernels`), and the built-in law's (:data:`BUILTIN_KERNELS`). A
custom law's are copies of these with its functions in the slots
(:mod:`.slots`, :meth:`particles.PairEnergy.kernels`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import euler, forces, gram, gram_terms, minimize, terms

__all__ = ["Kernels", "BUILTIN_KERNELS"]


class Kernels(NamedTuple):
    """The compiled functions a run needs, for one force law."""

    forces_serial: Any
    forces_parallel: Any
    euler_serial: Any
    euler_parallel: Any
    minimize: Any
    term_forces: Any
    term_forces_serial: Any
    # the Gram path's (particles.kernels.gram, .gram_terms); None for a law without one, which then runs the direct path
    gram_forces_serial: Any = None
    gram_forces_parallel: Any = None
    gram_euler_serial: Any = None
    gram_euler_parallel: Any = None
    gram_term_forces: Any = None
    gram_term_forces_serial: Any = None


#: the built-in law's compiled functions
BUILTIN_KERNELS = Kernels(forces.forces_serial, forces.forces_parallel, euler.run_euler_serial, euler.run_euler,
                          minimize.minimize_serial, terms.term_forces_many, terms.term_forces_serial,
                          gram.gram_forces_serial, gram.gram_forces_parallel, euler.run_euler_serial, euler.run_euler,
                          gram_terms.gram_term_forces_many, gram_terms.gram_term_forces_serial)
