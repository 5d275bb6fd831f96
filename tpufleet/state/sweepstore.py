"""A sweep's files: its spec and the input files it names, read; its finished points in ``OUT/points/``.

A point's file (one JSON file per point, named by its key) is written atomically (temp file, fsync, rename) once
all its replications have finished, so a sweep stopped at any moment (Ctrl-C, a lost worker, a power cut) leaves
only whole points behind, and `--resume` reruns exactly the points without a file. A file whose key no point of
the spec has (the spec or an input file changed) is left alone and not used. Crash tests stop the sweep right
after a point's file is written, at the named point ``sweep.after_point`` (see tpufleet/state/crashpoints.py).

A point's file is read back like any input (`PointDir.read_point`): anyone who can write ``OUT/points/`` can
plant one, and a disk can truncate one. It must be a regular file (a FIFO would block the read for ever) of at
most MAX_POINT_BYTES, through the bounded JSON reader (no NaN, no deep nesting, no 5,000-digit integers), whose
key and seeds are the point's and whose runs are one flat mapping of figures per seed. Only its runs are used:
the point's parameters come from the spec and its summary is computed again, so a file cannot change what the
sweep reports for a point except through the runs it holds.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tpufleet.constants import MiB
from tpufleet.doccheck import check
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile, Refused, shown
from tpufleet.simulation.inputs import RATES_SCHEMA
from tpufleet.state.crashpoints import reached
from tpufleet.state.files import atomic_write, refuse_state_dir
from tpufleet.state.inputfiles import load_json_file
from tpufleet.state.outputs import refuse_blank_name, replace_own_file
from tpufleet.state.siminputs import read_workload, read_yaml, shipped_inputs
from tpufleet.sweep import spec as sweep_spec

__all__ = ["CRASH_POINT", "POINTS_DIR", "PointDir", "check_out", "load_spec", "prepare"]

POINTS_DIR = "points"
EVENTS_DIR = "events"
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


def load_spec(path: Path) -> sweep_spec.SweepSpec:
    """Read, check and expand a sweep spec (`sweep.spec.build`), reading the input files its points name
    (relative names are relative to the spec's directory), the shipped inputs the runs default to and the
    profiles of the generations its points name."""

    def read_input(param: str, name: str) -> dict[str, Any]:
        file = path.parent / name
        return read_workload(file) if param == "workload" else read_yaml(file, RATES_SCHEMA, "fault-rate file")

    from tpufleet.state.generations import document

    doc = read_yaml(path, sweep_spec.SPEC_SCHEMA, "sweep spec")
    return sweep_spec.build(
        doc, str(path), path.stem, read_input, shipped_inputs(), read_generation=document, code=code_version()
    )


def code_version(package: Path | None = None) -> str:
    """tpufleet's version and a digest of its installed modules and shipped inputs (of `package`, the installed
    one by default): a sweep resumed after any change to them (an upgrade, a fix that changes a figure) runs its
    points again rather than mixing results."""
    import hashlib

    import tpufleet

    package = package or Path(tpufleet.__file__).parent
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
            digest.update(str(file.relative_to(package)).encode() + b"\0" + file.read_bytes() + b"\0")
    return f"{tpufleet.__version__}+{digest.hexdigest()[:16]}"


def check_out(out: Path) -> None:
    """--out is a directory, or can be made one (its parent exists), not named only blanks, and not the state
    directory or one in it (the results and points were written among the state's files)."""
    refuse_blank_name(out, "--out")
    if str(out) == "-":  # as every other output refuses it: a directory named '-' was made
        raise BadInput("bad option --out '-': give a directory name ('-' is not standard output here)")
    refuse_state_dir(out, f"bad option --out {shown(str(out))}")
    if out.exists() and not out.is_dir():
        raise BadInput(f"bad option --out {shown(str(out))}: it is not a directory")
    if not out.exists() and not out.absolute().parent.is_dir():
        raise BadInput(f"bad option --out {shown(str(out))}: its directory does not exist")


class PointDir:
    """The finished points of a sweep in ``OUT/points/`` and its events in ``OUT/events/`` (`sweep.driver.Points`)."""

    def __init__(self, out: Path) -> None:
        self.out, self.points = out, out / POINTS_DIR

    def read_point(self, key: str, seeds: Sequence[int]) -> list[dict[str, float | None]] | None:
        """The runs saved for the point `key` (one mapping of figures per seed), None if it has no file;
        BadStateFile naming the file, the field and the value if its file does not check (see the module)."""
        path = self.points / f"{key}.json"
        try:
            kind = os.stat(path).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BadStateFile(str(path), "", NO_VALUE, f"cannot be read: {exc.strerror or exc}") from None
        if not stat.S_ISREG(kind):
            raise BadStateFile(str(path), "", NO_VALUE, "not a regular file")
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

    def save(self, saved: Mapping[str, Any]) -> None:
        """Write a finished point's file (atomically), then pass the crash point."""
        data = json.dumps(saved, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
        atomic_write(self.points / f"{saved['key']}.json", data)
        reached(CRASH_POINT)

    def write_events(self, key: str, replication: int, data: bytes) -> str:
        """A run's events (gzip-compressed JSONL) in ``OUT/events/``, named by the point's key as its point file
        is: the file's name."""
        path = self._events(key, replication)
        replace_own_file(path, data)  # (`prepare` made events/)
        return str(path)

    def has_events(self, key: str, replications: int) -> bool:
        """Whether ``OUT/events/`` holds the events of every replication of the point `key`. By key, not by the
        point's place in the spec: a spec reordered between runs must not pair a point with another's events."""
        return all(self._events(key, r).is_file() for r in range(replications))

    def _events(self, key: str, replication: int) -> Path:
        return self.out / EVENTS_DIR / f"{key}-r{replication}.jsonl.gz"


def prepare(out: Path, resume: bool, keep_events: bool = False) -> PointDir:
    """The points directory of `out` (and with `keep_events` its events directory), made if missing; refuse to
    mix a new sweep into an old one's points. Before any run: events/ as a file was an internal error after the
    first run had finished."""
    points = out / POINTS_DIR
    made = [out, points, *([out / EVENTS_DIR] if keep_events else [])]
    for directory in made:
        try:
            directory.mkdir(exist_ok=True)
        except FileExistsError:
            raise BadInput(
                f"bad option --out {shown(str(out))}: {directory} is not a directory"
                if directory != out
                else f"bad option --out {shown(str(out))}: not a directory"
            ) from None
        except OSError as exc:
            raise Refused(f"cannot create {directory}: {exc.strerror or exc}") from None
    if not resume and any(name.endswith(".json") for name in os.listdir(points)):
        raise BadInput(
            f"{out} holds finished points of a sweep: give --resume to continue it, or another --out directory"
        )
    return PointDir(out)
