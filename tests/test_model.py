from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpufleet.errors import BadInput
from tpufleet.ids import TargetId, machine_chips, machine_of, parse_target
from tpufleet.model import (
    all_ocs,
    cube_chips,
    cube_hosts,
    cube_ici_links,
    cube_optical_links,
    default_fleet,
    link_at_port,
    ocs_port_of,
    optical_links,
)


def test_pod_counts():
    fleet = default_fleet()
    cubes = fleet.cubes
    assert len(cubes) == 64
    assert all(len(cube_chips(c)) == 64 for c in cubes)
    assert all(len(cube_hosts(c)) == 16 for c in cubes)
    assert all(len(cube_optical_links(c)) == 96 for c in cubes)
    # 4x4x4 mesh without wraparound: 3 * 16 links per dimension, both directions
    assert len(cube_ici_links("c00")) == 2 * 3 * 3 * 16
    assert len(all_ocs(fleet)) == 48
    assert len(optical_links(fleet)) == 6144


def test_every_ocs_has_128_ports_in_use_and_cabling_round_trips():
    fleet = default_fleet()
    used: dict = {}
    for link in optical_links(fleet):
        ocs, side, port = ocs_port_of(fleet, link)
        key = (ocs, side, port)
        assert key not in used, "two links on one port"
        used[key] = link
        assert link_at_port(fleet, ocs, side, port) == link
        assert (side == "north") == (link.polarity == "out")
        assert (ocs.dim, ocs.index) == (link.dim, link.index)
    per_ocs = Counter(ocs for ocs, _side, _port in used)
    assert len(per_ocs) == 48 and set(per_ocs.values()) == {128}


def test_ids_unique_and_round_trip_for_a_whole_two_pod_fleet():
    fleet = default_fleet(pods=2)
    assert fleet.cubes[7] == "c07" and fleet.cubes[71] == "c71"
    assert fleet.cube_pod["c71"] == "pod1"
    ids: list[TargetId] = []
    for cube in fleet.cubes[:3] + fleet.cubes[-2:]:
        ids += [*cube_chips(cube), *cube_hosts(cube), *cube_ici_links(cube), *cube_optical_links(cube)]
    ids += all_ocs(fleet)
    texts = [str(i) for i in ids]
    assert len(set(texts)) == len(texts)
    for ident, text in zip(ids, texts, strict=True):
        assert parse_target(text) == ident


def test_machines_partition_the_cube():
    seen = set()
    for m in range(16):
        chips = machine_chips(m)
        assert len(chips) == 4
        assert all(machine_of(*c) == m for c in chips)
        seen.update(chips)
    assert len(seen) == 64


@pytest.mark.parametrize(
    "text, part",
    [
        ("chip:c07/1,2,9", "coordinate z 9"),
        ("chip:c07/1,2", "x,y,z"),
        ("host:c07/16", "machine 16"),
        ("link:c07/w/5/out", "dimension 'w'"),
        ("link:c07/x/5/sideways", "polarity 'sideways'"),
        ("ocs:p0/x/1", "pod part 'p0'"),
        ("cube:rack7", "cube part 'rack7'"),
        ("ici:c07/3,0,0/+x", "leaves the cube"),
        ("gpu:c07", "kind 'gpu'"),
        ("c07", "expected KIND"),
    ],
)
def test_bad_ids_name_the_bad_part(text, part):
    with pytest.raises(BadInput) as err:
        parse_target(text)
    assert part in str(err.value)


@given(st.text(max_size=30))
def test_any_text_parses_and_round_trips_or_is_rejected(text):
    try:
        target = parse_target(text)
    except BadInput as exc:
        assert "\n" not in str(exc)
        return
    assert parse_target(str(target)) == target
