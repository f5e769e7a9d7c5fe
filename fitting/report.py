"""Old location of :mod:`fitting.ode.report` (what embdyn fit reports); importing it warns with a
``DeprecationWarning`` and answers with that very module. It will be removed."""

import importlib
import sys
import warnings

warnings.warn("fitting.report is now fitting.ode.report; import from there (the old name will be removed)", DeprecationWarning,
              stacklevel=2)
sys.modules[__name__] = importlib.import_module("fitting.ode.report")
