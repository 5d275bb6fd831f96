"""`tpufleet export`: node labels that import back to the same inventory and health, a Kueue Topology and
ResourceFlavor checked against the published field names and the exported nodes, Slurm topology.conf parsed back
(own hostlist expander) and checked against the fleet, and GKE Slice objects."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from test_fleetio_import import FIXTURE

from helpers import snapshot
from tpufleet.integrations.exports import MAX_SLICE_NAME

LEVEL_LIMIT = 16  # Kueue: a Topology has 1-16 levels
PARTITION_STATE = "cloud.google.com/gke-tpu-partition-4x4x4-state"
SLICE_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


@pytest.fixture
def imported(fleet):
    r = fleet("import", "k8s", FIXTURE, "--apply")
    assert r.code == 0, r.err
    return fleet


def open_faults(cli) -> set[tuple[str, bool]]:
    return {(f["target"], f["planned"]) for f in cli("faults", "-o", "json").json}


def expand(hostlist: str) -> list[str]:
    """Slurm's hostlist expression, written here from the man page's examples (tux[0-3,12,18-20])."""
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,]*)?", hostlist):
        m = re.fullmatch(r"(.*)\[([^\]]*)\](.*)", part)
        if m is None:
            names.append(part)
            continue
        for rng in m.group(2).split(","):
            lo, _, hi = rng.partition("-")
            width = len(lo)
            names += [f"{m.group(1)}{n:0{width}d}{m.group(3)}" for n in range(int(lo), int(hi or lo) + 1)]
    return names


def test_node_labels_round_trip_into_the_same_state_is_empty(imported, tmp_path):
    r = imported("export", "node-labels", "-o", "json")
    assert r.code == 0, r.err
    doc = r.json
    assert doc["kind"] == "List" and len(doc["items"]) == 1023  # the node missing from its partition stays missing
    path = tmp_path / "nodes.json"
    path.write_text(r.out)
    before = snapshot(imported.state)
    again = imported("import", "k8s", path, "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    assert not again.json["has_changes"] and again.json["unplaced"] == []
    assert snapshot(imported.state) == before


def test_a_node_name_too_long_for_a_label_is_written_without_a_hostname_label(fleet, tmp_path):
    """A node name may have 253 characters, a label value 63: `kubernetes.io/hostname` set to a longer name made
    a node list the API server (and `import k8s` of the export) refuses."""
    doc = fleet("export", "node-labels", "-o", "json").json
    node = doc["items"][0]
    node["metadata"]["name"] = "n" * 100
    del node["metadata"]["labels"]["kubernetes.io/hostname"]  # (as such a node would have no valid one)
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(doc))
    assert fleet("import", "k8s", nodes, "--apply").code == 0
    r = fleet("export", "node-labels", "-o", "json")
    assert r.code == 0, r.err
    long = next(n for n in r.json["items"] if n["metadata"]["name"] == "n" * 100)
    assert "kubernetes.io/hostname" not in long["metadata"]["labels"]
    nodes.write_text(r.out)
    again = fleet("import", "k8s", nodes, "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    assert not again.json["has_changes"]


def test_node_labels_into_a_fresh_state_give_the_same_inventory_and_health(imported, tmp_path, cli):
    path = tmp_path / "nodes.yaml"
    assert imported("export", "node-labels", "--out", path).code == 0
    original = json.loads((imported.state / "state.json").read_text())
    from conftest import Cli

    fresh = Cli(imported.capsys, tmp_path / "fresh")
    assert fresh("init").code == 0
    r = fresh("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    copy = json.loads((fresh.state / "state.json").read_text())
    assert copy["k8s"] == original["k8s"]
    assert open_faults(fresh) == open_faults(imported)


def test_faults_of_a_fleet_never_imported_come_back(fleet, tmp_path):
    for target, planned in (
        ("host:c03/4", False),
        ("cube:c10", False),
        ("host:c20/0", True),
        ("chip:c30/1,0,0", False),
    ):
        assert fleet("inject-fault", target, *(["--planned"] if planned else [])).code == 0
    out = tmp_path / "nodes.json"
    out.write_text(fleet("export", "node-labels", "-o", "json").out)
    from conftest import Cli

    fresh = Cli(fleet.capsys, tmp_path / "fresh")
    assert fresh("init").code == 0
    assert fresh("import", "k8s", out, "--apply").code == 0
    # a failed chip shows as its machine not Ready: it comes back as a machine fault
    expected = {("host:c03/4", False), ("cube:c10", False), ("host:c20/0", True), ("host:c30/0", False)}
    assert open_faults(fresh) == expected
    assert fresh("import", "k8s", out, "--detailed-exitcode").code == 0


def test_a_failed_machines_ready_message_ends_with_no_colon_when_its_fault_has_no_reason(fleet):
    """A fault injected without --reason gave its node the message `f1 chip:c30/1,0,0:`, a colon before nothing."""
    assert fleet("inject-fault", "chip:c30/1,0,0").code == 0
    assert fleet("inject-fault", "host:c31/2", "--reason", "fan").code == 0
    nodes = fleet("export", "node-labels", "-o", "json").json["items"]
    messages = {
        c["message"] for n in nodes for c in n["status"]["conditions"] if c["type"] == "Ready" and c["status"] != "True"
    }
    assert messages == {"f1 chip:c30/1,0,0", "f2 host:c31/2: fan"}


def test_tpufleet_labels_only(imported):
    doc = imported("export", "node-labels", "--tpufleet-labels-only", "-o", "json").json
    assert {tuple(sorted(n["metadata"]["labels"])) for n in doc["items"]} == {
        ("tpufleet.io/cube", "tpufleet.io/machine", "tpufleet.io/pod")
    }
    assert all(set(n) == {"apiVersion", "kind", "metadata"} for n in doc["items"])


def test_kueue_topology_matches_the_published_fields_and_the_nodes(imported):
    r = imported("export", "kueue-topology")
    assert r.code == 0, r.err
    topology, flavor = yaml.safe_load_all(r.out)
    assert topology["apiVersion"].startswith("kueue.x-k8s.io/") and topology["kind"] == "Topology"
    levels = [level["nodeLabel"] for level in topology["spec"]["levels"]]
    assert 1 <= len(levels) <= LEVEL_LIMIT and len(set(levels)) == len(levels)
    assert levels[-1] == "kubernetes.io/hostname" and "kubernetes.io/hostname" not in levels[:-1]
    assert flavor["kind"] == "ResourceFlavor" and flavor["spec"]["topologyName"] == topology["metadata"]["name"]
    nodes = imported("export", "node-labels", "-o", "json").json["items"]
    selected = [n for n in nodes if flavor["spec"]["nodeLabels"].items() <= n["metadata"]["labels"].items()]
    healthy = [n for n in nodes if n["metadata"]["labels"][PARTITION_STATE] == "HEALTHY"]  # as xpk's flavor
    assert selected == healthy and (len(selected), len(nodes)) == (960, 1023)
    assert all(level in n["metadata"]["labels"] for n in selected for level in levels)  # TAS needs every level
    # each partition domain is one cube's machines; each block domain one pod
    domains: dict[str, set[str]] = {}
    for n in selected:
        domains.setdefault(n["metadata"]["labels"][levels[1]], set()).add(n["metadata"]["labels"]["tpufleet.io/cube"])
    assert len(domains) == 60 and all(len(cubes) == 1 for cubes in domains.values())
    assert len({n["metadata"]["labels"][levels[0]] for n in selected}) == 1


def test_kueue_flavor_selects_the_clusters_nodes_whose_topology_label_is_their_pools(imported):
    """On a dynamic-slicing cluster a node's gke-tpu-topology is its node pool's (4x8x8), not its partition's: the
    flavor selects the nodes of the list itself, by accelerator and healthy partition, whatever that label says."""
    r = imported("export", "kueue-topology", "-o", "json")
    assert r.code == 0, r.err
    flavor = next(d for d in r.json["items"] if d["kind"] == "ResourceFlavor")
    nodes = json.loads(FIXTURE.read_text())["items"]
    for node in nodes:
        if "cloud.google.com/gke-tpu-topology" in node["metadata"]["labels"]:
            node["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] = "4x8x8"
    selected = [n for n in nodes if flavor["spec"]["nodeLabels"].items() <= n["metadata"]["labels"].items()]
    healthy = [n for n in nodes if n["metadata"]["labels"].get(PARTITION_STATE) == "HEALTHY"]
    assert selected == healthy and len(selected) > 900


def test_kueue_bad_name_is_exit_2(fleet):
    assert fleet("export", "kueue-topology", "--name", "Not_A_Name").code == 2


@pytest.mark.parametrize("name", ["a_b", "a..b", "a.-b", "a-.b"])
def test_kueue_name_the_api_server_would_refuse_is_exit_2(fleet, name):
    """An object's name is a DNS subdomain: no '_', no empty or '-'-edged part between dots."""
    r = fleet("export", "kueue-topology", "--name", name)
    assert r.code == 2 and "--name" in r.err and not r.out


