"""The user's defaults: `$TPUFLEET_CONFIG`, else `~/.config/tpufleet/config.toml` (absent: no defaults).

    state = "/srv/tpufleet/state"   # like --state (after $TPUFLEET_STATE); or "postgresql://USER@HOST/DB?...";
                                    # a relative directory is taken from the config file's directory
    output = "json"                 # like -o/--output, for each command that has this format (the
                                    # others keep their table: `csv` reaches only the reports)
    lock_timeout = 60               # like --lock-timeout, seconds
    group = "tpu-oncall"            # like --group: state files 0640/0750 for this group

A command-line option always wins over the file. An unknown key or a bad value is bad input (exit 2) naming the
file, the key and the value, so a typo is never silently ignored.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.constants import DAY
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile
from tpufleet.state.dburl import WRITE_A_URL, is_mistyped_url, other_scheme, redacted
from tpufleet.state.inputfiles import MAX_DEPTH, nested_deeper_than, read_text
from tpufleet.state.paths import expanded
from tpufleet.text import ReportOutput, underflows

OUTPUT_FORMATS = tuple(f.value for f in ReportOutput)  # what the config file's `output` may name
_MAX_CONFIG_BYTES = 64 * 1024


@dataclass(frozen=True)
class Config:
    state: str | None = None
    output: str | None = None
    lock_timeout: float | None = None
    group: str | None = None
    source: str | None = None  # the file read, if any


def config_path() -> Path | None:
    """The config file to read: $TPUFLEET_CONFIG, else the user's; None when the user has no home directory to
    hold one (HOME unset, in a container whose user has no passwd entry)."""
    env = os.environ.get("TPUFLEET_CONFIG")
    if env is not None:
        if env == "":
            raise BadInput("bad environment variable TPUFLEET_CONFIG: it is set but empty; unset it or name a file")
        return expanded(env, "environment variable TPUFLEET_CONFIG")
    try:
        home = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    except RuntimeError:
        return None
    return Path(home) / "tpufleet" / "config.toml"


def load_config() -> Config:
    """The defaults from the config file; Config() when there is none. An explicitly named missing file is bad input;
    the user's own file is skipped where it cannot even be looked at (HOME left at another user's directory)."""
    path = config_path()
    named = bool(os.environ.get("TPUFLEET_CONFIG"))
    try:
        found = path is not None and path.exists()
    except PermissionError as exc:
        if named:
            raise BadInput(f"config file {path} (from TPUFLEET_CONFIG): {exc.strerror}") from None
        found = False
    if path is None or not found:
        if named:
            raise BadInput(f"config file {path} (from TPUFLEET_CONFIG) does not exist")
        return Config()
    if not path.is_file():  # a FIFO or a device would block the read, a directory cannot be one
        raise BadInput(f"config file {path} is not a regular file")
    text = read_text(path, "config file", _MAX_CONFIG_BYTES)
    if text.count("[") + text.count("{") > MAX_DEPTH and nested_deeper_than(text, MAX_DEPTH):
        raise BadStateFile(str(path), "", NO_VALUE, f"nested more than {MAX_DEPTH} levels deep")
    try:
        doc = tomllib.loads(text, parse_float=_float)
    except tomllib.TOMLDecodeError as exc:
        raise BadStateFile(str(path), "", NO_VALUE, f"not valid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # an integer of more than 4,300 digits; nesting the scan missed
        raise BadStateFile(str(path), "", NO_VALUE, f"not valid TOML ({type(exc).__name__}: {str(exc)[:80]})") from None
    return _parse(doc, str(path))


class _Underflow(str):
    """A TOML float that is not 0 but reads as 0 (1e-400), kept as written: `_parse` refuses it by its key."""


def _float(text: str) -> float | _Underflow:
    return _Underflow(text) if underflows(text) else float(text)


def _parse(doc: dict[str, object], file: str) -> Config:
    from tpufleet.text import meant_of

    known = {"state": str, "output": str, "lock_timeout": (int, float), "group": str}
    words = {
        "state": "a directory or a postgresql:// URL in quotes",
        "output": "a format in quotes",
        "lock_timeout": "a number of seconds",
        "group": "a group name in quotes",
    }
    for key, value in doc.items():
        if key not in known:
            raise BadStateFile(
                file, key, value, f"unknown setting; known: {', '.join(known)}{meant_of(key, list(known))}"
            )
        if isinstance(value, _Underflow):  # as every numeric option refuses it: 0 would be read instead
            small = "too small to be told from 0 (give a larger number)"
            raise BadStateFile(file, key, str(value), small if known[key] is not str else f"must be {words[key]}")
        if not isinstance(value, known[key]) or isinstance(value, bool):  # type: ignore[arg-type]
            raise BadStateFile(file, key, value, f"must be {words[key]}")
    output, timeout = doc.get("output"), doc.get("lock_timeout")
    if output is not None and output not in OUTPUT_FORMATS:
        said = meant_of(output, list(OUTPUT_FORMATS)) if isinstance(output, str) else ""
        raise BadStateFile(file, "output", output, f"must be one of {', '.join(OUTPUT_FORMATS)}{said}")
    if isinstance(timeout, (int, float)) and not 0 <= timeout <= DAY:
        raise BadStateFile(file, "lock_timeout", timeout, f"must be between 0 and {DAY} seconds")
    for key in ("state", "group"):
        if doc.get(key) == "":
            raise BadStateFile(file, key, "", "is empty")
        if key == "state" and doc.get(key) == "-":  # as --state '-': never standard input
            raise BadStateFile(file, key, "-", "is not standard input here; name a directory (for one so named: ./-)")
        if key == "state" and isinstance(doc.get(key), str) and is_mistyped_url(str(doc[key])):
            # as --state and $TPUFLEET_STATE refuse it: read as a directory, `init` made a fleet in `postgresql:/...`
            raise BadStateFile(
                file, key, redacted(str(doc[key])), f"is no postgresql:// URL ({WRITE_A_URL} for a directory so named)"
            )
        given = doc.get(key)
        scheme = other_scheme(given) if key == "state" and isinstance(given, str) else None
        if scheme:  # as --state refuses it (the URL's password never shown)
            raise BadStateFile(file, key, f"{scheme}://...", "is no directory nor postgresql:// URL")
        if "\x00" in str(doc.get(key, "")):  # (a database URL's password not shown)
            raise BadStateFile(file, key, redacted(str(doc[key])), "holds a NUL character")
    _check_places(doc, file)
    values: dict[str, Any] = dict(doc)  # checked above: each present key has its documented type
    return Config(
        state=None if values.get("state") is None else state_beside(values["state"], file),
        output=values.get("output"),
        lock_timeout=None if timeout is None else float(values["lock_timeout"]),
        group=values.get("group"),
        source=file,
    )


def state_beside(state: str, file: str) -> str:
    """The file's `state` with a relative directory taken from the file's own directory: read from wherever the
    command runs, `state = "fleet"` named another fleet in every directory (and `init` made one there). The
    directory is normalised, so that messages, `init`'s `state_dir` and `serve` name it once, one way.

    >>> state_beside("cfg/../s1", "/etc/tpufleet/config.toml")
    '/etc/tpufleet/s1'
    >>> state_beside("/srv//fleet/./a/..", "config.toml"), state_beside("postgresql://db/f", "config.toml")
    ('/srv/fleet', 'postgresql://db/f')
    """
    if "://" in state:
        return state
    place = expanded(state, f"state in {file}")
    return os.path.normpath(place if place.is_absolute() else Path(file).absolute().parent / place)


def _check_places(doc: dict[str, object], file: str) -> None:
    """The group and the state directory the file names exist as such: a mistake is the file's, named so."""
    group, state = doc.get("group"), doc.get("state")
    if isinstance(group, str):
        import grp

        try:
            grp.getgrnam(group)
        except KeyError:
            raise BadStateFile(file, "group", group, "no such group on this machine (see `getent group`)") from None
    place = Path(state_beside(state, file)) if isinstance(state, str) and "://" not in state else None
    if place is not None and place.exists() and not place.is_dir():
        raise BadStateFile(file, "state", state, "is not a directory")
