"""A control a page or a caller may change while something runs: its kind,
its accepted range, whether a change starts the run again, and the one
message that names it (:class:`ControlError`, a ``ValueError``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .validation import check_float, check_int

__all__ = ["Control", "ControlError", "check_changes", "controls_spec"]


class ControlError(ValueError):
    """A control value the Live tab refuses; ``parameter`` names the control."""

    def __init__(self, parameter: str | None, message: str):
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Control:
    """One control of the Live tab: ``kind`` "int", "float" or "choice"; the range
    [low, high] (``strict``: low itself excluded; ``strict_high``: high excluded); ``restart``: a change
    starts the run again."""

    kind: str
    low: float | None = None
    high: float | None = None
    strict: bool = False
    strict_high: bool = False
    choices: tuple[str, ...] = ()
    restart: bool = False
    help: str = ""

    def check(self, value: Any, name: str) -> Any:
        """``value`` checked; a :class:`ControlError` naming ``name`` and the range of :meth:`describe`."""
        wrong = ControlError(name, f"{name} must be {self.describe()}, got {value!r}")
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise wrong
            return value
        if isinstance(value, (bool, str)) or value is None:
            raise wrong
        try:
            value = check_int(value, name) if self.kind == "int" else check_float(value, name)
        except (ValueError, TypeError):
            raise wrong from None
        if value < self.low or value > self.high or (self.strict and value == self.low) or \
                (self.strict_high and value == self.high):
            raise wrong
        return value

    def describe(self) -> str:
        """The accepted values in words, as every message about this control says them."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        left = "(" if self.strict else "["
        right = ")" if self.strict_high else "]"
        if self.kind == "int":
            return f"an int in {left}{int(self.low)}, {int(self.high)}{right}"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"


def check_changes(controls: Mapping[str, Control], changes: Any) -> dict[str, Any]:
    """``changes`` (a mapping of control name to value) checked against
    ``controls``; a :class:`ControlError` naming the first unknown or refused
    control and its accepted range, before anything is applied."""
    if not isinstance(changes, Mapping):
        raise ControlError(None, f"controls must be a JSON object of control: value, got {type(changes).__name__}")
    out = {}
    for name, value in changes.items():
        if name not in controls:
            raise ControlError(str(name), f"unknown control {name!r}; accepted: {', '.join(controls)}")
        out[name] = controls[name].check(value, name)
    return out


def controls_spec(controls: Mapping[str, Control]) -> dict[str, dict[str, Any]]:
    """The controls as JSON for a page: kind, range, choices, restart, help and the accepted-range text."""
    return {name: {"kind": c.kind, "low": c.low, "high": c.high, "strict": c.strict, "strict_high": c.strict_high, "choices": list(c.choices),
                   "restart": c.restart, "help": c.help, "accepted": c.describe()} for name, c in controls.items()}
