"""Command-line shell: parse, load state, call the core, render, save. One module per command.

`main` turns every expected failure into one line on stderr and a documented exit code.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Any

# Command modules register themselves on `app`.
from tpufleet.cli import (  # noqa: F401
    allocate,
    availability,
    capacity,
    collective,
    explain,
    faults,
    fleetimport,
    fleetio,
    goodput,
    history,
    init,
    maintenance,
    metrics,
    reconcile,
    report,
    routes,
    serve,
    show,
    simulate,
    spares,
    statecmd,
    stopsignals,
    streams,
    sweep,
    topology,
    xconnect,
)
from tpufleet.cli.app import app

if TYPE_CHECKING:
    import click

INTERRUPTED = "tpufleet: interrupted (a transaction in progress was not committed)"


def _debug_requested() -> bool:
    """--debug as parsed (so a slice named "--debug" after `--` is not mistaken for it), or $TPUFLEET_DEBUG."""
    from tpufleet.cli.app import SETTINGS

    return SETTINGS.debug or os.environ.get("TPUFLEET_DEBUG") not in (None, "", "0")


_USAGE_ERRORS = {
    "UsageError",
    "BadParameter",
    "MissingParameter",
    "NoSuchOption",
    "BadOptionUsage",
    "BadArgumentUsage",
    "NoSuchCommand",
}


def _framework_exit(exc: Exception, fmt: str | None) -> int | None:
    """Exit code for Typer/Click's own signalling exceptions (duck-typed: Typer may vendor Click), else None."""
    from tpufleet.errors import EXIT_BAD_INPUT

    name = type(exc).__name__
    if name == "Exit":
        return int(getattr(exc, "exit_code", 0) or 0)
    if name == "Abort":
        report_error("aborted", 130, [], fmt)
        return 130
    if name == "NoArgsIsHelpError" or _group_without_command(exc):  # `tpufleet import`, `tpufleet import -o json`
        ctx = getattr(exc, "ctx", None)
        if fmt == "json" or ctx is None:  # a script reads the error object, as for every other bad input
            report_error(_missing_command(ctx), EXIT_BAD_INPUT, [], fmt)
        else:
            streams.tell(ctx.get_help())
        return EXIT_BAD_INPUT
    if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
        code = EXIT_BAD_INPUT if name in _USAGE_ERRORS or exc.exit_code == 2 else int(exc.exit_code)
        from tpufleet.cli.app import SETTINGS
        from tpufleet.cli.misplaced import extra_argument_hint, shape_without_option_hint

        message = _one_hint(" ".join(_click_message(exc).split()))
        if name == "NoSuchOption":
            from tpufleet.cli.misplaced import generation_option_hint, misplaced_hint, no_output_hint

            pod_instead = generation_option_hint(exc, list(SETTINGS.argv))  # not Click's `Did you mean '--version'?`
            message = (
                no_output_hint(exc)
                or misplaced_hint(exc, list(SETTINGS.argv))
                or (message.split(" Did you mean ")[0].rstrip(".") + pod_instead if pod_instead else message)
            )
        hint = extra_argument_hint(exc) or shape_without_option_hint(exc, list(SETTINGS.argv))
        report_error(message.rstrip(".") + hint if hint else message, code, [], fmt)
        return code
    return None


def _group_without_command(exc: Exception) -> bool:
    """A group given options but no command (`tpufleet import -o json`, `tpufleet --state DIR`): Click's plain
    usage error, told from the others by its group context that invoked no command."""
    ctx = getattr(exc, "ctx", None)
    return (
        type(exc).__name__ == "UsageError"
        and ctx is not None
        and bool(getattr(ctx.command, "commands", None))
        and ctx.invoked_subcommand is None
        and not ctx.args
        and not getattr(ctx, "_protected_args", None)
    )


def _click_message(exc: Any) -> str:
    """Click's message, a bad value in the words of every message tpufleet writes: `bad option --seed: -1 is not
    in the range ...` (`bad argument SHAPE: ...`), not `Invalid value for '--seed': ...`."""
    param = getattr(exc, "param", None)
    if type(exc).__name__ != "BadParameter" or param is None or not getattr(exc, "message", ""):
        return str(exc.format_message())
    if param.param_type_name == "option":
        return f"bad option {max(param.opts, key=len)}: {str(exc.message).rstrip('.')}"
    return (
        f"bad argument {str(param.human_readable_name).strip('[]').removesuffix('...')}: {str(exc.message).rstrip('.')}"
    )


