"""Compiled kernels of the particle model, one job per file.

- :mod:`.fastmath` -- the vectorisable exp and the fixed-order sum
- :mod:`.record` -- :class:`KernelParams`, the typed parameter record
- :mod:`.status` -- status codes shared by every integrator
- :mod:`.pair_sums` -- particles to pair sums (and distances, cosines) and back
- :mod:`.clustering` -- attraction within a class, repulsion between classes
- :mod:`.alignment` -- alignment within a class, angular repulsion between
- :mod:`.cells` -- the repulsion cut off over a cell list (d = 2)
- :mod:`.forces` -- blocks of rows, reduction, serial and parallel kernels
- :mod:`.euler` -- Euler / Langevin step loops
- :mod:`.minimize` -- gradient descent with backtracking

Each job's file holds a NumPy reference (``*_reference``) that the tests
compare the kernel with on random inputs.
"""

from .record import KernelParams
from .status import BUDGET_USED, NONFINITE, OK, RUNAWAY, STATUS_NAMES

__all__ = ["KernelParams", "OK", "NONFINITE", "BUDGET_USED", "RUNAWAY", "STATUS_NAMES"]
