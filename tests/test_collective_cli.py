"""`tpufleet collective`: the JSON contract, stored versus assumed tables, faults, sparse tables, bad input."""

import json

import pytest

GIB = 1 << 30
DOCUMENTED = {
    "slice", "shape", "twisted", "chips", "op", "bytes", "algorithm", "dims", "time_s", "latency_s", "bandwidth_s",
    "algorithm_bandwidth_Bps", "bus_bandwidth_Bps", "why", "twist", "phases", "tables", "healthy_time_s", "slowdown",
    "candidates", "profile", "sparse", "split",
}  # fmt: skip


@pytest.fixture
def routed(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    return fleet


def test_without_tables_it_says_to_run_routes_or_assumes_healthy(routed):
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB")
    assert r.code == 1
    assert r.err.strip() == (
        "tpufleet: error: slice 's' has no routing tables; run `tpufleet routes s` first "
        "(or pass --assume-healthy to model the healthy tables of a 4x4x8)"
    )
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["tables"]["source"] == "assumed-healthy"


def test_an_unwired_slice_or_job_is_told_to_wire_first_not_to_run_routes(fleet):
    """`routes` refuses an unwired slice, so `collective` must not send the operator there first."""
    assert fleet("allocate", "s", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    step = "run `tpufleet plan-xconnect {0} --apply`, then `tpufleet routes {0}`"
    for name, member, words in (("s", "s", "slice 's' is allocated, not wired"), ("j", "j-0", "job 'j' is pending")):
        r = fleet("collective", name, "--op", "all-reduce", "--bytes", "1GiB")
        assert r.code == 1
        assert words in r.err
        assert step.format(name) in r.err  # a job: its whole wiring, then its tables
        assert fleet("routes", member).code == 1  # the step the message used to give
    r = fleet("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
    assert r.code == 0, r.err


def test_the_table_output_names_the_figures_its_times_rest_on(cli):
    """On a TPU v5p slice the times rest on its 100 GB/s links, not TPU v4's 50: the text says which, so a reader
    can check the ring's bandwidth term, 2(n-1)/n x bytes / link bandwidth, by hand."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("allocate", "s", "--shape", "4x4x8").code == 0
    r = cli("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--algorithm", "ring", "--assume-healthy")
    assert r.code == 0, r.err
    assert "bandwidth 21.31 ms" in r.out  # 2 x 127/128 x 2^30 B / 100e9 B/s
    assert "  profile          tpu-v5p: 100.00 GB/s per ICI link and direction, 1 us a hop" in r.out.splitlines()
    r = cli("collective", "--topology", "4x4", "--wrap", "x", "--profile", "tpu-v3", "--op", "all-reduce",
            "--bytes", "1MiB")  # fmt: skip
    assert r.code == 0, r.err
    assert "  profile          tpu-v3: 82.00 GB/s per ICI link and direction, 1 us a hop" in r.out.splitlines()


def test_stored_tables_give_the_documented_result(routed):
    assert routed("routes", "s").code == 0
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "-o", "json")
    assert r.code == 0, r.err
    j = r.json
    assert set(j) == DOCUMENTED
    assert (j["op"], j["bytes"], j["chips"], j["algorithm"]) == ("all-reduce", GIB, 128, "multi-dim")
    assert j["tables"]["source"] == "stored" and j["tables"]["degraded"] is False and j["slowdown"] == 1.0
    assert j["time_s"] == pytest.approx(j["latency_s"] + j["bandwidth_s"])
    assert j["bus_bandwidth_Bps"] == pytest.approx(GIB / j["time_s"] * 2 * 127 / 128)
    assert [c["algorithm"] for c in j["candidates"]].count("dim-by-dim") == 6
    assert "keeps every dimension's links busy" in j["why"] and "dim-by-dim (xyz)" in j["why"]
    assert sum(j["split"]) == pytest.approx(1.0) and len(j["split"]) == 3
    dims = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--algorithm", "dim-by-dim", "-o", "json")
    assert "every dimension order takes the same time" in dims.json["why"]
    text = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB").out
    assert "dim-by-dim" in text and "bus" in text


def test_an_ocs_fault_slows_the_rerouted_slice_and_auto_moves_the_broken_dimension_last(routed):
    assert routed("routes", "s").code == 0
    assert routed("inject-fault", "ocs:pod0/z/5").code == 0
    stale = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB")
    assert stale.code == 0 and "stale" in stale.out and "tpufleet routes s" in stale.out
    assert routed("routes", "s").code == 0
    j = routed(
        "collective",
        "s",
        "--op",
        "all-reduce",
        "--bytes",
        "1GiB",
        "--algorithm",
        "dim-by-dim",
        "--dims",
        "zyx",
        "-o",
        "json",
    ).json
    assert j["tables"]["degraded"] is True and j["dims"] == "zyx"
    assert j["slowdown"] > 1.2 and j["time_s"] == pytest.approx(j["healthy_time_s"] * j["slowdown"])
    auto = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "-o", "json").json
    assert auto["time_s"] < j["time_s"] and auto["slowdown"] < j["slowdown"]


def test_twisted_slice_explains_its_rings(fleet):
    assert fleet("allocate", "t", "--shape", "4x4x8", "--twisted").code == 0
    assert fleet("plan-xconnect", "t", "--apply").code == 0
    assert fleet("routes", "t").code == 0
    args = ["--op", "reduce-scatter", "--bytes", "512MiB", "--algorithm", "dim-by-dim", "--dims", "xyz", "-o", "json"]
    j = fleet("collective", "t", *args).json
    assert j["twist"].startswith("x: a helix of 8 chips") and [p["ring_size"] for p in j["phases"]] == [8, 4, 4]
    assert [p["step"] for p in j["phases"]] == ["+x", "+y-x", "+z-x"]


def test_table_capacity_reports_which_algorithms_still_run(routed):
    assert routed("routes", "s").code == 0
    r = routed("collective", "s", "--op", "all-to-all", "--bytes", "64MiB", "--table-capacity", "13", "-o", "json")
    assert r.code == 0, r.err
    sp = r.json["sparse"]
    assert (sp["capacity"], sp["max_entries"], sp["ring_entries_missing"]) == (13, 13, 0)
    runs = {a["algorithm"]: a["runs"] for a in sp["algorithms"]}
    assert runs == {"direct": False, "dim-by-dim": True}
    assert r.json["algorithm"] == "dim-by-dim" and r.json["tables"]["source"] == "sparse"
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1MiB", "--table-capacity", "4")
    assert r.code == 1 and "no algorithm for all-reduce runs on these tables (sparse)" in r.err


def test_a_table_capacity_of_0_is_bad_input_not_a_refusal(routed):
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--table-capacity", "0")
    assert r.code == 2 and "--table-capacity" in r.err and "0" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--table-capacity", "1").code == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--op", "scatter", "--bytes", "1GiB"],
            "bad option --op: 'scatter' is not one of all-reduce, reduce-scatter, all-gather, all-to-all"
            "; did you mean reduce-scatter?",
        ),
        (["--op", "all-reduce", "--bytes", "-1"], "bad option --bytes: '-1' must be at least 1 byte"),
        (
            ["--op", "all-reduce", "--bytes", "1e99"],
            "bad option --bytes: '1e99' is over the limit of 1125899906842624 bytes (1 PiB)",
        ),
        (
            ["--op", "all-reduce", "--bytes", "1GiB", "--algorithm", "tree"],
            "bad option --algorithm: 'tree' is not one of ring, bidir-ring, dim-by-dim, multi-dim, direct, auto",
        ),
        (
            ["--op", "all-to-all", "--bytes", "1GiB", "--algorithm", "ring"],
            "bad option --algorithm: 'ring' does not apply to all-to-all; use direct, dim-by-dim or auto",
        ),
        (
            ["--op", "all-reduce", "--bytes", "1GiB", "--algorithm", "ring", "--dims", "yxz"],
            "bad option --dims: 'yxz' applies to dim-by-dim and multi-dim, not ring",
        ),
        (
            ["--op", "all-reduce", "--bytes", "1GiB", "--dims", "xxz"],
            "bad option --dims: 'xxz' is not an order of x, y and z (e.g. yxz, or yx on a 128x32)",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_value(routed, args, message):
    r = routed("collective", "s", *args, "--assume-healthy")
    assert r.code == 2 and r.err.strip() == f"tpufleet: error: {message}"


def test_a_profile_with_a_negative_bandwidth_exits_2_naming_file_field_and_value(routed, tmp_path):
    from pathlib import Path

    shipped = (Path(__file__).resolve().parents[1] / "tpufleet" / "data" / "hardware-profile.yaml").read_text()
    bad = tmp_path / "p.yaml"
    bad.write_text(shipped.replace("link_bandwidth: 50.0e+9", "link_bandwidth: -50.0e+9"))
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "--profile", bad)
    assert r.code == 2
    assert (
        r.err.strip()
        == f"tpufleet: error: {bad}: field ici.link_bandwidth: must be a positive number (value -50000000000.0)"
    )
    slow = tmp_path / "slow.yaml"
    slow.write_text(shipped.replace("link_bandwidth: 50.0e+9", "link_bandwidth: 25.0e+9"))
    fast = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json").json
    halved = routed(
        "collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "--profile", slow, "-o", "json"
    ).json
    assert halved["bandwidth_s"] == pytest.approx(2 * fast["bandwidth_s"])
    assert halved["profile"]["file"] == str(slow)


def test_damaged_tables_exit_2_naming_the_file(routed):
    assert routed("routes", "s").code == 0
    (routed.state / "routes" / "s.npz").write_bytes(b"not a zip")
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB")
    assert (
        r.code == 2 and f"{routed.state / 'routes' / 's.npz'}: field <root>: cannot be read as routing tables" in r.err
    )


def test_routes_table_capacity_exports_sparse_tables_and_stores_nothing(cli, tmp_path):
    for step in (("init",), ("allocate", "s", "--shape", "4x4x8"), ("plan-xconnect", "s", "--apply")):
        assert cli(*step).code == 0
    out = tmp_path / "sparse.json"
    r = cli("routes", "s", "--table-capacity", "20", "--out", out, "--format", "json", "-o", "json")
    assert r.code == 0 and "not stored" in r.err and r.json["stored"] is False  # written where asked: done
    assert r.json["table_capacity"] == 20 and r.json["ring_entries_missing"] == 0
    assert not (cli.state / "routes" / "s.npz").exists()
    rows = json.loads(out.read_text())["port"]  # chip -> destination -> port; -2: no entry, -1: itself
    assert len(rows) == 128 and all(sum(v >= 0 for v in row) <= 20 for row in rows)
    assert all(row[i] == -1 for i, row in enumerate(rows))


@pytest.mark.parametrize("flag", [["--model-flops-per-step", "4.1e17"], ["--layout", "sharded"]])
def test_a_job_option_with_an_unknown_name_says_the_name_is_unknown(routed, flag):
    r = routed("collective", "nosuch", "--op", "all-reduce", "--bytes", "1GiB", *flag)
    assert r.code == 1 and "unknown slice or job 'nosuch'" in r.err, r.err
    r = routed("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", *flag)  # a slice: the option is wrong
    assert r.code == 2 and f"bad option {flag[0]}: applies to a multislice job" in r.err, r.err
