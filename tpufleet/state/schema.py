"""Schema of the state file (`state.json`) and the checks JSON Schema cannot express.

Errors name the file, the field path (dotted, list positions as numbers) and the offending value.
"""

from __future__ import annotations

import functools
from typing import Any

from tpufleet.constants import (
    ALERT_MARKS_KEPT,
    CUBE_EDGE,
    MACHINES_PER_CUBE,
    MAX_FAULT_ID_CHARS,
    MAX_REASON_CHARS,
    PORTS_PER_SIDE,
)
from tpufleet.doccheck import Schema, Validator, check, compiled
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.generations import MAX_POD_CUBES
from tpufleet.integrations.reservation_document import HEALTH_STATUSES, MAINTENANCE_STATUSES, MAINTENANCE_TYPES
from tpufleet.state import generations, inputfiles
from tpufleet.state.references import check_references

__all__ = ["SCHEMA_VERSION", "STATE_SCHEMA", "Schema", "Validator", "check", "compiled", "validate"]

SCHEMA_VERSION = 1

_CUBE = {"type": "string", "pattern": r"^c[0-9]{2,}\Z"}
_POD = {"type": "string", "pattern": r"^pod[0-9]+\Z"}
_NAME = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"}
_TIME = {"type": "string", "minLength": 1}  # checked as a time by `timefields.check_times`
# serials stay exact as JSON numbers everywhere (a dashboard reads them as doubles): 2^53 - 1 is 285 years of
# a commit every microsecond
MAX_SERIAL = 2**53 - 1
_SERIAL = {"type": "integer", "minimum": 0, "maximum": MAX_SERIAL}
_REASON = {"type": "string", "maxLength": MAX_REASON_CHARS}
_COORDS = {
    "type": "object",
    "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 3, "maxItems": 3},
}
_MACHINES = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": MACHINES_PER_CUBE - 1},
    "uniqueItems": True,
}
_ORIGIN = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": CUBE_EDGE - 1},
    "minItems": 3,
    "maxItems": 3,
}

# Kubernetes names: a label value (at most 63 characters) for blocks and partitions, a DNS subdomain for nodes.
_LABEL_VALUE = {"type": "string", "pattern": r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"}
_NODE_NAME = {"type": "string", "maxLength": 253, "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\Z"}
_TOPOLOGY_LABEL = {"type": "string", "pattern": r"^[1-9][0-9]{0,2}x[1-9][0-9]{0,2}x[1-9][0-9]{0,2}\Z"}
_K8S = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "blocks": {"type": "object", "propertyNames": _LABEL_VALUE, "additionalProperties": {"type": "string"}},
        "partitions": {"type": "object", "propertyNames": _LABEL_VALUE, "additionalProperties": _CUBE},
        "sub_blocks": {"type": "object", "propertyNames": _CUBE, "additionalProperties": _LABEL_VALUE},
        "nodes": {
            "type": "object",
            "propertyNames": _NODE_NAME,
            "additionalProperties": {"type": "string", "pattern": r"^host:c[0-9]{2,6}/[0-9]{1,2}\Z"},
        },
        "degraded_cubes": {"type": "array", "items": _CUBE, "uniqueItems": True},
        # node pools held as unplaced slices: pool name (a label value) -> shape, accelerator, pod, node names
        "node_pools": {
            "type": "object",
            "propertyNames": _LABEL_VALUE,
            "additionalProperties": {
                "type": "object",
                "required": ["shape", "accelerator", "pod", "nodes"],
                "additionalProperties": False,
                "properties": {
                    "shape": {"type": "string", "pattern": r"^[0-9]+x[0-9]+x[0-9]+\Z"},
                    "accelerator": _LABEL_VALUE,
                    "pod": _POD,
                    "nodes": {"type": "array", "items": _NODE_NAME, "uniqueItems": True},
                    "placed_cubes": {"type": "array", "items": _CUBE, "uniqueItems": True},
                    # its nodes' `gke-tpu-topology` values as written, when not just the shape's text
                    "topology": {"type": "array", "items": _TOPOLOGY_LABEL, "minItems": 1, "uniqueItems": True},
                },
            },
        },
    },
}

# A Compute Engine reservation: physical block -> pod, sub-block name (RFC 1035) -> its cube, health, maintenance.
_PHYSICAL_ID = {"type": "string", "maxLength": 128, "pattern": r"^[\x21-\x7e]*\Z"}
_COUNT = {"type": "integer", "minimum": 0}
_RESERVATION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "blocks": {"type": "object", "propertyNames": _PHYSICAL_ID, "additionalProperties": _POD},
        "sub_blocks": {
            "type": "object",
            "propertyNames": {"type": "string", "pattern": r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z"},
            "additionalProperties": {
                "type": "object",
                "required": ["cube", "block", "health"],
                "additionalProperties": False,
                "properties": {
                    "cube": _CUBE,
                    "block": _PHYSICAL_ID,
                    "health": {"enum": list(HEALTH_STATUSES)},
                    "healthy_hosts": _COUNT,
                    "degraded_hosts": _COUNT,
                    "sub_block": _PHYSICAL_ID,
                    "maintenance": {
                        "type": "object",
                        "required": ["status"],
                        "additionalProperties": False,
                        "properties": {
                            "status": {"enum": list(MAINTENANCE_STATUSES)},
                            "type": {"enum": list(MAINTENANCE_TYPES)},
                            "window_start": _TIME,
                            "window_end": _TIME,
                        },
                    },
                },
            },
        },
    },
}

