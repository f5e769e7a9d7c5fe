"""Old location of :mod:`fitting.survival.analysis` (the survival paper's linear-ODE analysis); importing it warns with a
``DeprecationWarning`` and answers with that very module. It will be removed."""

import importlib
import sys
import warnings

warnings.warn("fitting.analysis is now fitting.survival.analysis; import from there (the old name will be removed)", DeprecationWarning,
              stacklevel=2)
sys.modules[__name__] = importlib.import_module("fitting.survival.analysis")
