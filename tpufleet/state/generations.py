"""The shipped generation profiles, ``tpufleet/data/generations/NAME.yaml``: read, schema-checked, converted.

Each file is read through `tpufleet.state.inputfiles.load_yaml` (bounded, no anchors, no NaN), checked against
`GENERATION_SCHEMA` (built from `tpufleet.generations.FIGURES`, so the schema and the converter hold the same
ranges), then turned into a `Generation` by `tpufleet.generations_document.from_document`, which also checks the figures
against each other. Every error names the file, the field and the value (exit 2).

>>> names()
['tpu-v4', 'tpu-v5p', 'tpu7x']
>>> shipped("tpu7x").pod_cubes, shipped("tpu-v5p").gke_accelerator
(144, 'tpu-v5p-slice')
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tpufleet.doccheck import Schema, check
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.generations import (
    FIGURES,
    LABEL_PATTERN,
    MAX_SOURCE_CHARS,
    NAME_PATTERN,
    REPAIR_KINDS,
    SCHEMA_VERSION,
    SECTIONS,
    SIDE_ORDERS,
    TWIST_FAMILIES,
    Figure,
    Generation,
)
from tpufleet.generations_document import from_document
from tpufleet.state.inputfiles import load_yaml

if TYPE_CHECKING:
    from tpufleet.collectives.profile import Profile

__all__ = ["DEFAULT", "GENERATION_SCHEMA", "SHIPPED_DIR", "document", "load", "named_by_option", "names", "shipped"]

SHIPPED_DIR: Final = Path(__file__).resolve().parents[1] / "data" / "generations"
DEFAULT: Final = "tpu-v4"  # `init` without --generation: today's behaviour
MAX_PROFILE_BYTES: Final = 64 * 1024

_SHAPE: Final = {
    "type": "array",
    "items": {"type": "integer", "minimum": 1, "maximum": 4},
    "minItems": 3,
    "maxItems": 3,
}


def _value_schema(spec: Figure) -> Schema:
    """The JSON Schema of one figure's value."""
    number = {"type": "integer" if spec.kind == "int" else "number", "minimum": spec.low, "maximum": spec.high}
    kinds: dict[str, Schema] = {
        "int": number,
        "number": number,
        "label": {"type": "string", "pattern": LABEL_PATTERN},
        "shape": _SHAPE,
        "shapes": {"type": "array", "items": _SHAPE, "minItems": 1, "maxItems": 64, "uniqueItems": True},
        "side_order": {"enum": list(SIDE_ORDERS)},
        "twists": {"type": "array", "items": {"enum": list(TWIST_FAMILIES)}, "maxItems": 64, "uniqueItems": True},
        "hours": {
            "type": "object",
            "required": list(REPAIR_KINDS),
            "additionalProperties": False,
            "properties": {
                kind: {"type": "number", "minimum": spec.low, "maximum": spec.high} for kind in REPAIR_KINDS
            },
        },
    }
    return kinds[spec.kind]


def _figure_schema(spec: Figure) -> Schema:
    return {
        "type": "object",
        "required": ["value", "source"],
        "additionalProperties": False,
        "properties": {
            "value": _value_schema(spec),
            "source": {"type": "string", "minLength": 1, "maxLength": MAX_SOURCE_CHARS, "pattern": r"\S"},
        },
    }


def _object(properties: dict[str, Schema]) -> Schema:
    return {"type": "object", "required": list(properties), "additionalProperties": False, "properties": properties}


def _schema() -> Schema:
    top: dict[str, Schema] = {
        "schema_version": {"const": SCHEMA_VERSION},
        "name": {"type": "string", "pattern": NAME_PATTERN},
        "title": {"type": "string", "minLength": 1, "maxLength": 64},
    }
    sections: dict[str, dict[str, Schema]] = {section: {} for section in SECTIONS}
    for path, spec in FIGURES.items():
        section, _, key = path.rpartition(".")
        (sections[section] if section else top)[key] = _figure_schema(spec)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_object({**top, **{s: _object(p) for s, p in sections.items()}}),
    }


GENERATION_SCHEMA: Final = _schema()


def load(path: Path | str) -> Generation:
    """A generation profile file: read (bounded), schema-checked, converted; BadStateFile naming file and field."""
    doc: Any = load_yaml(path, "generation profile", MAX_PROFILE_BYTES)
    check(GENERATION_SCHEMA, doc, str(path))
    return from_document(doc, str(path))


def document(name: str) -> dict[str, Any]:
    """The shipped profile document of generation `name`, checked (`shipped`), as plain data to send elsewhere
    (a sweep's workers make the `Generation` again with `from_document`)."""
    shipped(name)  # BadInput for an unknown name; BadStateFile for a malformed file
    doc: dict[str, Any] = load_yaml(SHIPPED_DIR / f"{name}.yaml", "generation profile", MAX_PROFILE_BYTES)
    return doc


def names() -> list[str]:
    """The shipped generations, sorted: the file names in tpufleet/data/generations/ without `.yaml`."""
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))


@functools.cache
def shipped(name: str) -> Generation:
    """The shipped generation `name` (BadInput listing the known ones if there is none by that name)."""
    known = names()
    if name not in known:
        raise BadInput(f"unknown generation {name!r}; known: {', '.join(known)}")
    path = SHIPPED_DIR / f"{name}.yaml"
    gen = load(path)
    if gen.name != name:
        raise BadStateFile(str(path), "name", gen.name, f"must be the file's name, {name}")
    return gen


# Names operators call a generation by that are not its profile's: the refusal names the profile meant.
_OTHER_NAMES = {"ironwood": "tpu7x", "tpu-v7": "tpu7x", "tpuv7": "tpu7x", "v7": "tpu7x"}


def named_by_option(name: str, option: str = "--generation") -> Generation:
    """The shipped generation a command-line option names: BadInput naming the option, the value and the known
    generations for a name that is none of them (`shipped`'s own message names no option: a state or spec file's
    field says where the name came from there)."""
    if name not in names():
        from tpufleet.text import meant_of

        known = names()
        alias = _OTHER_NAMES.get(name.strip().lower())
        meant = f"; did you mean {alias}?" if alias in known else meant_of(name, known)
        raise BadInput(f"bad option {option}: unknown generation {name!r}; known: {', '.join(known)}{meant}")
    return shipped(name)


class StepProfiles(Mapping[str, "Profile"]):
    """Each shipped generation's figures for a goodput job's modelled ideal step, by the generation's name and by
    its GKE accelerator label: the shipped TPU v4 profile with the generation's own ICI, peak FLOP/s, HBM and DCN
    (`collectives.profile.for_generation`, as `collective` and `simulate-fleet` use); TPU v4 keeps the shipped
    profile itself. The files are read on the first look-up, so a report whose jobs declare no model reads none.
    Holds nothing itself: it pickles to a worker process as it is."""

    def __getitem__(self, accelerator: str) -> Profile:
        return _step_profiles()[accelerator]

    def __iter__(self) -> Iterator[str]:
        return iter(_step_profiles())

    def __len__(self) -> int:
        return len(_step_profiles())


@functools.cache
def _step_profiles() -> dict[str, Profile]:
    from tpufleet.collectives.profile import default_profile, for_generation

    base = default_profile()
    table: dict[str, Profile] = {}
    for name in names():
        gen = shipped(name)
        profile = base if name == "tpu-v4" else for_generation(base, gen)
        table[name] = table[gen.gke_accelerator] = profile
    return table
