"""Alertmanager's webhook payload (version 4), checked field by field before anything is done with it.

The fields read (Alertmanager's `webhook_config` documentation): `version` ("4"), `status`, and `alerts`, a list of
objects with `status` ("firing" or "resolved"), `labels` and `annotations` (string to string), `startsAt`, `endsAt`
(RFC 3339 times that exist: a date such as 2026-13-45 is refused; `endsAt` may be left out) and `fingerprint` (the
hash of the alert's labels). The label `tpufleet_planned`, when given, is "true" or "false" in any case: another
value ("yes", "1") would silently open an unplanned fault. Other fields (receiver, groupLabels, commonLabels,
externalURL, groupKey, truncatedAlerts, generatorURL...) are allowed and not used.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tpufleet.ops.alerts import PLANNED_LABEL, Alert
from tpufleet.timeparse import real_time

MAX_ALERTS = 10_000  # one notification holds a whole group: every host of a few TPU7x superpods (2,304 each)
MAX_LABEL_CHARS = 4096
_FINGERPRINT = re.compile(r"[0-9A-Za-z]{1,64}")


class NotJson(ValueError):
    """The body is not JSON at all (400)."""


class BadPayload(ValueError):
    """JSON, but not an Alertmanager payload this server takes (422); the message names the field."""


def parse(body: bytes) -> list[Alert]:
    """The alerts of a webhook body, or NotJson / BadPayload naming what is wrong."""
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark dropped, as the CLI's readers do
        doc = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_keys_once)
    except _KeyTwice as exc:
        raise BadPayload(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise NotJson(f"the body is not JSON: not UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:  # where, as the CLI's readers say it
        raise NotJson(f"the body is not JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except _Constant as exc:
        raise NotJson(f"the body is not JSON: it holds {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise NotJson(f"the body is not JSON: {type(exc).__name__}") from None
    if not isinstance(doc, dict):
        raise BadPayload("the payload is not a JSON object")
    if doc.get("version") != "4":
        given = _short(doc["version"]) if "version" in doc else "missing"
        raise BadPayload(f'version: {given}; this server takes Alertmanager\'s version "4"')
    alerts = doc.get("alerts")
    if not isinstance(alerts, list):
        raise BadPayload("alerts: missing" if "alerts" not in doc else "alerts: not a list")
    if len(alerts) > MAX_ALERTS:
        raise BadPayload(f"alerts: {len(alerts)} alerts; at most {MAX_ALERTS} in one notification")
    return [_alert(a, f"alerts[{i}]") for i, a in enumerate(alerts)]


class _KeyTwice(ValueError):
    """An object with a key given twice: which one holds would be a guess (Python keeps the last, other readers the
    first: a second `tpufleet_target` label would open a fault on one of two targets), refused as every input file
    of the command line refuses it."""


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _KeyTwice(f"key {_short(key)} is given twice in one object")
            seen.add(key)
    return out


class _Constant(ValueError):
    """NaN, Infinity or -Infinity, which Python's reader takes and JSON has not."""


def _no_constant(name: str) -> Any:
    raise _Constant(name)


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _alert(raw: Any, where: str) -> Alert:
    if not isinstance(raw, dict):
        raise BadPayload(f"{where}: not an object")
    status = raw.get("status")
    if status not in ("firing", "resolved"):
        raise BadPayload(f"{where}.status: {_short(status)}; firing or resolved")
    fingerprint = raw.get("fingerprint")
    if not isinstance(fingerprint, str) or not _FINGERPRINT.fullmatch(fingerprint):
        raise BadPayload(f"{where}.fingerprint: {_short(fingerprint)}; 1 to 64 letters and digits")
    starts = raw.get("startsAt")
    if not real_time(starts):
        raise BadPayload(f"{where}.startsAt: {_short(starts)}; an RFC 3339 time")
    if "endsAt" in raw and not real_time(raw["endsAt"]):
        raise BadPayload(f"{where}.endsAt: {_short(raw['endsAt'])}; an RFC 3339 time")
    labels = _strings(raw.get("labels"), f"{where}.labels", required=True)
    planned = labels.get(PLANNED_LABEL)
    # only a firing alert opens a fault as planned or not; a resolution closes whatever its mark names (one opened
    # before the label was checked included: a 422 would leave it open for good, Alertmanager not retrying a 4xx)
    if status == "firing" and planned is not None and planned.lower() not in ("true", "false"):
        raise BadPayload(f"{where}.labels.{_short(PLANNED_LABEL)}: {_short(planned)}; true or false")
    annotations = _strings(raw.get("annotations", {}), f"{where}.annotations", required=False)
    return Alert(fingerprint, status == "firing", labels, annotations, starts)


def _strings(raw: Any, where: str, required: bool) -> dict[str, str]:
    if raw is None and not required:
        return {}
    if not isinstance(raw, dict):
        raise BadPayload(f"{where}: not an object")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise BadPayload(f"{where}.{_short(key)}: {_short(value)}; a string")
        if len(key) > MAX_LABEL_CHARS or len(value) > MAX_LABEL_CHARS:
            raise BadPayload(f"{where}.{_short(key)}: over {MAX_LABEL_CHARS} characters")
        if not _text(key) or not _text(value):
            raise BadPayload(f"{where}.{_short(key)}: {_short(value)}; not text (a lone UTF-16 surrogate escape)")
    return dict(raw)


def _text(value: str) -> bool:
    """Whether `value` is text UTF-8 can carry: JSON lets a string hold half a surrogate pair (`"\\ud800"`), which
    the state would keep and no answer could then be written with."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