@pytest.mark.parametrize("name", ["tpu-v4", "a.b", "tpufleet"])
def test_kueue_name_that_is_a_dns_subdomain_is_taken(fleet, name):
    assert fleet("export", "kueue-topology", "--name", name).code == 0


def parse_conf(text: str) -> list[dict[str, str]]:
    rows = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            rows.append(dict(field.split("=", 1) for field in line.split()))
    return rows


@pytest.mark.parametrize("pods", [1, 2])
def test_slurm_tree_has_one_switch_per_cube_with_its_machines(cli, pods):
    assert cli("init", "--pods", pods).code == 0
    rows = parse_conf(cli("export", "slurm-topology").out)
    cubes = {r["SwitchName"]: expand(r["Nodes"]) for r in rows if "Nodes" in r}
    assert len(cubes) == 64 * pods
    assert all(names == [f"tpu-{c}-m{m:02d}" for m in range(16)] for c, names in cubes.items())
    pod_switches = {r["SwitchName"]: expand(r["Switches"]) for r in rows if r["SwitchName"].startswith("pod")}
    inventory = cli("show", "inventory", "-o", "json").json
    for pod, members in pod_switches.items():
        assert members == [row["cube"] for row in inventory if row["pod"] == pod]
    tops = [r for r in rows if r["SwitchName"] == "fleet"]
    assert (len(tops) == 1 and expand(tops[0]["Switches"]) == list(pod_switches)) if pods > 1 else not tops