def _missing_command(ctx: Any) -> str:
    """`missing command: tpufleet import k8s|reservation|slices`, the group's commands as its help lists them."""
    if ctx is None:
        return "missing command"
    names = list(getattr(ctx.command, "commands", {}))
    return f"missing command: {ctx.command_path} {'|'.join(names)}" if names else "missing command"


def _one_hint(message: str) -> str:
    """Typer suggests close command names and Click then adds its own list: keep the first suggestion only."""
    first = message.find("Did you mean")
    second = message.find("Did you mean", first + 1) if first >= 0 else -1
    if second < 0:
        return message
    return message[: second - 1 if message[second - 1] == "(" else second].rstrip()  # "(Did you mean" or bare


_PLAIN_METAVARS = {
    "FloatRange": "NUMBER",
    "FloatParamType": "NUMBER",
    "IntRange": "N",
    "IntParamType": "N",
    "Path": "FILE",
    "TyperPath": "FILE",
}


def plain_metavars(command: object) -> None:
    """Help in words an operator knows: NUMBER, N, FILE, DIR instead of Click's FLOAT RANGE, INTEGER, PATH."""
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub)
    for param in getattr(command, "params", []):
        kind = type(param.type).__name__
        if param.metavar is None and kind in _PLAIN_METAVARS and getattr(param, "param_type_name", "") == "option":
            said = str(getattr(param, "help", "") or "").lower()
            folder = kind.endswith("Path") and (
                not getattr(param.type, "file_okay", True) or said.startswith("directory")
            )
            param.metavar = "DIR" if folder else _PLAIN_METAVARS[kind]


def requested_format(argv: list[str]) -> str | None:
    """The -o/--output value on the command line (the last one, before or after the command), else the config's.

    Read from the raw arguments so that an error found while parsing them is still reported in that format.
    """
    found = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in ("-o", "--output") and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--output="):
            found = arg.split("=", 1)[1]
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("--"):
            found = arg[2:]
    if found is None:
        from tpufleet.state.config import load_config

        try:
            found = load_config().output
        except Exception:  # noqa: BLE001 - a bad config file is reported by the command itself
            return None
    return found


def report_error(message: str, code: int, items: list[str], fmt: str | None) -> None:
    """One error on stderr: a line for people, or with -o json one JSON object (documented in the README). A stderr
    that cannot be written (`2>/dev/full`, a closed pipe) loses the message, never the exit code."""
    try:
        _print_error(message, code, items, fmt)
    except OSError:
        streams.drop_stderr()


def _print_error(message: str, code: int, items: list[str], fmt: str | None) -> None:
    from tpufleet.text import quoted_short

    message = quoted_short(message)  # every quoted value at most 60 characters, whoever wrote the message
    if fmt == "json":
        import json

        print(json.dumps({"error": message, "exit_code": code, "items": items}, ensure_ascii=False), file=sys.stderr)
        return
    from tpufleet.cli.app import SETTINGS
    from tpufleet.cli.suggested import on_this_state
    from tpufleet.text import printable

    message = on_this_state(message, SETTINGS.state_option)  # the commands it suggests run on the same fleet
    print(f"tpufleet: error: {printable(message)}", file=sys.stderr)
    for line in items[:50]:  # an item may suggest a command too
        print(f"  {printable(on_this_state(line, SETTINGS.state_option))}", file=sys.stderr)
    if len(items) > 50:
        print(f"  ... {len(items) - 50} more", file=sys.stderr)


@functools.cache
def _click_command() -> click.Command:
    """The Click command tree Typer builds from `app`, built once per process: building it reads every command's
    signature and type hints (about 0.1 s), which in-process callers (the server, the tests) would otherwise pay
    on every call. Click commands keep no state between invocations."""
    import typer

    from tpufleet.cli.arghelp import argument_help
    from tpufleet.cli.choices import CHOICE_MEANT
    from tpufleet.cli.commandorder import in_workflow_order
    from tpufleet.cli.dashes import typographic_dashes
    from tpufleet.cli.numbers import STRICT_NUMBER
    from tpufleet.cli.optionvalues import NOT_AN_OPTION
    from tpufleet.cli.paramchecks import give_checks
    from tpufleet.cli.paths import FILE_NAME
    from tpufleet.cli.positionals import negative_numbers_as_arguments
    from tpufleet.cli.repeats import options_once

    command = typer.main.get_command(app)
    plain_metavars(command)
    argument_help(command)
    give_checks(command, [STRICT_NUMBER, FILE_NAME, NOT_AN_OPTION, CHOICE_MEANT])
    negative_numbers_as_arguments(command)
    typographic_dashes(command)
    options_once(command)
    in_workflow_order(command)
    return command


