"""What one commit changed, as recorded in its journal line (``"delta"``), and the sum of several.

Computed from the state document before and after the commit, so every command gets it without saying so:
slices added, removed or changed (state, cubes), faults opened and cleared, cross-connects added and removed per
OCS, routing tables stored, dropped or gone stale. `tpufleet diff` adds the deltas of a range of serials;
`tpufleet history --slice` finds the commits that touched a slice, or a job's (``slices.jobs``). Lines written before deltas existed have none;
readers say so instead of guessing.

>>> before = {"slices": {}, "faults": [], "ocs": {}, "routes": {}}
>>> after = {"slices": {"a": {"state": "allocated", "cubes": ["c00"]}}, "faults": [], "ocs": {"pod0/x/0": [[0, 1]]}, "routes": {}}
>>> d = delta(before, after)
>>> d["slices"]["added"], d["ocs"]["pod0/x/0"]
(['a'], {'add': [[0, 1]], 'remove': []})
"""

from __future__ import annotations

import re
from typing import Any

from tpufleet.ids import natural_key

Doc = dict[str, Any]
# "reroute": a second fault on a degraded slice changes only its figures and the faults it routes around;
# "proposal": a fault on an evicted slice's reserved move changes only where it moves (the cubes reserved)
# `machines` (a sub-cube slice's) and `twisted`: a slice made again on other machines of its cube, or twisted on the
# same cubes, is a change
_SLICE_FIELDS = (
    "state",
    "cubes",
    "machines",
    "shape",
    "twisted",
    "pod",
    "min_throughput",
    "fault_tolerant_routing",
    "reroute",
    "proposal",
)


def _field(sl: Doc, f: str) -> Any:
    """A slice's field as a delta records it (of its reserved move, the cubes)."""
    value = sl.get(f)
    return value.get("cubes") if f == "proposal" and isinstance(value, dict) else value


def _slices(before: Doc, after: Doc) -> Doc:
    old, new = before.get("slices", {}), after.get("slices", {})
    changed = {}
    for name in sorted(old.keys() & new.keys(), key=natural_key):  # s9 before s10, as slices are counted
        pairs = {f: [_field(old[name], f), _field(new[name], f)] for f in _SLICE_FIELDS}
        fields = {f: pair for f, pair in pairs.items() if pair[0] != pair[1]}
        if fields:
            changed[name] = fields
    added, removed = sorted(new.keys() - old.keys(), key=natural_key), sorted(old.keys() - new.keys(), key=natural_key)
    out: Doc = {"added": added, "removed": removed, "changed": changed}
    # What a released slice was and what a new one is, so that `combine` can show a slice released and made again
    # under the same name as a change of its fields.
    if removed:
        out["was"] = {n: {f: _field(old[n], f) for f in _SLICE_FIELDS} for n in removed}
    if added:
        out["now"] = {n: {f: _field(new[n], f) for f in _SLICE_FIELDS} for n in added}
    return out


def _faults(before: Doc, after: Doc) -> Doc:
    old = {f["id"]: f for f in before.get("faults", [])}
    new = {f["id"]: f for f in after.get("faults", [])}
    opened = [
        {"id": i, "target": new[i]["target"], "planned": new[i].get("planned", False)} for i in new if i not in old
    ]
    # cleared in this change: still listed and now cleared, or open before and gone (cleared and moved to the
    # journal in the same commit), or opened and cleared by this change (a maintenance wave whose window is over)
    cleared = [i for i in old if not old[i].get("cleared") and (i not in new or new[i].get("cleared"))]
    cleared += [i for i in new if i not in old and new[i].get("cleared")]
    return {"opened": opened, "cleared": cleared}