@pytest.mark.parametrize(("cubes", "sizes"), [(64, [16, 32, 64, 128, 256, 512, 1024]), (12, [16, 32, 64])])
def test_slurm_block_sizes_stay_inside_a_pod(cli, cubes, sizes):
    assert cli("init", "--pods", 2, "--cubes-per-pod", cubes).code == 0
    rows = parse_conf(cli("export", "slurm-topology", "--plugin", "block").out)
    blocks = [r for r in rows if "BlockName" in r]
    assert len(blocks) == 2 * cubes and all(len(expand(b["Nodes"])) == 16 for b in blocks)
    assert [int(s) for s in rows[-1]["BlockSizes"].split(",")] == sizes
    assert cubes * 16 % sizes[-1] == 0  # the largest aggregate never spans two pods


def test_slurm_of_an_imported_fleet_names_the_real_nodes(imported):
    rows = parse_conf(imported("export", "slurm-topology").out)
    c50 = next(r for r in rows if r["SwitchName"] == "c50")
    names = expand(c50["Nodes"])
    state = json.loads((imported.state / "state.json").read_text())
    assert sorted(names) == sorted(n for n, h in state["k8s"]["nodes"].items() if h.startswith("host:c50/"))
    assert len(names) == 15


def test_export_to_a_file_and_json_summary(imported, tmp_path):
    out = tmp_path / "topology.conf"
    r = imported("export", "slurm-topology", "--out", out)
    assert r.code == 0, r.err
    assert out.read_text().startswith("# topology.conf")
    r = imported("export", "slurm-topology", "--out", out, "-o", "json")
    assert r.code == 0, r.err
    assert r.json == {"kind": "slurm-topology-conf", "file": str(out), "objects": 65}
    assert out.read_text().startswith("# topology.conf")  # the file Slurm reads, whatever -o says
    assert imported("export", "slurm-topology", "--out", tmp_path / "missing" / "t.conf").code == 2