def main(argv: list[str] | None = None) -> None:
    from tpufleet.cli.app import SETTINGS

    argv = list(sys.argv[1:] if argv is None else argv)
    SETTINGS.debug, SETTINGS.argv = False, tuple(argv)  # in-process callers (tests) run main more than once
    SETTINGS.config_error, SETTINGS.state_option = None, None
    done = sys.modules.get("tpufleet.state.committed")  # loaded by a command that wrote: --help stays light
    if done is not None:  # in-process callers (tests) run main more than once
        done.SERIALS.clear()
    streams.reopen_closed_streams()
    command = _click_command()
    streams.carry_any_text()
    stdout, sys.stdout = sys.stdout, streams.ReaderMayGo(sys.stdout)
    try:
        with stopsignals.stopping_as_interrupt():
            code = _run(command, argv)
    finally:
        sys.stdout = stdout  # in-process callers (tests, `serve`) get their own stream back
    stopsignals.exit_stopped(code)
    sys.exit(code)


def _run(command: click.Command, argv: list[str]) -> int:
    """The command's exit code, its error reported (one line, or with -o json one object)."""
    from tpufleet.errors import Refused, TpufleetError

    try:
        rc = command.main(args=argv, prog_name="tpufleet", standalone_mode=False)
        code = rc if isinstance(rc, int) else 0
        sys.stdout.flush()  # a full disk is met here, not at exit
        if code == 130:  # Typer turns Ctrl-C (and a SIGTERM's KeyboardInterrupt) into a silent return of 130
            streams.tell(_interrupted())
            code = stopsignals.interrupt_exit_code()
    except TpufleetError as exc:
        _traceback_if_debug()
        code = exc.exit_code
        report_error(str(exc), code, exc.details if isinstance(exc, Refused) else [], requested_format(argv))
    except KeyboardInterrupt:
        streams.tell(_interrupted())
        code = stopsignals.interrupt_exit_code()
    except Exception as exc:  # noqa: BLE001 - the last resort: Click's signalling, a lost output, else a bug (70)
        code = _unhandled(exc, requested_format(argv))
    return code


def _interrupted() -> str:
    """What an interrupt left: nothing, or a change committed before it came (the commit is the state file's
    rename: whatever the command did after it, tables stored or output printed, may be missing)."""
    done = sys.modules.get("tpufleet.state.committed")
    signal_name = stopsignals.stopped_by()
    stopped = f"tpufleet: stopped by {signal_name}" if signal_name else "tpufleet: interrupted"
    if done is None or not done.SERIALS:
        return INTERRUPTED.replace("tpufleet: interrupted", stopped)
    return f"{stopped} after its change was committed as serial {done.SERIALS[-1]} (`tpufleet history` shows it)"


def _traceback_if_debug() -> None:
    """With --debug, the traceback of the exception being handled, before its error line: the exit code stays the
    one the README gives (2 bad input, 3 lock, 70 a bug), so a script run with --debug still reads it."""
    if _debug_requested():
        import traceback

        streams.tell(traceback.format_exc().rstrip())


def _unhandled(exc: Exception, fmt: str | None) -> int:
    """The exit code for an exception no command turned into a refusal: output that cannot be written, Click's own
    signalling, else a bug (70)."""
    from tpufleet.errors import EXIT_INTERNAL

    if isinstance(exc, OSError) and streams.is_write_failure(exc):
        _traceback_if_debug()
        return _output_failed(exc, fmt)
    framework_code = _framework_exit(exc, fmt)
    if framework_code is not None:
        return framework_code
    _traceback_if_debug()
    hint = "" if _debug_requested() else " (rerun with --debug for a traceback)"
    report_error(f"internal error: {type(exc).__name__}: {exc}{hint}", EXIT_INTERNAL, [], fmt)
    return EXIT_INTERNAL


def _output_failed(exc: OSError, fmt: str | None) -> int:
    """Report a failed write of the output (a full disk) as a refusal: the command did its work."""
    from tpufleet.errors import EXIT_REFUSED
    from tpufleet.state import committed

    streams.drop_stdout()
    done = committed.SERIALS
    said = f"its change is committed as serial {done[-1]}: `tpufleet history` shows it" if done else "nothing changed"
    report_error(f"cannot write the output: {exc.strerror or exc} ({said})", EXIT_REFUSED, [], fmt)
    return EXIT_REFUSED
