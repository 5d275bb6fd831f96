"""Use case of `POST /api/v1/alerts` (`tpufleet serve`): Prometheus Alertmanager's alerts that name a component
open and clear faults through the same transitions as `inject-fault` and `clear-fault`.

An alert names its component with the label `tpufleet_target` (a target id, e.g. ``host:c07/3``); the label
`tpufleet_planned="true"` makes it a planned drain. A firing alert opens a fault whose reason ends with the mark
``[alertmanager FINGERPRINT since STARTS_AT]``; the same alert sent again (Alertmanager repeats a firing group) finds
its mark and changes nothing, even when the fault was cleared by hand since; its resolution clears the open faults
carrying its fingerprint that fired no later than it. The mark lives in the fault itself, so it is committed in the same atomic rename as the
fault and survives a restart of the server without a second file to keep in step. A fault cleared by hand leaves the
state after `CLEARED_FAULTS_KEPT` more clears, its mark with it: the state also remembers each alert that opened a
fault (`FleetState.alert_marks`, committed with the fault) until its resolution clears that fault, the
`ALERT_MARKS_KEPT` most recent at most, so a repeat of a long-firing alert still changes nothing.

Only the mark tpufleet appended identifies an alert's fault: the one ending the reason, on the alert's target. Text
that looks like a mark in the alert's name or summary is written with a parenthesis (``(alertmanager ...``), so a
summary cannot make an alert's repeat or resolution find another alert's fault.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tpufleet.constants import MAX_REASON_CHARS
from tpufleet.errors import BadInput
from tpufleet.faults import normalize
from tpufleet.fleetstate import Change, Fault, FleetState
from tpufleet.gkerecords import AlertMark
from tpufleet.ids import TargetId, canonical, meant_target
from tpufleet.model import check_known
from tpufleet.ops import faults as fault_ops
from tpufleet.ops.outcome import Outcome
from tpufleet.text import printable

TARGET_LABEL = "tpufleet_target"
PLANNED_LABEL = "tpufleet_planned"
# the mark ending a fault's reason (a fingerprint and an RFC 3339 time hold neither spaces nor brackets)
_MARK = re.compile(r"\[alertmanager ([0-9A-Za-z]{1,64}) since ([^\s\]]+)\]")
_MARK_LIKE = re.compile(r"\[(?=\s*alertmanager)", re.IGNORECASE)


@dataclass(frozen=True)
class Alert:
    """One alert of an Alertmanager webhook (payload version 4), its fields already checked."""

    fingerprint: str
    firing: bool
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: str

    @property
    def name(self) -> str:
        return self.labels.get("alertname", "")

    @property
    def mark(self) -> str:
        return f"[alertmanager {self.fingerprint} since {self.starts_at}]"

    def reason(self) -> str:
        """The fault's reason: the alert's name and summary, then its mark (kept whole within the length limit)."""
        text = " ".join(f"{self.name}: {self.annotations.get('summary', '')}".split()).rstrip(": ")
        text = _MARK_LIKE.sub("(", text)  # only the mark appended below is one
        room = MAX_REASON_CHARS - len(self.mark) - 1
        return f"{printable(text)[:room]} {self.mark}".lstrip()  # escaped as the fault keeps it, then cut: it fits


def receive(state: FleetState, alerts: Sequence[Alert], now: str) -> Outcome:
    """Each alert in order: a firing one opens its fault (once), a resolved one clears the fault it opened."""
    rows: list[dict[str, Any]] = []
    acted = _Acted([], [], _Marked.of(state.faults))
    opened, cleared = acted.opened, acted.cleared
    for alert in alerts:
        row: dict[str, Any] = {
            "fingerprint": alert.fingerprint,
            "alertname": alert.name,
            "status": "firing" if alert.firing else "resolved",
            "target": alert.labels.get(TARGET_LABEL),
        }
        row |= _one(state, alert, now, acted)
        rows.append(row)
    data: dict[str, Any] = {"alerts": rows, "opened": opened, "cleared": cleared}
    if not opened and not cleared:
        return Outcome(data | {"serial": state.serial})
    data["serial"] = state.next_serial
    parts = [f"opened {', '.join(opened)}"] * bool(opened) + [f"cleared {', '.join(cleared)}"] * bool(cleared)
    return Outcome(data, Change("alertmanager: " + "; ".join(parts), {"opened": opened, "cleared": cleared}))


@dataclass(frozen=True)
class _Marked:
    """The faults whose reason ends with an alert's mark, by the alert's fingerprint (in the state's order), read
    once a notification: each alert looks its own up, where scanning every fault for each alert made a notification
    of thousands of alerts (every host of a pod) take minutes."""

    by_fingerprint: dict[str, list[Fault]]

    @classmethod
    def of(cls, faults: Sequence[Fault]) -> _Marked:
        marked = cls({})
        for fault in faults:
            marked.add(fault)
        return marked

    def add(self, fault: Fault) -> None:
        mark = _mark_of(fault.reason)
        if mark is not None:
            self.by_fingerprint.setdefault(mark.group(1), []).append(fault)

    def faults(self, fingerprint: str) -> list[Fault]:
        return self.by_fingerprint.get(fingerprint, [])


@dataclass(frozen=True)
class _Acted:
    """What the alerts of a notification did so far: the faults opened and cleared, and the faults' marks."""

    opened: list[str]
    cleared: list[str]
    marked: _Marked


def _one(state: FleetState, alert: Alert, now: str, acted: _Acted) -> dict[str, Any]:
    """What one alert does: {"action": opened|cleared|unchanged|ignored, "fault"?, "why"?}."""
    text = alert.labels.get(TARGET_LABEL)
    if text is None:
        return {"action": "ignored", "why": f"no {TARGET_LABEL} label"}
    try:
        target = normalize(state.fleet, text)
    except BadInput as exc:
        meant = None if alert.firing else _resolved_target(state, text)
        if meant is None:
            return {"action": "ignored", "why": str(exc)}
        target = meant
    if not alert.firing:
        return _resolve(state, alert, target, now, acted)
    seen = _seen(state, alert, target, acted.marked)
    if seen is not None:
        return {"action": "unchanged", "fault": seen, "why": "already recorded for this alert"}
    planned = alert.labels.get(PLANNED_LABEL, "").lower() == "true"
    radius = fault_ops.inject(state, [fault_ops.FaultRequest(target, planned, alert.reason())], now).data[0]
    if radius.get("duplicate_of"):
        return {"action": "unchanged", "fault": radius["duplicate_of"], "why": f"{target} already has an open fault"}
    acted.opened.append(radius["fault_id"])
    acted.marked.add(next(f for f in reversed(state.faults) if f.id == radius["fault_id"]))  # (the last one)
    state.note_alert(AlertMark(alert.fingerprint, alert.starts_at, str(canonical(target)), radius["fault_id"]))
    row = {"action": "opened", "fault": radius["fault_id"], "slices": radius["slices"]}
    return row | ({"analysis_errors": radius["analysis_errors"]} if radius.get("analysis_errors") else {})


def _resolved_target(state: FleetState, text: str) -> TargetId | None:
    """A resolution's target written another way (`host:c00/01`): the component it names, when the fleet has it. An
    alert firing before ids had one form opened its fault on that component; its resolution, naming it the same way,
    must still clear it, not leave it open for good (Alertmanager does not send a resolution again)."""
    target = meant_target(text)
    if target is None:
        return None
    try:
        return check_known(state.fleet, target)
    except BadInput:
        return None


def _seen(state: FleetState, alert: Alert, target: TargetId, marked: _Marked) -> str | None:
    """The fault this firing alert already opened: remembered with the alert, else (an alert handled before alerts
    were remembered, or a late repeat once it resolved) a fault still in the state that carries its mark."""
    mark = state.alert_marks.get(alert.fingerprint)
    if mark is not None and (mark.starts_at, mark.target) == (alert.starts_at, str(canonical(target))):
        return mark.fault
    return next((f.id for f in marked.faults(alert.fingerprint) if _marked(f, alert, target, alert.starts_at)), None)


def _marked(fault: Fault, alert: Alert, target: TargetId, starts_at: str | None) -> bool:
    """Whether `fault` is on `target` and its reason ends with the alert's mark (of any startsAt when None)."""
    mark = _mark_of(fault.reason)
    if mark is None or mark.group(1) != alert.fingerprint:
        return False
    return (starts_at is None or mark.group(2) == starts_at) and canonical(fault.target) == canonical(target)


def _mark_of(reason: str) -> re.Match[str] | None:
    """The mark ending a fault's reason (the last `[alertmanager ` there, at its start or after a space)."""
    at = reason.rfind("[alertmanager ")
    return _MARK.fullmatch(reason, at) if at == 0 or (at > 0 and reason[at - 1] == " ") else None


def _resolve(state: FleetState, alert: Alert, target: TargetId, now: str, acted: _Acted) -> dict[str, Any]:
    hits = [
        f
        for f in acted.marked.faults(alert.fingerprint)
        if f.is_open and _marked(f, alert, target, None) and not _fired_after(f, alert)
    ]
    if not hits:  # (a fault cleared by hand: its alert stays remembered, the oldest forgotten first)
        return {"action": "unchanged", "why": "no open fault of this alert"}
    mark = state.alert_marks.get(alert.fingerprint)
    if mark is not None and mark.target == str(canonical(target)):
        # resolved, its fault cleared: a late repeat finds that fault among the cleared ones the state keeps
        state.forget_alert(alert.fingerprint)
    for fault in hits:
        fault_ops.clear(state, fault.id, now, moves=False)
        acted.cleared.append(fault.id)
    return {"action": "cleared", "fault": hits[0].id} | ({"faults": [f.id for f in hits]} if len(hits) > 1 else {})


def _fired_after(fault: Fault, alert: Alert) -> bool:
    """Whether `fault` was opened by a firing of the alert that started after the resolved one: a late resolution
    of an earlier firing must not clear it. Earlier firings still open (a `startsAt` reset by a restart of
    Prometheus) are cleared with it."""
    from tpufleet.timeparse import parse_stamp

    mark = _mark_of(fault.reason)
    opened = parse_stamp(mark.group(2)) if mark is not None else None
    resolved = parse_stamp(alert.starts_at)
    return opened is not None and resolved is not None and opened > resolved