@pytest.mark.parametrize("what", ["node-labels", "kueue-topology", "slices"])
def test_export_out_writes_what_it_would_print_in_the_format_o_asks(imported, tmp_path, what):
    assert imported("allocate", "s", "--shape", "4x4x4").code == 0
    for fmt, parse in (("json", json.loads), ("yaml", yaml.safe_load)):
        out = tmp_path / f"export.{fmt}"
        r = imported("export", what, "--out", out, "-o", fmt)
        assert r.code == 0, r.err
        printed = imported("export", what, "-o", fmt).out
        same = out.read_text() == printed  # not compared in the assert: a diff of two large texts takes minutes
        assert same and parse(printed)["kind"] == "List", f"{out} is not what -o {fmt} prints"
    out = tmp_path / "export.json"  # the table output: the manifests, whatever the file's name
    assert imported("export", what, "--out", out).code == 0
    same = out.read_text() == imported("export", what).out
    assert same, f"{out} is not the manifests the table output prints"


@pytest.mark.parametrize("given", ["foo", "tpu7", "TPU7X", "v5p"])
def test_an_unknown_slice_type_is_refused_before_anything_is_written(imported, tmp_path, given):
    """`--type foo` skipped every slice on stderr and exited 0 with nothing written: a typo looked like success."""
    assert imported("allocate", "big", "--shape", "4x4x8").code == 0
    out = tmp_path / "slices.yaml"
    for args in (("--out", out), ("-o", "json")):
        r = imported("export", "slices", "--type", given, *args)
        said = f"bad option --type {given!r}: the Slice CRD's spec.type accepts tpu7x and v6e"
        assert r.code == 2 and said in r.err and "skipped" not in r.err, r.err
        assert not out.exists() and "items" not in r.out


def test_slices_export(imported):
    assert imported("allocate", "Train_Big.1", "--shape", "4x4x8").code == 0
    assert imported("plan-xconnect", "Train_Big.1", "--apply").code == 0
    assert imported("allocate", "tiny", "--shape", "2x2x1").code == 0
    assert imported("allocate", "queued", "--shape", "4x4x4").code == 0
    refused = imported("export", "slices")  # a TPU v4 model pod's type, tpu-v4-podslice, is not the CRD's
    assert refused.code == 0 and "spec.type accepts tpu7x and v6e, not tpu-v4-podslice" in refused.err
    assert yaml.safe_load(refused.out) == {"apiVersion": "v1", "kind": "List", "items": []}  # imports back
    r = imported("export", "slices", "--type", "tpu7x")
    assert r.code == 0, r.err
    assert "skipped slice tiny" in r.err
    docs = list(yaml.safe_load_all(r.out))
    assert [d["metadata"]["annotations"]["tpufleet.io/slice"] for d in docs] == ["Train_Big.1", "queued"]
    state = json.loads((imported.state / "state.json").read_text())
    partition_of = {cube: pid for pid, cube in state["k8s"]["partitions"].items()}
    for doc in docs:
        assert doc["apiVersion"] == "accelerator.gke.io/v1beta1" and doc["kind"] == "Slice"
        assert SLICE_NAME.fullmatch(doc["metadata"]["name"]) and len(doc["metadata"]["name"]) <= MAX_SLICE_NAME
        sl = state["slices"][doc["metadata"]["annotations"]["tpufleet.io/slice"]]
        assert doc["spec"]["topology"] == sl["shape"]
        assert doc["spec"]["partitionIds"] == [partition_of[c] for c in sl["cubes"]]
        a, b, c = map(int, doc["spec"]["topology"].split("x"))
        assert a <= b <= c and a % 4 == b % 4 == c % 4 == 0 and len(doc["spec"]["partitionIds"]) == a * b * c // 64
    assert docs[0]["metadata"]["name"].startswith("train-big-1-")  # "Train_Big.1" made valid, a hashed suffix
    assert [d["status"]["conditions"][0]["status"] for d in docs] == ["True", "False"]
    assert [d["status"]["conditions"][0]["reason"] for d in docs] == ["ACTIVE", "ACTIVATING"]
    check = slice_crd()
    for doc in docs:
        check(doc)  # every exported Slice passes the published CRD's schema
    import fastjsonschema

    edits: list[dict[str, object]] = [{"type": "tpu-v4-podslice"}, {"topology": "4x4"}, {"partitionIds": []}]
    for broken in edits:
        bad = json.loads(json.dumps(docs[0]))
        bad["spec"].update(broken)
        if broken.get("topology") == "4x4":
            bad["status"]["conditions"][0].pop("lastTransitionTime")
        with pytest.raises(fastjsonschema.JsonSchemaValueException):
            check(bad)


