"""Old name of :mod:`fitting.training` (the torch trainers), kept so that
scripts written against it run; it warns with a ``DeprecationWarning`` and
will be removed. ``fitting.backend.X`` is the very module
``fitting.training.X`` (same classes, same functions)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

NEW = "fitting.training"
OLD = __name__
#: the new modules' own specs while an old name is being imported
SPECS: dict = {}

warnings.warn("fitting.backend is now fitting.training; import from there (the old name will be removed)",
              DeprecationWarning, stacklevel=2)


class Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``fitting.backend.X`` and answers with ``fitting.training.X``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(OLD + "."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(NEW + spec.name[len(OLD):])
        SPECS[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # the module already ran under its new name; the import machinery has just set its
        # __spec__ to the old name's one, so its own is put back
        module.__spec__ = SPECS.pop(module.__name__)


if not any(isinstance(f, Alias) for f in sys.meta_path):
    sys.meta_path.insert(0, Alias())

sys.modules[OLD] = importlib.import_module(NEW)