# Multislice jobs: N identical slices (named in `slices`, each naming the job back), elastic or not.
_SHAPE_TEXT = {"type": "string", "pattern": r"^[0-9]+x[0-9]+x[0-9]+\Z"}
_JOBS = {
    "type": "object",
    "propertyNames": _NAME,
    "additionalProperties": {
        "type": "object",
        "required": ["shape", "twisted", "slices", "spread"],
        "additionalProperties": False,
        "properties": {
            "shape": _SHAPE_TEXT,
            "twisted": {"type": "boolean"},
            "slices": {"type": "array", "items": _NAME, "minItems": 1, "uniqueItems": True},
            "elastic_min": {"type": "integer", "minimum": 1},
            "spread": {"type": "boolean"},
            "created": _TIME,
        },
    },
}

# Alertmanager alerts that opened a fault, oldest first, remembered until they resolve (`tpufleet.ops.alerts`):
# bounded, whatever the fleet's age
_ALERT_MARKS = {
    "type": "array",
    "maxItems": ALERT_MARKS_KEPT,
    "items": {
        "type": "object",
        "required": ["fingerprint", "starts_at", "target", "fault"],
        "additionalProperties": False,
        "properties": {
            "fingerprint": {"type": "string", "pattern": r"^[0-9A-Za-z]{1,64}\Z"},
            "starts_at": {"type": "string", "minLength": 1, "maxLength": 64},
            "target": {"type": "string", "maxLength": 256},
            "fault": {"type": "string", "pattern": rf"^f[0-9]{{1,{MAX_FAULT_ID_CHARS - 1}}}\Z"},
        },
    },
}

STATE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema_version", "serial", "fleet", "faults", "slices", "ocs", "routes", "next_fault"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "serial": _SERIAL,
        "created": _TIME,
        "next_fault": {"type": "integer", "minimum": 1},
        "k8s": _K8S,
        "jobs": _JOBS,
        "reservation": _RESERVATION,
        "alert_marks": _ALERT_MARKS,
        # cube -> cleared unplanned faults moved to the journal (their count stays for plan-spares' history)
        "pruned_fault_history": {
            "type": "object",  # its keys: cubes of the fleet, checked by name below
            "additionalProperties": {"type": "integer", "minimum": 1, "maximum": MAX_SERIAL},
        },
        "fleet": {
            "type": "object",
            "required": ["pods"],
            "additionalProperties": False,
            "properties": {
                "pods": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "cubes"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "pattern": r"^pod[0-9]+\Z"},
                            "cubes": {
                                "type": "array",
                                "items": _CUBE,
                                "minItems": 1,
                                "maxItems": MAX_POD_CUBES,
                                "uniqueItems": True,
                            },
                            # a shipped generation profile; absent: the built-in TPU v4 model (older states)
                            "generation": {"enum": generations.names()},
                        },
                        # a pod of the built-in model: one cube per port on a side of its 136-port OCS; a pod of
                        # a generation: its OCS's ports, checked in `_check_pods`
                        "if": {"not": {"required": ["generation"]}},
                        "then": {"properties": {"cubes": {"maxItems": PORTS_PER_SIDE}}},
                    },
                }
            },
        },
        "faults": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "target", "planned", "opened", "cleared"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string", "pattern": r"^f[0-9]+\Z"},
                    "target": {"type": "string"},
                    "planned": {"type": "boolean"},
                    "reason": _REASON,
                    "opened": _TIME,
                    "cleared": {"type": ["string", "null"]},
                    "opened_serial": _SERIAL,
                    "window_start": _TIME,
                    "window_end": _TIME,
                },
            },
        },
        "slices": {
            "type": "object",
            "propertyNames": _NAME,
            "additionalProperties": {
                "type": "object",
                "required": ["shape", "twisted", "pod", "cubes", "coords", "state", "fault_tolerant_routing"],
                "additionalProperties": False,
                "properties": {
                    "shape": {"type": "string", "pattern": r"^[0-9]+x[0-9]+x[0-9]+\Z"},
                    "twisted": {"type": "boolean"},
                    "pod": {"type": "string", "pattern": r"^pod[0-9]+\Z"},
                    "cubes": {"type": "array", "items": _CUBE, "uniqueItems": True},
                    "coords": _COORDS,
                    "machines": _MACHINES,
                    "origin": _ORIGIN,
                    "state": {"enum": ["allocated", "connected", "degraded", "evicted"]},
                    "min_throughput": {"type": "number", "minimum": 0, "maximum": 1},
                    "reroute": {
                        "type": "object",
                        "required": ["all_to_all_retained", "vcs", "faults"],
                        "additionalProperties": False,
                        "properties": {
                            "all_to_all_retained": {"type": "number", "minimum": 0},
                            "vcs": {"type": "integer", "minimum": 0},
                            "faults": {"type": "array", "items": {"type": "string", "pattern": r"^f[0-9]+\Z"}},
                        },
                    },
                    "proposal": {
                        "type": "object",
                        "required": ["pod", "cubes", "coords"],
                        "additionalProperties": False,
                        "properties": {
                            "pod": {"type": "string", "pattern": r"^pod[0-9]+\Z"},
                            "cubes": {"type": "array", "items": _CUBE, "uniqueItems": True},
                            "coords": _COORDS,
                            "machines": _MACHINES,
                            "origin": _ORIGIN,
                        },
                    },
                    "fault_tolerant_routing": {"type": "boolean"},
                    "created": _TIME,
                    "connected_serial": {"type": ["integer", "null"]},
                    "evicted_by": _REASON,
                    "job": _NAME,
                },
            },
        },
        "ocs": {
            "type": "object",
            "propertyNames": {"pattern": r"^pod[0-9]+/[xyz]/[0-9]+\Z"},
            # each item [north, south]: checked in `_check_ocs` (with port reuse), ~25x faster than the schema
            "additionalProperties": {"type": "array"},
        },
        "routes": {
            "type": "object",
            "propertyNames": _NAME,
            "additionalProperties": {
                "type": "object",
                "required": [
                    "file",
                    "serial",
                    "made",
                    "algorithm",
                    "vcs",
                    "routable_pairs",
                    "unroutable_pairs",
                    "stale",
                ],
                "additionalProperties": False,
                "properties": {
                    "file": {"type": "string"},
                    "serial": _SERIAL,
                    "made": _TIME,
                    "algorithm": {"type": "string"},
                    "vcs": {"type": ["integer", "null"], "minimum": 0},
                    "routable_pairs": {"type": "integer", "minimum": 0},
                    "unroutable_pairs": {"type": "integer", "minimum": 0},
                    "stale": {"type": "boolean"},
                    "stale_reason": _REASON,
                    "tables_id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                },
            },
        },
    },
}


