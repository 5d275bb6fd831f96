"""The Typer application object and the options every command shares."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from tpufleet.fleetstate import FleetState
    from tpufleet.ops import Outcome
    from tpufleet.state import Store

app = typer.Typer(
    name="tpufleet",
    help="Digital twin and planner for OCS-reconfigurable TPU pods. See README.md for the JSON contract and exit codes.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Output(str, enum.Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


class ReportOutput(str, enum.Enum):
    table = "table"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    md = "md"


def examples(*lines: str) -> str:
    """An `epilog=` for a command's --help: example invocations, each kept on its own line.

    Click rewraps epilog paragraphs; a line holding only "\\b" before a block keeps it as written.
    """
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="table (for people), json or yaml (for scripts)")]


@dataclass
class Settings:
    state: str | None = None  # as typed: "" must reach resolve_state_dir, which refuses it
    debug: bool = False
    lock_timeout: float = 30.0

    def store(self) -> Store:
        from tpufleet.state import Store, resolve_state_dir

        return Store(resolve_state_dir(self.state), self.lock_timeout)

    def mutate(self, use_case: Callable[[FleetState], Outcome]) -> Outcome:
        """One transaction around one use case: lock, load, run it, commit what it changed."""
        with self.store().transaction() as tx:
            outcome = use_case(tx.state)
            tx.commit(outcome.change)
        return outcome


# The options of the running command, for `main` to read after the command ends (or fails).
SETTINGS = Settings()


@app.callback()
def root(
    ctx: typer.Context,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            metavar="DIR",
            help="State directory (default $TPUFLEET_STATE, else ./.tpufleet)",
            show_default=False,
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors")] = False,
    lock_timeout: Annotated[
        float, typer.Option("--lock-timeout", min=0, help="Seconds to wait for another command's state lock")
    ] = 30.0,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit")] = False,
) -> None:
    if version:
        from tpufleet import __version__

        typer.echo(f"tpufleet {__version__}")
        raise typer.Exit(0)
    SETTINGS.state, SETTINGS.debug, SETTINGS.lock_timeout = state, debug, lock_timeout
    ctx.obj = SETTINGS
