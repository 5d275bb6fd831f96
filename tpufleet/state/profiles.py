"""Hardware profile files (`tpufleet collective --profile FILE`): read here, decoded by the core.

The file is read by the bounded reader (size cap, strict YAML: `tpufleet.state.inputfiles.load_yaml`) and its
document handed to `tpufleet.collectives.profile.profile_from_doc`, which validates it; without a file the shipped
profile (`default_profile`) is the one.
"""

from __future__ import annotations

import os
from pathlib import Path

from tpufleet.collectives.profile import SHIPPED, Profile, default_profile, for_generation, profile_from_doc
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.state import generations
from tpufleet.state.inputfiles import MissingFile, load_yaml

__all__ = ["SHIPPED_PROFILES", "read_profile"]

# Profiles named instead of a file (`--profile tpu-v3`); a file of that name in the working directory wins. A shipped
# generation's name (`tpu-v5p`, `tpu7x`) gives its figures over the TPU v4 profile, as `collective` uses on its pods.
SHIPPED_PROFILES = {"tpu-v4": SHIPPED, "tpu-v3": SHIPPED.with_name("hardware-profile-tpu-v3.yaml")}


def read_profile(path: Path | str | None = None) -> Profile:
    """The profile in the file at `path`, or the shipped one it names ('tpu-v3', 'tpu-v4', a shipped generation such
    as 'tpu7x'; None: the shipped TPU v4 profile); BadStateFile naming file, field and value."""
    if path is None:
        return default_profile()
    target = Path(path)
    if not os.path.exists(target):  # never raises (a name too long is no file)
        if str(path) in SHIPPED_PROFILES:
            target = SHIPPED_PROFILES[str(path)]
        elif str(path) in generations.names():
            return for_generation(default_profile(), generations.shipped(str(path)))
    try:
        doc = load_yaml(target, "hardware profile")
    except MissingFile as exc:
        if exc.file == "-":  # said already: '-' is no file here
            raise
        known = ", ".join(sorted({*SHIPPED_PROFILES, *generations.names()}))
        raise MissingFile(exc.file, exc.field, NO_VALUE, f"{exc.problem} file, nor a shipped one ({known})") from None
    _refuse_generation_profile(doc, str(target))
    return profile_from_doc(doc, str(target), shipped=target.resolve() == SHIPPED)


def _refuse_generation_profile(doc: object, file: str) -> None:
    """A generation's profile (the form of tpufleet/data/generations/NAME.yaml) given as a hardware profile was
    refused for its `title`, "unknown key", which said neither what the file is nor what --profile takes instead."""
    if not (isinstance(doc, dict) and {"pod", "slices", "title"} <= doc.keys()):
        return
    known = generations.names()
    name = doc.get("name")
    use = f"--profile {name}" if name in known else f"--profile NAME, NAME one of {', '.join(known)}"
    raise BadStateFile(
        file,
        "",
        NO_VALUE,
        f"is a generation profile, not a hardware profile: give a shipped generation by its name ({use}), or a "
        "hardware profile file (the form of tpufleet/data/hardware-profile.yaml)",
    )
