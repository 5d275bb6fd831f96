"""A PostgreSQL state URL without its password: what messages, the journal and the lock's holder show. Pure.

The password is found as libpq finds it and then some: the user part runs from ``://`` to the last ``@`` (libpq
stops at the first ``/``, but a password holding ``/``, ``?`` or ``#`` must not be shown whichever way it is read),
its password after the first ``:``; and any ``password`` parameter of the query, in any case. When in doubt, more is
hidden, never less.

>>> redacted("postgresql://bob:pa#ss/w?rd@db.example.com:5432/fleet?sslmode=require")
'postgresql://bob@db.example.com:5432/fleet?sslmode=require'
>>> redacted("postgres://alice@db/fleet?PASSWORD=s3cret&sslmode=require")
'postgres://alice@db/fleet?sslmode=require'
>>> redacted_words("tpufleet --state=postgresql://bob:pw@db/f status")
'tpufleet --state=postgresql://bob@db/f status'
"""

from __future__ import annotations

import re
from urllib.parse import unquote

SCHEMES = ("postgresql://", "postgres://")
_PASSWORD_PARAM = re.compile(r"(?i)((?:^|[?&])password=)([^&#]*)")
_URL_IN_TEXT = re.compile(r"(?i)postgres(?:ql)?://\S*")


def is_database_url(text: str) -> bool:
    return text.lower().startswith(SCHEMES)


def _split(url: str) -> tuple[str, str, str]:
    """(scheme and ``://``, the user part before its last ``@`` or "", the rest)."""
    head, sep, rest = url.partition("://")
    if not sep:
        return "", "", url
    user, at, after = rest.rpartition("@")
    return head + sep, (user + at) if at else "", after if at else rest


def secrets(url: str) -> list[str]:
    """The password(s) the URL carries, as written and decoded, to be cut out of any text that might quote them."""
    _, user, rest = _split(url)
    found = []
    if ":" in user:
        found.append(user[:-1].split(":", 1)[1])
    found += [m.group(2) for m in _PASSWORD_PARAM.finditer(user + rest)]
    found = [s for s in found if s]
    return sorted({*found, *(unquote(s) for s in found)} - {""}, key=len, reverse=True)


def redacted(url: str) -> str:
    """The URL without its password(s): the user part keeps the user's name, the query loses its ``password``."""
    scheme, user, rest = _split(url)
    if ":" in user:
        user = user.split(":", 1)[0] + "@"
    head, q, query = (user + rest).partition("?")
    kept = [part for part in query.split("&") if part and not _PASSWORD_PARAM.match("&" + part)]
    return scheme + head + (q + "&".join(kept) if kept else "")


def redacted_words(text: str) -> str:
    """`text` (a command line, say) with every PostgreSQL URL in it redacted."""
    return _URL_IN_TEXT.sub(lambda m: redacted(m.group(0)), text)
