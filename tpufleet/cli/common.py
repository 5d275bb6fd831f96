"""Small helpers shared by command modules (state lookups that turn into clean refusals)."""

from __future__ import annotations

from tpufleet.errors import Refused


def get_slice(doc: dict, name: str) -> dict:
    try:
        return doc["slices"][name]
    except KeyError:
        known = ", ".join(sorted(doc["slices"])) or "none"
        raise Refused(f"unknown slice {name!r} (slices: {known})") from None


def mark_routes_stale(doc: dict, slices: set[str], why: str) -> list[str]:
    """Routing tables of these slices no longer match the network; `status` says so until regenerated."""
    marked = []
    for name in sorted(slices):
        entry = doc["routes"].get(name)
        if entry is not None and not entry.get("stale"):
            entry["stale"] = True
            entry["stale_reason"] = why
            marked.append(name)
    return marked
