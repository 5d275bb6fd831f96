"""A value that is a near miss of one of a parameter's choices (`-o jsn`, `--period weak`, `show slics`) is refused,
as Click refuses it, with the choice it may mean: `'jsn' is not one of 'table', 'json', 'yaml'; did you mean json?`.
Given to every choice parameter at start-up (`tpufleet.cli.paramchecks`)."""

from __future__ import annotations

from typing import Any

from tpufleet.cli.paramchecks import ParamCheck


class _ChoiceMeant:
    """Mixed in before Click's Choice: its refusal gains the near miss."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        import click

        from tpufleet.text import closest

        try:
            return super().convert(value, param, ctx)  # type: ignore[misc]
        except click.BadParameter as exc:
            choices = [str(getattr(c, "value", c)) for c in getattr(self, "choices", ())]
            near = closest(value, choices) if isinstance(value, str) and value not in choices else None
            if near is not None:
                exc.message = f"{str(exc.message).rstrip('.')}; did you mean {near}?"  # type: ignore[misc]
            raise


def _choice(param: Any) -> bool:
    import click

    return isinstance(param.type, click.Choice)


CHOICE_MEANT = ParamCheck(applies_to=_choice, mixin=_ChoiceMeant)
"""Every choice parameter: a near miss named."""
