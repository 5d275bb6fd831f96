"""Text from outside (node conditions, reasons, command lines of other processes) made safe to show.

A newline in a stored reason would print a fake row in a table; ESC sequences would drive the operator's
terminal; U+202E would reverse what follows. Values are kept as given in JSON (which escapes them) and shown
escaped everywhere else.

>>> printable("Ready\\nf9  host:c01/0")
'Ready\\\\nf9  host:c01/0'
>>> printable("\\x1b[2Jgone")
'\\\\x1b[2Jgone'
>>> terminal_safe("row 1\\nrow 2 \\u202eevil")
'row 1\\nrow 2 \\\\u202eevil'
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence

_UNPRINTABLE = re.compile(r"[^\t\n\x20-\x7e]")  # anything else is looked at once by `str.isprintable`
# A colour or weight (SGR: ESC [ digits m) is the only escape sequence kept: tpufleet's own map colours, which
# Click strips off a terminal. It cannot move the cursor, clear the screen or set a title; every other ESC is shown.
_SGR_OR_UNPRINTABLE = re.compile(r"\x1b\[[0-9;]*m|[^\t\n\x20-\x7e]")


def _escape(char: str) -> str:
    return char if char.isprintable() else repr(char)[1:-1]


def printable(text: str) -> str:
    """`text` on one line: every character that is not printable (newlines, tabs, NUL, ESC, bidi controls)
    written as its Python escape."""
    if text.isprintable():
        return text
    return "".join(_escape(c) for c in text)


# Markdown's inline syntax: a name such as ``![x](https://host/pixel)`` was an image every viewer fetched, ``[x](url)``
# a link, ``*x*`` emphasis. Each such character is written backslash-escaped, so the text reads as it was given.
_MD_INLINE = {ord(c): "\\" + c for c in "\\`*_[]~|"}  # (no link nor image without its [ ])


def markdown_text(text: object) -> str:
    """Text from outside in a Markdown document (a table cell, a heading, a list item) as it was given: one line,
    no inline HTML, link, image or emphasis, no column break.

    >>> markdown_text("![x](http://h/p.png) <b>|")
    '!\\\\[x\\\\](http://h/p.png) &lt;b&gt;\\\\|'
    """
    import html

    return html.escape(printable(str(text)).translate(_MD_INLINE), quote=False)


# A leading = + - @ (or tab, CR) a spreadsheet runs as a formula (OWASP's list). A leading ' is quoted too: the
# mark is then undone by dropping one leading ', so "-x" and "'-x" never read as the same cell.
_SPREADSHEET_QUOTED = ("=", "+", "-", "@", "\t", "\r", "'")


def spreadsheet_cell(value: str) -> str:
    """A CSV cell's text that no spreadsheet runs as a formula: `'` before a leading = + - @ tab CR or `'`, so a
    reader gets the value back by dropping one leading `'`. Numbers are not text and are left as they are.

    >>> spreadsheet_cell("=1+1"), spreadsheet_cell("-x"), spreadsheet_cell("'-x"), spreadsheet_cell("ok")
    ("'=1+1", "'-x", "''-x", 'ok')
    """
    return "'" + value if value.startswith(_SPREADSHEET_QUOTED) else value


def probability_text(value: float, against: float | None = None) -> str:
    """A probability for a table: four decimals, two significant digits below 0.001 (3.2e-05, not 0.0000, which
    reads as never), and above 0.9999 as many decimals as give 1 - value two significant digits (0.999950, not
    1.0000, which reads as always). Shown `against` a threshold it is compared with (a confidence), it keeps
    the side of it the value is on: 0.94999996 against 0.95 is not 0.9500, which reads as meeting it.

    >>> probability_text(0.98), probability_text(3.2e-05), probability_text(0.99995), probability_text(0.9999997)
    ('0.9800', '3.2e-05', '0.999950', '0.99999970')
    >>> probability_text(1.0), probability_text(0.0)
    ('1.0000', '0.0000')
    >>> probability_text(0.94999996, 0.95), probability_text(0.999912, 0.99991), probability_text(0.96, 0.95)
    ('0.94999996', '0.99991', '0.9600')
    """
    text = _probability_text(value)
    if against is None or (float(text) >= against) == (value >= against):
        return text
    style = "e" if "e" in text else "f"
    for digits in range(2 if style == "e" else 5, 18):  # 17 significant digits tell any two doubles apart
        text = f"{value:.{digits}{style}}"
        if (float(text) >= against) == (value >= against):
            break
    return text


def _probability_text(value: float) -> str:
    if 0 < value < 1e-3:
        return f"{value:.1e}"
    if f"{value:.4f}" == "1.0000" and value < 1:
        return f"{value:.{max(4, math.ceil(-math.log10(1 - value)) + 1)}f}"
    return f"{value:.4f}"


def markdown_code(text: str) -> str:
    """`text` as one Markdown code span, whatever backticks it holds (the fence is longer than any run of them).

    >>> markdown_code("echo `date`")
    '`` echo `date` ``'
    """
    line = printable(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", line)), default=0) + 1)
    pad = " " if "`" in line else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def terminal_safe(text: str) -> str:
    """Rendered output for a terminal: newlines and tabs kept (they are the layout), every other character that
    is not printable escaped."""
    if not _UNPRINTABLE.search(text):
        return text

    def shown(m: re.Match[str]) -> str:
        char = m.group()
        return char if char in "\t\n" or len(char) > 1 else _escape(char)

    return _SGR_OR_UNPRINTABLE.sub(shown, text)


# A quoted value: no spaces and over 60 characters, or anything over 300 (two apostrophes of a sentence are
# rarely that far apart)
# (a path, with a "/", is a name, not a value: it is kept whole up to the token limit)
_LONG_QUOTED = re.compile(r"'([^'\s/]{61,}|[^'\n]{301,})'|\"([^\"\s/]{61,}|[^\"\n]{301,})\"")
_LONG_TOKEN = re.compile(r"\S{401,}")


def quoted_short(message: str) -> str:
    """A message with each quoted value cut to 60 characters and any run without spaces (a path, a name pasted
    unquoted) to 400: hostile input must not make an error line thousands of characters long.

    >>> quoted_short("unknown slice '" + "x" * 100 + "'")
    "unknown slice 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'"
    """

    def cut_quoted(m: re.Match[str]) -> str:
        quote = m.group(0)[0]
        return quote + m.group(0)[1:57] + "..." + quote

    message = _LONG_QUOTED.sub(cut_quoted, message)
    return _LONG_TOKEN.sub(lambda m: m.group(0)[:397] + "...", message)


def bounded(text: str, limit: int) -> str:
    """`printable(text)` cut to at most `limit` characters, the cut marked with an ellipsis."""
    text = printable(text[: 4 * limit])
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Output(str, enum.Enum):
    """What every command prints with -o: a table for people, json or yaml for scripts."""

    table = "table"
    json = "json"
    yaml = "yaml"


class ReportOutput(str, enum.Enum):
    """What a report may print besides: csv, Markdown and an HTML page, each by the command's own renderer.

    A report offers those it has a renderer for (see `tpufleet.cli.app.report_formats`).
    """

    table = "table"
    json = "json"
    yaml = "yaml"
    csv = "csv"
    md = "md"
    html = "html"


def share_text(value: float) -> str:
    """A throughput share in three places, rounded half up from the figure as stored and shown in JSON (four
    places): 0.9275 (512/552) reads 0.928, as a reader rounds it, where `f"{0.9275:.3f}"` gives 0.927 (the float
    is just below).

    >>> share_text(0.9275), share_text(0.934), share_text(1.0), share_text(float("nan"))
    ('0.928', '0.934', '1.000', 'nan')
    """
    from decimal import ROUND_HALF_UP, Decimal

    if not math.isfinite(value):  # no share is, but a figure shown must never fail the command
        return f"{value:.3f}"

    return str(Decimal(repr(float(value))).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def around(faults: Sequence[str], sep: str = ", ") -> str:
    """What a degraded slice's tables route around: its faults, or, with none open (wired while an OCS was down
    and routed after its repair, before it was wired again), the cross-connects it still lacks.

    >>> around(["f1", "f2"]), around([])
    ('f1, f2', 'missing cross-connects')
    """
    return sep.join(faults) if faults else "missing cross-connects"


# A number as people and YAML write one: ASCII digits, an optional point and exponent, nothing else (float() also
# takes "5_0e9", other scripts' digits, "nan" and "inf").
PLAIN_NUMBER = re.compile(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")


def plain_float(text: str) -> float | None:
    """`text` (spaces around it allowed) as a number, when it is written as PLAIN_NUMBER says; else None.

    >>> plain_float(" 2.5e3 "), plain_float("1_0"), plain_float("\\u0663"), plain_float("nan")
    (2500.0, None, None, None)
    """
    stripped = text.strip()
    return float(stripped) if PLAIN_NUMBER.fullmatch(stripped) else None


def underflows(text: str) -> bool:
    """Whether `text`, a number float() reads, names one other than 0 that a float reads as 0 (1e-400): a digit
    other than 0 before the exponent. Refused wherever a number is typed, as `0` would be read instead.

    >>> underflows("1e-400"), underflows("0e-400"), underflows("0"), underflows("2.5")
    (True, False, False, False)
    """
    mantissa = text.strip().lower().partition("e")[0]
    return float(text) == 0 and any(c in "123456789" for c in mantissa)


def seconds_text(value: float) -> str:
    """A number of seconds as the operator wrote it: the shortest text that reads back as the same number (`:g`
    shows 1e-320, a number below float's normal range, as 9.99989e-321).

    >>> seconds_text(30.0), seconds_text(0.25), seconds_text(1e-320), seconds_text(2.5e-05)
    ('30', '0.25', '1e-320', '2.5e-05')
    """
    text = repr(float(value))
    return text.removesuffix(".0")


def days_text(value: float) -> str:
    """A number of days in words' digits: whole thousands grouped, never in exponent form (`:g` shows 999999
    weeks as 6.99999e+06 days), a fraction of a day to three significant digits.

    >>> days_text(7.0), days_text(6999993.0), days_text(1.5), days_text(1 / 48)
    ('7', '6,999,993', '1.5', '0.0208')
    """
    if value >= 1:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


# Names listed in a refusal of an unknown one: past this many, the rest are counted (a fleet of hundreds of slices
# would otherwise print them all on the one error line).
NAMES_LISTED = 20


def counted(count: int, noun: str) -> str:
    """A count and its noun, singular for one (an English plural by `s`).

    >>> counted(1, "cube"), counted(64, "cube"), counted(0, "unplanned fault")
    ('1 cube', '64 cubes', '0 unplanned faults')
    """
    return f"{count} {noun}" + ("" if count == 1 else "s")


def closest(name: str, known: Sequence[str], cutoff: float = 0.6) -> str | None:
    """The known name `name` is a near miss of (a typo, another case), for a refusal's `did you mean`; else None.

    Two names equally near (`pod` for pod0 and pod1) give None: a guess either way could send the operator to the
    wrong one, and the refusal lists both.

    >>> closest("lmm", ["llm", "small"]), closest("LLM", ["llm"]), closest("zzz", ["llm"]), closest("prom", ["prometheus"])
    ('llm', 'llm', None, 'prometheus')
    >>> closest("pod", ["pod0", "pod1"]), closest("pod00", ["pod0", "pod1"])
    (None, 'pod0')
    """
    import difflib

    by_lower = {n.lower(): n for n in known}
    if name.lower() in by_lower and by_lower[name.lower()] != name:
        return by_lower[name.lower()]
    started = [n for n in by_lower if name and n.startswith(name.lower())]
    if len(started) == 1:  # a name cut short (`prom` for prometheus)
        return by_lower[started[0]]
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=2, cutoff=cutoff)
    if len(found) == 2 and _likeness(name.lower(), found[0]) == _likeness(name.lower(), found[1]):
        return None
    return by_lower[found[0]] if found else None


def _likeness(a: str, b: str) -> float:
    """difflib's ratio of two names, the score `get_close_matches` ranks them by."""
    import difflib

    return difflib.SequenceMatcher(None, b, a).ratio()


