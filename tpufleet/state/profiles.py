"""Hardware profile files (`tpufleet collective --profile FILE`): read here, decoded by the core.

The file is read by the bounded reader (size cap, strict YAML: `tpufleet.state.inputfiles.load_yaml`) and its
document handed to `tpufleet.collectives.profile.profile_from_doc`, which validates it; without a file the shipped
profile (`default_profile`) is the one.
"""

from __future__ import annotations

import os
from pathlib import Path

from tpufleet.collectives.profile import SHIPPED, Profile, default_profile, profile_from_doc
from tpufleet.state.inputfiles import load_yaml

__all__ = ["SHIPPED_PROFILES", "read_profile"]

# Profiles named instead of a file (`--profile tpu-v3`); a file of that name in the working directory wins.
SHIPPED_PROFILES = {"tpu-v4": SHIPPED, "tpu-v3": SHIPPED.with_name("hardware-profile-tpu-v3.yaml")}


def read_profile(path: Path | str | None = None) -> Profile:
    """The profile in the file at `path`, or the shipped one it names ('tpu-v3', 'tpu-v4'; None: the shipped TPU v4
    profile); BadStateFile naming file, field and value."""
    if path is None:
        return default_profile()
    target = Path(path)
    if str(path) in SHIPPED_PROFILES and not os.path.exists(target):  # never raises (a name too long is no file)
        target = SHIPPED_PROFILES[str(path)]
    return profile_from_doc(load_yaml(target, "hardware profile"), str(target), shipped=target.resolve() == SHIPPED)
