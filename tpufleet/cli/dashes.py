"""Options typed with a typographic dash: named as such, with the option meant.

A command line copied from a document or a chat often has `--out` turned into an em dash and `out` (U+2014), or
an en dash (U+2013). Click reads such a word as an argument: `report <em dash>out x` was refused as `Got unexpected
extra arguments`, and `allocate x <em dash>shape 4x4x4` called the word a bad slice name. A word that, its
typographic dashes typed as '-', is one of the command's options is refused (exit 2) naming both. As with the
numbers and the file names, the command tree is walked once at start-up: one mechanism, which also covers commands
added later."""

from __future__ import annotations

from typing import Any

TYPOGRAPHIC_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_WRAPPED = "_tpufleet_typographic_dashes"


def meant_option(word: str, options: set[str]) -> str | None:
    """The option `word` is with its leading typographic dashes typed as '-' (`—out`: `--out`), else None."""
    rest = word.lstrip(TYPOGRAPHIC_DASHES + "-")
    if rest == word or not any(c in TYPOGRAPHIC_DASHES for c in word[: len(word) - len(rest)]):
        return None
    name = rest.split("=", 1)[0]
    for candidate in (f"--{name}", f"-{name}"):
        if candidate in options:
            return candidate
    return None


def refuse_typographic_dashes(args: list[str], options: set[str], commands: set[str]) -> None:
    """BadInput for the first word before `--` (and, for a group, before its command) that is an option typed with
    a typographic dash."""
    for word in args:
        if word == "--" or word in commands:
            return
        meant = meant_option(word, options)
        if meant is not None:
            from tpufleet.errors import BadInput, shown

            raise BadInput(f"bad option {shown(word)}: typed with a typographic dash (text pasted?); type {meant}")


def typographic_dashes(command: Any) -> None:
    """Give every command and group in the tree the check above (idempotent)."""
    for sub in getattr(command, "commands", {}).values():
        typographic_dashes(sub)
    if not getattr(command, _WRAPPED, False):
        command.make_parser = _checking(command.make_parser)
        setattr(command, _WRAPPED, True)


def _checking(make_parser: Any) -> Any:
    def make(ctx: Any) -> Any:
        parser = make_parser(ctx)
        parse = parser.parse_args

        def parse_args(args: list[str]) -> Any:
            if not ctx.resilient_parsing:  # shell completion reads a half-typed line
                options = {*parser._long_opt, *parser._short_opt}
                refuse_typographic_dashes(args, options, set(getattr(ctx.command, "commands", {})))
            return parse(args=args)

        parser.parse_args = parse_args
        return parser

    return make


def checks_dashes(command: object) -> bool:
    """Whether a command has the check (for the test that walks every command)."""
    return bool(getattr(command, _WRAPPED, False))