def _ocs(before: Doc, after: Doc) -> Doc:
    old, new = before.get("ocs", {}), after.get("ocs", {})
    out = {}
    for key in sorted(old.keys() | new.keys(), key=natural_key):  # pod0/x/2 before pod0/x/10
        a = {tuple(p) for p in old.get(key, [])}
        b = {tuple(p) for p in new.get(key, [])}
        if a != b:
            out[key] = {"add": [list(p) for p in sorted(b - a)], "remove": [list(p) for p in sorted(a - b)]}
    return out


def _routes(before: Doc, after: Doc) -> Doc:
    old, new = before.get("routes", {}), after.get("routes", {})
    stored = sorted((n for n in new if n not in old or new[n].get("serial") != old[n].get("serial")), key=natural_key)
    stale = sorted(
        (n for n in new if new[n].get("stale") and not old.get(n, {}).get("stale") and n not in stored), key=natural_key
    )
    return {"stored": stored, "dropped": sorted(old.keys() - new.keys(), key=natural_key), "stale": stale}


def delta(before: Doc, after: Doc) -> Doc:
    """What changed between two state documents, in the journal's ``delta`` form."""
    slices, routes = _slices(before, after), _routes(before, after)
    jobs = _jobs_named(before, after, [*_slice_names(slices), *_route_names(routes)])
    if jobs:  # `history --slice JOB` finds the job's lines by it, even once the job is released
        slices["jobs"] = jobs
    return {"slices": slices, "faults": _faults(before, after), "ocs": _ocs(before, after), "routes": routes}


def _jobs_named(before: Doc, after: Doc, names: list[str]) -> dict[str, str]:
    """{slice: its job} for each slice named that is one slice of a job (before the change or after it)."""
    old, new = before.get("slices", {}), after.get("slices", {})
    out = {}
    for name in sorted(set(names), key=natural_key):
        job = new.get(name, {}).get("job") or old.get(name, {}).get("job")
        if isinstance(job, str):
            out[name] = job
    return out


def _slice_names(s: Doc) -> list[str]:
    return [*s.get("added", []), *s.get("removed", []), *s.get("changed", {})]


def _route_names(r: Doc) -> list[str]:
    return [*r.get("stored", []), *r.get("stale", []), *r.get("dropped", [])]


def is_delta(value: object) -> bool:
    """Whether a journal line's ``delta`` has the recorded form, to the leaves `diff` reads (a hand-edited or
    damaged one does not count: its serial is listed as recorded without detail)."""
    if not isinstance(value, dict):
        return False
    s, f, ocs = value.get("slices"), value.get("faults"), value.get("ocs")
    if not (isinstance(s, dict) and isinstance(f, dict) and isinstance(ocs, dict)):
        return False
    routes = value.get("routes", {})  # lines older than the routes field have none
    routes_form = isinstance(routes, dict) and all(
        _names(routes[k]) for k in ("stored", "stale", "dropped") if k in routes
    )
    ocs_form = all(isinstance(k, str) and _OCS_KEY.fullmatch(k) and _ocs_form(c) for k, c in ocs.items())
    return _slices_form(s) and _faults_form(f) and ocs_form and routes_form


def in_fleet_order(value: Any) -> Any:
    """A delta as read back from its journal line, its maps keyed by OCS or slice, and its lists of slice names, in
    the order the fleet counts them (pod0/x/2 before pod0/x/10, s9 before s10): the line is written with its keys
    sorted as text, and lines written before 0.3 listed the names as text too. Anything else (a hand-edited or
    damaged delta) is returned as it is.

    >>> in_fleet_order({"ocs": {"pod0/x/10": 1, "pod0/x/2": 2}, "slices": {"changed": {"s10": 1, "s9": 2}}})
    {'ocs': {'pod0/x/2': 2, 'pod0/x/10': 1}, 'slices': {'changed': {'s9': 2, 's10': 1}}}
    >>> in_fleet_order({"slices": {"added": ["s10", "s9"]}, "routes": {"stale": ["s10", "s9"], "x": ["b", "a"]}})
    {'slices': {'added': ['s9', 's10']}, 'routes': {'stale': ['s9', 's10'], 'x': ['b', 'a']}}
    """
    if not isinstance(value, dict):
        return value
    out = {**value, "ocs": _counted(value["ocs"])} if "ocs" in value else dict(value)
    for part in ("slices", "routes"):
        if isinstance(value.get(part), dict):
            out[part] = {k: _field_in_order(k, v) for k, v in value[part].items()}
    return out


