"""Checks on parameter values, given to every command at start-up by walking the command tree once.

Click's own types let through what an operator did not mean (`nan` as a number, an empty file name, an option
word as a text option's value). Rather than remember a check at each of the many parameters, each kind of check
is declared once, as a `ParamCheck`: which parameters it applies to, and a class mixed in before the parameter
type's own class, whose `convert` checks the value and then hands it on. `give_checks` walks every command and
gives each parameter the first check that applies to it: one mechanism, which also covers parameters added later.
The checks are declared beside what they check (`tpufleet.cli.numbers`, `tpufleet.cli.paths`,
`tpufleet.cli.optionvalues`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParamCheck:
    """A check for the parameters `applies_to` picks: `mixin` goes before the type's own class."""

    applies_to: Callable[[Any], bool]
    mixin: type


_checked_classes: dict[tuple[type, type], type] = {}


def give_checks(command: object, checks: Sequence[ParamCheck]) -> None:
    """Give every parameter in the command tree the first of `checks` that applies to it (idempotent)."""
    for sub in getattr(command, "commands", {}).values():
        give_checks(sub, checks)
    for param in getattr(command, "params", []):
        check = next((c for c in checks if c.applies_to(param)), None)
        if check is not None and not isinstance(param.type, check.mixin):
            param.type = _checked(param.type, check.mixin)


def _checked(param_type: object, mixin: type) -> Any:
    """A new object (never a shared one such as click.STRING or click.INT) with the same settings, of a class that
    has `mixin` before the type's own class and keeps its name (messages and checks read the name)."""
    cls = type(param_type)
    if (mixin, cls) not in _checked_classes:
        _checked_classes[(mixin, cls)] = type(cls.__name__, (mixin, cls), {})
    checked: Any = object.__new__(_checked_classes[(mixin, cls)])
    checked.__dict__.update(vars(param_type))
    return checked