def _version() -> str:
    from tpufleet import __version__

    return __version__


def schema_key(schema: Schema) -> str:
    """A digest of the schema's JSON: what a generated validator names the schema it was made from by."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()


@functools.cache
def _state_validator() -> Validator:
    """The validator generated from STATE_SCHEMA and kept as a module (tools/make_state_validator.py), whose
    bytecode Python caches: compiling it at start cost every command 0.06-0.1 s. One made from another schema or
    by another fastjsonschema is not used: the validator is compiled then, as before."""
    import fastjsonschema

    from tpufleet.generated import state_validator as made

    if schema_key(STATE_SCHEMA) == made.SCHEMA_KEY and fastjsonschema.VERSION == made.FASTJSONSCHEMA_VERSION:
        return made.validate
    return compiled(STATE_SCHEMA)


def validate(doc: object, file: str) -> dict[str, Any]:
    """Validate a loaded state document: its schema version, the schema, then cross-references."""
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if type(version) is int and version != SCHEMA_VERSION:  # before its fields, which another version words otherwise
        raise BadStateFile(
            file,
            "schema_version",
            version,
            f"written by a newer tpufleet (this one, {_version()}, reads state schema {SCHEMA_VERSION}): run that "
            "tpufleet or a later one"
            if version > SCHEMA_VERSION
            else f"no state schema of tpufleet (this one reads schema {SCHEMA_VERSION})",
        )
    check(STATE_SCHEMA, doc, file, validator=_state_validator())
    assert isinstance(doc, dict)  # the schema's root is an object
    check_references(doc, file)
    return doc


# what a command that cannot read the state's own file says to do about it (3 a.m.: the way out, not only the byte)
DAMAGED_STATE_HINT = (
    "; the state file is damaged: put back a copy, pull it from a database it was pushed to (`tpufleet state pull "
    "URL DIR`), or start over (`tpufleet init --force`)"
)


def checked_state(raw: bytes, file: str, damaged_hint: str = "") -> dict[str, Any]:
    """The state document in `raw`, with every check a load makes: the size limit, strict UTF-8, JSON without NaN
    or Infinity, numbers written as integers where the schema wants integers, the schema, cross-references.
    `damaged_hint` ends the message of bytes that are not JSON at all (the state's own file)."""
    if len(raw) > inputfiles.MAX_STATE_BYTES:
        raise BadStateFile(file, "", len(raw), f"is over the {inputfiles.MAX_STATE_BYTES}-byte limit of a state file")
    # Nesting is bounded by the decoder's own recursion guard (the pre-scan `load_json` makes costs more than the
    # parse on a big state).
    try:
        doc = inputfiles.parse_json_state(inputfiles.decode_utf8(raw, file))
    except inputfiles.JsonProblem as exc:
        raise BadStateFile(file, "", exc.value, exc.problem + damaged_hint) from None
    except BadStateFile as exc:  # not UTF-8 (its offset named; the bytes there, shown after the hint, would read oddly)
        if not damaged_hint:
            raise
        raise BadStateFile(file, exc.field, NO_VALUE, exc.problem + damaged_hint) from None
    return validate(doc, file)
