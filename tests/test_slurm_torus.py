"""`export slurm-topology --plugin torus3d --format yaml`: Slurm 26.05's topology/torus3d (topology.yaml(5),
"Torus3d definitions"). Checked against the man page's keys and rules (a region's node count equals its cells,
regions inside the torus without overlap, placements inside the torus), the machine order of `ids.machine_of`
(x-major, as the plugin maps a region's nodes), and an independent enumeration of the shapes that fit."""

from __future__ import annotations

from itertools import permutations

import pytest
import yaml
from test_fleetio_export import expand
from test_fleetio_import import FIXTURE

from helpers import one_line, snapshot
from tpufleet.ids import machine_chips
from tpufleet.state.generations import shipped

TORUS_KEYS = {"name", "dims", "regions", "placements"}
REGION_KEYS = {"anchor", "dims", "nodes"}
PLACEMENT_KEYS = {"dims", "anchor_seed", "anchor_spacing"}


def _vec(d: dict) -> tuple[int, int, int]:
    assert set(d) == {"x", "y", "z"} and all(isinstance(v, int) and v >= 0 for v in d.values())
    return d["x"], d["y"], d["z"]


def _torus(cli) -> dict:
    r = cli("export", "slurm-topology", "--plugin", "torus3d", "--format", "yaml")
    assert r.code == 0, r.err
    doc = yaml.safe_load(r.out)
    assert [set(t) for t in doc] == [{"topology", "cluster_default", "torus3d"}]
    assert doc[0]["cluster_default"] is True and set(doc[0]["torus3d"]) == {"toruses"}
    return doc[0]["torus3d"]["toruses"]


def _cells(torus: dict) -> dict[tuple[int, int, int], str]:
    """Coordinate -> node, each region's nodes in x-major order (x fastest), as the plugin maps them."""
    dims, cells = _vec(torus["dims"]), {}
    for region in torus["regions"]:
        assert set(region) == REGION_KEYS
        (ax, ay, az), (dx, dy, dz) = _vec(region["anchor"]), _vec(region["dims"])
        assert ax + dx <= dims[0] and ay + dy <= dims[1] and az + dz <= dims[2]  # no wrap-around for regions
        nodes = expand(region["nodes"])
        assert len(nodes) == dx * dy * dz  # the plugin refuses a region whose node count differs
        coords = [(ax + x, ay + y, az + z) for z in range(dz) for y in range(dy) for x in range(dx)]
        for coord, node in zip(coords, nodes, strict=True):
            assert coord not in cells  # regions must not overlap
            cells[coord] = node
    return cells


def test_a_tpu7x_superpod_is_one_torus_of_its_hosts_in_machine_order(cli):
    assert cli("init", "--generation", "tpu7x").code == 0
    (torus,) = _torus(cli)
    assert set(torus) == TORUS_KEYS and torus["name"] == "pod0"
    assert _vec(torus["dims"]) == (8, 12, 24)  # 4x6x6 cubes of 2x2x4 hosts: 9,216 chips
    cells = _cells(torus)
    assert len(cells) == 8 * 12 * 24 and len(set(cells.values())) == 2304
    for (x, y, z), node in cells.items():
        cube, machine = (x // 2) + 4 * (y // 2) + 24 * (z // 4), int(node.rsplit("-m", 1)[1])
        assert node.startswith(f"tpu-c{cube:02d}-")
        # the machine holding chips (2x', 2y', z') of the cube: the same host coordinate
        assert (2 * (x % 2), 2 * (y % 2), z % 4) == machine_chips(machine)[0]


def _offered(generation: str | None) -> set[tuple[int, int, int]]:
    """The plain shapes a pod offers, enumerated here: xpk's list for a shipped generation; for the built-in TPU
    v4 model of 64 cubes, sides multiples of 4 in any order up to 64 cubes, and the four sub-cube shapes."""
    if generation is not None:
        return set(shipped(generation).accepted_shapes())
    sides = range(4, 257, 4)
    whole = {(a, b, c) for a in sides for b in sides for c in sides if a * b * c <= 64 * 64}
    return whole | {(2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4)}


@pytest.mark.parametrize(("generation", "dims"), [("tpu7x", (8, 12, 24)), ("tpu-v5p", (8, 10, 28)), (None, (8, 8, 16))])
def test_placements_are_exactly_the_generations_shapes_that_fit(cli, generation, dims):
    assert cli("init", *(["--generation", generation] if generation else [])).code == 0
    (torus,) = _torus(cli)
    assert _vec(torus["dims"]) == dims
    got = []
    for p in torus["placements"]:
        assert set(p) <= PLACEMENT_KEYS
        hosts = _vec(p["dims"])
        assert all(h <= t for h, t in zip(hosts, dims, strict=True))
        if "anchor_spacing" in p:  # whole cubes: anchored on cube corners
            assert _vec(p["anchor_spacing"]) == (2, 2, 4)
            assert hosts[0] % 2 == hosts[1] % 2 == hosts[2] % 4 == 0
        got.append(hosts)
    expected = set()
    for shape in _offered(generation):
        canonical = tuple(sorted(shape))
        for x, y, z in permutations(shape):
            if x % 2 == 0 and y % 2 == 0 and x // 2 <= dims[0] and y // 2 <= dims[1] and z <= dims[2]:
                expected.add(canonical)
                break
    assert {(1, 2, 2), (2, 2, 2), (2, 2, 4), (2, 4, 4)} <= expected  # every sub-cube shape fits a cube
    sizes = sorted(h[0] * h[1] * h[2] for h in got)
    assert len(got) == len(expected) and sizes == sorted(s[0] * s[1] * s[2] // 4 for s in expected)


def test_an_imported_fleet_leaves_cubes_without_all_their_nodes_unmapped(cli, tmp_path):
    assert cli("init").code == 0
    assert cli("import", "k8s", FIXTURE, "--apply").code == 0
    toruses = _torus(cli)
    nodes = {n for t in toruses for n in _cells(t).values()}
    imported = {n["metadata"]["name"] for n in cli("export", "node-labels", "-o", "json").json["items"]}
    assert nodes <= imported and nodes  # no invented node
    for t in toruses:
        assert all(len(expand(r["nodes"])) == 16 for r in t["regions"])


@pytest.mark.parametrize("file_format", ["conf", None])
def test_torus3d_is_only_written_as_topology_yaml(cli, file_format):
    assert cli("init").code == 0
    before = snapshot(cli.state)
    args = ["export", "slurm-topology", "--plugin", "torus3d"] + (["--format", file_format] if file_format else [])
    line = one_line(cli(*args), 2)
    assert "--plugin" in line and "torus3d" in line and "yaml" in line
    assert snapshot(cli.state) == before
