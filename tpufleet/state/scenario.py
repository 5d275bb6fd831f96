"""Fault scenario files for `inject-fault --from`: a YAML or JSON list of faults.

Each item is a target id, or an object ``{target, planned?, reason?}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpufleet.errors import BadInput, BadStateFile
from tpufleet.state.schema import check

SCENARIO_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["target"],
        "additionalProperties": False,
        "properties": {"target": {"type": "string"}, "planned": {"type": "boolean"}, "reason": {"type": "string"}},
    },
}


def read(path: Path) -> list[dict[str, Any]]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BadStateFile(str(path), "", None, f"not valid YAML/JSON ({str(exc).splitlines()[0]})") from None
    if isinstance(data, list):  # a bare string is shorthand for {target: ...}
        data = [{"target": d} if isinstance(d, str) else d for d in data]
    check(SCENARIO_SCHEMA, data, str(path))
    if not data:
        raise BadInput(f"{path}: the scenario lists no faults")
    return data  # type: ignore[no-any-return]
