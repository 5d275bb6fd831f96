"""Typed target ids and their one string form.

Grammar (cube ids are unique fleet-wide)::

    cube:c07               a cube (rack)
    host:c07/3             machine 0-15 of the cube
    chip:c07/1,2,3         chip at x,y,z inside the cube (0-3 each)
    ici:c07/1,2,3/+x       electrical link leaving that chip in direction +x
    link:c07/x/5/out       optical link {cube, dim, index, polarity}
    ocs:pod0/x/5           optical circuit switch {dim, index} of a pod

>>> parse_target("link:c07/x/5/out")
LinkId(cube='c07', dim='x', index=5, polarity='out')
>>> str(parse_target("chip:c07/1,2,3"))
'chip:c07/1,2,3'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import ClassVar

from tpufleet.constants import CUBE_EDGE, DIMS, DIRECTIONS, FACE_LINKS, MACHINES_PER_CUBE, POLARITIES
from tpufleet.errors import BadInput, shown


def natural_key(text: str) -> tuple[tuple[object, ...], str]:
    """The order ids are listed in, as people count them: runs of digits compared as numbers, so pod2 comes before
    pod10, c99 before c100 and ocs:pod0/x/2 before ocs:pod0/x/10 (as the fleet numbers them); ids equal as
    numbers (c5, c05) by their text. The one key every list of pods, cubes and targets is sorted by.

    >>> sorted(["pod10", "pod2", "c100", "c99", "host:c105/1", "host:c21/0"], key=natural_key)
    ['c99', 'c100', 'host:c21/0', 'host:c105/1', 'pod2', 'pod10']
    """
    parts = _DIGIT_RUNS.split(text)  # text, digits, text, ...: the same kind at each place of every key
    # a run of digits by its length without leading zeros, then its digits: as numbers, with no int() of any size
    return tuple(_as_number(p) if i % 2 else p for i, p in enumerate(parts)), text


def _as_number(digits: str) -> tuple[int, str]:
    significant = digits.lstrip("0")
    return len(significant), significant


_DIGIT_RUNS = re.compile(r"([0-9]+)")
# ASCII digits only ("\d" would take other scripts' digits, which do not round-trip), whole strings only ("$"
# would accept a trailing newline), and few enough digits that int() is cheap and cannot fail.
_CUBE_RE = re.compile(r"c[0-9]{1,6}")  # c7 and c007 are read, then refused naming c07 (`parse_target`)
_POD_RE = re.compile(r"pod[0-9]{1,6}")
_NUMBER_RE = re.compile(r"[0-9]{1,6}")


def _cube(text: str, whole: str) -> str:
    """The cube as tpufleet writes it (`c7` and `c007` are `c07`: `parse_target` then says which was meant)."""
    if not _CUBE_RE.fullmatch(text):
        raise BadInput(f"bad id {shown(whole)}: cube part {shown(text)} is not of the form cNN (e.g. c07)")
    return _written_cube(text)


def _written_cube(text: str) -> str:
    """A cube name matching _CUBE_RE, as tpufleet writes it (`c7`, `c007`: `c07`)."""
    return cube_name(int(text[1:]))


def _written_pod(text: str) -> str:
    """A pod name matching _POD_RE, as tpufleet writes it (`pod00`: `pod0`)."""
    return f"pod{int(text[3:])}"


def _int_in(text: str, lo: int, hi: int, what: str, whole: str) -> int:
    if not _NUMBER_RE.fullmatch(text or ""):
        problem = f"is outside {lo}-{hi}" if text.isascii() and text.isdigit() else "is not a whole number"
        raise BadInput(f"bad id {shown(whole)}: {what} {shown(text)} {problem}")
    value = int(text)
    if not lo <= value <= hi:
        raise BadInput(f"bad id {shown(whole)}: {what} {value} is outside {lo}-{hi}")
    return value


def _choice(text: str, options: tuple[str, ...], what: str, whole: str) -> str:
    if text not in options:
        raise BadInput(f"bad id {shown(whole)}: {what} {shown(text)} is not one of {', '.join(options)}")
    return text


class _Target:
    """What every target id shares: its kind, and its one string form `kind:key`."""

    kind: ClassVar[str]
    _key_form: ClassVar[str]  # the id after "kind:", a format of its fields

    @property
    def key(self) -> str:
        """The id without its kind prefix (an OCS's is its key in the state file)."""
        return self._key_form.format_map(vars(self))

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


@dataclass(frozen=True, order=True)
class CubeId(_Target):
    cube: str
    kind = "cube"
    _key_form = "{cube}"


@dataclass(frozen=True, order=True)
class HostId(_Target):
    cube: str
    machine: int
    kind = "host"
    _key_form = "{cube}/{machine}"


@dataclass(frozen=True, order=True)
class ChipId(_Target):
    cube: str
    x: int
    y: int
    z: int
    kind = "chip"
    _key_form = "{cube}/{x},{y},{z}"

    @property
    def machine(self) -> int:
        return machine_of(self.x, self.y, self.z)


@dataclass(frozen=True, order=True)
class IciId(_Target):
    cube: str
    x: int
    y: int
    z: int
    direction: str
    kind = "ici"
    _key_form = "{cube}/{x},{y},{z}/{direction}"


def canonical(target: TargetId) -> TargetId:
    """One name for one component: an electrical link has one from each end (`ici:c05/0,0,1/-z` is the cable of
    `ici:c05/0,0,0/+z`); its canonical name is the one from the end with the lower coordinate, going +.

    >>> str(canonical(parse_target("ici:c05/0,0,1/-z")))
    'ici:c05/0,0,0/+z'
    """
    if not isinstance(target, IciId) or target.direction[0] == "+":
        return target
    at = [target.x, target.y, target.z]
    at["xyz".index(target.direction[1])] -= 1
    return IciId(target.cube, at[0], at[1], at[2], "+" + target.direction[1])


@dataclass(frozen=True, order=True)
class LinkId(_Target):
    cube: str
    dim: str
    index: int
    polarity: str
    kind = "link"
    _key_form = "{cube}/{dim}/{index}/{polarity}"


@dataclass(frozen=True, order=True)
class OcsId(_Target):
    pod: str
    dim: str
    index: int
    kind = "ocs"
    _key_form = "{pod}/{dim}/{index}"

    @classmethod
    def from_key(cls, key: str) -> OcsId:
        """The inverse of `key`, for keys a schema has already checked."""
        pod, dim, index = key.split("/")
        return cls(pod, dim, int(index))


TargetId = CubeId | HostId | ChipId | IciId | LinkId | OcsId
KINDS = ("cube", "host", "chip", "ici", "link", "ocs")


def machine_of(x: int, y: int, z: int) -> int:
    """Machine (host) 0-15 holding chip (x, y, z): 2x2x1 blocks, x fastest, then y, then z."""
    return 4 * z + 2 * (y // 2) + (x // 2)


def machine_chips(machine: int) -> list[tuple[int, int, int]]:
    """The four chips (x, y, z) of a machine inside its cube."""
    bx, by, z = 2 * (machine % 2), 2 * ((machine // 2) % 2), machine // 4
    return [(bx + dx, by + dy, z) for dy in range(2) for dx in range(2)]


def face_index(dim: str, x: int, y: int, z: int) -> int:
    """Index 0-15 of the optical link leaving/entering the face of `dim` at chip (x, y, z)."""
    a, b = {"x": (y, z), "y": (x, z), "z": (x, y)}[dim]
    return CUBE_EDGE * a + b


def _coords(text: str, whole: str) -> tuple[int, int, int]:
    parts = text.split(",")
    if len(parts) != 3:
        raise BadInput(f"bad id {shown(whole)}: chip position {shown(text)} must be x,y,z")
    return tuple(_int_in(p, 0, CUBE_EDGE - 1, f"coordinate {DIMS[i]}", whole) for i, p in enumerate(parts))  # type: ignore[return-value]


def parse_target(text: str, known: Callable[[TargetId], bool] | None = None) -> TargetId:
    """Parse a typed target id; raise BadInput naming the bad part. An id is written one way: one written another
    (`host:c00/01`, `cube:c000`, `ocs:pod00/x/5`) is refused, naming the id it may have meant (as a state file's
    OCS key written another way is), rather than read as that id here and as no id there (an unknown cube).

    >>> parse_target("host:c00/01")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad id 'host:c00/01': did you mean host:c00/1? (an id is written as tpufleet writes it: cubes cNN, other numbers without leading zeros)
    """
    try:
        target = _parse(text)
    except BadInput as exc:
        near = near_id(text)
        near = near if near is None or known is None or known(_parse(near)) else None  # never one the fleet lacks
        raise BadInput(f"{exc}; did you mean {near}?" if near else str(exc)) from None
    if str(target) != text:
        form = _ONE_FORM.format(form="pods podN" if isinstance(target, OcsId) else "cubes cNN")
        if known is not None and not known(target):  # `cube:c9` in a fleet of c00-c07: no cube:c09 to name
            raise BadInput(f"bad id {shown(text)}: {form}")
        raise BadInput(f"bad id {shown(text)}: did you mean {target}? ({form})")
    return target


def meant_target(text: str) -> TargetId | None:
    """The id `text` names, written as tpufleet writes it or another way (`host:c00/01` is host:c00/1, which
    `parse_target` refuses); None when it names none. For an alert's resolution only: the fault its firing opened
    before ids had one form is still cleared."""
    try:
        return _parse(text)
    except BadInput:
        return None


_ONE_FORM = "an id is written as tpufleet writes it: {form}, other numbers without leading zeros"


def near_id(text: str) -> str | None:
    """The id a mistyped one may mean, for a refusal's `did you mean`: its kind left out (`c07` is cube:c07,
    `c07/3` host:c07/3), misspelt (`hots:c07/3`) or in capitals (`HOST:C07/3`); None when no guess names an id.

    >>> near_id("c07"), near_id("c07/3"), near_id("HOST:C07/3"), near_id("hots:c07/3"), near_id("zz")
    ('cube:c07', 'host:c07/3', 'host:c07/3', 'host:c07/3', None)
    """
    import difflib

    typed = text.strip().lower() if isinstance(text, str) else ""
    kind, colon, rest = typed.partition(":")
    if not colon:
        guesses = [f"{each}:{typed}" for each in KINDS]
    else:
        guesses = [f"{each}:{rest}" for each in [kind, *difflib.get_close_matches(kind, KINDS, n=1, cutoff=0.5)]]
    for guess in guesses:
        try:
            return str(_parse(guess))
        except BadInput:
            continue
    return None


def _parse(text: str) -> TargetId:
    """The id `text` names, its numbers read whatever their leading zeros (`parse_target` checks the form)."""
    if not isinstance(text, str) or ":" not in text:
        raise BadInput(f"bad id {shown(text)}: expected KIND:..., KIND one of {', '.join(KINDS)}")
    kind, _, rest = text.partition(":")
    parts = rest.split("/")
    expected = {"cube": 1, "host": 2, "chip": 2, "ici": 3, "link": 4, "ocs": 3}
    if kind not in expected:
        raise BadInput(f"bad id {shown(text)}: kind {shown(kind)} is not one of {', '.join(KINDS)}")
    if len(parts) != expected[kind]:
        raise BadInput(
            f"bad id {shown(text)}: a {kind} id has {expected[kind]} part(s) separated by '/', got {len(parts)}"
        )
    if kind == "ocs":
        if not _POD_RE.fullmatch(parts[0]):
            raise BadInput(f"bad id {shown(text)}: pod part {shown(parts[0])} is not of the form podN")
        dim = _choice(parts[1], DIMS, "dimension", text)
        return OcsId(_written_pod(parts[0]), dim, _int_in(parts[2], 0, FACE_LINKS - 1, "index", text))
    cube = _cube(parts[0], text)
    if kind == "cube":
        return CubeId(cube)
    if kind == "host":
        return HostId(cube, _int_in(parts[1], 0, MACHINES_PER_CUBE - 1, "machine", text))
    if kind == "chip":
        return ChipId(cube, *_coords(parts[1], text))
    if kind == "ici":
        x, y, z = _coords(parts[1], text)
        direction = _choice(parts[2], DIRECTIONS, "direction", text)
        axis, sign = DIMS.index(direction[1]), direction[0]
        coord = (x, y, z)[axis]
        if (sign == "+" and coord == CUBE_EDGE - 1) or (sign == "-" and coord == 0):
            raise BadInput(
                f"bad id {shown(text)}: direction {direction} leaves the cube; that is an optical link (link:...)"
            )
        return IciId(cube, x, y, z, direction)
    dim = _choice(parts[1], DIMS, "dimension", text)
    index = _int_in(parts[2], 0, FACE_LINKS - 1, "index", text)
    return LinkId(cube, dim, index, _choice(parts[3], POLARITIES, "polarity", text))


def meant(name: str, known: Collection[str]) -> str:
    """For a message refusing cube or pod `name` as unknown: ` (did you mean c07?)` when it is one of `known` written
    another way (`c7`, `c007`; `pod00`), as `parse_target` says it of an id; else nothing.

    >>> meant("c007", ["c07"]), meant("pod00", ["pod0"]), meant("c99", ["c07"]), meant("C07", ["c07"])
    (' (did you mean c07?)', ' (did you mean pod0?)', '', ' (did you mean c07?)')
    """
    if _CUBE_RE.fullmatch(name.lower()):
        written = _written_cube(name.lower())
    elif _POD_RE.fullmatch(name.lower()):
        written = _written_pod(name.lower())
    else:
        return ""
    return f" (did you mean {written}?)" if written != name and written in known else ""


def cube_name(number: int) -> str:
    """Fleet-wide cube id: c00..c63 in pod 0, c64..c127 in pod 1, ..."""
    return f"c{number:02d}"
