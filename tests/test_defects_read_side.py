"""Defects of the read-side commands (`status`, `suspects`, `export`, `diff`, `history`, ...) found by probing a
small fleet: each test fails without its fix."""

from __future__ import annotations

import json

import pytest


def test_status_lists_stale_tables_by_slice_name_as_counted(fleet):
    """`status` listed the slices with stale routing tables as text (`s10, s9`), unlike its own list of slices."""
    for name in ("s9", "s10"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    status = fleet("status", "-o", "json").json
    assert status["stale_routes"] == ["s9", "s10"]
    assert fleet("status").out.splitlines()[-1].endswith(": s9, s10")


def test_export_slices_lists_slices_as_counted(cli):
    """`export slices` wrote the Slices in the text order of their slices' names (`s10` before `s9`), and named the
    skipped ones so too, unlike `status` and `show slices`."""
    assert cli("init", "--generation", "tpu7x", "--cubes-per-pod", "4").code == 0
    for name in ("s9", "s10"):
        assert cli("allocate", name, "--shape", "4x4x4").code == 0
    for name in ("m9", "m10"):
        assert cli("allocate", name, "--shape", "2x2x1").code == 0
    r = cli("export", "slices", "-o", "json")
    assert r.code == 0, r.err
    assert [d["metadata"]["annotations"]["tpufleet.io/slice"] for d in r.json["items"]] == ["s9", "s10"]
    assert [line.split()[3].rstrip(":") for line in r.err.splitlines()] == ["m9", "m10"]


def test_suspects_tied_on_p_value_are_listed_as_counted(fleet):
    """Two hosts of one cube with as many faults (so the same p-value) were listed as text: `host:c01/10` before
    `host:c01/2`, in the table, the JSON and the quarantine commands."""
    for host in ("2", "10", "2", "10"):
        assert fleet("inject-fault", f"host:c01/{host}").code == 0
        assert fleet("clear-fault", f"host:c01/{host}").code == 0
    rows = fleet("suspects", "-o", "json").json["suspects"]
    hosts = [r["target"] for r in rows if r["kind"] == "host"]
    assert hosts == ["host:c01/2", "host:c01/10"]
    table = fleet("suspects").out
    assert table.index("inject-fault host:c01/2 ") < table.index("inject-fault host:c01/10 ")


def test_diff_and_history_list_slices_as_counted(fleet):
    """`diff` listed the slices added, removed and changed as text (`s10` before `s9`), and the journal's delta
    (`history -o json`, `show journal -o json`) recorded them so."""
    for name in ("s9", "s10"):
        assert fleet("allocate", name, "--shape", "2x2x1").code == 0
    d = fleet("diff", "1", "-o", "json").json
    assert d["slices"]["added"] == ["s9", "s10"]
    assert fleet("diff", "1").out.splitlines()[1:3] == ["  + slice s9", "  + slice s10"]
    assert fleet("allocate", "j", "--shape", "2x2x1", "--slices", "11").code == 0
    serial = fleet("status", "-o", "json").json["serial"]
    assert fleet("release", "j").code == 0
    counted = [f"j-{i}" for i in range(11)]
    assert fleet("diff", str(serial), "-o", "json").json["slices"]["removed"] == counted
    [line] = fleet("history", "--since", str(serial + 1), "-o", "json").json
    assert line["delta"]["slices"]["removed"] == counted


def test_plan_spares_lists_jobs_across_pods_as_counted(cli):
    """`plan-spares` listed the jobs spanning pods in the text order of their names (`j10` before `j9`)."""
    assert cli("init", "--pods", "2", "--cubes-per-pod", "4").code == 0
    for job in ("j9", "j10"):
        assert cli("allocate", job, "--shape", "4x4x4", "--slices", "2", "--spread").code == 0
    assert [j["job"] for j in cli("plan-spares", "-o", "json").json["jobs"]] == ["j9", "j10"]
    lines = [line.split()[1] for line in cli("plan-spares").out.splitlines() if line.startswith("job ")]
    assert lines == ["j9", "j10"]


def test_status_does_not_tell_to_regenerate_the_tables_of_an_evicted_slice(routed):
    """`status` told to regenerate an evicted slice's stale tables with `tpufleet routes SLICE`, which refuses an
    evicted slice (exit 1, reschedule first); it now points to the move first, the JSON unchanged."""
    assert routed("inject-fault", "host:c00/1").code == 0
    status = routed("status", "-o", "json").json
    assert status["stale_routes"] == ["s"] and status["slices"][0]["state"] == "evicted"
    text = routed("status").out
    assert not any(line.startswith("stale routing tables") for line in text.splitlines())
    assert "evicted slice(s) to make again once moved (`tpufleet explain SLICE` says how): s" in text
    assert routed("routes", "s").code == 1  # what the old step ran into
    assert routed("reschedule", "s").code == 0
    assert (
        "stale routing tables (regenerate with `tpufleet routes SLICE`, all: `tpufleet routes --stale`): s"
        in routed("status").out
    )


def test_diff_table_shows_a_slices_fields_in_words_not_python_notation(routed):
    """`diff`'s table showed a changed field in Python's notation: `reroute None -> {'all_to_all_retained': 0.9412,
    'faults': ['f1'], 'vcs': 3}`, `fault_tolerant_routing True -> False`."""
    serial = routed("status", "-o", "json").json["serial"]
    assert routed("inject-fault", "ocs:pod0/x/1").code == 0
    assert routed("policy", "s", "--no-fault-tolerant-routing").code == 0
    changed = routed("diff", str(serial), "-o", "json").json["slices"]["changed"]["s"]
    assert changed["reroute"][0] is None and changed["fault_tolerant_routing"] == [True, False]
    [line] = [line for line in routed("diff", str(serial)).out.splitlines() if line.startswith("  ~ slice s:")]
    assert "None" not in line and "{" not in line and "True" not in line
    assert "reroute - -> keeps " in line and "around f1" in line
    assert "fault_tolerant_routing yes -> no" in line


@pytest.mark.parametrize("role", ["block", "partition"])
def test_export_kueue_topology_refuses_a_mapping_that_puts_the_host_label_above_the_hosts(fleet, tmp_path, role):
    """A mapping giving `kubernetes.io/hostname` to the block or partition role exported a Topology with that label
    above the host level, exit 0: Kueue's CRD refuses it (the hostname label only as the lowest level). It is now
    bad input naming the file and the field, nothing written."""
    mapping = tmp_path / "m.yaml"
    mapping.write_text(f"labels:\n  {role}: kubernetes.io/hostname\n  hostname: example.com/host\n")
    out = tmp_path / "kueue.yaml"
    r = fleet("export", "kueue-topology", "--mapping", mapping, "--out", out)
    assert r.code == 2, r.out
    assert f"{mapping}: field labels.{role}:" in r.err and "kubernetes.io/hostname" in r.err
    assert not out.exists()


def test_capacity_names_the_option_given_without_confidence(fleet):
    """`capacity --fault-rates shipped` (without --confidence) was refused as `bad option --horizon/--fault-rates`,
    naming an option not given; the message now names the one given."""
    r = fleet("capacity", "--fault-rates", "shipped")
    assert r.code == 2
    assert "bad option --fault-rates: it goes with --confidence" in r.err and "--horizon" not in r.err
    r = fleet("capacity", "--horizon", "2w")
    assert r.code == 2 and "bad option --horizon: it goes with --confidence" in r.err


def test_diff_shows_a_sub_cube_slice_made_again_on_other_machines(cli):
    """A sub-cube slice released and made again under its name on other machines of the same cube was no change to
    `diff` (its delta recorded cubes, not machines): the operator was not told it moved."""
    assert cli("init", "--cubes-per-pod", "1").code == 0
    assert cli("allocate", "m", "--shape", "2x2x1").code == 0
    serial = cli("status", "-o", "json").json["serial"]
    for args in (("allocate", "f"), ("release", "m"), ("allocate", "g"), ("allocate", "m")):
        assert cli(*args, *(["--shape", "2x2x1"] if args[0] == "allocate" else [])).code == 0
    [m] = [s for s in cli("show", "slices", "-o", "json").json if s["name"] == "m"]
    d = cli("diff", str(serial), "-o", "json").json
    assert d["slices"]["changed"]["m"]["machines"] == [[0], m["machines"]] and m["machines"] != [0]
    assert f"  ~ slice m: machines 0 -> {m['machines'][0]}" in cli("diff", str(serial)).out


def _import_nodes_but(cli, tmp_path, left_out: set[str]) -> None:
    nodes = cli("export", "node-labels", "-o", "json").json
    nodes["items"] = [n for n in nodes["items"] if n["metadata"]["name"] not in left_out]
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    assert cli("import", "k8s", tmp_path / "nodes.json", "--apply").code == 0


def test_slurm_torus3d_with_no_whole_cube_is_refused_and_partial_cubes_are_named(cli, tmp_path):
    """With no cube all of whose machines are nodes, `--plugin torus3d` wrote a topology of no torus at all
    (`toruses: []`), exit 0, replacing the file in use, where `--plugin block` refuses (exit 1, nothing written);
    and the cubes left out of the regions for a missing node went unnamed, where the blocks name them."""
    assert cli("init", "--cubes-per-pod", "2").code == 0
    _import_nodes_but(cli, tmp_path, {"tpu-c00-m15", "tpu-c01-m15"})
    out = tmp_path / "topology.yaml"
    r = cli("export", "slurm-topology", "--plugin", "torus3d", "--format", "yaml", "--out", out)
    assert r.code == 1 and "nothing written" in r.err and not out.exists()
    assert "cube(s) c00, c01 left out of the torus regions" in r.err


def test_slurm_torus3d_names_the_cubes_left_out_of_its_regions(cli, tmp_path):
    assert cli("init", "--cubes-per-pod", "2").code == 0
    _import_nodes_but(cli, tmp_path, {"tpu-c01-m15"})
    r = cli("export", "slurm-topology", "--plugin", "torus3d", "--format", "yaml", "-o", "json")
    assert r.code == 0, r.err
    [torus] = r.json[0]["torus3d"]["toruses"]
    assert len(torus["regions"]) == 1 and "cube(s) c01 left out of the torus regions" in r.err


def test_diff_shows_a_slice_made_again_twisted_on_the_same_cubes(cli, tmp_path):
    """A slice released and made again under its name as a twisted torus of the same shape on the same cubes was
    no change to `diff` (its delta did not record `twisted`); a line written before a field was recorded does not
    make that field look changed."""
    assert cli("init", "--cubes-per-pod", "2").code == 0
    assert cli("allocate", "t", "--shape", "4x4x8").code == 0
    assert cli("release", "t").code == 0
    assert cli("allocate", "t", "--shape", "4x4x8", "--twisted").code == 0
    assert cli("diff", "2", "-o", "json").json["slices"]["changed"] == {"t": {"twisted": [False, True]}}
    assert "  ~ slice t: twisted no -> yes" in cli("diff", "2").out
    journal = tmp_path / "state" / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:  # as a line of an earlier version wrote it: no `twisted` nor `machines` recorded
        for record in line["delta"]["slices"].get("was", {}).values():
            del record["twisted"], record["machines"]
    journal.write_text("".join(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n" for line in lines))
    assert cli("diff", "2", "-o", "json").json["slices"]["changed"] == {}


def test_topology_table_has_no_empty_header_and_says_twisted_in_words(cli):
    """The table began with an empty header line and a rule, and said `twisted  False`."""
    lines = cli("topology", "4x4x8", "--twisted", state=False).out.splitlines()
    assert lines[0].split() == ["shape", "4x4x8"]
    assert ["twisted", "yes"] in [line.split() for line in lines]
    assert (
        "no" in dict(line.split(None, 1) for line in cli("topology", "4x4x8", state=False).out.splitlines())["twisted"]
    )


def test_a_number_too_small_to_tell_from_zero_is_not_told_to_be_given_as_zero(fleet):
    """`suspects --p-value 1e-400` said `give 0 or a larger number`, and 0 is then refused (the p-value is
    between 0 and 1, both excluded)."""
    r = fleet("suspects", "--p-value", "1e-400")
    assert r.code == 2 and "--p-value" in r.err and "give 0" not in r.err and "a larger number" in r.err
    assert fleet("suspects", "--p-value", "0").code == 2


def test_a_groups_output_option_reaches_its_sub_command(fleet):
    """`tpufleet export -o json slices` was refused (`No such option '-o'`), though the error itself came out as
    JSON; -o before the sub-command now means what it means after it, and a format it cannot write is refused."""
    before = fleet("export", "-o", "json", "node-labels")
    assert before.code == 0, before.err
    assert before.json == fleet("export", "node-labels", "-o", "json").json
    assert fleet("export", "-o", "json", "node-labels", "-o", "yaml").out.startswith("apiVersion")  # its own wins
    assert fleet("export", "-o", "html", "node-labels").code == 2


def test_status_does_not_tell_to_route_an_evicted_slice_behind_a_symbolic_link(routed, tmp_path):
    """With a symbolic link in place of an evicted slice's tables, `status` said to remove it `then run tpufleet
    routes s`, which refuses an evicted slice until it has moved; it now points to `explain s` for the move."""
    assert routed("routes", "s").code == 0
    tables = routed.state / "routes" / "s.npz"
    tables.unlink()
    tables.symlink_to(tmp_path / "gone.npz")
    assert routed("inject-fault", "host:c00/1").code == 0  # evicts s
    assert routed("routes", "s").code != 0
    out = routed("status").out
    (line,) = [x for x in out.splitlines() if "symbolic link" in x]
    assert "tpufleet routes s" not in line and "tpufleet explain s" in line
