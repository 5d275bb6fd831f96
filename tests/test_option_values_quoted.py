"""A bad value of a numeric option is quoted as typed, as every option's range names it (`'0' is not between 1 and
16`): `init --pods 0`, `allocate --slices 0`, `simulate-availability --cubes 0` and their like named it bare."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("allocate", "j", "--shape", "4x4x8", "--slices", "0"), "--slices: '0' is below 1"),
        (("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--elastic", "3"), "--elastic: '3' is above"),
        (("allocate", "j", "--shape", "4x4x8", "--pod", "pod0", "--pod", "pod1"), "--pod: 'pod0', 'pod1': a slice"),
        (("init", "--force", "--pods", "0"), "--pods: '0' is outside 1-64"),
        (("init", "--force", "--pods", "-1"), "--pods: '-1' is outside 1-64"),
        (("init", "--force", "--cubes-per-pod", "99"), "--cubes-per-pod: '99' is outside 1-68"),
        (("simulate-availability", "--cubes", "0", "--trials", "10"), "--cubes: '0' is outside 1-64"),
        (("simulate-availability", "--cubes", "1,01", "--trials", "10"), "--cubes: '01' is given twice (as '1')"),
        (("simulate-availability", "--chips", "100", "--trials", "10"), "--chips: '100' is not a whole number"),
        (("simulate-fleet", "--days", "1", "--spare-cubes", "64"), "--spare-cubes: '64' is above 63"),
    ],
)
def test_a_bad_value_is_quoted_as_typed_and_nothing_changes(fleet, args, said):
    before = snapshot(fleet.state)
    assert one_line(fleet(*args)).startswith(f"tpufleet: error: bad option {said}")
    assert snapshot(fleet.state) == before
