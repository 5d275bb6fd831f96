"""The Typer application object and the options every command shares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from tpufleet.constants import DAY
from tpufleet.errors import EXIT_PLAN_HAS_CHANGES
from tpufleet.text import Output, ReportOutput  # the formats, defined in the core (the config file names them too)

if TYPE_CHECKING:
    from tpufleet.fleetstate import FleetState
    from tpufleet.ops import Outcome
    from tpufleet.state import Store

app = typer.Typer(
    name="tpufleet",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


__all__ = [
    "ImportDetailedExitcodeOpt",
    "Output",
    "OutputOpt",
    "ReportOutput",
    "RoutingWorkOpt",
    "Settings",
    "app",
    "command_group",
    "examples",
    "report_formats",
    "report_output_option",
]


def _format_option(help_text: str) -> Any:
    """`-o/--output FORMAT` before a command or a group's sub-command: passed on through `output_defaults`."""
    return typer.Option("-o", "--output", metavar="FORMAT", help=help_text, show_default=False)


def command_group(name: str, description: str) -> typer.Typer:
    """A group of sub-commands (`tpufleet NAME ...`), registered on `app`; without a sub-command it shows its help."""
    group = typer.Typer(name=name, help=description, no_args_is_help=True, rich_markup_mode=None)

    @group.callback()
    def group_output(
        ctx: typer.Context,
        output: Annotated[
            str | None, _format_option("Output format for the sub-command; the same as -o after it")
        ] = None,
    ) -> None:
        # `tpufleet export -o json slices` reaches the sub-command as `-o` before the group does; the sub-command
        # refuses a format it cannot write, and its own -o still wins
        if output is not None:
            ctx.default_map = {**(ctx.default_map or {}), **output_defaults(ctx.command, output)}

    app.add_typer(group, name=name)
    return group


def examples(*lines: str) -> str:
    """An `epilog=` for a command's --help: example invocations, each kept on its own line.

    Click rewraps epilog paragraphs; a line holding only "\\b" before a block keeps it as written.
    """
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="table (for people), json or yaml (for scripts)")]
# The goodput logs `metrics` and `serve` add to their families (`serve` reads them again when they change).
# Kept as typed (a message names `./a.jsonl` so, where a Path would drop the `./`).
GoodputLogsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--goodput",
        click_type=click.Path(path_type=str),
        help="Goodput event logs: add SG/RG/PG/MPG and badput to the metrics (repeatable)",
    ),
]
GoodputFormatOpt = Annotated[
    str, typer.Option("--goodput-format", help="native or ml-goodput (as goodput-report --format)")
]
# The imports' plan exit code (`tpufleet.cli.fleetimport.run_import` raises it).
ImportDetailedExitcodeOpt = Annotated[
    bool,
    typer.Option("--detailed-exitcode", help=f"Exit {EXIT_PLAN_HAS_CHANGES} when the import has changes, 0 when none"),
]
# The commands that reroute slices (`inject-fault`, `routes`) account their routing work the same way.
RoutingWorkOpt = Annotated[
    bool,
    typer.Option(
        "-v", "--verbose", help="On stderr at the end: the routing work done (repairs, analyses) and its seconds"
    ),
]


def report_formats(*extra: ReportOutput) -> click.Choice:
    """The -o choices of a report (a `click_type=` for a `ReportOutput` option): table, json, yaml and the `extra`
    formats it has renderers for (`tpufleet.cli.render.emit`)."""
    return click.Choice([f.value for f in (*Output, *extra)])


def report_output_option(*extra: ReportOutput, help_text: str) -> Any:
    """A report's -o/--output (`Annotated[ReportOutput, report_output_option(...)]`): table, json, yaml and the
    `extra` formats; `help_text` names them as the report prefers."""
    return typer.Option("-o", "--output", click_type=report_formats(*extra), help=help_text)


