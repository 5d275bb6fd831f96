"""The order of `explain JOB`'s steps: the job's and each slice's lists merged, each list's order kept, a step
two lists share given once, and steps that wait for nothing before the first that waits (a repair, the end of
maintenance)."""

from __future__ import annotations


def once_each(lists: list[list[str]]) -> list[str]:
    """The job's steps then each slice's merged, a clear or move they share given once and each list's order kept:
    a slice's steps before a shared one go before it (its `routes` around a fault before the fault's clear, though
    an earlier slice gave the clear). A slice's `routes` may come twice in its own steps (around a fault now, on the
    repaired network after its clear) and only its own steps give it; so may its wiring (`plan-xconnect S --apply`
    after its move, and again once the OCS its cross-connects wait for is cleared)."""
    out: list[str] = []
    for steps in lists:
        at, waited = 0, False  # where this list's steps go: after every step of it already placed; and whether
        for i, step in enumerate(steps):  # one of them waits for a repair (then so does every step after it)
            if step in out and step not in steps[:i] and not step.startswith("tpufleet routes "):
                at, waited = max(at, out.index(step) + 1), waited or _waits(step)
                continue
            later = [out.index(s) for s in steps[i + 1 :] if s in out[at:] and not s.startswith("tpufleet routes ")]
            # before the next step it shares; else, when nothing before it waits, before the first step that waits
            # (a running slice's `routes` does not wait for another slice's repair); else at the end
            first_wait = next((j for j in range(at, len(out)) if _waits(out[j])), len(out))
            where = min(later, default=len(out)) if waited else min([*later, first_wait])
            out.insert(where, step)
            at, waited = where + 1, waited or _waits(step)
    return out


def _waits(step: str) -> bool:
    """Whether a step waits for something outside tpufleet: a repair (`clear-fault`), or the end of maintenance (the
    `import reservation` that closes its drain)."""
    return step.startswith(("tpufleet clear-fault ", "tpufleet import reservation "))