def names_listed(names: Sequence[str]) -> str:
    """`a, b, c`, `none`, or the first NAMES_LISTED and `... and N more`.

    >>> names_listed([]), names_listed(["a", "b"]), names_listed([f"s{i}" for i in range(22)])[-19:]
    ('none', 'a, b', 's18, s19 and 2 more')
    """
    if not names:
        return "none"
    shown = ", ".join(names[:NAMES_LISTED])
    return shown if len(names) <= NAMES_LISTED else f"{shown} and {len(names) - NAMES_LISTED} more"


def unknown_name(what: str, name: str, lists: dict[str, Sequence[str]]) -> str:
    """The refusal of an unknown name: the near miss it may mean, then each kind's names.

    >>> unknown_name("slice or job", "lmm", {"slices": ["llm"], "jobs": []})
    "unknown slice or job 'lmm'; did you mean llm? (slices: llm; jobs: none)"
    """
    near = closest(name, [known for names in lists.values() for known in names])
    meant = f"; did you mean {near}?" if near else ""
    listed = "; ".join(f"{kind}: {names_listed(names)}" for kind, names in lists.items())
    return f"unknown {what} {name!r}{meant} ({listed})"


def meant_of(value: str, choices: Sequence[str]) -> str:
    """`; did you mean X?` for a value refused as not one of `choices`, when it is a near miss of one; else ''."""
    near = closest(value, choices)
    return f"; did you mean {near}?" if near else ""
