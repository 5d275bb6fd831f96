"""What one commit changed, as recorded in its journal line (``"delta"``), and the sum of several.

Computed from the state document before and after the commit, so every command gets it without saying so:
slices added, removed or changed (state, cubes), faults opened and cleared, cross-connects added and removed per
OCS, routing tables stored, dropped or gone stale. `tpufleet diff` adds the deltas of a range of serials;
`tpufleet history --slice` finds the commits that touched a slice. Lines written before deltas existed have none;
readers say so instead of guessing.

>>> before = {"slices": {}, "faults": [], "ocs": {}, "routes": {}}
>>> after = {"slices": {"a": {"state": "allocated", "cubes": ["c00"]}}, "faults": [], "ocs": {"pod0/x/0": [[0, 1]]}, "routes": {}}
>>> d = delta(before, after)
>>> d["slices"]["added"], d["ocs"]["pod0/x/0"]
(['a'], {'add': [[0, 1]], 'remove': []})
"""

from __future__ import annotations

from typing import Any

Doc = dict[str, Any]
_SLICE_FIELDS = ("state", "cubes", "shape", "pod", "min_throughput", "fault_tolerant_routing")


def _slices(before: Doc, after: Doc) -> Doc:
    old, new = before.get("slices", {}), after.get("slices", {})
    changed = {}
    for name in sorted(old.keys() & new.keys()):
        fields = {
            f: [old[name].get(f), new[name].get(f)] for f in _SLICE_FIELDS if old[name].get(f) != new[name].get(f)
        }
        if fields:
            changed[name] = fields
    return {"added": sorted(new.keys() - old.keys()), "removed": sorted(old.keys() - new.keys()), "changed": changed}


def _faults(before: Doc, after: Doc) -> Doc:
    old = {f["id"]: f for f in before.get("faults", [])}
    new = {f["id"]: f for f in after.get("faults", [])}
    opened = [
        {"id": i, "target": new[i]["target"], "planned": new[i].get("planned", False)} for i in new if i not in old
    ]
    cleared = [i for i in new if i in old and new[i].get("cleared") and not old[i].get("cleared")]
    return {"opened": opened, "cleared": cleared}


def _ocs(before: Doc, after: Doc) -> Doc:
    old, new = before.get("ocs", {}), after.get("ocs", {})
    out = {}
    for key in sorted(old.keys() | new.keys()):
        a = {tuple(p) for p in old.get(key, [])}
        b = {tuple(p) for p in new.get(key, [])}
        if a != b:
            out[key] = {"add": [list(p) for p in sorted(b - a)], "remove": [list(p) for p in sorted(a - b)]}
    return out


def _routes(before: Doc, after: Doc) -> Doc:
    old, new = before.get("routes", {}), after.get("routes", {})
    stored = sorted(n for n in new if n not in old or new[n].get("serial") != old[n].get("serial"))
    stale = sorted(n for n in new if new[n].get("stale") and not old.get(n, {}).get("stale") and n not in stored)
    return {"stored": stored, "dropped": sorted(old.keys() - new.keys()), "stale": stale}


def delta(before: Doc, after: Doc) -> Doc:
    """What changed between two state documents, in the journal's ``delta`` form."""
    return {
        "slices": _slices(before, after),
        "faults": _faults(before, after),
        "ocs": _ocs(before, after),
        "routes": _routes(before, after),
    }


def touches_slice(d: Doc, name: str) -> bool:
    s, r = d.get("slices", {}), d.get("routes", {})
    named = [
        *s.get("added", []),
        *s.get("removed", []),
        *s.get("changed", {}),
        *r.get("stored", []),
        *r.get("stale", []),
    ]
    return name in named or name in r.get("dropped", [])


def combine(deltas: list[Doc]) -> Doc:
    """The net change of consecutive deltas (oldest first): a slice added then removed is neither; a cross-connect
    added then removed is neither; a fault opened and cleared within the range is listed in both."""
    added: set[str] = set()
    removed: set[str] = set()
    changed: dict[str, dict[str, list[Any]]] = {}
    opened: list[Doc] = []
    cleared: list[str] = []
    ocs: dict[str, dict[tuple[int, ...], int]] = {}
    for d in deltas:
        s = d["slices"]
        for name in s["added"]:
            if name in removed:  # released and made again within the range: net, it changed
                removed.discard(name)
            else:
                added.add(name)
        for name in s["removed"]:
            if name in added:
                added.discard(name)
            else:
                removed.add(name)
            changed.pop(name, None)
        for name, fields in s["changed"].items():
            net = changed.setdefault(name, {})
            for f, (old, new) in fields.items():
                net[f] = [net.get(f, [old])[0], new]
        opened += d["faults"]["opened"]
        cleared += d["faults"]["cleared"]
        for key, ch in d["ocs"].items():
            counts = ocs.setdefault(key, {})
            for p in ch["add"]:
                counts[tuple(p)] = counts.get(tuple(p), 0) + 1
            for p in ch["remove"]:
                counts[tuple(p)] = counts.get(tuple(p), 0) - 1
    net_changed = {n: {f: v for f, v in fs.items() if v[0] != v[1]} for n, fs in changed.items() if n not in added}
    return {
        "slices": {
            "added": sorted(added),
            "removed": sorted(removed),
            "changed": {n: fs for n, fs in sorted(net_changed.items()) if fs},
        },
        "faults": {"opened": opened, "cleared": cleared},
        "ocs": {
            key: {
                "add": [list(p) for p, n in sorted(c.items()) if n > 0],
                "remove": [list(p) for p, n in sorted(c.items()) if n < 0],
            }
            for key, c in sorted(ocs.items())
            if any(c.values())
        },
    }
