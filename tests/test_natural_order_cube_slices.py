"""The sub-cube slices sharing a cube are named as the fleet counts them (s9 before s10) in `show inventory`,
`show map` and the report's map (its JSON and the page's hover titles), as `explain` of the cube names them: the
state file keeps its slices in the text order of their names."""

from __future__ import annotations

import re

COUNTED = ["sub1", "sub9", "sub10"]


def _shared_cube(fleet) -> None:
    for name in ("sub10", "sub9", "sub1"):
        assert fleet("allocate", name, "--shape", "2x2x1").code == 0
    cubes = {s["name"]: s["cubes"] for s in fleet("show", "slices", "-o", "json").json}
    assert cubes["sub1"] == cubes["sub9"] == cubes["sub10"] == ["c00"]


def test_the_slices_of_a_shared_cube_are_listed_as_counted(fleet):
    _shared_cube(fleet)
    assert fleet("explain", "cube:c00", "-o", "json").json["slices"] == COUNTED
    assert fleet("show", "inventory", "-o", "json").json[0]["slices"] == COUNTED
    assert fleet("show", "map", "-o", "json").json["pods"][0]["cubes"][0]["slices"] == COUNTED
    assert fleet("report", "-o", "json").json["map"]["pods"][0]["cubes"][0]["slices"] == COUNTED
    page = fleet("report", "-o", "html").out
    title = re.search(r"<title>cube c00 \(position 0\)[^<]*</title>", page)
    assert title is not None
    assert re.findall(r"slice (sub\d+)", title.group(0)) == COUNTED
