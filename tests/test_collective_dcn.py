"""`tpufleet collective JOB`: the DCN all-reduce against its closed form, the hierarchical all-reduce of a
multislice job through the CLI, bad input, and the two-island result of "Pathways: Asynchronous Distributed
Dataflow for ML" (section 5.3 and appendix D)."""

from pathlib import Path

import pytest

from tpufleet.collectives.cost import collective_time
from tpufleet.collectives.dcn import dcn_all_reduce, hierarchical, one_slice_shapes, step
from tpufleet.collectives.profile import SHIPPED, Dcn, default_profile
from tpufleet.shapes import Shape

GIB = 1 << 30
JOB_KEYS = {
    "job", "shape", "twisted", "slices", "total_slices", "chips", "hosts_per_slice", "pods", "op", "bytes", "layout", "time_s",
    "phases", "per_slice", "step", "one_slice", "profile",
}  # fmt: skip


def closed_form(nbytes: float, n: int, hosts: int, bw: float, latency: float, over: float) -> float:
    """Ring all-reduce among n slices: 2(n-1) DCN steps, each host sending 2(n-1)/n of its chips' shards."""
    return 2 * (n - 1) * latency + (2 * (n - 1) / n * nbytes / hosts) / (bw / over)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 64])
@pytest.mark.parametrize("nbytes", [1, 4096, GIB, 32 * GIB])
@pytest.mark.parametrize("over, across", [(1.0, False), (2.5, False), (2.5, True), (4.0, True)])
def test_dcn_all_reduce_is_its_closed_form(n, nbytes, over, across):
    dcn = Dcn(25e9, 1e-5, over)
    got = dcn_all_reduce(nbytes, n, 32, dcn, across_pods=across)
    expected = closed_form(nbytes, n, 32, 25e9, 1e-5, over if across else 1.0)
    assert got.seconds == expected
    assert got.oversubscription == (over if across else 1.0)
    assert got.bytes_per_host == 2 * (n - 1) / n * nbytes / 32
    if n == 1:
        assert got.seconds == 0.0  # one slice: nothing crosses the DCN


def test_the_hierarchical_total_is_the_sum_of_its_parts_with_the_slowest_slice_in_each_ici_phase():
    d = dcn_all_reduce(GIB, 3, 32, Dcn(25e9, 1e-5), across_pods=False)
    h = hierarchical([0.5, 0.7, 0.6], d, [0.4, 0.3, 0.9])
    assert (h.reduce_scatter_s, h.all_gather_s) == (0.7, 0.9)
    assert h.seconds == 0.7 + d.seconds + 0.9


def test_one_slice_shapes_are_the_documented_tori_a_pod_holds():
    assert one_slice_shapes(1024, 64) == [Shape((8, 8, 16)), Shape((8, 8, 16), twisted=True)]
    assert one_slice_shapes(512, 64) == [Shape((8, 8, 8))]
    assert one_slice_shapes(1024, 8) == []  # 16 cubes do not fit a pod of 8
    assert one_slice_shapes(192, 64) == []  # 4x4x12 is no documented torus (C > 2A)
    assert one_slice_shapes(8, 64) == [Shape((2, 2, 2))]


# ---- through the CLI ------------------------------------------------------------------------------------------


