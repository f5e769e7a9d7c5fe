"""Old home of the ``embdyn fit`` and ``embdyn demo`` commands, now
:mod:`fitting.ode.cli` and :mod:`fitting.demo.cli`; importing it warns with
a ``DeprecationWarning``. It will be removed."""

import warnings

from .demo.cli import register_demo
from .ode.cli import register_fit

__all__ = ["register_fit", "register_demo"]

warnings.warn("fitting.cli is split: register_fit is in fitting.ode.cli, register_demo in fitting.demo.cli "
              "(fitting.cli will be removed)", DeprecationWarning, stacklevel=2)
