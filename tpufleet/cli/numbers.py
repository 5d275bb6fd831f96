"""Numbers on the command line: finite, in ASCII digits, for every option and argument of every command.

Click reads `nan`, `inf`, digits of any script (an Arabic-Indic zero after a 1 reads as 10) and Python's digit
groups (`1_0` reads as 10) as numbers, and its range checks let NaN through (every comparison with NaN is false);
`-0` would be stored and shown as -0. Rather than remember a check at each of the many numeric options, the
command tree is walked once at start-up (`tpufleet.cli.paramchecks`) and each numeric parameter's type is given
the checks below: one mechanism, which also covers options added later.
"""

from __future__ import annotations

import math
from typing import Any

from tpufleet.cli.paramchecks import ParamCheck
from tpufleet.text import underflows

_NUMERIC = {"FloatParamType", "FloatRange", "IntParamType", "IntRange"}


class _StrictNumber:
    """Mixed in before Click's own numeric type: refuses non-ASCII text, digit groups, NaN and infinities; reads
    -0 as 0."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and (not value.isascii() or "_" in value):
            self.fail(f"{shown(value)} is not a number in ASCII digits", param, ctx)  # type: ignore[attr-defined]
        if isinstance(value, str) and not _reads_as(value, whole="Int" in type(self).__name__):
            # Click would say "not a valid integer range", naming its own type rather than what was wanted
            what = "a whole number" if "Int" in type(self).__name__ else "a number"
            self.fail(f"{shown(value)} is not {what}{_fraction_meant(self, value)}", param, ctx)  # type: ignore[attr-defined]
        if isinstance(value, str) and "Float" in type(self).__name__:
            # before Click's range check, which named 1e400 as "inf is not in the range", a value never typed,
            # and passed 1e-400 as 0.0 (a host availability of 1e-400 became 0)
            if not math.isfinite(float(value)):
                self.fail(f"{shown(value)} is not a finite number", param, ctx)  # type: ignore[attr-defined]
            if underflows(value):  # NaN and infinities are refused before this
                self.fail(f"{shown(value)} is too small to be told from 0 (give a larger number)", param, ctx)  # type: ignore[attr-defined]
        if isinstance(value, str):
            _refuse_outside(self, value, param, ctx)
        number = super().convert(value, param, ctx)  # type: ignore[misc]
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{shown(value)} is not a finite number", param, ctx)  # type: ignore[attr-defined]
        return number + 0 if number == 0 else number  # -0.0 + 0 is 0.0


def _refuse_outside(param_type: Any, text: str, param: Any, ctx: Any) -> None:
    """Refuse a number outside the parameter's range in the operator's words, naming it as typed: Click said
    "-1.0 is not in the range 0<=x<=86400", the number it had converted, in a notation of its own."""
    low, high = getattr(param_type, "min", None), getattr(param_type, "max", None)
    if low is None and high is None:
        return
    number = (int if "Int" in type(param_type).__name__ else float)(text.strip())
    low_open, high_open = getattr(param_type, "min_open", False), getattr(param_type, "max_open", False)
    above = low is None or (number > low if low_open else number >= low)
    if above and (high is None or (number < high if high_open else number <= high)):
        return
    if low is not None and high is not None:
        said = f"is not between {_bound(low)} and {_bound(high)}" + (" (exclusive)" if low_open or high_open else "")
    else:
        said = f"is below {_bound(low)}" if low is not None else f"is above {_bound(high)}"
    param_type.fail(f"{shown(text)} {said}{_fraction_meant(param_type, text)}", param, ctx)


def _fraction_meant(param_type: Any, text: str) -> str:
    """`; did you mean 0.8?` for a percentage (`80`, `80%`) given where a fraction of 0-1 is taken (--min-throughput,
    --confidence, --host-availability); else nothing."""
    if (getattr(param_type, "min", None), getattr(param_type, "max", None)) != (0, 1):
        return ""
    typed = text.strip().removesuffix("%")
    if not _reads_as(typed, whole=False) or not typed.isascii() or "_" in typed:
        return ""
    percent = float(typed)
    lowest = 0 if text.strip().endswith("%") else 5  # `1.5` may be anything; `80` and `2%` are percentages
    below_top = percent < 100 if getattr(param_type, "max_open", False) else percent <= 100  # --confidence: not 1
    return f"; did you mean {percent / 100:g}?" if lowest < percent and below_top else ""


def _bound(value: float | None) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _reads_as(text: str, whole: bool) -> bool:
    try:
        (int if whole else float)(text.strip())
    except ValueError:
        return False
    return True


def shown(value: object, limit: int = 60) -> str:
    """A bad value as quoted in a message: repr-escaped, at most `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _numeric(param: Any) -> bool:
    return type(param.type).__name__ in _NUMERIC


STRICT_NUMBER = ParamCheck(applies_to=_numeric, mixin=_StrictNumber)
"""Every numeric parameter: the finite, ASCII-only checks above."""


def is_strict(param_type: object) -> bool:
    """Whether a parameter type has the checks (for the test that walks every command)."""
    return isinstance(param_type, _StrictNumber)
