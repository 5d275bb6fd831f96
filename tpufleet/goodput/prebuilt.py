"""The compiled loop (`linekernel`) and the accounting's helpers (`accountkernel`, `sumkernel`) as one module built
ahead of time (`tpufleet.state.prebuiltcache` builds, caches and installs it; `linescan` and `compiledaccount` use
it when installed, Numba's JIT otherwise).

Built by Numba's ahead-of-time compiler from the same Python functions, for the argument types the calls give them
(EXPORTS): the same code, so the same answers (the loop's check line and `kernelchecks` are asked of it as of the
JIT). What it saves is Numba itself: importing it and loading its cached functions took 0.45 s of each report of a
large log, on one CPU, before its reading could begin; importing the built module takes a millisecond.

A function built ahead of time reads its arguments as the types it was built for, whatever they are (an array of
other numbers would be read as bytes of the wrong kind, not refused): each call here checks them first (`_checker`:
about two microseconds a call of eight arguments, where Numba's own dispatch takes about one) and hands any other to
the JIT's function of the same name, as Numba's own dispatch would compile one for them (counted in FALLBACKS: the
report's own calls never are).
"""

from __future__ import annotations

import collections
import importlib
import operator
import re
import types
from collections.abc import Callable
from typing import Any

# Each function built: its name in the module -> (the kernel module and function it is built from, the argument and
# return types in Numba's notation: arrays C-contiguous, ``f8`` a float, ``i8`` an integer, ``b1`` a bool).
_F, _I, _B, _U = "f8[::1]", "i8[::1]", "b1[::1]", "u1[::1]"
EXPORTS: dict[str, tuple[str, str, str]] = {
    "scan": ("linekernel", "scan", f"Tuple((i8, i8, i8, b1))({_U}, {_U}, {_I}, {_I}, {_I}, {_F}, {_F}, i8[:, ::1])"),
    "line_count": ("linekernel", "line_count", f"i8({_U})"),
    "paint": ("accountkernel", "paint", f"b1({_F}, f8, f8, {_F}, {_F}, {_I}, {_I}, {_I})"),
    "distinct_sorted": ("accountkernel", "distinct_sorted", f"i8({_F}, {_F})"),
    "search_sorted": ("accountkernel", "search_sorted", f"b1({_F}, {_F}, b1, {_I})"),
    "first_after": ("accountkernel", "first_after", f"b1({_F}, {_F}, b1, {_F})"),
    "checkpoint_rule": (
        "accountkernel",
        "checkpoint_rule",
        f"b1({_F}, {_I}, {_I}, {_F}, {_F}, {_F}, {_F}, {_I}, {_B})",
    ),
    "not_done_again": ("accountkernel", "not_done_again", f"none({_I}, {_B})"),
    "group_by_kind": ("accountkernel", "group_by_kind", f"b1({_I}, {_I}, {_I})"),
    "counted_steps": ("accountkernel", "counted_steps", f"i8({_F}, {_F}, {_F}, {_B}, {_B}, {_B}, f8)"),
    "startup": ("sumkernel", "startup", f"i8({_F}, {_F}, {_I}, {_B}, {_B}, {_F}, {_F}, {_F}, {_F})"),
    "ideal_step": ("sumkernel", "ideal_step", f"f8({_F}, {_F}, f8, f8)"),
    "tally": ("sumkernel", "tally", f"Tuple((i8, f8, b1))({_F}, {_I}, {_B}, f8, f8, {_F}, {_B}, {_F})"),
    "step_ends": ("sumkernel", "step_ends", f"b1({_F}, {_F}, {_F}, f8, {_F}, {_F}, {_I}, {_B})"),
    "by_slices": ("sumkernel", "by_slices", f"b1({_F}, {_F}, {_I}, {_F}, {_F}, {_F}, f8[:, ::1])"),
    "by_slices_int8": ("sumkernel", "by_slices", f"b1({_F}, {_F}, i1[::1], {_F}, {_F}, {_F}, f8[:, ::1])"),
    "pair_ends": ("sumkernel", "pair_ends", f"b1({_F}, {_I}, {_I}, {_F}, f8, {_F}, {_F})"),
}
SOURCES = ("linekernel", "accountkernel", "sumkernel")  # the modules EXPORTS are built from
_DTYPES = {"f8": "float64", "i8": "int64", "i1": "int8", "u1": "uint8", "b1": "bool"}
FALLBACKS: collections.Counter[str] = collections.Counter()  # calls handed to the JIT, by function


