"""The commands a table or an error suggests (`next: tpufleet routes s1`), runnable on the same fleet.

An operator who named the state on the command line (`tpufleet --state /srv/fleet explain s1`) and copies a
suggested `tpufleet reschedule s1` would run it on ./.tpufleet, or on $TPUFLEET_STATE: another fleet, or none.
So what people read (tables, error lines) gets `--state DIR` in each suggested command; JSON and YAML keep the
commands as the contract gives them (a script knows the state it passed). A state from $TPUFLEET_STATE or the
config file reaches the next command by itself: nothing is added then.
"""

from __future__ import annotations

import functools
import re
import shlex


def on_this_state(text: str, state: str | None) -> str:
    """`text` with `--state STATE` after the `tpufleet` of each command it suggests; unchanged when `state` is None.

    >>> on_this_state("next: tpufleet routes s1  (`tpufleet explain s1`)", "/srv/my fleet")
    "next: tpufleet --state '/srv/my fleet' routes s1  (`tpufleet --state '/srv/my fleet' explain s1`)"
    >>> on_this_state("run `tpufleet routes s1`", "postgresql://ops:s3cret@db/fleet")  # the password left out
    'run `tpufleet --state postgresql://ops@db/fleet routes s1`'
    >>> on_this_state("to quarantine:\\ntpufleet inject-fault host:c00/1 --planned", "d")  # a line of commands
    'to quarantine:\\ntpufleet --state d inject-fault host:c00/1 --planned'
    >>> on_this_state("locked by pid 7 (tpufleet routes s1); see /opt/tpufleet status", "d")  # described: left
    'locked by pid 7 (tpufleet routes s1); see /opt/tpufleet status'
    """
    if state is None or "tpufleet " not in text:
        return text
    from tpufleet.state.dburl import redacted_arg

    option = f"--state {shlex.quote(redacted_arg(state))} "  # a database URL's password is never printed
    return _suggested().sub(lambda found: found.group(0) + option, text)


@functools.cache
def _suggested() -> re.Pattern[str]:
    """`tpufleet ` where it starts a suggested command: after `next: `, a backtick or `run `, or at the start of a
    line (`suspects`' quarantine commands, one a line), and before one of the tool's command names (a command
    already given `--state` is left as it is; a command described, such as the lock holder's
    `(tpufleet import ...)`, is not a suggestion)."""
    from tpufleet.cli.app import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    words = "|".join(sorted((re.escape(n) for n in names if n), key=len, reverse=True))
    starts = r"(?:^|(?<=next: )|(?<=`)|(?<=run ))"
    return re.compile(rf"{starts}tpufleet (?=(?:{words})(?:[\s`'\")]|$))", re.MULTILINE)


def say(line: str) -> None:
    """A remark on stderr (`tpufleet: note: ...`), the commands it suggests carrying the state given."""
    import typer

    from tpufleet.cli.app import SETTINGS

    typer.echo(on_this_state(line, SETTINGS.state_option), err=True)
