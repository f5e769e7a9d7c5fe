"""Lazy package attributes: a package names its public objects and the
submodules that define them, and a submodule is imported only when one of
its names is first used. Importing a package (and running ``embdyn --help``)
then costs almost nothing; ``from particles import simulate`` works as
before.

Used by the ``__init__`` of ``particles``, ``effective_theory`` and
``fitting``.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import Callable

__all__ = ["attach"]


class _LazyPackage(types.ModuleType):
    """A package module that keeps its public functions when the import
    system sets a submodule of the same name as its attribute (``energy``,
    ``simulate``, ``sweep`` are both)."""

    def __setattr__(self, name: str, value) -> None:
        exports = self.__dict__.get("_EXPORTS", {})
        if isinstance(value, types.ModuleType) and name in exports and \
                value.__name__ == f"{self.__name__}.{name}" and exports[name][0].lstrip(".") == name:
            value = getattr(value, exports[name][1])
        super().__setattr__(name, value)


def attach(package: str, exports: dict[str, tuple[str, str]]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package`` whose public names come
    from ``exports`` (name -> (relative submodule, attribute)); also makes
    the package keep those names when a submodule of the same name is
    imported."""
    module = sys.modules[package]
    module.__dict__["_EXPORTS"] = exports
    module.__class__ = _LazyPackage

    def __getattr__(name: str):
        if name not in exports:
            # a submodule (``particles.metrics`` after ``import particles``),
            # as an eager package would have had it
            try:
                return import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        submodule, attr = exports[name]
        value = getattr(import_module(submodule, package), attr)
        module.__dict__[name] = value
        return value

    def __dir__():
        return sorted(set(module.__dict__) | set(exports))

    return __getattr__, __dir__