def shipped_yaml_option(flag: str, what: str, shipped: str, or_shipped: bool = False) -> Any:
    """An option naming a YAML file to use instead of a shipped one (`Annotated[Path | None, ...]`, None: the
    shipped file), its help in the one form every such option has; `or_shipped`: it also takes the word
    `shipped` for the shipped file, as the other commands' option of that name does (the command reads it so)."""
    if or_shipped:
        return typer.Option(
            flag, metavar="FILE|shipped", help=f"{what} YAML, or shipped (the default: the shipped {shipped})"
        )
    return typer.Option(flag, help=f"{what} YAML (default: the shipped {shipped})")


# The commands that run on Dask (`goodput-report`, `sweep`) take a local cluster's size or a scheduler's address
# alike; each help says what runs there.
def dask_workers_option(help_text: str) -> Any:
    """--workers N (`Annotated[int | None, ...]`): the worker processes of a local Dask cluster."""
    return typer.Option("--workers", min=1, max=1024, help=help_text)


def dask_cluster_option(help_text: str) -> Any:
    """--cluster ADDRESS (`Annotated[str | None, ...]`): the Dask scheduler to run on instead."""
    return typer.Option("--cluster", metavar="tcp://HOST:8786", help=help_text)


@dataclass
class Settings:
    state: str | None = None  # as typed: "" must reach resolve_state_dir, which refuses it
    state_option: str | None = None  # the state as given by --state on the command line (not $TPUFLEET_STATE)
    debug: bool = False
    lock_timeout: float = 30.0
    argv: tuple[str, ...] = ()  # the command line `main` was given (a command's --help survives a bad config)
    config_error: Exception | None = None  # a bad config file's, held while only help may be asked

    def store(self) -> Store:
        from tpufleet.state import Store, resolve_state_dir

        if self.config_error is not None:  # "-h" was an option's value, not a request for help
            raise self.config_error
        return Store(resolve_state_dir(self.state), self.lock_timeout)

    def mutate(self, use_case: Callable[[FleetState], Outcome]) -> Outcome:
        """One transaction around one use case: lock, load, run it, commit what it changed."""
        with self.store().transaction() as tx:
            outcome = use_case(tx.state)
            tx.commit(outcome.change)
        return outcome


# The options of the running command, for `main` to read after the command ends (or fails).
SETTINGS = Settings()


def _print_version(value: bool) -> None:
    """Eager: `tpufleet --version` alone prints the version (no command needed)."""
    if value:
        from tpufleet import __version__

        typer.echo(f"tpufleet {__version__}")
        raise typer.Exit(0)


def _accepts(param: object, fmt: str) -> bool:
    choices = getattr(getattr(param, "type", None), "choices", None)
    return choices is None or fmt in [getattr(c, "value", c) for c in choices]


def output_defaults(command: object, fmt: str, everywhere: bool = True) -> dict[str, object]:
    """A Click `default_map` giving every command (and sub-command) that has -o/--output the format `fmt`.

    This is how `tpufleet -o json status` and a config file's `output` reach the commands: a command's own
    -o still wins, since Click consults the default map only for options not given on the command line. A format
    from the config file (`everywhere=False`) reaches only the commands that offer it (`md` suits the reports, and
    `status` keeps its table); one given as an option reaches every command, which refuses one it cannot write.
    """
    mapping: dict[str, object] = {}
    for name, sub in getattr(command, "commands", {}).items():
        if getattr(sub, "commands", None):
            mapping[name] = output_defaults(sub, fmt, everywhere)
            continue
        param = next((p for p in sub.params if p.name == "output"), None)
        if param is not None and (everywhere or _accepts(param, fmt)):
            mapping[name] = {"output": fmt}
    return mapping


