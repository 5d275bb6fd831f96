"""The table of `tpufleet clear-fault`: what was cleared, the pairs the repaired OCS dropped, and each concerned
slice's next step (a move, its wiring, its tables), as the JSON says them."""

from __future__ import annotations

from typing import Any


def cleared_text(d: dict[str, Any], linked: dict[str, str]) -> str:
    """`linked`: slice -> the symbolic link found where its stale tables belong (removed before `routes`)."""
    from tpufleet.ops.explain_routes import rm_step

    hint = [f"  {n}: evicted, and free to move now; run `tpufleet reschedule {n}`" for n in d["reschedule"]]
    hint += [
        f"  {n}: evicted by the fault cleared; reschedule waits: {why}" for n, why in d["reschedule_waits"].items()
    ]
    hint += [
        f"  {n}: cross-connects the fault held back can be programmed now; run `tpufleet plan-xconnect {n} --apply`"
        for n in d["rewire"]
    ] + [f"  {n}: cross-connects still missing: {why}" for n, why in d["rewire_waits"].items()]
    wiring = {*d["rewire"], *d["rewire_waits"]}  # routed once wired: their hints say what comes first
    stale = [n for n in d["routes_stale"] if n not in wiring]
    hint += [
        f"  {n}: routing tables stale; "
        + (f"{rm_step(linked[n])} (a symbolic link where they belong), then " if n in linked else "")
        + f"run `tpufleet routes {n}` for tables on the network as it is now"
        for n in stale
    ] + (["  all of them at once: `tpufleet routes --stale`"] if len(stale) > 1 else [])
    cleared = [f"cleared {f['id']} on {f['target']}" for f in d["cleared"]]
    return "\n".join(cleared + _dropped_lines(d["xconnects_dropped"]) + hint)


def _dropped_lines(dropped: list[dict[str, Any]]) -> list[str]:
    """The pairs the repaired OCS no longer holds (`xconnects_dropped`), said as the JSON says them."""
    lines = []
    for d in dropped:
        pairs = [f"{n} -> {s}" for n, s in d["pairs"]]
        more = f" and {len(pairs) - 8} more" if len(pairs) > 8 else ""
        lines.append(
            f"  {d['ocs']}: dropped {len(pairs)} cross-connect(s) an earlier tenant left on ports wired since "
            f"(north port -> south port: {', '.join(pairs[:8])}{more})"
        )
    return lines