class Prebuilt(types.SimpleNamespace):
    """The built module's functions under their kernels' names (`guarded`), and `origin`, its file; a kernel
    function not built ahead of time (none the callers call: a helper of a helper a test calls, say) is the JIT's."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # (copy and pickle asking for their hooks: not a kernel's)
            raise AttributeError(name)
        for module in ("accountkernel", "linekernel"):  # (`accountkernel` gives `sumkernel`'s too)
            found = getattr(importlib.import_module(f"tpufleet.goodput.{module}"), name, None)
            if callable(found):
                return found
        raise AttributeError(name)


_installed: Prebuilt | None = None


def install(built: types.ModuleType) -> None:
    """Use `built`, the module built from EXPORTS, imported (`guarded`)."""
    use(guarded(built))


def use(kernels: Prebuilt | None) -> None:
    """Use these built functions from now on, or Numba's JIT's with None; the kernels loaded before are loaded
    again when next asked for (these, checked as ever)."""
    global _installed
    _installed = kernels
    from tpufleet.goodput import compiledaccount, linescan

    linescan._kernel.cache_clear()
    compiledaccount._kernel.cache_clear()


def installed() -> Prebuilt | None:
    """The installed module's functions, each checking its arguments (`guarded`); None when none is installed."""
    return _installed


def guarded(built: types.ModuleType) -> Prebuilt:
    """The functions of `built` under their kernels' names, each called only with the arguments it was built for:
    any other call goes to the JIT's function (`by_slices` is built twice: for int64 labels and a compacted
    account's int8)."""
    names: dict[str, list[str]] = {}
    for export, (_, function, _) in EXPORTS.items():
        names.setdefault(function, []).append(export)
    functions = {f: _checked(built, f, exports) for f, exports in names.items()}
    return Prebuilt(origin=getattr(built, "__file__", None), **functions)


def _checked(built: types.ModuleType, function: str, exports: list[str]) -> Callable[..., Any]:
    """`function` of `built`: the first of its `exports` whose types the arguments fit, else the JIT's."""
    choices = [(getattr(built, e), [_checker(a) for a in argument_types(EXPORTS[e][2])]) for e in exports]
    module = EXPORTS[exports[0]][0]

    def call(*args: Any) -> Any:
        for compiled, checks in choices:
            if len(args) == len(checks) and all(map(operator.call, checks, args)):
                return compiled(*args)
        FALLBACKS[function] += 1
        return getattr(importlib.import_module(f"tpufleet.goodput.{module}"), function)(*args)

    call.__name__ = call.__qualname__ = function
    return call


def argument_types(signature: str) -> list[str]:
    """The argument types of a signature in EXPORTS' notation, in order: ``i8(f8[::1], b1)`` -> f8[::1], b1."""
    arguments = signature[signature.rindex("(") + 1 : -1]  # (the last parentheses: an argument has none)
    return [a.strip() for a in re.split(r",(?![^\[]*\])", arguments)]  # (the commas outside brackets)


def _checker(text: str) -> Callable[[Any], bool]:
    """Whether an argument is what a built function reads for the type `text`: an array of its dtype and
    dimensions, C-contiguous, aligned and writeable (but the loop's bytes, which it only reads), or a number of
    its type. (A few tenths of a microsecond an argument, about 2 us for eight: Numba's own dispatch of a call takes
    about 1 us.)"""
    import numpy as np

    if "[" not in text:
        return {"f8": _a_float, "i8": _an_int, "b1": _a_bool}[text]
    dtype, ndim, ndarray = np.dtype(_DTYPES[text[: text.index("[")]]), text.count(",") + 1, np.ndarray
    read_only_too = dtype == np.uint8

    def fits(value: Any) -> bool:
        if type(value) is not ndarray or value.ndim != ndim or (value.dtype is not dtype and value.dtype != dtype):
            return False
        flags = value.flags
        return bool(flags.c_contiguous and flags.aligned and (read_only_too or flags.writeable))

    return fits


def _a_float(value: Any) -> bool:
    return isinstance(value, float)  # (numpy's float64 is one; its float32 is not)


def _an_int(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _a_bool(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (bool, np.bool_))
