"""A PostgreSQL state URL without its password: what messages, the journal and the lock's holder show. Pure.

The password is found as libpq finds it and then some: the user part runs from ``://`` to the last ``@`` (libpq
stops at the first ``/``, but a password holding ``/``, ``?`` or ``#`` must not be shown whichever way it is read),
its password after the first ``:``; and any ``password`` parameter of the query, in any case. When in doubt, more is
hidden, never less.

>>> redacted("postgresql://bob:pa#ss/w?rd@db.example.com:5432/fleet?sslmode=require")
'postgresql://bob@db.example.com:5432/fleet?sslmode=require'
>>> redacted("postgres://alice@db/fleet?PASSWORD=s3cret&sslmode=require")
'postgres://alice@db/fleet?sslmode=require'
>>> redacted("postgres://alice@db/fleet?password=s3&cr&et&sslmode=require")
'postgres://alice@db/fleet?sslmode=require'
>>> redacted_words("tpufleet --state=postgresql://bob:pw@db/f status")
'tpufleet --state=postgresql://bob@db/f status'
>>> redacted_arg("--state=postgresql://bob:pass word\x1f@db/f")
'--state=postgresql://bob@db/f'
>>> redacted("postgresql:/bob:pw@db/f")
'postgresql:/bob@db/f'
"""

from __future__ import annotations

import re
from urllib.parse import unquote

SCHEMES = ("postgresql://", "postgres://")
# The value runs on over any '&' followed by no '=' before the next: a password holding an '&' written as is, which
# libpq splits into the password and pieces that are no parameter (it refuses them, and messages would show them).
# (libpq reads a '#' as part of the value.)
_PASSWORD_PARAM = re.compile(r"(?i)((?:^|[?&])password=)([^&]*(?:&[^&=]*)*)(?=&|$)")
# A URL in a command line runs to the next space (its words are joined by spaces): not to Python's whitespace,
# which also counts characters libpq takes in a password (U+001C-U+001F, U+0085, U+00A0). In one argument, it
# runs to the argument's end, spaces and all.
_URL_IN_TEXT = re.compile(r"(?i)postgres(?:ql)?://[^ ]*")
_URL_IN_ARG = re.compile(r"(?is)postgres(?:ql)?://.*")


_OTHER_URL = re.compile(r"(?i)\A([a-z][a-z0-9+.-]*)://")  # any scheme, `mysql://`: no directory name
# What a mistyped PostgreSQL URL starts with: the scheme's name and a colon, with a slash too few or a space before
# it ("postgresql:/bob:pw@db/f"). Taken for a directory, it was a state directory made under that name, password
# and all, named in every message.
_NEAR_MISS = re.compile(r"(?i)\A\s*postgres(?:ql)?:/*")


def is_database_url(text: str) -> bool:
    return text.lower().startswith(SCHEMES)


WRITE_A_URL = "write postgresql://USER@HOST/DB, or ./NAME"  # what a mistyped URL is told


def is_mistyped_url(text: str) -> bool:
    """Whether `text` starts as a PostgreSQL URL does but is not one (a slash missing, a space before it).

    >>> is_mistyped_url("postgresql:/bob:pw@db/f"), is_mistyped_url(" postgres://db/f"), is_mistyped_url("pg/f")
    (True, True, False)
    """
    return not is_database_url(text) and _NEAR_MISS.match(text) is not None


def other_scheme(text: str) -> str | None:
    """The scheme of a URL of another kind than PostgreSQL's (not a directory named "mysql:"), else None.

    >>> other_scheme("mysql://u:pw@db/f"), other_scheme("postgresql://db/f"), other_scheme("fleet/a:b")
    ('mysql', None, None)
    """
    found = _OTHER_URL.match(text)
    return None if found is None or is_database_url(text) or is_mistyped_url(text) else found.group(1)


def _split(url: str) -> tuple[str, str, str]:
    """(scheme and ``://``, the user part or "", the rest). The user part ends at the last ``@`` before the query
    that follows the first ``@``: a password may hold ``@``, ``?`` or ``/`` as written, and the query may hold
    ``@`` too (``application_name=ops@laptop``, ``user=alice@corp``), which is no part of the user's.

    >>> _split("postgresql://u:p?w@db/f?user=a@b")
    ('postgresql://', 'u:p?w@', 'db/f?user=a@b')
    """
    head, sep, rest = url.partition("://")
    if not sep:
        near = _NEAR_MISS.match(url)  # a mistyped URL's password is found all the same
        if near is None:
            return "", "", url
        head, sep, rest = "", near.group(0), url[near.end() :]
    first = rest.find("@")
    if first < 0:
        return head + sep, "", rest
    query = rest.find("?", first)
    at = rest.rfind("@", 0, len(rest) if query < 0 else query)
    return head + sep, rest[: at + 1], rest[at + 1 :]


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
    kept = _PASSWORD_PARAM.sub("", "&" + query).split("&")
    return scheme + head + (q + "&".join(k for k in kept if k) if any(kept) else "")


def redacted_words(text: str) -> str:
    """`text` (a command line, say) with every PostgreSQL URL in it redacted."""
    return _URL_IN_TEXT.sub(lambda m: redacted(m.group(0)), text)


def redacted_arg(arg: str) -> str:
    """One command-line argument with the PostgreSQL URL in it redacted, the URL running to the argument's end: a
    password holding a space is cut out whole, which the joined command line can no longer tell."""
    return _URL_IN_ARG.sub(lambda m: redacted(m.group(0)), arg)


def misread_password(url: str, read: str | None) -> bool:
    """Whether libpq read another password (`read`, decoded: None for none) than the one the URL's user part holds
    as written: libpq ends the user part at the first '@' before any '/', so a '/' or '@' in the password that is
    not percent-encoded makes its pieces a host, a port or a database name, which its messages show. (A user part
    whose name holds an '@' is an '@' later in the URL, in the query say: libpq reads that URL right.)"""
    _, user, _ = _split(url)
    name, _, password = user[:-1].partition(":")
    if not password or "@" in name:
        return False
    return read not in secrets(url)
