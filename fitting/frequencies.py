"""Old location of :mod:`fitting.signals.frequencies` (part of the shared
signal base); importing it warns with a ``DeprecationWarning`` and answers
with that very module. It will be removed."""

import sys
import warnings

from .signals import frequencies

warnings.warn("fitting.frequencies is now fitting.signals.frequencies; import from there (the old name will be "
              "removed)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = frequencies
