"""The query parameters of `tpufleet serve`'s routes: each route takes only its own, each at most once, read as
the CLI reads the same value (`since` as `diff` and `history --since` read a serial); anything else is 400 naming
it (`Problem`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from tpufleet.errors import BadInput, shown
from tpufleet.serials import not_past, parse_serial


class Problem(Exception):
    """An answer with an error status (never a 500)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers or {}


def known_query(request: Request, names: tuple[str, ...]) -> None:
    """400 for a query parameter the route does not take (a typo, `?All=true`, would otherwise be answered as if
    absent: every fault, the whole journal) or one given more than once (which of them holds would be a guess)."""
    counts: dict[str, int] = {}
    for name, _value in request.query_params.multi_items():
        counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        if name not in names:
            takes = f"only {', '.join(names)}" if names else "none"
            raise Problem(400, f"bad query {name[:40]!r}: {request.url.path} takes {takes}")
        if count > 1:
            raise Problem(400, f"bad query {name}: given {count} times; give it once")


def taking(endpoint: Callable[[Request], Any], names: tuple[str, ...] | None) -> Callable[[Request], Any]:
    """`endpoint`, its query checked first (`known_query`); a coroutine function stays one (Starlette runs it in the
    event loop, a plain function in a thread). `names` None: the route reads no query and ignores one, as the
    page, the probes, /metrics and the alert intake do (a scraper's `params`, a probe's or a browser's cache
    buster, a query in Alertmanager's webhook URL must not turn them away)."""
    if names is None:
        return endpoint
    if inspect.iscoroutinefunction(endpoint):

        async def checked_in_loop(request: Request) -> Any:
            known_query(request, names)
            return await endpoint(request)

        return checked_in_loop

    def checked(request: Request) -> Any:
        known_query(request, names)
        return endpoint(request)

    return checked


def flag(request: Request, name: str) -> bool:
    """true or false in any case (or 1, 0); the refusal names the value as typed (`?all=YES`, not 'yes')."""
    typed = request.query_params.get(name, "false")
    value = typed.lower()
    if value not in ("1", "true", "0", "false"):
        raise Problem(400, f"bad query {name}: {shown(typed)}; true or false (or 1, 0)")
    return value in ("1", "true")


def serial_query(request: Request, name: str) -> int:
    try:  # as `diff` and `history --since` read a serial
        return parse_serial(request.query_params.get(name, "0"), f"query {name}")
    except BadInput as exc:
        raise Problem(400, str(exc)) from None


def serial_within(request: Request, name: str, serial: int, current: int) -> None:
    """A serial read from the query that is past the state's: 400, as `diff` and `history --since` refuse it."""
    try:
        not_past(serial, request.query_params.get(name, "0"), f"query {name}", current)
    except BadInput as exc:
        raise Problem(400, str(exc)) from None
