"""Hardware profile files (`tpufleet collective --profile FILE`): read here, decoded by the core.

The file is read by the bounded reader (size cap, strict YAML: `tpufleet.state.inputfiles.load_yaml`) and its
document handed to `tpufleet.collectives.profile.profile_from_doc`, which validates it; without a file the shipped
profile (`default_profile`) is the one.
"""

from __future__ import annotations

from pathlib import Path

from tpufleet.collectives.profile import SHIPPED, Profile, default_profile, profile_from_doc
from tpufleet.state.inputfiles import load_yaml

__all__ = ["read_profile"]


def read_profile(path: Path | str | None = None) -> Profile:
    """The profile in the file at `path` (None: the shipped profile); BadStateFile naming file, field and value."""
    if path is None:
        return default_profile()
    target = Path(path)
    return profile_from_doc(load_yaml(target, "hardware profile"), str(target), shipped=target.resolve() == SHIPPED)
