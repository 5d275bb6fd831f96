"""An option whose value is another option: its own value was left out, and the option meant is lost.

Click gives an option the next word as its value, whatever it is: `inject-fault host:c00/1 --reason --dry-run`
took "--dry-run" as the reason and injected the fault for real, where the operator had asked for a dry run. A text
option's value that is an option of the command (or of the tool, `--debug`) is refused (exit 2) naming both; the
file options refuse any value that starts with '-' (`tpufleet.cli.paths`). As with the numbers and the file names,
the command tree is walked once at start-up: one mechanism, which also covers options added later.
"""

from __future__ import annotations

from typing import Any

_checked_classes: dict[type, type] = {}


class _NotAnOption:
    """Mixed in before Click's text type: refuses a value that is an option of the command or of a command above."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and value.startswith("-") and value in _option_words(ctx):
            from tpufleet.errors import BadInput, shown

            option = max(param.opts, key=len)
            raise BadInput(f"bad option {option} {shown(value)}: that is an option; the value of {option} is missing")
        return super().convert(value, param, ctx)  # type: ignore[misc]


def _option_words(ctx: Any) -> set[str]:
    words: set[str] = set()
    while ctx is not None:
        for param in getattr(ctx.command, "params", []):
            words.update(getattr(param, "opts", []), getattr(param, "secondary_opts", []))
        words.update(ctx.help_option_names)
        ctx = ctx.parent
    return words


def _checked_class(cls: type) -> type:
    if cls not in _checked_classes:
        _checked_classes[cls] = type(cls.__name__, (_NotAnOption, cls), {})
    return _checked_classes[cls]


def options_not_values(command: object) -> None:
    """Give every text option in the command tree the check above (idempotent). File options have their own."""
    from tpufleet.cli.paths import is_checked

    for sub in getattr(command, "commands", {}).values():
        options_not_values(sub)
    for param in getattr(command, "params", []):
        kind = type(param.type)
        if getattr(param, "param_type_name", "") != "option" or kind.__name__ != "StringParamType":
            continue
        if not is_checked(param.type) and not isinstance(param.type, _NotAnOption):
            # a new object (never the shared click.STRING itself) with the same settings
            checked: Any = object.__new__(_checked_class(kind))
            checked.__dict__.update(vars(param.type))
            param.type = checked


def is_checked_text(param_type: object) -> bool:
    """Whether a text option's type has the check (for the test that walks every command)."""
    return isinstance(param_type, _NotAnOption)
