"""`wiring.build` (numpy) gives exactly what the chip-by-chip original gives (tests/oracles/wiring_reference.py):
neighbours, missing and miswired links, reachable chips; on healthy, twisted, sub-cube, faulty and rewired slices."""

import numpy as np
import pytest

from helpers import add_fault
from oracles.wiring_reference import build_chip_by_chip
from tpufleet import wiring
from tpufleet.fleetstate import Change
from tpufleet.ids import OcsId
from tpufleet.state import Store


def same_graph(state_dir):
    state = Store(state_dir).load()
    for sl in state.slices.values():
        args = (sl, state.fleet, state.ocs, state.health())
        new, old = wiring.build(*args), build_chip_by_chip(*args)
        assert np.array_equal(new.nbr, old.nbr) and np.array_equal(new.expected, old.expected)
        assert new.chip_names == old.chip_names
        assert (new.missing, new.miswired, new.reachable) == (old.missing, old.miswired, old.reachable)


SLICES = [
    ("8x8x8", []),
    ("4x4x8", ["--twisted"]),
    ("4x8x8", ["--twisted"]),
    ("4x4x4", []),
    ("2x2x2", []),
    ("2x4x4", []),
]
FAULTS = [
    [],
    ["ocs:pod0/x/5"],
    ["ocs:pod0/y/3", "ocs:pod0/z/11"],
    ["link:{cube}/x/3/out", "link:{cube}/z/7/in"],
    ["chip:{cube}/1,2,3"],
    ["ici:{cube}/0,0,0/+x", "ici:{cube}/3,3,3/-z"],
    ["host:{cube}/5"],
]


@pytest.mark.parametrize("shape, extra", SLICES)
@pytest.mark.parametrize("faults", FAULTS)
def test_vectorized_wiring_equals_the_chip_by_chip_one(fleet, shape, extra, faults):
    assert fleet("allocate", "s", "--shape", shape, *extra).code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    cube = Store(fleet.state).load().slices["s"].cubes[0]
    for target in faults:
        add_fault(fleet.state, target.format(cube=cube))
    same_graph(fleet.state)


def test_swapped_fibres_and_a_missing_cross_connect_are_found_alike(fleet):
    assert fleet("allocate", "s", "--shape", "8x8x8").code == 0
    assert fleet("allocate", "u", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("plan-xconnect", "u", "--apply").code == 0
    with Store(fleet.state).transaction() as tx:
        ocs = OcsId("pod0", "x", 2)
        (n0, s0), (n1, s1), *rest = sorted(tx.state.ocs[ocs])
        tx.state.ocs[ocs] = frozenset([(n0, s1), (n1, s0), *rest])  # two fibres swapped
        z = OcsId("pod0", "z", 0)
        tx.state.ocs[z] = frozenset(sorted(tx.state.ocs[z])[1:])  # one cross-connect gone
        tx.commit(Change("test: rewire by hand"))
    same_graph(fleet.state)
