"""Everything that touches files: schema, validated loading, atomic saves, the lock and the journal."""

from tpufleet.state.store import Store, resolve_state_dir

__all__ = ["Store", "resolve_state_dir"]