def slice_crd():
    """The Slice CRD's schema (tests/crds/slice-crd.json, with its source) as a validator."""
    import fastjsonschema

    crd = json.loads((Path(__file__).parent / "crds" / "slice-crd.json").read_text())
    return fastjsonschema.compile(crd["openAPIV3Schema"], formats={"int64": r"^-?\d+$"})


def test_slice_names_are_valid_and_depend_on_the_name_alone():
    """A valid name is itself; others are made valid with a suffix hashed from the original, so allocating `a-b`
    beside `a.b` renames neither (a counter did: `a.b` was `a-b`, then `a-b-2`)."""
    import hashlib

    from tpufleet.integrations.exports import _k8s_name

    def tag(name: str) -> str:
        return hashlib.sha256(name.encode()).hexdigest()[:6]

    used: set[str] = set()
    names = [_k8s_name(n, used) for n in ("a.b", "a_b", "a-b", "9lives", "x" * 80, "-")]
    assert names == [f"a-b-{tag('a.b')}", f"a-b-{tag('a_b')}", "a-b", f"s-9lives-{tag('9lives')}",
                     "x" * 47 + f"-{tag('x' * 80)}", f"slice-{tag('-')}"]  # fmt: skip
    assert all(SLICE_NAME.fullmatch(n) and len(n) <= MAX_SLICE_NAME for n in names)
    alone = [_k8s_name(n, set()) for n in ("a.b", "a-b")]
    assert alone == names[0:1] + names[2:3]  # the same names whatever else is exported


def test_export_help_has_examples(fleet):
    for sub in ("node-labels", "kueue-topology", "slurm-topology", "slices"):
        r = fleet("export", sub, "--help")
        assert r.code == 0 and "Examples:" in r.out


def test_hostlist_compression_round_trips():
    from tpufleet.integrations.slurm import hostlist

    names = ["tpu-c05-m00", "tpu-c05-m01", "tpu-c05-m03", "gke-x-ab12", "gke-x-ab13", "plain"]
    assert sorted(expand(hostlist(names))) == sorted(names)
    assert hostlist(f"tpu-c05-m{m:02d}" for m in range(16)) == "tpu-c05-m[00-15]"


@pytest.mark.parametrize("plugin", ["tree", "block"])
def test_slurm_topology_yaml_says_what_topology_conf_says(imported, plugin):
    """topology.yaml(5): a list of topologies, each `topology` first, then `cluster_default` and one of `tree`
    (`switches`: `switch` with `nodes` or `children`) or `block` (`block_sizes`, `blocks`: `block`, `nodes`)."""
    conf = imported("export", "slurm-topology", "--plugin", plugin).out
    r = imported("export", "slurm-topology", "--plugin", plugin, "--format", "yaml")
    assert r.code == 0, r.err
    (topology,) = yaml.safe_load(r.out)
    assert list(topology)[:2] == ["topology", "cluster_default"] and topology["cluster_default"] is True
    lines = [line.split() for line in conf.splitlines() if line and not line.startswith("#")]
    if plugin == "tree":
        assert set(topology) == {"topology", "cluster_default", "tree"}
        as_conf = []
        for s in topology["tree"]["switches"]:
            assert set(s) in ({"switch", "nodes"}, {"switch", "children"})
            kind = "Nodes" if "nodes" in s else "Switches"
            as_conf.append([f"SwitchName={s['switch']}", f"{kind}={s.get('nodes') or s['children']}"])
        assert as_conf == lines
    else:
        assert set(topology) == {"topology", "cluster_default", "block"}
        blocks = [[f"BlockName={b['block']}", f"Nodes={b['nodes']}"] for b in topology["block"]["blocks"]]
        sizes = ["BlockSizes=" + ",".join(map(str, topology["block"]["block_sizes"]))]
        assert [*blocks, sizes] == lines


