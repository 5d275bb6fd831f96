"""`jsontext.dumps_indented` writes the standard library's indented text byte for byte (state files, plan files and
every command's JSON output go through it), checked against ``json.dumps`` itself."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpufleet import jsontext
from tpufleet.jsontext import dumps_indented


@pytest.fixture(autouse=True, scope="module")
def _every_document_through_the_formatter():
    """Small documents go the standard way unless msgspec is loaded: here every one goes through the formatter."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsontext, "FORMATTER_MIN_CHARS", 0)
        yield


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=()))  # any code point: controls, quotes, lone surrogates too
)
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
)


@given(documents, st.sampled_from([1, 2]), st.booleans(), st.booleans())
def test_the_text_is_the_standard_encoders(data, indent, sort_keys, ensure_ascii):
    expected = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=False)
    assert dumps_indented(data, indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii) == expected


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_as_the_standard_encoder_refuses_them(bad):
    with pytest.raises(ValueError):
        json.dumps({"a": [bad]}, indent=1, allow_nan=False)
    with pytest.raises(ValueError):
        dumps_indented({"a": [bad]}, 1)


def test_a_lone_surrogate_is_written_as_the_standard_encoder_writes_it():
    """A reason holding a file name's bad byte (surrogate-escaped) is saved, escaped or raw, as before."""
    data = {"reason": "bad \udcff byte", "list": ["\ud800"]}
    for ensure_ascii in (True, False):
        expected = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=ensure_ascii, allow_nan=False)
        assert dumps_indented(data, 1, sort_keys=True, ensure_ascii=ensure_ascii) == expected


def test_a_document_past_the_threshold_is_the_standard_text_too():
    doc = {f"slice-{i}": {"cubes": [f"c{j:03d}" for j in range(20)], "load": i / 7} for i in range(2000)}
    assert len(json.dumps(doc, separators=(",", ":"))) > 128 * 1024
    assert dumps_indented(doc, 1, sort_keys=True) == json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)


def test_float_and_enum_subclasses_are_written_as_their_plain_values():
    from enum import Enum

    class Word(str, Enum):
        ON = "on"

    class Exact(float):
        pass

    data = {"w": Word.ON, "f": Exact(0.1), "i": True}
    assert dumps_indented(data, 2) == json.dumps(data, indent=2, allow_nan=False)


def test_a_state_holding_an_escaped_lone_surrogate_can_still_be_changed(fleet):
    """Older versions saved a reason's bad byte as "\\udcff": every later commit must still write the state."""
    assert fleet("inject-fault", "ocs:pod0/x/1", "--reason", "placeholder").code == 0
    path = fleet.state / "state.json"
    path.write_text(path.read_text().replace('"placeholder"', '"bad \\udcff byte"'))
    assert "\\udcff" in path.read_text()
    r = fleet("allocate", "s", "--shape", "4x4x4")
    assert r.code == 0, r.err
    assert "\\udcff" in path.read_text()  # written back as it was read
