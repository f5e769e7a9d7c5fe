"""Old location of :mod:`fitting.forcefit` (the force-law fit, now a
subpackage split by job); importing it warns with a ``DeprecationWarning``
and answers with that package. It will be removed."""

import sys
import warnings

from . import forcefit

warnings.warn("fitting.force_law is now fitting.forcefit; import from there (the old name will be removed)",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = forcefit
