"""Documented upper bounds on run sizes, refused up front (before any
allocation or compiled work) so that a mistyped size fails at once instead
of running for days.

This module imports nothing, so light modules (presets, the CLI) can use
the bounds without loading the compiled integrators.
"""

#: most steps of one run (``simulate``, ``simulate_effective``,
#: ``minimize``, a preset): about an hour for the smallest systems
MAX_STEPS = 10**9

__all__ = ["MAX_STEPS"]