def test_kueue_objects_are_v1beta2_unless_asked(imported):
    docs = imported("export", "kueue-topology", "-o", "json").json["items"]
    assert {d["apiVersion"] for d in docs} == {"kueue.x-k8s.io/v1beta2"}
    old = imported("export", "kueue-topology", "--api-version", "v1beta1", "-o", "json").json["items"]
    assert {d["apiVersion"] for d in old} == {"kueue.x-k8s.io/v1beta1"}
    assert [{k: v for k, v in d.items() if k != "apiVersion"} for d in old] == [
        {k: v for k, v in d.items() if k != "apiVersion"} for d in docs
    ]
    r = imported("export", "kueue-topology", "--api-version", "v1alpha1")
    assert r.code == 2 and "--api-version" in r.err


def test_slurm_topology_out_is_the_file_format_chooses_whatever_o_says(fleet, tmp_path):
    conf = tmp_path / "topology.conf"
    r = fleet("export", "slurm-topology", "--format", "conf", "--out", conf, "-o", "json")
    assert r.code == 0 and r.json["file"] == str(conf)
    assert conf.read_text() == fleet("export", "slurm-topology", "--format", "conf").out
    assert "\nSwitchName=pod0 Switches=" in conf.read_text()


def slurm_block_aggregates(rows: list[dict[str, str]]) -> list[list[str]]:
    """Slurm's topology/block rules (block_record.c): the first BlockSizes value is the base block size, which
    every block must reach (slurmctld stops with a fatal error otherwise), and a level of `size` nodes joins
    `size / base` consecutive blocks in file order. Returns the blocks each aggregate joins."""
    blocks = [r for r in rows if "BlockName" in r]
    sizes = [int(s) for s in rows[-1]["BlockSizes"].split(",")]
    assert all(len(expand(b["Nodes"])) >= sizes[0] for b in blocks), "a block below the base block size"
    names = [b["BlockName"] for b in blocks]
    return [names[i : i + size // sizes[0]] for size in sizes[1:] for i in range(0, len(names), size // sizes[0])]


@pytest.mark.parametrize("file_format", ["conf", "yaml"])
def test_slurm_blocks_of_a_cluster_missing_nodes_load_and_stay_inside_a_pod(cli, tmp_path, file_format):
    """A cube with a node missing would be a block below BlockSizes' base (slurmctld fatal), and a cube with no
    node left out of the list shifted the pairing of the blocks after it across the pods' boundary."""
    assert cli("init", "--generation", "tpu7x", "--pods", 2, "--cubes-per-pod", 4).code == 0
    nodes = cli("export", "node-labels", "-o", "json").json
    nodes["items"] = [
        n
        for n in nodes["items"]
        if n["metadata"]["labels"]["tpufleet.io/cube"] != "c01" and n["metadata"]["name"] != "tpu-c05-m03"
    ]
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    assert cli("import", "k8s", tmp_path / "nodes.json", "--apply").code == 0
    r = cli("export", "slurm-topology", "--plugin", "block", "--format", "conf")
    if file_format == "yaml":
        doc = yaml.safe_load(cli("export", "slurm-topology", "--plugin", "block", "--format", "yaml").out)[0]
        text = "".join(f"BlockName={b['block']} Nodes={b['nodes']}\n" for b in doc["block"]["blocks"])
        r_text = text + "BlockSizes=" + ",".join(map(str, doc["block"]["block_sizes"])) + "\n"
    else:
        r_text = r.out
    assert r.code == 0, r.err
    pod_of = {row["cube"]: row["pod"] for row in cli("show", "inventory", "-o", "json").json}
    for aggregate in slurm_block_aggregates(parse_conf(r_text)):
        assert len({pod_of[cube] for cube in aggregate}) == 1, aggregate
    assert "c05" in r.err  # the cube left out is named


def test_a_not_ready_nodes_fault_keeps_the_kubelets_reason_through_the_export(imported, tmp_path, cli):
    """The export wrote every failed machine's Ready reason as TpufleetFault, so the faults of a fresh state
    imported from it read `Ready=False (TpufleetFault)` where the node had said `(KubeletNotReady)`."""
    path = tmp_path / "nodes.json"
    assert imported("export", "node-labels", "--out", path).code == 0
    from conftest import Cli

    fresh = Cli(imported.capsys, tmp_path / "fresh")
    assert fresh("init").code == 0
    assert fresh("import", "k8s", path, "--apply").code == 0

    def not_ready(cli: Cli) -> dict[str, str]:
        return {f["target"]: f["reason"] for f in cli("faults", "-o", "json").json if "Ready=" in f["reason"]}

    reasons = not_ready(imported)
    assert len(reasons) == 2 and all(r.endswith("Ready=False (KubeletNotReady)") for r in reasons.values())
    assert not_ready(fresh) == reasons


def test_a_partitions_state_and_a_nodes_drain_taint_keep_what_was_reported_through_the_export(imported, tmp_path, cli):
    """The export wrote every failed cube's partition UNHEALTHY and every drain as a cordon, so a fresh state
    imported from it read `partition ... INCOMPLETE` as UNHEALTHY and a drain taint as `cordoned`."""
    path = tmp_path / "nodes.json"
    assert imported("export", "node-labels", "--out", path).code == 0
    from conftest import Cli

    fresh = Cli(imported.capsys, tmp_path / "fresh")
    assert fresh("init").code == 0
    assert fresh("import", "k8s", path, "--apply").code == 0

    def faults(cli: Cli) -> dict[str, tuple[bool, str]]:
        return {f["target"]: (f["planned"], f["reason"]) for f in cli("faults", "-o", "json").json}

    reasons = faults(imported)
    assert {r for _, r in reasons.values() if r.endswith((" INCOMPLETE", "NoSchedule", " cordoned"))} == {
        "k8s: partition 61001746e7b4496515ad1d0ae792f34f INCOMPLETE",
        "k8s: node gke-tpu-v4-p00-30-f915354c-d81f tainted cloud.google.com/impending-node-termination:NoSchedule",
        "k8s: node gke-tpu-v4-p00-22-dd02b978-56e7 cordoned",
    }
    assert faults(fresh) == reasons
    before = snapshot(imported.state)
    again = imported("import", "k8s", path, "--apply", "--detailed-exitcode")
    assert again.code == 0, again.err
    assert snapshot(imported.state) == before


def test_a_drain_taint_the_mapping_does_not_count_is_exported_as_a_cordon(imported, tmp_path):
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(yaml.safe_dump({"drain_taints": ["example.com/maintenance"]}))
    doc = imported("export", "node-labels", "--mapping", mapping, "-o", "json").json
    [spec] = [n["spec"] for n in doc["items"] if n["metadata"]["name"] == "gke-tpu-v4-p00-30-f915354c-d81f"]
    assert spec == {"unschedulable": True}  # read back as a drain with that mapping: the taint would not be
    [spec] = [
        n["spec"]
        for n in imported("export", "node-labels", "-o", "json").json["items"]
        if n["metadata"]["name"] == "gke-tpu-v4-p00-30-f915354c-d81f"
    ]
    assert spec == {"taints": [{"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}]}


def test_a_drained_node_whose_chip_failed_imports_back_unchanged(imported, tmp_path):
    """A chip failure inside a machine `import k8s` holds drained is written as the node's NotReady: importing the
    export on the same state replaced the drain with a second failure of the machine."""
    assert imported("inject-fault", "chip:c22/2,0,1").code == 0  # on host:c22/5, cordoned in the node list
    path = tmp_path / "nodes.json"
    assert imported("export", "node-labels", "--out", path).code == 0
    before = snapshot(imported.state)
    again = imported("import", "k8s", path, "--apply", "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    assert not again.json["has_changes"] and again.json["faults_opened"] == again.json["faults_cleared"] == []
    assert snapshot(imported.state) == before
