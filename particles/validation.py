"""Moved to :mod:`particles.core.validation` (the checks of the whole
distribution); this name still imports it."""

from .core.validation import *  # noqa: F401,F403
from .core.validation import __all__  # noqa: F401