_OCS_KEY = re.compile(r"pod[0-9]{1,6}/[xyz]/[0-9]{1,6}")  # an OCS's key, as `OcsId.key` writes it (`diff` splits it)
_BY_SLICE = ("changed", "jobs", "was", "now")  # a delta's maps keyed by slice name
_SLICE_LISTS = ("added", "removed", "stored", "dropped", "stale")  # its lists of slice names (slices, routes)


def _field_in_order(key: str, value: Any) -> Any:
    if key in _BY_SLICE:
        return _counted(value)
    return sorted(value, key=natural_key) if key in _SLICE_LISTS and _names(value) else value


def _counted(value: Any) -> Any:
    """A map's keys as the fleet counts them (anything but a map of string keys as it is)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return value
    return dict(sorted(value.items(), key=lambda kv: natural_key(kv[0])))


def _names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


def _field_maps(value: object) -> bool:
    """{slice: {field: ...}} (`was`, `now`)."""
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


def _slices_form(s: dict[str, Any]) -> bool:
    changed = s.get("changed")
    pairs = isinstance(changed, dict) and all(
        isinstance(fields, dict) and all(isinstance(v, list) and len(v) == 2 for v in fields.values())
        for fields in changed.values()
    )
    extras = all(_field_maps(s[k]) for k in ("was", "now") if k in s)
    jobs = s.get("jobs", {})  # lines before 0.3 name no jobs
    extras = extras and isinstance(jobs, dict) and all(isinstance(j, str) for j in jobs.values())
    return _names(s.get("added")) and _names(s.get("removed")) and pairs and extras


def _faults_form(f: dict[str, Any]) -> bool:
    opened = f.get("opened")
    records = isinstance(opened, list) and all(
        isinstance(o, dict) and isinstance(o.get("id"), str) and isinstance(o.get("target"), str) for o in opened
    )
    return records and _names(f.get("cleared"))


def _ocs_form(c: object) -> bool:
    def pairs(value: object) -> bool:
        return isinstance(value, list) and all(
            isinstance(p, list) and len(p) == 2 and all(type(x) is int for x in p) for p in value
        )

    return isinstance(c, dict) and pairs(c.get("add")) and pairs(c.get("remove"))


def slices_named(d: Doc) -> list[str]:
    """The slices a recorded delta names: added, removed, changed, or whose routing tables it stored, marked
    stale or dropped."""
    r = d.get("routes", {})
    return [*_slice_names(d.get("slices", {})), *_route_names(r if isinstance(r, dict) else {})]


def jobs_of_slices(d: Doc) -> dict[str, str] | None:
    """{slice: its job} of a recorded delta; None for a line written before deltas named jobs."""
    jobs = d.get("slices", {}).get("jobs")
    return jobs if isinstance(jobs, dict) else None


def _proposal_by_state(fields: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """A slice's net fields with its proposal's ends as its state gives them: only an evicted slice has one. Lines of
    0.2 did not record proposals, so the first one recorded after them is not the range's start when a 0.2 line
    evicted the slice (nor its end when one moved it); the state each line records says."""
    state, proposal = fields.get("state"), fields.get("proposal")
    if state is None or proposal is None:
        return fields
    ends = [p if s == "evicted" else None for s, p in zip(state, proposal, strict=True)]
    return {**fields, "proposal": ends}


def _comparable(was: Doc, now: Doc) -> list[str]:
    """The fields a slice made again is compared on: those both records hold (a field a line of an older version
    did not record is unknown, not changed), or, with one record missing (lines before `was` and `now`), every
    field the other holds."""
    if was and now:
        return [f for f in _SLICE_FIELDS if f in was and f in now]
    return [f for f in _SLICE_FIELDS if f in was or f in now]


class _Net:
    """The running sum of deltas that `combine` keeps."""

    def __init__(self) -> None:
        self.added: set[str] = set()
        self.removed: set[str] = set()
        self.changed: dict[str, dict[str, list[Any]]] = {}
        self.opened: list[Doc] = []
        self.cleared: list[str] = []
        self.ocs: dict[str, dict[tuple[int, ...], int]] = {}
        self.was: dict[str, dict[str, Any]] = {}  # a removed slice's fields as at the start of the range
        self.jobs: dict[str, str] = {}  # {slice: its job}, as the latest line naming the slice gave it

    def slices(self, s: Doc) -> None:
        self.jobs.update(s.get("jobs", {}))  # lines before 0.3 name no jobs
        for name in s["removed"]:
            if name in self.added:  # made and gone inside the range: no change at all, its changes neither
                self.added.discard(name)
                self.changed.pop(name, None)
                continue
            self.removed.add(name)
            was = dict(s.get("was", {}).get(name, {}))
            was.update({f: v[0] for f, v in self.changed.pop(name, {}).items()})
            self.was[name] = was
        for name in s["added"]:
            if name not in self.removed:
                self.added.add(name)
                continue
            self.removed.discard(name)  # released and made again within the range: net, its fields changed
            was, now = self.was.pop(name, {}), s.get("now", {}).get(name, {})
            self.changed[name] = {f: [was.get(f), now.get(f)] for f in _comparable(was, now)}
        for name, fields in s["changed"].items():
            net = self.changed.setdefault(name, {})
            for f, (old, new) in fields.items():
                net[f] = [net.get(f, [old])[0], new]

    def cross_connects(self, ocs: Doc) -> None:
        for key, ch in ocs.items():
            counts = self.ocs.setdefault(key, {})
            for p in ch["add"]:
                counts[tuple(p)] = counts.get(tuple(p), 0) + 1
            for p in ch["remove"]:
                counts[tuple(p)] = counts.get(tuple(p), 0) - 1

    def result(self) -> Doc:
        changed = {
            n: {f: v for f, v in _proposal_by_state(fs).items() if v[0] != v[1]} for n, fs in self.changed.items()
        }
        slices: Doc = {
            "added": sorted(self.added, key=natural_key),  # as slices are counted: s9 before s10
            "removed": sorted(self.removed, key=natural_key),
            "changed": {
                n: fs
                for n, fs in sorted(changed.items(), key=lambda kv: natural_key(kv[0]))
                if fs and n not in self.added and n not in self.removed
            },
        }
        jobs = {n: self.jobs[n] for n in sorted(_slice_names(slices), key=natural_key) if n in self.jobs}
        if jobs:  # as in a line's delta: the slices named that are one slice of a job
            slices["jobs"] = jobs
        return {
            "slices": slices,
            "faults": {"opened": self.opened, "cleared": self.cleared},
            "ocs": {
                key: {
                    "add": [list(p) for p, n in sorted(c.items()) if n > 0],
                    "remove": [list(p) for p, n in sorted(c.items()) if n < 0],
                }
                for key, c in sorted(self.ocs.items(), key=lambda kv: natural_key(kv[0]))
                if any(c.values())
            },
        }


def combine(deltas: list[Doc]) -> Doc:
    """The net change of consecutive deltas (oldest first): a slice added then removed is neither; a cross-connect
    added then removed is neither; a fault opened and cleared within the range is listed in both. A slice released
    and made again under the same name shows as changed (its shape or cubes, old -> new)."""
    net = _Net()
    for d in deltas:
        net.slices(d["slices"])
        net.opened += d["faults"]["opened"]
        net.cleared += d["faults"]["cleared"]
        net.cross_connects(d["ocs"])
    return net.result()
