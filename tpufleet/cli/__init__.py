"""Command-line shell: parse, load state, call the core, render, save. One module per command.

`main` turns every expected failure into one line on stderr and a documented exit code.
"""

from __future__ import annotations

import os
import sys

# Command modules register themselves on `app`.
from tpufleet.cli import (  # noqa: F401
    allocate,
    availability,
    faults,
    fleetio,
    goodput,
    init,
    routes,
    show,
    simulate,
    sweep,
    topology,
    xconnect,
)
from tpufleet.cli.app import app

INTERRUPTED = "tpufleet: interrupted (a transaction in progress was not committed)"


def _debug_requested() -> bool:
    """--debug as parsed (so a slice named "--debug" after `--` is not mistaken for it), or $TPUFLEET_DEBUG."""
    from tpufleet.cli.app import SETTINGS

    return SETTINGS.debug or os.environ.get("TPUFLEET_DEBUG") not in (None, "", "0")


def _framework_exit(exc: Exception) -> int | None:
    """Exit code for Typer/Click's own signalling exceptions (duck-typed: Typer may vendor Click), else None."""
    from tpufleet.errors import EXIT_BAD_INPUT

    name = type(exc).__name__
    if name == "Exit":
        return int(getattr(exc, "exit_code", 0) or 0)
    if name == "Abort":
        print("tpufleet: error: aborted", file=sys.stderr)
        return 130
    if name == "NoArgsIsHelpError":
        ctx = getattr(exc, "ctx", None)
        print(ctx.get_help() if ctx else "tpufleet: error: missing command", file=sys.stderr)
        return EXIT_BAD_INPUT
    if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
        message = " ".join(str(exc.format_message()).split())
        print(f"tpufleet: error: {message}", file=sys.stderr)
        return (
            EXIT_BAD_INPUT
            if name
            in {
                "UsageError",
                "BadParameter",
                "MissingParameter",
                "NoSuchOption",
                "BadOptionUsage",
                "BadArgumentUsage",
                "NoSuchCommand",
            }
            or exc.exit_code == 2
            else int(exc.exit_code)
        )
    return None


def main(argv: list[str] | None = None) -> None:
    import typer

    from tpufleet.cli.app import SETTINGS
    from tpufleet.errors import EXIT_INTERNAL, Refused, TpufleetError

    argv = list(sys.argv[1:] if argv is None else argv)
    SETTINGS.debug = False  # in-process callers (tests) run main more than once
    command = typer.main.get_command(app)
    try:
        rc = command.main(args=argv, prog_name="tpufleet", standalone_mode=False)
        code = rc if isinstance(rc, int) else 0
        if code == 130:  # Typer turns Ctrl-C into a silent return of 130
            print(INTERRUPTED, file=sys.stderr)
    except TpufleetError as exc:
        if _debug_requested():
            raise
        print(f"tpufleet: error: {exc}", file=sys.stderr)
        if isinstance(exc, Refused):
            for line in exc.details[:50]:
                print(f"  {line}", file=sys.stderr)
            if len(exc.details) > 50:
                print(f"  ... {len(exc.details) - 50} more", file=sys.stderr)
        code = exc.exit_code
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        code = 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except Exception as exc:
        framework_code = _framework_exit(exc)
        if framework_code is None:
            if _debug_requested():
                raise
            print(
                f"tpufleet: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)",
                file=sys.stderr,
            )
        code = EXIT_INTERNAL if framework_code is None else framework_code
    sys.exit(code)
