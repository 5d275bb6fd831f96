"""A PostgreSQL state's URL (``--state postgresql://...``): what messages show of it (never its password), the
parameter values libpq would refuse (checked before connecting: bad input, exit 2, not an unreachable server),
and the options every connection gets beside it (client-side bounds, UTF-8, the application name)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tpufleet.errors import shown
from tpufleet.state import dburl
from tpufleet.text import bounded, printable

# What libpq checks only as it connects (exit 1, as a server that is down), checked before (exit 2, bad input): the
# parameters whose values have long been these (the newer ones, whose choices grow, are left to libpq).
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
_WHOLE_NUMBER = re.compile(r"[ \t]*[+-]?[0-9]{1,9}[ \t]*")  # as libpq's parse_int_param and psycopg's int() take
_WHOLE_NUMBERS = (
    "connect_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
)
_CHOICES = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby", "prefer-standby"),
}
# Client-side bounds on a connection, each unless the URL sets its own (connect_timeout also yields to libpq's
# PGCONNECT_TIMEOUT): without them a server that stops answering, or a network that drops its packets, held a
# command, `serve`'s /readyz and /metrics with it, for as long as the operating system's TCP settings let it (two
# hours of silence before the first keepalive probe on Linux, some fifteen minutes of retransmissions).
CONNECTION_DEFAULTS: Mapping[str, int] = {
    "connect_timeout": 10,  # seconds to connect (each host of a URL that names several)
    "keepalives": 1,
    "keepalives_idle": 30,  # seconds of silence before the first probe: a command waiting on the server is silent
    "keepalives_interval": 10,  # seconds between probes
    "keepalives_count": 3,  # unanswered before the connection is dropped: about a minute in all
    "tcp_user_timeout": 60_000,  # milliseconds that sent data may stay unacknowledged before the connection drops
}
_ENVIRONMENT = {"connect_timeout": "PGCONNECT_TIMEOUT"}  # the ones libpq also takes from the environment


def redacted(url: str) -> str:
    """The URL without its password (in the user part or a ``password=`` parameter): what messages show."""
    return printable(dburl.redacted(url))


def first_line(exc: BaseException | str, secrets: list[str]) -> str:
    text = " ".join(str(exc).strip().split("\n", 1)[0].split()) or (
        type(exc).__name__ if isinstance(exc, BaseException) else "error"
    )
    for secret in secrets:
        text = _cut(text, secret)
    return printable(bounded(text, 300))


def _cut(text: str, secret: str) -> str:
    """`text` with `secret` replaced by ***: anywhere, or, for a short one (a few letters found in ordinary words:
    masking each was "***ort 1 failed" for the password "p", showing it), only where no letter or digit adjoins it."""
    if len(secret) >= 8:
        return text.replace(secret, "***")
    return re.sub(rf"(?<![^\W_]){re.escape(secret)}(?![^\W_])", "***", text)


def unquoted(text: str) -> str:
    """libpq's message without what it quotes (from the first double quote to the last): the piece of the URL it
    stopped at, which may hold a piece of a password that the whole password's redaction does not find."""
    first, last = text.find('"'), text.rfind('"')
    if first < 0:
        return text
    return text[:first] + ('"…"' + text[last + 1 :] if last > first else '"…')


def connection_options(params: Mapping[str, str], environ: Mapping[str, str], libpq: int) -> dict[str, Any]:
    """What `psycopg.connect` gets beside the URL (its keywords win over the URL's, so a default is passed only where
    neither the URL nor libpq's environment sets the parameter). `libpq`: its version (`psycopg.pq.version()`)."""
    options: dict[str, Any] = {"autocommit": True}
    for key, value in CONNECTION_DEFAULTS.items():
        if key not in params and not environ.get(_ENVIRONMENT.get(key, "")):
            options[key] = value
    if libpq < 120000:  # tcp_user_timeout came with libpq 12: an older one refuses every connection naming it
        options.pop("tcp_user_timeout", None)
    if "application_name" not in params:
        options["application_name"] = "tpufleet"
    # Text travels as UTF-8 whatever the URL, PGCLIENTENCODING, the database's encoding or its settings say (this one
    # wins: libpq sends it at startup): psycopg encodes parameters in Python with the client encoding, and a
    # character outside it (LATIN1 and a Chinese --reason) was a UnicodeEncodeError, not a database error.
    options["client_encoding"] = "UTF8"
    return options


def bad_parameter(params: Mapping[str, str]) -> str | None:
    """The first parameter whose value libpq would refuse, and why; None when there is none."""
    for port in params.get("port", "").split(","):  # one per host; empty: the default
        if port.strip() and not (_WHOLE_NUMBER.fullmatch(port) and 1 <= int(port) <= 65535):
            return f"port {shown(port)} is not a port number (1-65535)"
    for key in _WHOLE_NUMBERS:
        if key in params and not _WHOLE_NUMBER.fullmatch(params[key]):
            return f"{key} {shown(params[key])} is not a whole number"
    for key, choices in _CHOICES.items():
        if key in params and params[key] not in choices:
            return f"{key} {shown(params[key])} is not one of {', '.join(choices)}"
    return None