@pytest.fixture
def job(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x8", "--slices", "2").code == 0
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    for s in ("j-0", "j-1"):
        assert fleet("routes", s).code == 0
    return fleet


def test_a_two_slice_job_gives_the_documented_result(job):
    r = job("collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--model-flops-per-step", "1e15", "-o", "json")
    assert r.code == 0, r.err
    j = r.json
    assert set(j) == JOB_KEYS
    assert (j["slices"], j["total_slices"], j["chips"], j["hosts_per_slice"], j["pods"]) == (2, 2, 256, 32, ["pod0"])
    assert (j["op"], j["bytes"]) == ("all-reduce", GIB)
    rs, dc, ag = j["phases"]
    assert [p["phase"] for p in j["phases"]] == ["ici-reduce-scatter", "dcn-all-reduce", "ici-all-gather"]
    # Each ICI phase is the per-slice model on that slice's stored tables.
    one = job("collective", "j-0", "--op", "reduce-scatter", "--bytes", "1GiB", "-o", "json").json
    assert rs["seconds"] == one["time_s"] and j["per_slice"][0]["tables"]["source"] == "stored"
    assert (
        ag["seconds"] == job("collective", "j-1", "--op", "all-gather", "--bytes", "1GiB", "-o", "json").json["time_s"]
    )
    # One pod: no oversubscription; the shipped profile's 25 GB/s per host and 10 us per DCN step.
    assert dc["seconds"] == closed_form(GIB, 2, 32, 25e9, 1e-5, 1.0)
    assert (dc["ring_size"], dc["oversubscription"], dc["bytes_per_host"]) == (2, 1.0, GIB / 32)
    assert j["time_s"] == rs["seconds"] + dc["seconds"] + ag["seconds"]
    compute = 1e15 / (256 * 275e12)
    assert j["step"] == {
        "model_flops_per_step": 1e15,
        "compute_s": compute,
        "step_s": compute + j["time_s"],
        "all_reduce_fraction": j["time_s"] / (compute + j["time_s"]),
        "dcn_fraction": dc["seconds"] / (compute + j["time_s"]),
    }
    best = collective_time(Shape((4, 8, 8), twisted=True), GIB)
    assert best < collective_time(Shape((4, 8, 8)), GIB)
    o = j["one_slice"]
    assert (o["shape"], o["twisted"], o["all_reduce_s"]) == ("4x8x8", True, best)
    assert o["throughput_ratio"] == (compute + best) / (compute + j["time_s"])
    assert j["profile"]["dcn"]["source"] == "profile"
    text = job("collective", "j", "--op", "all-reduce", "--bytes", "1GiB").out
    assert "dcn-all-reduce" in text and "4x8x8 twisted" in text


def test_slices_in_two_pods_share_the_oversubscribed_dcn(cli, tmp_path):
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--spread").code == 0
    prof = tmp_path / "p.yaml"
    text = SHIPPED.read_text().replace("pod_oversubscription: 1.0", "pod_oversubscription: 4")
    prof.write_text(text)
    r = cli(
        "collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "--profile", prof, "-o", "json"
    )
    assert r.code == 0, r.err
    dc = r.json["phases"][1]
    assert r.json["pods"] == ["pod0", "pod1"]
    assert (dc["oversubscription"], dc["host_bandwidth_Bps"]) == (4.0, 25e9 / 4)
    assert dc["seconds"] == closed_form(GIB, 2, 32, 25e9, 1e-5, 4.0)


def test_a_profile_without_a_dcn_section_models_the_dcn_with_the_shipped_figures(job, tmp_path):
    prof = tmp_path / "old.yaml"
    text = SHIPPED.read_text()
    prof.write_text(text[: text.index("dcn:")] + text[text.index("sources:") :])
    r = job("collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--profile", prof, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["profile"]["dcn"]["source"] == "shipped profile (hardware-profile.yaml)"
    assert r.json["phases"][1]["seconds"] == closed_form(GIB, 2, 32, 25e9, 1e-5, 1.0)


@pytest.mark.parametrize(
    "line, field, value",
    [
        ("host_bandwidth: 25.0e+9", "dcn.host_bandwidth", "-25000000000.0"),
        ("host_bandwidth: 25.0e+9", "dcn.host_bandwidth", "0"),
        ("latency: 1.0e-5", "dcn.latency", "-1"),
        ("pod_oversubscription: 1.0", "dcn.pod_oversubscription", "0.5"),
        ("host_bandwidth: 25.0e+9", "dcn.host_bandwidth", "0.001"),  # positive, and a nonsense figure
        ("pod_oversubscription: 1.0", "dcn.pod_oversubscription", "5000"),
        ("link_bandwidth: 50.0e+9", "ici.link_bandwidth", "1000"),
    ],
)
def test_a_bad_dcn_figure_exits_2_naming_file_field_and_value(job, tmp_path, line, field, value):
    prof = tmp_path / "bad.yaml"
    prof.write_text(SHIPPED.read_text().replace(line, f"{line.split(':')[0]}: {value}"))
    r = job("collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--profile", prof)
    assert r.code == 2
    assert r.err.startswith(f"tpufleet: error: {prof}: field {field}: must be ") and f"(value {value})" in r.err


@pytest.mark.parametrize(
    "args, code, text",
    [
        (["nope", "--op", "all-reduce", "--bytes", "1GiB"], 1, "unknown slice or job 'nope'"),  # as every command says
        (["j", "--op", "all-reduce", "--bytes", "-1"], 2, "--bytes"),
        (["j", "--op", "all-gather", "--bytes", "1GiB"], 2, "all-reduce only"),
        (["j", "--op", "all-reduce", "--bytes", "1GiB", "--algorithm", "ring"], 2, "--algorithm"),
        (
            ["j", "--op", "all-reduce", "--bytes", "1GiB", "--model-flops-per-step", "-5"],
            2,
            "--model-flops-per-step: '-5'",
        ),
        (["j", "--op", "all-reduce", "--bytes", "1GiB", "--model-flops-per-step", "nan"], 2, "'nan' is not a finite"),
        (["j", "--op", "all-reduce", "--bytes", "1GiB", "--model-flops-per-step", "0"], 2, "step: 0 FLOPs: give a"),
        (["j-0", "--op", "all-reduce", "--bytes", "1GiB", "--model-flops-per-step", "1e15"], 2, "multislice job"),
    ],
)
def test_bad_input(job, args, code, text):
    r = job("collective", *args)
    assert r.code == code, r.err
    assert text in r.err and len(r.err.strip().splitlines()) == 1


def test_a_stopped_job_is_refused_and_an_elastic_one_runs_on_its_active_slices(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x8", "--slices", "3", "--elastic", "2").code == 0
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    cube = fleet("show", "slices", "-o", "json").json
    first = next(s for s in cube if s["name"] == "j-0")["cubes"][0]
    assert fleet("inject-fault", f"cube:{first}").code == 0
    r = fleet("collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["slices"], r.json["total_slices"], r.json["chips"]) == (2, 3, 256)
    assert [s["slice"] for s in r.json["per_slice"]] == ["j-1", "j-2"]
    assert fleet("allocate", "k", "--shape", "4x4x8", "--slices", "2").code == 0
    assert fleet("plan-xconnect", "k", "--apply").code == 0
    cube = next(s for s in fleet("show", "slices", "-o", "json").json if s["name"] == "k-1")["cubes"][0]
    assert fleet("inject-fault", f"cube:{cube}").code == 0
    r = fleet("collective", "k", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy")
    assert r.code == 1 and "job 'k' is stopped" in r.err


# ---- Pathways: two islands of 512 chips ------------------------------------------------------------------------

PARAMS = 64e9  # the 64B-parameter decoder of section 5.3
GRAD_BYTES = 4  # fp32 gradients (assumption; the paper reports 457 GB of global reduction, 1.8x the 256 GB)
CHIPS = 512  # per island; the model is sharded over an island's chips, so each holds 1/512 of the gradient


@pytest.mark.parametrize(("tokens", "kept"), [(2**19, 0.899), (2**20, 0.947), (2**21, 0.973), (2**22, 0.986)])
def test_two_islands_of_512_chips_keep_the_pathways_share_of_throughput(fleet, tokens, kept):
    """ "Pathways" section 5.3 and appendix D: a 64B decoder on two islands of 512 chips, sharded inside each
    island and data parallel between them over the DCN, reaches 97.2% of the throughput of the same chips over
    ICI. Here: two 8x8x8 slices (128 hosts each, 128 host pairs as in the paper), `--layout sharded` with each
    chip's 1/512 share of the fp32 gradient. The DCN all-reduce moves each host's 4 shares (2 GB) once to its peer
    at the profile's 25 GB/s: 80 ms. The same chips as one slice exchange nothing over the DCN, and what chips
    exchange inside a slice is the same in both, so the ratio is compute / (compute + DCN). The paper gives no
    batch: at peak compute 0.5M tokens per step give 89.9%, 1M 94.7%, 2M 97.3% (the paper: 97.2%), 4M 98.6%: the
    paper's figure is met at about 2M tokens a step, a fit, not a prediction."""
    nbytes, flops = PARAMS * GRAD_BYTES / CHIPS, 6 * PARAMS * tokens
    assert fleet("allocate", "pw", "--shape", "8x8x8", "--slices", "2").code == 0
    r = fleet(
        "collective", "pw", "--op", "all-reduce", "--bytes", f"{nbytes:.0f}", "--layout", "sharded",
        "--model-flops-per-step", f"{flops:.0f}", "-o", "json",
    )  # fmt: skip
    assert r.code == 0, r.err
    j = r.json
    dcn = 2 * 1e-5 + nbytes * 4 / 25e9  # one peer: 2(N-1)/N = 1 of a host's 4 shares, plus 2(N-1) latencies
    compute = flops / (1024 * 275e12)
    assert [ph["seconds"] for ph in j["phases"]] == [0.0, pytest.approx(dcn, rel=1e-12), 0.0]
    assert j["phases"][1]["bytes_per_host"] == pytest.approx(2e9, rel=1e-12)
    assert j["step"]["step_s"] == pytest.approx(compute + dcn, rel=1e-12)
    ratio = j["one_slice"]["throughput_ratio"]
    assert ratio == pytest.approx(compute / (compute + dcn), rel=1e-12)
    assert round(ratio, 3) == kept and 0.85 <= ratio < 1
    assert step(flops, 1024, default_profile(), 0.0).compute_s == compute


@pytest.mark.parametrize(
    ("params", "paper_bytes", "shape", "chips"), [(64e9, 457e9, "8x8x8", 512), (136e9, 1030e9, "8x8x16", 1024)]
)
def test_bytes_of_a_global_reduction_between_two_islands(fleet, params, paper_bytes, shape, chips):
    """Pathways section 5.3 reports 457 GB per global reduction for the 64B model on two islands of 512 cores and
    1,030 GB for the 136B model on two islands of 1,024 cores (appendix D counts the 64B run's 512 cores an island
    as 512 chips, 128 host pairs; so the 136B run's islands are 1,024 chips, 256 hosts each). The model's DCN
    all-reduce between two islands moves every host's share of the fp32 gradient once to its peer, each way:
    2 x 4 B x parameters in all (512 GB and 1,088 GB). The paper's figures are 0.89 and 0.95 of that, 1.79 and 1.89
    times the fp32 gradient: more than a bf16 gradient each way (1.0x) could give, less than an fp32 one; the
    paper says no more."""
    nbytes = params * GRAD_BYTES / chips
    assert fleet("allocate", "pw", "--shape", shape, "--slices", "2").code == 0
    r = fleet("collective", "pw", "--op", "all-reduce", "--bytes", f"{nbytes:.0f}", "--layout", "sharded", "-o", "json")
    assert r.code == 0, r.err
    per_host = r.json["phases"][1]["bytes_per_host"]
    total = per_host * (chips // 4) * 2  # 4 chips a host, two islands
    assert total == pytest.approx(2 * GRAD_BYTES * params, rel=1e-12)
    assert 0.85 < paper_bytes / total < 1.0 and paper_bytes / (params * 2) > 1.0  # above bf16 each way


def test_the_readme_gives_the_136b_runs_islands_as_the_paper_does():
    """The README once called the 136B run's two islands of 1,024 cores "two islands of 512 chips", against the
    paper's own count (512 cores an island are 512 chips in its appendix D)."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("Bytes per global reduction:")
    paragraph = " ".join(text[start : text.index("\n\n", start)].split())
    assert "two islands of 1,024 cores" in paragraph and "1,024 chips" in paragraph
    assert "two islands of 512 chips" not in paragraph


def test_a_replicated_gradient_larger_than_hbm_is_refused(fleet):
    """The whole 64B fp32 gradient (256 GB) cannot sit on one chip of 32 GiB: the command says to shard it."""
    assert fleet("allocate", "pw", "--shape", "4x4x8", "--slices", "2").code == 0
    r = fleet("collective", "pw", "--op", "all-reduce", "--bytes", "256e9", "--assume-healthy")
    assert r.code == 2 and "more than a chip's HBM (34359738368 bytes" in r.err and "--layout sharded" in r.err
    r = fleet("collective", "pw-0", "--op", "all-reduce", "--bytes", "40GiB", "--assume-healthy")
    assert r.code == 2 and "more than a chip's HBM" in r.err and "--layout" not in r.err
    r = fleet("collective", "pw-0", "--op", "all-reduce", "--bytes", "1GiB", "--layout", "sharded")
    assert r.code == 2 and "--layout: applies to a multislice job" in r.err


def test_a_sharded_share_larger_than_hbm_is_refused_without_the_hint_to_shard(fleet):
    """`collective JOB --layout sharded` of a share above HBM was told to "give each chip's share with --layout
    sharded", which it had just done."""
    assert fleet("allocate", "pw", "--shape", "4x4x8", "--slices", "2").code == 0
    r = fleet("collective", "pw", "--op", "all-reduce", "--bytes", "40GiB", "--layout", "sharded", "--assume-healthy")
    assert r.code == 2 and "more than a chip's HBM (34359738368 bytes" in r.err and "--layout" not in r.err


def test_a_slice_with_stale_tables_is_flagged_in_the_jobs_table(cli):
    assert cli("init", "--pods", "3", "--cubes-per-pod", "8").code == 0
    for args in (("allocate", "S", "--shape", "4x4x8", "--slices", "2", "--spread"), ("plan-xconnect", "S", "--apply")):
        assert cli(*args).code == 0
    for name in ("S-0", "S-1"):
        assert cli("routes", name).code == 0
    pod = next(r["pod"] for r in cli("show", "slices", "-o", "json").json if r["name"] == "S-1")
    assert cli("inject-fault", f"ocs:{pod}/y/2").code == 0
    r = cli("collective", "S", "--op", "all-reduce", "--bytes", "1GiB")
    assert r.code == 0, r.err
    rows = {line.split()[0]: line for line in r.out.splitlines() if line.startswith("S-")}
    assert "stored, STALE" in rows["S-1"] and "STALE" not in rows["S-0"]
    assert "run `tpufleet routes S-1`" in r.out
    j = cli("collective", "S", "--op", "all-reduce", "--bytes", "1GiB", "-o", "json").json
    assert [s["tables"].get("stale", False) for s in j["per_slice"]] == [False, True]


@pytest.mark.parametrize(
    ("shape", "slices", "why"),
    [
        ("4x4x4", "3", "no documented slice shape (torus or sub-cube block) has that many chips"),  # 192 chips
        ("4x4x8", "4", "its shapes need more cubes than a pod of 4 has"),  # 512 chips: 8x8x8, 8 cubes
    ],
)
def test_why_the_same_chips_cannot_be_one_slice(cli, shape, slices, why):
    assert cli("init", "--pods", "3", "--cubes-per-pod", "4").code == 0
    assert cli("allocate", "j", "--shape", shape, "--slices", slices, "--spread").code == 0
    r = cli("collective", "j", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["one_slice"]["shape"] is None and r.json["one_slice"]["note"].endswith(why)


def test_a_pending_jobs_refusal_names_the_steps_that_let_it_run(fleet):
    """A job with one slice wired: the refusal's commands, run in order, leave it modelled (exit 0)."""
    import re

    assert fleet("allocate", "p", "--shape", "4x4x4", "--slices", "2").code == 0
    assert fleet("plan-xconnect", "p-0", "--apply").code == 0
    args = ("collective", "p", "--op", "all-reduce", "--bytes", "1MB")
    r = fleet(*args)
    assert r.code == 1
    steps = re.findall(r"`tpufleet ([^`]+)`", r.err)
    assert steps
    for command in steps:
        assert fleet(*command.split()).code == 0, command
    assert fleet(*args).code == 0
