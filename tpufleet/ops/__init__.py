"""Use cases: one function per operation, between the command line and the core.

Each takes the typed fleet state (loaded under the lock by the caller's transaction) and the already parsed
request, changes the state only through its transition methods, and returns an `Outcome`: the documented
JSON result to render and the `Change` to journal (None when nothing changed, so nothing is written).
Nothing here reads or writes files, prints, or knows about options.
"""

from tpufleet.ops.outcome import Outcome

__all__ = ["Outcome"]