def _apply_config(
    ctx: typer.Context, state: str | None, lock_timeout: float, group: str | None, fmt: str | None
) -> None:
    """Options, then environment, then the config file (see tpufleet.state.config), then built-in defaults."""
    import os
    import sys

    from click.core import ParameterSource

    from tpufleet.state import files, lock
    from tpufleet.state.config import load_config

    config = load_config()
    given = ctx.get_parameter_source("state") is ParameterSource.COMMANDLINE
    SETTINGS.state_option = state if given else None  # the commands suggested to people carry it (cli/suggested)
    if state is None and "TPUFLEET_STATE" not in os.environ:
        state = config.state
    if ctx.get_parameter_source("lock_timeout") is ParameterSource.DEFAULT and config.lock_timeout is not None:
        lock_timeout = config.lock_timeout
    SETTINGS.state, SETTINGS.lock_timeout = state, lock_timeout
    files.guard_state_dir(_state_location(state))
    files.share_with_group(group or config.group)
    lock.WAIT_NOTICE.say = (lambda line: print(f"tpufleet: {line}", file=sys.stderr)) if sys.stderr.isatty() else None
    if fmt or config.output:
        ctx.default_map = output_defaults(ctx.command, fmt or config.output or "", everywhere=fmt is not None)


def _help_asked() -> bool:
    """Whether the command line asks a command's help (`tpufleet status --help`)."""
    return any(arg in ("--help", "-h") for arg in SETTINGS.argv)


def _check_takes_output(ctx: typer.Context) -> None:
    """BadInput when -o was given before a command that takes none (`serve`, whose output is its HTTP answers): the
    format reached only the commands that have -o, and `tpufleet -o json serve` started serving as if it meant
    something."""
    from tpufleet.errors import BadInput

    name = ctx.invoked_subcommand
    sub = ctx.command.get_command(ctx, name) if name and isinstance(ctx.command, click.Group) else None
    if sub is not None and not getattr(sub, "commands", None) and all(p.name != "output" for p in sub.params):
        from tpufleet.cli.misplaced import takes_no_output

        raise BadInput(takes_no_output(sub.name or ""))


def _state_location(state: str | None) -> Path | str | None:
    """Where the command's state lives, for guarding it; None when the location is bad (the command says so if it
    uses the state; one that does not, `simulate-fleet` say, must not fail for it)."""
    from tpufleet.errors import BadInput
    from tpufleet.state import resolve_state_dir

    try:
        return resolve_state_dir(state)
    except BadInput:
        return None


@app.callback()
def root(
    ctx: typer.Context,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            metavar="DIR|URL",
            help="State directory or postgresql:// URL (default $TPUFLEET_STATE, else the config file's state, "
            "else ./.tpufleet)",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None,
        _format_option(
            "Output format for the command: table, json or yaml (csv, md, html where it is a report); "
            "the same as -o after the command"
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors")] = False,
    lock_timeout: Annotated[
        float, typer.Option("--lock-timeout", min=0, max=DAY, help="Seconds to wait for another command's state lock")
    ] = 30.0,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            metavar="GROUP",
            help="Let this group read the state (files 0640, directories 0750); default: owner only",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    """Digital twin and planner for OCS-reconfigurable TPU pods. See README.md for the JSON contract and exit codes.

    Defaults can live in a config file: $TPUFLEET_CONFIG, else ~/.config/tpufleet/config.toml
    (keys: state, output, lock_timeout, group).
    """
    from tpufleet.errors import BadInput, TpufleetError, shown
    from tpufleet.text import closest

    formats = [f.value for f in ReportOutput]
    if output is not None and output not in formats:
        # as a command's own -o says it
        near = closest(output, formats)
        meant = f"; did you mean {near}?" if near else ""
        raise BadInput(f"bad option --output: {shown(output)} is not one of {', '.join(map(repr, formats))}{meant}")
    if group == "":  # as `--state ''` and the config file's `group = ""`: it meant the config's group, or none, unsaid
        raise BadInput("bad option --group: the group is empty (''); name a group, or leave the option out")
    if not 0 <= lock_timeout <= DAY:  # also refuses nan, which every comparison fails
        raise BadInput(f"bad option --lock-timeout: {lock_timeout!r}; give 0 to {DAY} seconds")
    if output is not None and not _help_asked():
        _check_takes_output(ctx)
    SETTINGS.debug = debug
    ctx.obj = SETTINGS
    try:
        _apply_config(ctx, state, lock_timeout, group, output)
    except TpufleetError as exc:
        if not _help_asked():
            raise
        SETTINGS.config_error = exc  # a mistake in the config file must not hide a command's help
