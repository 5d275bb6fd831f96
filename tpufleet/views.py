"""Read-only views of a state document, as plain JSON-able data (pure).

These are the documented `-o json` shapes of `show` and `status`.
"""

from __future__ import annotations

from tpufleet.health import Health, health_of
from tpufleet.model import Fleet, inventory_counts, pod_ocs


def cube_users(doc: dict) -> dict[str, list[str]]:
    """cube -> names of slices holding it (sub-cube slices may share a cube)."""
    users: dict[str, list[str]] = {}
    for name, sl in doc["slices"].items():
        for cube in sl["cubes"]:
            users.setdefault(cube, []).append(name)
    return users


def cube_state(cube: str, users: dict[str, list[str]], health: Health) -> str:
    if not health.cube_ok(cube):
        return "out"
    return "allocated" if cube in users else "free"


def inventory(doc: dict, health: Health | None = None) -> list[dict]:
    fleet, health = Fleet.from_doc(doc["fleet"]), health or health_of(doc)
    users = cube_users(doc)
    rows = []
    for pod in fleet.pods:
        for pos, cube in enumerate(pod.cubes):
            rows.append(
                {
                    "id": f"cube:{cube}",
                    "cube": cube,
                    "pod": pod.name,
                    "position": pos,
                    "machines": 16,
                    "chips": 64,
                    "optical_links": 96,
                    "state": cube_state(cube, users, health),
                    "slices": users.get(cube, []),
                    "faults": health.cubes_out.get(cube, []),
                }
            )
    return rows


def health_rows(doc: dict, health: Health | None = None) -> list[dict]:
    health = health or health_of(doc)
    rows = []
    for fault in health.open_faults:
        kind = fault["target"].split(":", 1)[0]
        effect = {
            "ocs": "OCS down: every cube of the pod loses that link",
            "link": "optical link unusable",
        }.get(kind, "cube out of the pool")
        rows.append(
            {
                "target": fault["target"],
                "kind": kind,
                "fault": fault["id"],
                "planned": fault["planned"],
                "since": fault["opened"],
                "effect": effect,
            }
        )
    return rows


def missing_pairs(doc: dict, sl: dict, fleet: Fleet | None = None) -> int:
    """Cross-connects the slice needs that are not in place (e.g. deferred while an OCS was down)."""
    from tpufleet.shapes import parse_shape
    from tpufleet.xconnect import wanted_pairs

    if sl["state"] != "connected":
        return 0
    fleet = fleet or Fleet.from_doc(doc["fleet"])
    wanted = wanted_pairs(parse_shape(sl["shape"], sl["twisted"]), fleet, sl["coords"])
    have = {k: {tuple(p) for p in v} for k, v in doc["ocs"].items()}
    return sum(1 for k, pairs in wanted.items() for p in pairs if p not in have.get(k, ()))


def slice_rows(doc: dict) -> list[dict]:
    fleet = Fleet.from_doc(doc["fleet"])
    rows = []
    for name in sorted(doc["slices"]):
        sl = doc["slices"][name]
        route = doc["routes"].get(name)
        rows.append(
            {
                "name": name,
                "shape": sl["shape"],
                "twisted": sl["twisted"],
                "pod": sl["pod"],
                "cubes": list(sl["cubes"]),
                "machines": list(sl.get("machines", [])),
                "state": sl["state"],
                "fault_tolerant_routing": sl["fault_tolerant_routing"],
                "routes": "none" if route is None else ("stale" if route.get("stale") else "fresh"),
                "missing_xconnects": missing_pairs(doc, sl, fleet),
            }
        )
    return rows


def ocs_rows(doc: dict, health: Health | None = None) -> list[dict]:
    fleet, health = Fleet.from_doc(doc["fleet"]), health or health_of(doc)
    rows = []
    for pod in fleet.pods:
        for ocs in pod_ocs(pod.name):
            pairs = doc["ocs"].get(ocs.key, [])
            rows.append(
                {
                    "id": str(ocs),
                    "pod": ocs.pod,
                    "dim": ocs.dim,
                    "index": ocs.index,
                    "health": "failed" if ocs.key in health.ocs_down else "ok",
                    "ports_cabled": 2 * len(pod.cubes),
                    "xconnects": [list(p) for p in sorted(pairs)],
                }
            )
    return rows


def status(doc: dict) -> dict:
    health = health_of(doc)
    inv = inventory(doc, health)
    counts = {"free": 0, "allocated": 0, "out": 0}
    for row in inv:
        counts[row["state"]] += 1
    fleet = Fleet.from_doc(doc["fleet"])
    xconnects = sum(len(p) for p in doc["ocs"].values())
    stale = sorted(n for n, r in doc["routes"].items() if r.get("stale"))
    slices = slice_rows(doc)
    return {
        "serial": doc["serial"],
        "inventory": inventory_counts(fleet),
        "cubes": counts,
        "ocs": {"total": len(fleet.pods) * 48, "failed": len(health.ocs_down), "xconnects": xconnects},
        "open_faults": len(health.open_faults),
        "faults": health_rows(doc, health),
        "slices": slices,
        "stale_routes": stale,
        "incomplete_wiring": [s["name"] for s in slices if s["missing_xconnects"]],
    }
