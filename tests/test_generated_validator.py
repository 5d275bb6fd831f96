"""The state schema's validator is kept generated (tpufleet/generated/state_validator.py), so no command compiles
it at start (0.06 s of each). It must be the one fastjsonschema makes from today's schema: a schema changed without
`python tools/make_state_validator.py` fails here; one made by another fastjsonschema is not used."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import fastjsonschema
import pytest

from tpufleet.generated import state_validator as made
from tpufleet.state import schema

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("make_state_validator", ROOT / "tools" / "make_state_validator.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kept_validator_was_made_from_todays_schema():
    assert schema.schema_key(schema.STATE_SCHEMA) == made.SCHEMA_KEY, "run: python tools/make_state_validator.py"


def test_the_kept_validator_is_what_the_tool_writes_now():
    if made.FASTJSONSCHEMA_VERSION != fastjsonschema.VERSION:
        pytest.skip(f"made by fastjsonschema {made.FASTJSONSCHEMA_VERSION}, {fastjsonschema.VERSION} installed")
    assert (ROOT / "tpufleet/generated/state_validator.py").read_text() == _tool().source()


def _refusal(doc: dict) -> str:
    with pytest.raises(Exception) as caught:
        schema.validate(doc, "state.json")
    return str(caught.value)


def test_the_kept_validator_is_used_and_another_schemas_is_not(fleet, monkeypatch):
    doc = json.loads((fleet.state / "state.json").read_text())
    bad = copy.deepcopy(doc)
    bad["faults"] = [{"id": "f1"}]
    schema._state_validator.cache_clear()
    try:
        if made.FASTJSONSCHEMA_VERSION == fastjsonschema.VERSION:
            assert schema._state_validator() is made.validate
        kept = _refusal(bad)
        monkeypatch.setattr(made, "SCHEMA_KEY", "another schema")
        schema._state_validator.cache_clear()
        assert schema._state_validator() is not made.validate
        assert _refusal(bad) == kept and "faults" in kept  # the same refusal, word for word
        assert schema.validate(doc, "state.json") == doc
    finally:
        schema._state_validator.cache_clear()
