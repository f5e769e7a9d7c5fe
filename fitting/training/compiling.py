"""``torch.compile`` with a plain fallback, shared by the stacked trainers
(needs torch)."""

from __future__ import annotations

from typing import Any, Callable

import torch

__all__ = ["FirstCallFallback", "compiled_or_plain"]


class FirstCallFallback:
    """A compiled function that falls back to its plain version for good if
    its first call fails: ``torch.compile`` compiles lazily, at that call, so
    a missing or broken C++ compiler shows only there. Later calls use
    whichever worked."""

    def __init__(self, compiled: Callable, plain: Callable):
        self.compiled, self.plain = compiled, plain
        self.fn: Callable | None = None

    def __call__(self, *args: Any) -> Any:
        if self.fn is not None:
            return self.fn(*args)
        try:
            out = self.compiled(*args)
        except Exception:  # the plain function has the same formulas
            self.fn = self.plain
            return self.plain(*args)
        self.fn = self.compiled
        return out

    @property
    def is_compiled(self) -> bool:
        """False once the fallback was taken."""
        return self.fn is not self.plain


_CACHE: dict[Callable, Callable] = {}


def compiled_or_plain(fn: Callable, mode: str) -> Callable:
    """``fn`` compiled with dynamic shapes (one cached wrapper per function)
    when ``mode == "auto"``, ``fn`` itself when ``mode == "never"``."""
    if mode not in ("auto", "never"):
        raise ValueError(f"compile must be 'auto' or 'never', got {mode!r}")
    if mode == "never":
        return fn
    if fn not in _CACHE:
        try:
            _CACHE[fn] = FirstCallFallback(torch.compile(fn, dynamic=True), fn)
        except Exception:  # pragma: no cover - a torch without torch.compile
            _CACHE[fn] = fn
    return _CACHE[fn]
