"""A mapping file pinning a pod or cube the fleet lacks is refused by `import k8s` and `drift`; the exports that
read the same file (`export node-labels`, `export kueue-topology`) took it silently, a false "OK" for an operator
checking the file with an export. Every command now judges it alike: exit 2 naming the file, entry and value."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import one_line

NODES = Path(__file__).parent.parent / "fixtures/k8s/pod-64.json"
SHIPPED = Path(__file__).parent.parent / "fixtures/k8s/mapping.yaml"


@pytest.mark.parametrize(
    ("pins", "entry", "value"),
    [("pods:\n  hall-a: pod9\n", "pods.hall-a", "'pod9'"), ("cubes:\n  rack-a01: c999\n", "cubes.rack-a01", "'c999'")],
)
def test_every_command_reading_a_mapping_refuses_a_pin_the_fleet_lacks(fleet, tmp_path, pins, entry, value):
    mapping = tmp_path / "m.yaml"
    mapping.write_text("kind: tpufleet-k8s-mapping\nversion: 1\n" + pins)
    said = {}
    for args in (
        ("import", "k8s", NODES, "--mapping", mapping),
        ("export", "node-labels", "--mapping", mapping),
        ("export", "kueue-topology", "--mapping", mapping),
    ):
        line = one_line(fleet(*args))
        assert str(mapping) in line and f"field {entry}" in line and value in line, (args, line)
        said[args[:2]] = line
    assert len(set(said.values())) == 1  # the same verdict, word for word


def test_the_shipped_mapping_still_exports(fleet):
    for what in ("node-labels", "kueue-topology"):
        r = fleet("export", what, "--mapping", SHIPPED)
        assert r.code == 0, r.err
