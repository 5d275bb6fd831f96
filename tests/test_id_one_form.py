"""An id is written one way: `host:c00/01` was read as `host:c00/1` while `cube:c000` was an unknown cube and
`cube:c7` was "not of the form cNN". Every kind now refuses an id written another way (exit 2, nothing changed),
naming it as typed and the id it may have meant."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot

MEANT = [
    ("cube:c000", "cube:c00"),
    ("cube:c7", "cube:c07"),
    ("host:c00/01", "host:c00/1"),
    ("host:c000/1", "host:c00/1"),
    ("chip:c00/1,02,3", "chip:c00/1,2,3"),
    ("ici:c00/01,0,0/+x", "ici:c00/1,0,0/+x"),
    ("link:c00/x/05/out", "link:c00/x/5/out"),
    ("ocs:pod00/x/5", "ocs:pod0/x/5"),
    ("ocs:pod0/x/05", "ocs:pod0/x/5"),
]


@pytest.mark.parametrize(("typed", "meant"), MEANT)
def test_an_id_written_another_way_is_refused_naming_the_id_meant(fleet, typed, meant):
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", typed))
    assert line.startswith(f"tpufleet: error: bad id '{typed}': did you mean {meant}?")
    form = "pods podN" if typed.startswith("ocs:") else "cubes cNN"  # the form of the part it names first
    assert f"tpufleet writes it: {form}," in line
    assert snapshot(fleet.state) == before
    assert fleet("inject-fault", meant, "--dry-run").code == 0


def test_an_electrical_link_named_from_its_other_end_is_still_one_id(fleet):
    """`ici:c00/0,0,1/-z` is another name of one cable, not another way of writing one id: it is taken."""
    r = fleet("inject-fault", "ici:c00/0,0,1/-z", "-o", "json")
    assert r.code == 0, r.err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("allocate", "x", "--shape", "4x4x8", "--cubes", "c000,c01"),
            "--cubes: unknown cube 'c000' (did you mean c00?)",
        ),
        (("allocate", "x", "--shape", "4x4x4", "--cubes", "c7"), "--cubes: unknown cube 'c7' (did you mean c07?)"),
        (("allocate", "x", "--shape", "4x4x4", "--pod", "pod00"), "--pod: unknown pod 'pod00' (did you mean pod0?)"),
        (("reschedule", "x", "--avoid", "c003"), "--avoid: unknown cube 'c003' (did you mean c03?)"),
        (("allocate", "x", "--shape", "4x4x4", "--cubes", "C30"), "--cubes: unknown cube 'C30' (did you mean c30?)"),
        (("allocate", "x", "--shape", "4x4x4", "--pod", "Pod0"), "--pod: unknown pod 'Pod0' (did you mean pod0?)"),
        (("reschedule", "x", "--avoid", "C22"), "--avoid: unknown cube 'C22' (did you mean c22?)"),
    ],
)
def test_a_cube_or_pod_option_written_another_way_names_the_one_meant(fleet, args, said):
    """The options naming cubes and pods (not ids) refuse `c000` or `pod00` as unknown, as before, and say which
    one of the fleet it may mean, as an id written another way is told."""
    before = snapshot(fleet.state)
    assert one_line(fleet(*args)) == f"tpufleet: error: bad option {said}"
    assert snapshot(fleet.state) == before


def test_allocate_takes_a_cube_as_its_target_id_as_reschedule_avoid_does(fleet):
    """`--cubes cube:c30` was refused as an unknown cube, though `reschedule --avoid cube:c22` is taken."""
    r = fleet("allocate", "x", "--shape", "4x4x8", "--cubes", "cube:c30,c31", "-o", "json")
    assert r.code == 0, r.err
    assert fleet("show", "slices", "-o", "json").json[0]["cubes"] == ["c30", "c31"]
