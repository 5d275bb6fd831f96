"""An option whose value is another option: its own value was left out, and the option meant is lost.

Click gives an option the next word as its value, whatever it is: `inject-fault host:c00/1 --reason --dry-run`
took "--dry-run" as the reason and injected the fault for real, where the operator had asked for a dry run. A text
option's value that is an option of the command (or of the tool, `--debug`) is refused (exit 2) naming both; the
file options refuse any value that starts with '-' (`tpufleet.cli.paths`). As with the numbers and the file names,
the command tree is walked once at start-up (`tpufleet.cli.paramchecks`): one mechanism, which also covers options
added later.
"""

from __future__ import annotations

from typing import Any

from tpufleet.cli.paramchecks import ParamCheck


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


def _text_option(param: Any) -> bool:
    """A text option, other than a file option (which has its own check, `tpufleet.cli.paths`)."""
    from tpufleet.cli.paths import FILE_NAME

    is_text = type(param.type).__name__ == "StringParamType"
    return getattr(param, "param_type_name", "") == "option" and is_text and not FILE_NAME.applies_to(param)


NOT_AN_OPTION = ParamCheck(applies_to=_text_option, mixin=_NotAnOption)
"""Every text option but the file options: the check above."""


def is_checked_text(param_type: object) -> bool:
    """Whether a text option's type has the check (for the test that walks every command)."""
    return isinstance(param_type, _NotAnOption)
