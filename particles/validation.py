"""Old location of :mod:`particles.core.validation` (the checks of the
whole distribution); importing it warns with a ``DeprecationWarning`` and
answers with that very module. It will be removed."""

import sys
import warnings

from .core import validation

warnings.warn("particles.validation is now particles.core.validation; import from there (the old name will be "
              "removed)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = validation
