"""The demo behind ``embdyn demo`` (``run``: the three stages and the
summary; ``cli``: the command). See :mod:`fitting.demo.run`."""

# public names and the modules that define them, imported on first use (so that
# `embdyn --help`, which imports the command modules, stays cheap)
from particles.core.lazy import attach as _attach

_EXPORTS = {
    'run_demo': ('.run', 'run_demo'),
    'DemoError': ('.run', 'DemoError'),
    'STAGES': ('.run', 'STAGES'),
    'check_out': ('.run', 'check_out'),
    'compile_kernels': ('.run', 'compile_kernels'),
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = _attach(__name__, _EXPORTS)
