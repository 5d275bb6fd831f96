"""Where a sweep keeps its finished points: one JSON file per point in ``OUT/points/``, named by its key.

A point's file is written (atomically: temp file, fsync, rename) once all its replications have finished, so
a sweep stopped at any moment (Ctrl-C, a lost worker, a power cut) leaves only whole points behind, and
`--resume` reruns exactly the points without a file. A file whose key no point of the spec has (the spec or
an input file changed) is left alone and not used. Crash tests stop the sweep right after a point's file is
written, at the named point ``sweep.after_point`` (see tpufleet/state/crashpoints.py).

A point's file is read back like any input (`read_point`): anyone who can write ``OUT/points/`` can plant one,
and a disk can truncate one. It must be a regular file (a FIFO would block the read for ever) of at most
MAX_POINT_BYTES, through the bounded JSON reader (no NaN, no deep nesting, no 5,000-digit integers), whose key and
seeds are the point's and whose runs are one flat mapping of figures per seed. Only its runs are used: the
point's parameters come from the spec and its summary is computed again, so a file cannot change what the sweep
reports for a point except through the runs it holds.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tpufleet.errors import BadInput, BadStateFile, Refused, shown
from tpufleet.state.crashpoints import reached
from tpufleet.state.inputfiles import MiB

POINTS_DIR = "points"
CRASH_POINT = "sweep.after_point"
# The largest point a spec allows is about 6 MB (1,000 seeds x 64 slice sizes x 4 availability figures): room.
MAX_POINT_BYTES = 32 * MiB
_FIGURES = {"type": "object", "propertyNames": {"maxLength": 200}, "additionalProperties": {"type": ["number", "null"]}}
POINT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["key", "seeds", "runs"],
    "properties": {
        "key": {"type": "string"},
        "seeds": {"type": "array", "items": {"type": "integer"}},
        "runs": {"type": "array", "items": _FIGURES},
    },
}


def prepare(out: Path, resume: bool) -> Path:
    """The points directory of `out`, made if missing; refuse to mix a new sweep into an old one's points."""
    points = out / POINTS_DIR
    try:
        out.mkdir(exist_ok=True)
        points.mkdir(exist_ok=True)
    except FileExistsError:
        raise BadInput(f"bad option --out {shown(str(out))}: it, or its {POINTS_DIR}/, is not a directory") from None
    except OSError as exc:
        raise Refused(f"cannot create {points}: {exc.strerror or exc}") from None
    if not resume and any(name.endswith(".json") for name in os.listdir(points)):
        raise BadInput(
            f"{out} holds finished points of a sweep: give --resume to continue it, or another --out directory"
        )
    return points


def read_point(points: Path, key: str, seeds: Sequence[int]) -> list[dict[str, float | None]] | None:
    """The runs saved for the point `key` (one mapping of figures per seed), None if it has no file;
    BadStateFile naming the file, the field and the value if its file does not check (see the module)."""
    from tpufleet.state.inputfiles import load_json_file
    from tpufleet.state.schema import check

    path = points / f"{key}.json"
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(kind):
        raise BadStateFile(str(path), "", None, "not a regular file")
    saved = load_json_file(path, "sweep point file", MAX_POINT_BYTES)
    check(POINT_SCHEMA, saved, str(path))
    if saved["key"] != key:
        raise BadStateFile(str(path), "key", saved["key"], f"not the key its name gives ({key})")
    if saved["seeds"] != list(seeds):
        raise BadStateFile(str(path), "seeds", saved["seeds"], "not the spec's seeds")
    if len(saved["runs"]) != len(seeds):
        raise BadStateFile(str(path), "runs", len(saved["runs"]), f"not one run per seed ({len(seeds)})")
    runs: list[dict[str, float | None]] = saved["runs"]
    return runs


def save(points: Path, saved: Mapping[str, Any]) -> None:
    """Write a finished point's file (atomically), then pass the crash point."""
    from tpufleet.state.files import atomic_write

    data = json.dumps(saved, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    atomic_write(points / f"{saved['key']}.json", data)
    reached(CRASH_POINT)
