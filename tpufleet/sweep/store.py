"""Where a sweep keeps its finished points: one JSON file per point in ``OUT/points/``, named by its key.

A point's file is written (atomically: temp file, fsync, rename) once all its replications have finished, so
a sweep stopped at any moment (Ctrl-C, a lost worker, a power cut) leaves only whole points behind, and
`--resume` reruns exactly the points without a file. A file whose key no point of the spec has (the spec or
an input file changed) is left alone and not used. Crash tests stop the sweep right after a point's file is
written, at the named point ``sweep.after_point`` (see tpufleet/state/crashpoints.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tpufleet.errors import BadInput, Refused
from tpufleet.state.crashpoints import reached

POINTS_DIR = "points"
CRASH_POINT = "sweep.after_point"


def prepare(out: Path, resume: bool) -> Path:
    """The points directory of `out`, made if missing; refuse to mix a new sweep into an old one's points."""
    points = out / POINTS_DIR
    try:
        out.mkdir(exist_ok=True)
        points.mkdir(exist_ok=True)
    except FileExistsError:
        raise BadInput(f"bad option --out {str(out)!r}: it, or its {POINTS_DIR}/, is not a directory") from None
    except OSError as exc:
        raise Refused(f"cannot create {points}: {exc.strerror or exc}") from None
    if not resume and any(name.endswith(".json") for name in os.listdir(points)):
        raise BadInput(
            f"{out} holds finished points of a sweep: give --resume to continue it, or another --out directory"
        )
    return points


def finished(points: Path, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The saved points among `keys` (key -> saved point); a file that cannot be read is run again."""
    done = {}
    for key in keys:
        path = points / f"{key}.json"
        try:
            saved = json.loads(path.read_bytes())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            continue  # unreadable or not JSON: the point runs again and its file is replaced
        if isinstance(saved, dict) and saved.get("key") == key and isinstance(saved.get("runs"), list):
            done[key] = saved
    return done


def save(points: Path, saved: Mapping[str, Any]) -> None:
    """Write a finished point's file (atomically), then pass the crash point."""
    from tpufleet.state.files import atomic_write

    data = json.dumps(saved, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    atomic_write(points / f"{saved['key']}.json", data)
    reached(CRASH_POINT)
