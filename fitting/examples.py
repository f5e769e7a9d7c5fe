"""Old location of :mod:`fitting.survival.examples` (the run shipped with the package); importing it warns with a
``DeprecationWarning`` and answers with that very module. It will be removed."""

import importlib
import sys
import warnings

warnings.warn("fitting.examples is now fitting.survival.examples; import from there (the old name will be removed)", DeprecationWarning,
              stacklevel=2)
sys.modules[__name__] = importlib.import_module("fitting.survival.examples")
