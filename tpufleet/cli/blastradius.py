"""The text of a fault's blast radius, as `inject-fault` prints it (its JSON is the use case's)."""

from collections.abc import Collection, Mapping

from tpufleet.cli.render import link_steps, of_the_optimum
from tpufleet.text import share_text


def hit_later(radii: list[dict], i: int) -> set[str]:
    """The slices a later fault of the batch hits (`--from`, `--random`): its lines say what they need after both."""
    return {s["slice"] for r in radii[i + 1 :] for s in r.get("slices", ()) if s["action"] != "none"}


def blast_radius_text(r: dict, hit_later: Collection[str] = (), linked: Mapping[str, str] | None = None) -> str:
    """`inject-fault`'s lines for one fault: what it opened, the cubes out of the pool, each slice and job it hits
    and their next steps (`hit_later`: slices a later fault of the batch hits, which are told their steps there)."""
    if r.get("duplicate_of"):
        if r["planned"]:  # a failure found under a drain is not recorded apart: the drain's clear ends both
            return (
                f"{r['target']} already has open planned drain {r['duplicate_of']}: nothing changed (it also "
                f"stands for a failure found during it: clear {r['duplicate_of']} only once repaired)"
            )
        return f"{r['target']} already has open fault {r['duplicate_of']}: nothing changed"
    kind = "planned drain" if r["planned"] else "fault"
    lines = [f"{kind} {r['fault_id']} on {r['target']}"]
    lines.append(f"  cubes out of the pool: {', '.join(r['cubes_out']) or 'none'}")
    if not r["slices"]:
        lines.append("  slices hit: none")
    to_route = 0  # slices told to run `routes`: several get the one command for all
    for s in r["slices"]:
        line = f"  slice {s['slice']}: {s['action']} ({s['reason']})"
        line += _replacement_text(s.get("replacement"))
        rr = s.get("reroute")
        if rr:
            line += (
                f": fully routable, {'deadlock-free' if rr['deadlock_free'] else 'DEADLOCK'}, {rr['vcs']} VCs, "
                f"all-to-all throughput retained {share_text(rr['all_to_all_retained'])}"
                f"{of_the_optimum(rr['all_to_all_retained'], rr.get('all_to_all_retained_vs_optimum'))}"
                + (" (thorough tables: the quick ones fell below its floor)" if rr.get("thorough") else "")
            )
        lines.append(line)
        lines.extend(f"    next: {step}" for step in s.get("next", []))  # an evicted slice of no job
        # its stored tables cross the fault (a later fault of the batch that hits it says what it needs then)
        why = _why_route(r, s)
        if why and s["slice"] not in hit_later:
            lines.extend(link_steps("    ", s["slice"], linked or {}))
            lines.append(f"    next: tpufleet routes {s['slice']}  ({why})")
            to_route += 1
    if to_route > 1:
        lines.append("  all of them at once: `tpufleet routes --stale`")
    for j in r.get("jobs", []):
        lines.append(f"  job {j['job']}: {j['action']} ({j['reason']})")
        lines.extend(f"    next: {step}" for step in j["next"])
    return "\n".join(lines)


def _why_route(r: dict, s: dict) -> str | None:
    """Why a rerouted slice's next step is `routes`: its stored tables cross the fault, or it has none."""
    if s["action"] != "reroute":
        return None
    if s["slice"] in r.get("routes_stale", ()):
        return "its stored tables predate this fault"
    none = s["slice"] in r.get("routes_none", ())
    return "it has no stored tables: until then it runs through the fault" if none else None


def _replacement_text(rep: dict | None) -> str:
    """Where an evicted slice would go: ' -> pod0 c08,c01,...; cross-connects +96 -96 =288', or why it waits."""
    if not rep:
        return ""
    if rep["status"] == "pending":
        return f" -> pending: {rep['why']}"
    x = rep["xconnect_changes"]
    return f" -> {rep['pod']} {','.join(rep['cubes'])}; cross-connects +{x['add']} -{x['remove']} ={x['keep']}"
