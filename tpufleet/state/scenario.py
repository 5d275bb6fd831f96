"""Fault scenario files for `inject-fault --from`: a YAML or JSON list of faults.

Each item is a target id, or an object ``{target, planned?, reason?}``. The file is read through
`inputfiles.load_yaml` (at most MAX_SPEC_BYTES, UTF-8, no anchors or aliases, bounded nesting); a scenario lists
at most MAX_FAULTS faults, ids of at most 256 characters and reasons of at most 1,024.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpufleet.constants import MAX_REASON_CHARS
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.state.inputfiles import check_finite, load_yaml
from tpufleet.state.schema import check

MAX_FAULTS = 10_000  # faults in one scenario file

SCENARIO_SCHEMA = {
    "type": "array",
    "maxItems": MAX_FAULTS,
    "items": {
        "type": "object",
        "required": ["target"],
        "additionalProperties": False,
        "properties": {
            "target": {"type": "string", "maxLength": 256},
            "planned": {"type": "boolean"},
            "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
        },
    },
}


def read(path: Path) -> list[dict[str, Any]]:
    # No field of a scenario is a number: the schema says what a NaN or infinity in one should be (text, a
    # boolean) rather than the generic "must be a finite number".
    data = load_yaml(path, "fault scenario file", finite=False)
    if isinstance(data, list):  # a bare string is shorthand for {target: ...}
        data = [{"target": d} if isinstance(d, str) else d for d in data]
        bad = next((i for i, d in enumerate(data) if not isinstance(d, dict)), None)
        if bad is not None:  # the schema would say "must be a mapping", though a target id is as good
            problem = "must be a target id (such as cube:c05) or a mapping {target, planned?, reason?}"
            raise BadStateFile(str(path), str(bad), data[bad], problem)
    check(SCENARIO_SCHEMA, data, str(path))
    check_finite(data, str(path))  # the schema admits no number, so this only guards a schema grown one
    if not data:
        raise BadInput(f"{path}: the scenario lists no faults")
    return data  # type: ignore[no-any-return]
