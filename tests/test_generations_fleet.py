"""Pods of a generation, through the command line: `init --generation`, the generation's shape rule on
`allocate` and `topology`, a whole TPU7x superpod (144 cubes, 9,216 chips) allocated, wired and routed, the
generation in every view and export, an old state (no generation: the built-in TPU v4 model) unchanged, and a
fleet mixing a v4 pod and a TPU7x pod written through the state file."""

from __future__ import annotations

import json
import random
from pathlib import Path

import networkx as nx
import pytest

from helpers import snapshot
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors


def state_doc(cli) -> dict:
    return json.loads((cli.state / "state.json").read_text())


def write_doc(cli, doc: dict) -> None:
    (cli.state / "state.json").write_text(json.dumps(doc))


@pytest.fixture
def superpod(cli):
    r = cli("init", "--generation", "tpu7x", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["generation"] == "tpu7x" and r.json["inventory"]["cubes"] == 144
    return cli


# ---- a whole TPU7x superpod ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_superpod_slice_takes_every_cube_is_wired_and_routed(superpod):
    cli = superpod
    r = cli("allocate", "big", "--shape", "24x16x24", "-o", "json")  # sides in any order: 16x24x24
    assert r.code == 0, r.err
    assert r.json["shape"] == "16x24x24" and len(r.json["cubes"]) == 144
    assert cli("status", "-o", "json").json["cubes"] == {"free": 0, "allocated": 144, "out": 0}
    r = cli("plan-xconnect", "big", "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["summary"]["add"] == 3 * 16 * 144  # 48 OCS, one pair per cube on each
    r = cli("routes", "big", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["unroutable_pairs"] == 0 and r.json["routable_pairs"] == 9216 * 9215
    assert cli("inject-fault", "ocs:pod0/x/5").code == 0  # fault-tolerant routing bridges a down OCS
    r = cli("routes", "big", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["unroutable_pairs"] == 0 and r.json["vcs"] <= 3


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("20x24x28", "bad shape 20x24x28 for tpu7x: 210 cubes, at most 144"),
        ("4x4x260", "bad shape 4x4x260 for tpu7x: a side is over 256"),
        ("6x8x8", "bad shape 6x8x8 for tpu7x: sides must be multiples of 4"),
        ("8x8x8 --twisted", "bad shape 8x8x8 twisted for tpu7x: twisted tori exist only for"),
    ],
)
def test_superpod_refuses_shapes_naming_the_rule_and_the_generation(superpod, shape, message):
    cli = superpod
    before = state_doc(cli)["serial"]
    r = cli("allocate", "s", "--shape", *shape.split())
    assert r.code == 2, r.err
    assert message in r.err
    assert state_doc(cli)["serial"] == before


def test_init_generation_defaults_and_limits(cli):
    r = cli("init", "--generation", "tpu7x", "--cubes-per-pod", "145")
    assert r.code == 2 and "outside 1-144 (a tpu7x OCS has 288 ports)" in r.err
    r = cli("init", "--generation", "tpu9")
    assert r.code == 2 and "unknown generation 'tpu9'; known: tpu-v4, tpu-v5p, tpu7x" in r.err
    r = cli("init", "--generation", "tpu-v5p", "--pods", "2", "-o", "json")
    assert r.code == 0, r.err
    pods = state_doc(cli)["fleet"]["pods"]
    assert [(p["generation"], len(p["cubes"])) for p in pods] == [("tpu-v5p", 140), ("tpu-v5p", 140)]
    assert pods[1]["cubes"][0] == "c140"


@pytest.mark.parametrize(
    "args",
    [
        ("init", "--force"),
        ("topology", "4x4x8"),
        ("simulate-fleet", "--days", "1"),
        ("simulate-availability", "--trials", "10"),
    ],
)
def test_an_unknown_generation_is_refused_naming_the_option(fleet, args):
    """`--generation tpu9` was refused as "unknown generation 'tpu9'", naming no option (on `init` beside
    `--cubes-per-pod`, `--pods`, ...); every command taking it now says `bad option --generation`, nothing
    changed."""
    before = snapshot(fleet.state)
    r = fleet(*args, "--generation", "tpu9")
    assert r.code == 2, r.err
    assert "bad option --generation: unknown generation 'tpu9'; known: tpu-v4, tpu-v5p, tpu7x" in r.err
    assert snapshot(fleet.state) == before


def test_v5p_takes_sides_in_any_order_and_its_own_limit(cli):
    assert cli("init", "--generation", "tpu-v5p", "--cubes-per-pod", "8").code == 0
    r = cli("allocate", "a", "--shape", "8x4x4", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["shape"] == "4x4x8"
    r = cli("allocate", "b", "--shape", "4x4x4", "--twisted")
    assert r.code == 2 and "for tpu-v5p: twisted tori exist only for" in r.err


# ---- topology against a BFS of an independent graph --------------------------------------------------------
@pytest.mark.parametrize(("shape", "generation"), [("12x12x36", None), ("16x24x24", "tpu7x")])
def test_topology_figures_equal_a_bfs(cli, shape, generation):
    args = ["topology", shape, "-o", "json"] + (["--generation", generation] if generation else [])
    r = cli(*args, state=False)
    assert r.code == 0, r.err
    m = r.json
    dims = tuple(int(s) for s in shape.split("x"))
    graph = nx.grid_graph(dim=list(dims), periodic=True)  # networkx's own torus, not tpufleet's
    n = graph.number_of_nodes()
    assert m["chips"] == n and m["links"] == graph.number_of_edges()
    # A torus is vertex-transitive: every source sees the same distances; check a few, and the diameter formula.
    rng = random.Random(7)
    sums, eccentricities = set(), set()
    for source in [(0, 0, 0), *rng.sample(sorted(graph.nodes), 3)]:
        dist = nx.single_source_shortest_path_length(graph, source)
        sums.add(sum(dist.values()))
        eccentricities.add(max(dist.values()))
    assert len(sums) == 1 and eccentricities == {m["diameter"]} == {sum(d // 2 for d in dims)}
    assert m["mean_hops"] == pytest.approx(sums.pop() / (n - 1), abs=1e-6)
    cuts = []
    sides = [1 + max(node[axis] for node in graph.nodes) for axis in range(3)]  # networkx's own axis order
    assert sorted(sides) == sorted(dims)
    for axis, side in enumerate(sides):  # links cut by the plane halving each axis
        half = side // 2
        cuts.append(sum(1 for u, v in graph.edges if (u[axis] < half) != (v[axis] < half)))
    assert m["bisection_links"] == min(cuts)
    # and tpufleet's own chip graph is the same torus
    nbr = neighbors(parse_shape(shape))
    assert int((nbr >= 0).sum()) == 2 * graph.number_of_edges()
    if generation:
        assert m["generation"] == generation


def test_topology_applies_a_generations_rule_only_when_asked(cli):
    assert cli("topology", "4x4x260", state=False).code == 0  # the built-in rule: sides multiples of 4
    r = cli("topology", "4x4x260", "--generation", "tpu7x", state=False)
    assert r.code == 2 and "bad shape 4x4x260 for tpu7x: a side is over 256" in r.err


@pytest.mark.parametrize(
    ("shape", "holders"),
    [
        ("4x4x4", ["tpu-v4", "tpu-v5p", "tpu7x"]),
        ("16x24x24", ["tpu7x"]),
        ("4x4x260", []),
        ("2x2x1", ["tpu-v4", "tpu-v5p", "tpu7x"]),
        ("8x8x16 --twisted", None),
    ],
)
def test_topology_without_a_generation_names_the_pods_that_hold_the_shape(cli, shape, holders):
    """A what-if under the general rule says which generations' pods could hold it: exactly those whose own rule
    (`--generation`) takes it."""
    args = shape.split()
    r = cli("topology", *args, "-o", "json", state=False)
    assert r.code == 0
    taken = [
        g for g in ("tpu-v4", "tpu-v5p", "tpu7x") if cli("topology", *args, "--generation", g, state=False).code == 0
    ]
    assert r.json["generations"] == taken
    if holders is not None:
        assert taken == holders
    table = cli("topology", *args, state=False).out
    assert ("none (no pod of these generations holds it)" in table) == (taken == [])


# ---- the generation in views and exports -------------------------------------------------------------------
def test_views_and_exports_carry_the_generation(superpod):
    cli = superpod
    assert cli("allocate", "s", "--shape", "4x4x8").code == 0
    assert cli("plan-xconnect", "s", "--apply").code == 0
    inventory = cli("show", "inventory", "-o", "json").json
    assert {row["generation"] for row in inventory} == {"tpu7x"}
    assert "generation" in cli("show", "inventory").out
    assert cli("status", "-o", "json").json["generations"] == {"pod0": "tpu7x"}
    assert "tpu7x" in cli("status").out.splitlines()[0]
    ocs = cli("show", "ocs", "-o", "json").json
    assert {(row["generation"], row["ports"]) for row in ocs} == {("tpu7x", 288)}
    pod_map = cli("show", "map", "-o", "json").json
    assert pod_map["pods"][0]["generation"] == "tpu7x"
    assert "pod pod0 (tpu7x): 144 cubes" in cli("show", "map").out
    report = cli("report", "-o", "json").json
    assert report["generations"] == {"pod0": "tpu7x"} and report["map"]["pods"][0]["generation"] == "tpu7x"
    assert "tpu7x" in cli("report", "-o", "html").out
    nodes = cli("export", "node-labels", "-o", "json").json["items"]
    assert {n["metadata"]["labels"]["cloud.google.com/gke-tpu-accelerator"] for n in nodes} == {"tpu7x"}
    kueue = cli("export", "kueue-topology", "-o", "json").json["items"]
    (flavor,) = [d for d in kueue if d["kind"] == "ResourceFlavor"]
    assert flavor["metadata"]["name"] == "tpufleet-tpu7x"
    (sl,) = cli("export", "slices", "-o", "json").json["items"]
    assert sl["spec"]["type"] == "tpu7x" and sl["spec"]["topology"] == "4x4x8"
    metrics = cli("metrics").out
    assert 'tpufleet_pod_generation_info{accelerator="tpu7x",generation="tpu7x",pod="pod0"} 1.0' in metrics


# ---- an old state, and a mixed fleet -----------------------------------------------------------------------
def test_a_state_without_generation_is_the_builtin_v4_model(fleet):
    cli = fleet
    doc = state_doc(cli)
    assert all("generation" not in p for p in doc["fleet"]["pods"])
    assert "generations" not in cli("status", "-o", "json").json
    assert all("generation" not in row for row in cli("show", "inventory", "-o", "json").json)
    assert "tpufleet_pod_generation" not in cli("metrics").out
    r = cli("allocate", "s", "--shape", "6x8x8")
    assert r.code == 2 and "bad shape '6x8x8': sides must all be <= 4 or all be multiples of 4" in r.err
    r = cli("init", "--force", "--cubes-per-pod", "69")
    assert r.code == 2 and "outside 1-68 (OCS has 136 ports)" in r.err
    assert cli("allocate", "s", "--shape", "4x4x8").code == 0
    r = cli("export", "slices", "-o", "json")  # tpu-v4-podslice is no type the Slice CRD accepts
    assert r.json["items"] == [] and "not tpu-v4-podslice" in r.err
    assert state_doc(cli)["fleet"] == doc["fleet"]  # written back without a generation


def test_a_mixed_fleet_written_in_the_state_file_allocates_by_each_pods_rule(fleet):
    cli = fleet
    doc = state_doc(cli)
    doc["fleet"]["pods"].append({"name": "pod1", "cubes": [f"c{64 + i}" for i in range(144)], "generation": "tpu7x"})
    write_doc(cli, doc)
    status = cli("status", "-o", "json").json
    assert status["generations"] == {"pod1": "tpu7x"} and status["inventory"]["cubes"] == 208
    assert "pod1 tpu7x (others: built-in tpu-v4)" in cli("status").out
    r = cli("allocate", "t", "--shape", "4x4x260", "--pod", "pod1")
    assert r.code == 2 and "bad shape 4x4x260 for tpu7x: a side is over 256" in r.err
    r = cli("allocate", "v", "--shape", "6x8x8", "--pod", "pod0")  # the built-in rule
    assert r.code == 2 and "sides must all be <= 4 or all be multiples of 4" in r.err
    r = cli("allocate", "small", "--shape", "4x4x8", "-o", "json")
    assert r.code == 0 and r.json["pod"] == "pod0"
    r = cli("allocate", "big", "--shape", "16x24x24", "-o", "json")  # pod0 has 62 free cubes: pod1 takes it
    assert r.code == 0 and r.json["pod"] == "pod1" and len(r.json["cubes"]) == 144
    nodes = cli("export", "node-labels", "-o", "json").json["items"]
    by_pod: dict[str, set[str]] = {}
    for n in nodes:
        labels = n["metadata"]["labels"]
        by_pod.setdefault(labels["tpufleet.io/pod"], set()).add(labels["cloud.google.com/gke-tpu-accelerator"])
    assert by_pod == {"pod0": {"tpu-v4-podslice"}, "pod1": {"tpu7x"}}
    r = cli("export", "slices", "-o", "json")
    types = {s["metadata"]["name"]: s["spec"]["type"] for s in r.json["items"]}
    assert types == {"big": "tpu7x"} and "skipped slice small" in r.err  # a v4 pod's slice has no CRD type
    flavors = [d["metadata"]["name"] for d in cli("export", "kueue-topology", "-o", "json").json["items"][1:]]
    assert flavors == ["tpufleet-tpu-v4-podslice", "tpufleet-tpu7x"]
    assert [p.get("generation") for p in state_doc(cli)["fleet"]["pods"]] == [None, "tpu7x"]


def test_a_v5p_pods_slices_are_never_exported_as_another_type(cli):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("allocate", "x", "--shape", "4x4x8").code == 0
    for extra in ((), ("--type", "tpu7x")):  # --type is for pods without a generation
        r = cli("export", "slices", *extra, "-o", "json")
        assert r.code == 0 and r.json["items"] == [], extra
        assert "not tpu-v5p-slice" in r.err and "tpu-v4-podslice" not in r.err


def test_a_type_no_slice_takes_is_said_on_stderr_not_ignored_silently(superpod):
    cli = superpod
    assert cli("allocate", "s", "--shape", "4x4x8").code == 0
    plain = cli("export", "slices", "-o", "json")
    assert plain.code == 0 and plain.err == ""
    for given in ("v6e", "tpu-v4-podslice"):  # the default, given: still a --type no Slice takes
        r = cli("export", "slices", "--type", given, "-o", "json")
        assert r.code == 0 and r.json == plain.json  # every pod has a generation: its Slices take its type
        (note,) = r.err.splitlines()
        assert note.startswith("tpufleet: note: ") and f"--type {given}" in note and "tpu7x" in note


def test_a_type_some_pod_takes_is_not_said_ignored(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    r = fleet("export", "slices", "--type", "v6e", "-o", "json")
    assert r.code == 0 and r.err == "" and [sl["spec"]["type"] for sl in r.json["items"]] == ["v6e"]


def test_in_a_mixed_fleet_moves_and_jobs_stay_on_their_generation(fleet):
    """A workload is built for one accelerator: a move never crosses generations, nor do a job's slices."""
    cli = fleet
    doc = state_doc(cli)
    doc["fleet"]["pods"].append({"name": "pod1", "cubes": [f"c{64 + i}" for i in range(144)], "generation": "tpu7x"})
    doc["fleet"]["pods"].append({"name": "pod2", "cubes": [f"c{208 + i}" for i in range(64)]})  # built-in v4 again
    write_doc(cli, doc)
    assert cli("allocate", "a", "--shape", "4x4x8", "--no-fault-tolerant-routing").code == 0
    assert cli("plan-xconnect", "a", "--apply").code == 0
    r = cli("inject-fault", "ocs:pod0/x/1", "-o", "json")  # pod0 cannot wire it: another v4 pod, never the tpu7x
    assert r.json["slices"][0]["replacement"]["pod"] == "pod2"
    r = cli("allocate", "j", "--shape", "4x4x8", "--slices", "3", "--spread", "-o", "json")
    assert r.code == 0, r.err
    pods = {s["pod"] for s in r.json["slices"]}
    assert pods <= {"pod0", "pod2"}, pods  # spread over the v4 pods only
    r = cli("allocate", "k", "--shape", "4x4x8", "--slices", "2", "--pod", "pod0,pod1")
    assert r.code == 2 and "one accelerator generation" in r.err


def test_a_state_file_pod_over_its_generations_ports_is_refused(fleet):
    cli = fleet
    doc = state_doc(cli)
    doc["fleet"]["pods"][0]["cubes"] += [f"c{64 + i}" for i in range(100)]  # 164 cubes
    doc["fleet"]["pods"][0]["generation"] = "tpu7x"
    write_doc(cli, doc)
    r = cli("status")
    assert r.code == 2 and "fleet.pods.0.cubes" in r.err and "a tpu7x pod has at most 144 cubes" in r.err
    doc["fleet"]["pods"][0]["generation"] = "tpu9"
    write_doc(cli, doc)
    r = cli("status")
    assert r.code == 2 and "fleet.pods.0.generation" in r.err


def test_a_tpu7x_collective_uses_tpu7x_figures(cli, tmp_path):
    """The same slice and payload on a TPU v4 pod and a TPU7x pod: the ICI links are 50 and 100 GB/s, so the
    bandwidth term halves exactly; a multislice job's DCN leg uses TPU7x's 100 Gb/s per chip (4 chips a host)."""
    from conftest import Cli

    v4, ironwood = Cli(cli.capsys, tmp_path / "v4"), Cli(cli.capsys, tmp_path / "tpu7x")
    assert v4("init").code == 0 and ironwood("init", "--generation", "tpu7x").code == 0
    figures = {}
    for name, run in (("v4", v4), ("tpu7x", ironwood)):
        assert run("allocate", "s", "--shape", "8x8x8").code == 0
        r = run("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
        assert r.code == 0, r.err
        figures[name] = r.json
    assert figures["tpu7x"]["profile"]["name"] == "tpu7x"
    assert figures["tpu7x"]["profile"]["link_bandwidth_Bps"] == 100e9
    assert figures["v4"]["bandwidth_s"] == pytest.approx(2 * figures["tpu7x"]["bandwidth_s"], rel=1e-12)
    assert ironwood("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    r = ironwood("collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["profile"]["dcn"]["host_bandwidth_Bps"] == 4 * 100e9 / 8


def test_simulate_fleet_places_jobs_on_144_cube_tpu7x_pods(cli, tmp_path):
    out = tmp_path / "events.jsonl"
    r = cli(
        "simulate-fleet", "--days", "2", "--pods", "2", "--generation", "tpu7x", "--out", out, "-o", "json", state=False
    )
    assert r.code == 0, r.err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    start, end = [x for x in records if x["type"] == "capacity"]  # as the run starts and as it ends
    assert (start["accelerator"], start["chips"]) == (end["accelerator"], end["chips"]) == ("tpu7x", 2 * 144 * 64)
    jobs = [x for x in records if x["type"] == "job"]
    assert jobs and {j["accelerator"] for j in jobs} == {"tpu7x"}
    assert r.json["jobs_submitted"] == len(jobs)
    assert r.json["generation"] == "tpu7x"  # the summary says which pods it simulated, as the events do
    text = cli("simulate-fleet", "--days", "2", "--pods", "2", "--generation", "tpu7x", state=False).out
    assert "2 tpu7x pod(s)" in text.splitlines()[0]
    default = cli("simulate-fleet", "--days", "1", "-o", "json", state=False).json
    assert default["generation"] == "tpu-v4"
    refused = cli("simulate-fleet", "--days", "1", "--generation", "tpu7x", "--mode", "static", state=False)
    assert refused.code == 2 and "static" in refused.err


def test_import_k8s_places_a_node_only_on_a_pod_of_its_accelerator(cli, tmp_path):
    """The fixture's TPU v4 nodes against a TPU7x superpod: none is placed, each saying why; relabelled as TPU7x
    nodes, they are placed exactly as the TPU v4 nodes are on a TPU v4 pod."""
    from conftest import Cli

    fixture = Path(__file__).parents[1] / "fixtures" / "k8s" / "pod-64.json"
    v4 = Cli(cli.capsys, tmp_path / "v4")
    assert v4("init").code == 0
    on_v4 = v4("import", "k8s", str(fixture), "-o", "json").json
    assert cli("init", "--generation", "tpu7x").code == 0
    r = cli("import", "k8s", str(fixture), "-o", "json")
    assert r.code == 0, r.err
    wrong = "no pod of the fleet takes tpu-v4-podslice nodes (its pods' nodes are tpu7x)"
    mismatched = [u for u in r.json["unplaced"] if u["reason"] == wrong]
    assert r.json["placed"] == 0 and len(mismatched) == on_v4["placed"] > 1000
    assert r.json["pods_named"] == [] and r.json["cubes_added"] == []  # refused nodes teach no names
    doc = json.loads(fixture.read_text())
    for node in doc["items"]:
        labels = node["metadata"]["labels"]
        if labels.get("cloud.google.com/gke-tpu-accelerator") == "tpu-v4-podslice":
            labels["cloud.google.com/gke-tpu-accelerator"] = "tpu7x"
    relabelled = tmp_path / "tpu7x-nodes.json"
    relabelled.write_text(json.dumps(doc))
    r = cli("import", "k8s", relabelled, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["placed"] == on_v4["placed"]
    assert [u["node"] for u in r.json["unplaced"]] == [u["node"] for u in on_v4["unplaced"]]


def test_simulate_availability_on_a_tpu7x_pod_is_the_binomial_of_144_cubes(cli):
    from scipy.stats import binom

    r = cli("simulate-availability", "--generation", "tpu7x", "--trials", "2000", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["pod_cubes"] == 144
    rows = {row["cubes"]: row for row in r.json["results"]}
    assert (max(rows) == 144 and 130 in rows) or 126 in rows
    cube_up = 0.99**16
    for k, row in rows.items():
        assert row["reconfigurable_ft"] == pytest.approx(float(binom.sf(k - 1, 144, cube_up)), rel=1e-12)
        assert "static" not in row and "static_boxes" not in row  # a 144-cube pod has no 4x4x4 static twin
    too_big = cli("simulate-availability", "--generation", "tpu7x", "--cubes", "145", state=False)
    assert too_big.code == 2 and "1-144" in too_big.err


def test_simulate_availability_of_tpu_v4_by_name_is_the_builtin_model(cli):
    """With --generation tpu-v4 the default sizes lacked 50, the paper's operating point (11 sizes, 12 without
    it): the same 64-cube pod gave another report by name."""
    named = cli("simulate-availability", "--generation", "tpu-v4", "--trials", "200", "-o", "json", state=False)
    builtin = cli("simulate-availability", "--trials", "200", "-o", "json", state=False)
    assert named.code == builtin.code == 0, named.err + builtin.err
    assert named.json == builtin.json and 50 in [row["cubes"] for row in named.json["results"]]
