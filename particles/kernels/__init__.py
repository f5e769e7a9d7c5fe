"""Compiled kernels of the particle model, one job per file.

- :mod:`.fastmath` -- the vectorisable exp and the fixed-order sum
- :mod:`.law` -- the built-in law's four pair terms, defined once (:data:`~.law.TERMS`, :func:`~.law.check_terms`)
- :mod:`.kernel_params` -- :class:`KernelParams`, the typed parameter record
- :mod:`.records` -- the records every entry point takes (laws, spans, recordings)
- :mod:`.status` -- status codes shared by every integrator
- :mod:`.pair_sums` -- particles to pair sums (and distances, cosines) and back
- :mod:`.pair_loops` -- the sweep-and-scatter loops every pair kernel shares
- :mod:`.clustering` -- attraction within a class, repulsion between classes
- :mod:`.alignment` -- alignment within a class, angular repulsion between
- :mod:`.cells` -- the repulsion cut off over a cell list (d = 2)
- :mod:`.forces` -- blocks of rows, reduction, serial and parallel kernels
- :mod:`.terms` -- the law split into its four pair terms, over snapshots
- :mod:`.gram` -- forces and energies through the token Gram matrix (any d, one pair loop)
- :mod:`.gram_terms` -- the law's pair terms on the Gram path, over snapshots
- :mod:`.offset` -- how far an embedding sits from the origin in its own size (the Gram path's check)
- :mod:`.euler` -- Euler / Langevin step loops
- :mod:`.minimize` -- gradient descent with backtracking
- :mod:`.bundle` -- the compiled functions one law runs on (:class:`Kernels`)
- :mod:`.slots` -- the slot contract between a law and the kernels
- :mod:`.rebind` -- copies of the kernels with a custom law in the slots

Each job's file holds a NumPy reference (``*_reference``) that the tests
compare the kernel with on random inputs.
"""

from .kernel_params import KernelParams
from .status import BUDGET_USED, NONFINITE, OK, RUNAWAY, STATUS_NAMES

__all__ = ["KernelParams", "OK", "NONFINITE", "BUDGET_USED", "RUNAWAY", "STATUS_NAMES"]
