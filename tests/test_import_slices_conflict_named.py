"""A GKE Slice that `import slices` (and `drift`) cannot place on its cubes is a `conflict` whose reason names each
cube's problem and who holds it: one on cubes several tpufleet slices hold said `7 problems` and no more, in the
table and the JSON alike, and a single held cube said `held by a slice, or reserved for an evicted slice's move`."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-slices.json"


def _conflicts(cli, *args: str) -> dict[str, str]:
    d = cli("import", "slices", FIXTURE, *args, "-o", "json").json
    return {i["slice"]: i["reason"] for i in d["drift"] if i["kind"] == "conflict"}


def test_a_conflict_names_each_cube_and_its_holder(reserved):
    cubes = ",".join(f"c{i:02d}" for i in range(16))
    assert reserved("allocate", "train", "--shape", "8x8x16", "--cubes", cubes).code == 0
    assert reserved("allocate", "side", "--shape", "4x4x4", "--cubes", "c29").code == 0
    said = _conflicts(reserved)
    assert said["llm-train-0"].startswith("ACTIVE on c00,c01,c02,c03,c04,c05,c06,c07: cannot use the given cubes")
    assert "8 problems: c00 is already allocated (held by slice train); c01 is already allocated" in said["llm-train-0"]
    assert said["ft-job-0"].endswith("for 4x4x8: c29 is already allocated (held by slice side)"), said
    table = reserved("import", "slices", FIXTURE).out
    assert "c07 is already allocated (held by slice train)" in table


def test_a_cube_an_earlier_slice_of_the_list_takes_is_named_so(reserved, tmp_path):
    doc = json.loads(FIXTURE.read_text())
    first = next(s for s in doc["items"] if s["metadata"]["name"] == "eval-0")
    twin = json.loads(json.dumps(first))
    twin["metadata"]["name"], twin["metadata"]["uid"] = "eval-1", "5f0c0000-8d3e-4b6a-9c21-3a7e91d2ffff"
    doc["items"].append(twin)
    path = tmp_path / "slices.json"
    path.write_text(json.dumps(doc))
    d = reserved("import", "slices", path, "-o", "json").json
    said = {i["slice"]: i["reason"] for i in d["drift"] if i["kind"] == "conflict"}
    assert said["eval-1"].endswith("c26 is already allocated (taken by Slice eval-0 of this list)"), said
