"""Old location of :mod:`fitting.ode.derivatives` (the derivative
estimators belong to the ODE regression); importing it warns with a
``DeprecationWarning`` and answers with that very module. It will be removed."""

import sys
import warnings

from .ode import derivatives

warnings.warn("fitting.derivatives is now fitting.ode.derivatives; import from there (the old name will be removed)",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = derivatives
