"""YAML output that YAML 1.2 readers (kubectl, go-yaml, yq) read as the same data as the JSON: names that only YAML
1.2 reads as numbers (`1e3`, `0o17`) are quoted; everything still loads back to the same data."""

import re

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tpufleet.cli import yamltext

# YAML 1.2 core schema numbers, written here independently of tpufleet's pattern
YAML_1_2_INT_OR_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+")
# names allocate takes; the last ones go-yaml (kubectl) alone reads as booleans, or as numbers without the underscores
NUMBER_LIKE = ["1e3", "1E-3", "0o17", "0x1f", "12e10", "y", "N", "1_0e3", "0o1_7"]


@given(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12))
def test_any_printable_string_round_trips_and_1_2_numbers_are_quoted(text):
    out = yamltext.dump({"k": text}, sort_keys=False)
    assert yaml.safe_load(out) == {"k": text}
    if YAML_1_2_INT_OR_FLOAT.fullmatch(text.replace("_", "")) or text in ("y", "Y", "n", "N"):
        value = out.split(":", 1)[1].strip()
        assert value[0] in "'\"", out


def test_slices_named_like_numbers_are_quoted_in_every_yaml_output(cli, tmp_path):
    assert cli("init", "--generation", "tpu7x").code == 0
    for name in NUMBER_LIKE:
        assert cli("allocate", name, "--shape", "4x4x4").code == 0, name
    manifests = tmp_path / "slices.yaml"
    assert cli("export", "slices", "--out", manifests).code == 0
    shown = cli("show", "slices", "-o", "yaml")
    assert shown.code == 0
    texts = {"export slices": manifests.read_text(), "show slices -o yaml": shown.out}
    for what, text in texts.items():
        for name in NUMBER_LIKE:
            assert f"'{name}'" in text and not re.search(rf"[:-] {re.escape(name)}$", text, re.M), (what, name)
    names = {s["name"] for s in yaml.safe_load(shown.out)}
    assert names == set(NUMBER_LIKE) == {s["name"] for s in cli("show", "slices", "-o", "json").json}
    annotations = [
        d["metadata"]["annotations"]["tpufleet.io/slice"] for d in yaml.safe_load_all(texts["export slices"])
    ]
    assert sorted(annotations) == sorted(NUMBER_LIKE)
