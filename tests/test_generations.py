"""Accelerator generations: the shipped profiles load, every figure is sane and sourced, each generation accepts
exactly xpk's shapes (written out again here, independently), v4 accepts what tpufleet accepted before, and a
malformed profile is refused naming the file, the field and the value."""

from __future__ import annotations

import ast
import copy
import importlib.util
import itertools
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpufleet import constants
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.generations import FIGURES, Generation, is_assumption, shape_text
from tpufleet.generations_document import from_document
from tpufleet.shapes import canonical_dims, parse_shape, require_allocatable
from tpufleet.state import generations as shipped_generations
from tpufleet.state.inputfiles import load_yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tpufleet" / "data"
NAMES = ["tpu-v4", "tpu-v5p", "tpu7x"]
Vec = tuple[int, int, int]

# name -> (GKE accelerator label, chips a pod, cubes a pod, largest slice in cubes, sides non-decreasing?)
EXPECTED = {
    "tpu-v4": ("tpu-v4-podslice", 4096, 64, 64, False),
    "tpu-v5p": ("tpu-v5p-slice", 8960, 140, 140, True),
    "tpu7x": ("tpu7x", 9216, 144, 144, True),
}
SUBCUBES = {(2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4)}


def gen(name: str) -> Generation:
    return shipped_generations.shipped(name)


def doc_of(name: str) -> dict[str, Any]:
    doc = load_yaml(DATA / "generations" / f"{name}.yaml", "generation profile")
    assert isinstance(doc, dict)
    return doc


# ---- the shipped files ----------------------------------------------------------------------------------------
def test_the_shipped_generations_load() -> None:
    assert shipped_generations.names() == NAMES
    for name in NAMES:
        g = gen(name)
        label, chips, cubes, max_cubes, ordered = EXPECTED[name]
        assert (g.name, g.gke_accelerator, g.pod_chips, g.pod_cubes) == (name, label, chips, cubes)
        assert (g.max_slice_cubes, g.side_order == "non-decreasing", g.max_side) == (max_cubes, ordered, 256)
        assert (g.host_shape, g.chips_per_host, g.hosts_per_cube) == ((2, 2, 1), 4, 16)
        assert set(g.subcube_shapes) == SUBCUBES
        assert g.ocs_count == 48 and g.ocs_per_dim == 16 and g.ports_per_side >= g.pod_cubes


def test_the_figures_of_the_brief() -> None:
    v5p, tpu7x = gen("tpu-v5p"), gen("tpu7x")
    assert v5p.dcn_chip_bandwidth * 8 == 50e9  # 50 Gbps per chip
    assert (tpu7x.peak_bf16_flops, tpu7x.hbm_bytes, tpu7x.dcn_chip_bandwidth * 8) == (2307e12, 192 * 2**30, 100e9)
    assert (gen("tpu-v4").ocs_ports, v5p.ocs_ports, tpu7x.ocs_ports) == (136, 280, 288)


# Every figure a public page or paper states, as that source states it (checked against the sources in 2026-11):
# https://cloud.google.com/tpu/docs/v4 (275 TFLOP/s bf16, 32 GiB HBM2 at 1200 GBps, 4096 chips a pod);
# Resiliency at Scale, NSDI 2024, section 2 (64 cubes of 4x4x4, 48 OCS, 2x2x1 machines, 50 GB/s per ICI link per
# direction);
# https://cloud.google.com/tpu/docs/v5p (8960 chips a pod, 459 TFLOP/s BF16, 95 GiB HBM at 2765 GBps, 50 Gbps DCN
# per chip, ct5p-hightpu-4t, 4-chip VMs);
# https://cloud.google.com/tpu/docs/tpu7x (9216 chips a pod, 2307 TFLOP/s BF16, 192 GiB HBM at 7380 GB/s,
# 100 Gb/s DCN per chip); https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood (four chips a VM);
# xpk src/xpk/core/system_characteristics.py (accelerator labels, machine types, generate_tpu_topologies limits).
PUBLISHED = {
    "tpu-v4": {
        "pod_chips": 4096,
        "pod_cubes": 64,
        "ocs_count": 48,
        "peak_bf16_flops": 275e12,
        "hbm_bytes": 32 * 2**30,
        "hbm_bandwidth": 1200e9,
        "ici_link_bandwidth": 50e9,
        "machine_type": "ct4p-hightpu-4t",
        "max_slice_cubes": 64,
    },
    "tpu-v5p": {
        "pod_chips": 8960,
        "pod_cubes": 8960 // 64,
        "peak_bf16_flops": 459e12,
        "hbm_bytes": 95 * 2**30,
        "hbm_bandwidth": 2765e9,
        "dcn_chip_bandwidth": 50e9 / 8,
        "machine_type": "ct5p-hightpu-4t",
        "max_slice_cubes": 140,
    },
    "tpu7x": {
        "pod_chips": 9216,
        "pod_cubes": 9216 // 64,
        "peak_bf16_flops": 2307e12,
        "hbm_bytes": 192 * 2**30,
        "hbm_bandwidth": 7380e9,
        "dcn_chip_bandwidth": 100e9 / 8,
        "machine_type": "tpu7x-standard-4t",
        "max_slice_cubes": 144,
    },
}


@pytest.mark.parametrize("name", NAMES)
def test_the_published_figures(name: str) -> None:
    g = gen(name)
    assert {key: getattr(g, key) for key in PUBLISHED[name]} == PUBLISHED[name]
    assert g.chips_per_host == 4


def test_an_unknown_generation_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(BadInput, match="unknown generation 'tpu-v9'; known: tpu-v4, tpu-v5p, tpu7x"):
        shipped_generations.shipped("tpu-v9")


@pytest.mark.parametrize("name", NAMES)
def test_every_number_is_finite_and_in_its_range(name: str) -> None:
    doc = doc_of(name)
    for path, spec in FIGURES.items():
        section, _, key = path.rpartition(".")
        value = (doc[section] if section else doc)[key]["value"]
        numbers = list(value.values()) if isinstance(value, dict) else [value] if spec.kind in ("int", "number") else []
        for number in numbers:
            assert math.isfinite(number) and spec.low <= number <= spec.high, (path, number)
    g = gen(name)
    assert 0 < g.faults.host_per_day < 0.01 and 0 < g.faults.ocs_per_day < 0.01 and 0 < g.faults.link_per_day < 0.01
    assert 1e12 <= g.peak_bf16_flops <= 1e16 and 1e9 <= g.ici_link_bandwidth <= 1e12 and g.ici_links_per_chip == 6
    assert 2**30 <= g.hbm_bytes <= 2**40 and g.ici_link_bandwidth * 2 * g.ici_links_per_chip <= 2e12


@pytest.mark.parametrize("name", NAMES)
def test_every_figure_names_its_public_source_or_its_assumption(name: str) -> None:
    cites = ("https://", "xpk", "ISCA 2023", "NSDI 2024", "tpufleet/data/")
    g = gen(name)
    assert [path for path, _ in g.sources] == list(FIGURES)
    for path, source in g.sources:
        if is_assumption(source):
            assert len(source) > len("ASSUMPTION: ") + 40, (path, source)  # the reasoning, not just the word
        else:
            assert any(c in source for c in cites), (path, source)


@pytest.mark.parametrize("name", NAMES)
def test_every_source_speaks_of_public_documents_only(name: str) -> None:
    # The sources are printed in README's table and ship in the profile: they cite public papers and pages, never
    # the project's own planning notes.
    for path, source in gen(name).sources:
        assert not re.search(r"\bbrief\b", source, re.IGNORECASE), (path, source)


def test_what_rests_on_an_assumption() -> None:
    v4 = set(gen("tpu-v4").assumptions())
    assert v4 == {"dcn.chip_bandwidth", "faults.drain_per_day", "faults.repair_hours"}
    for name in ("tpu-v5p", "tpu7x"):
        guessed = set(gen(name).assumptions())
        assert {"pod.ocs", "pod.ocs_ports", "ici.links_per_chip", "ici.link_bandwidth"} <= guessed
        assert {p for p in FIGURES if p.startswith("faults.")} <= guessed  # inherited from v4, and said so
        assert not guessed & {"pod.chips", "gke_accelerator", "slices.max_cubes", "chip.peak_bf16_flops"}
    assert "slices.twisted" in gen("tpu7x").assumptions()


def test_v4_keeps_tpufleets_v4_figures() -> None:
    v4 = gen("tpu-v4")
    assert (v4.pod_cubes, v4.ocs_count, v4.ocs_ports) == (
        constants.CUBES_PER_POD,
        constants.OCS_PER_POD,
        constants.OCS_PORTS,
    )
    assert (v4.chips_per_host, v4.hosts_per_cube) == (constants.CHIPS_PER_MACHINE, constants.MACHINES_PER_CUBE)
    hw = load_yaml(DATA / "hardware-profile.yaml", "hardware profile")
    assert v4.ici_link_bandwidth == hw["ici"]["link_bandwidth"]
    assert (v4.peak_bf16_flops, v4.hbm_bytes, v4.hbm_bandwidth) == tuple(
        hw["chip"][k] for k in ("peak_flops", "hbm_bytes", "hbm_bandwidth")
    )
    assert v4.dcn_chip_bandwidth * v4.chips_per_host == hw["dcn"]["host_bandwidth"]
    rates = load_yaml(DATA / "fault-rates.yaml", "fault-rate file")
    f = v4.faults
    assert (f.host_per_day, f.link_per_day, f.ocs_per_day, f.drain_per_day) == tuple(
        rates[f"{k}_per_day"] for k in ("host", "link", "ocs", "drain")
    )
    assert vars(f.repair_hours) == rates["repair_hours"]


def test_the_later_generations_inherit_v4s_fault_defaults() -> None:
    assert gen("tpu-v5p").faults == gen("tpu-v4").faults == gen("tpu7x").faults


# ---- the shape rule ---------------------------------------------------------------------------------------------
def xpk_topologies(max_cubes: int, nondecreasing: bool) -> set[Vec]:
    """xpk's generate_tpu_topologies, written out again: sides multiples of 4 from 4 to 256, at most max_cubes
    cubes, A <= B <= C where asked, plus the four sub-cube shapes."""
    sides = range(4, 257, 4)
    found = {
        (a, b, c)
        for a, b, c in itertools.product(sides, repeat=3)
        if (a // 4) * (b // 4) * (c // 4) <= max_cubes and (not nondecreasing or a <= b <= c)
    }
    return found | SUBCUBES


def twisted_families(shapes: set[Vec]) -> set[Vec]:
    """(4k, 4k, 8k) and (4k, 8k, 8k), sides in that order."""
    return {(a, b, c) for a, b, c in shapes if a % 4 == 0 and (b, c) in ((a, 2 * a), (2 * a, 2 * a))}


@pytest.mark.parametrize("name", NAMES)
def test_each_generation_accepts_exactly_xpks_shapes(name: str) -> None:
    g = gen(name)
    _, _, _, max_cubes, ordered = EXPECTED[name]
    expected = xpk_topologies(max_cubes, ordered)
    accepted = g.accepted_shapes()
    assert set(accepted) == expected and len(accepted) == len(expected)
    assert set(g.accepted_shapes(twisted=True)) == twisted_families(expected)
    if ordered:
        assert all(a <= b <= c for a, b, c in set(accepted) - SUBCUBES)  # 2x2x1 is written so in xpk too


def test_the_counts_of_accepted_shapes() -> None:
    counts = {name: (len(gen(name).accepted_shapes()), len(gen(name).accepted_shapes(twisted=True))) for name in NAMES}
    assert counts == {"tpu-v4": (800, 5), "tpu-v5p": (414, 7), "tpu7x": (432, 7)}


@pytest.mark.parametrize("name", NAMES)
def test_the_tables_shape_counts_are_the_shapes_capacity_lists_on_a_full_pod(cli, name: str) -> None:
    """The table counts plain and twisted shapes alike, sides in canonical order: as `capacity` lists a pod's."""
    from tpufleet.generations_markdown import markdown_table

    (row,) = [line for line in markdown_table([gen(name)]).splitlines() if line.startswith("| accepted slice shapes")]
    counted = re.fullmatch(r"\| accepted slice shapes[^|]* \| ([0-9,]+) \(([0-9]+) twisted\)(; .*)? \|", row)
    assert counted is not None, row
    assert cli("init", "--generation", name).code == 0
    verdicts = cli("capacity", "-o", "json").json["pods"][0]["verdicts"]
    twisted = sum(v["twisted"] for v in verdicts)
    assert (int(counted[1].replace(",", "")), int(counted[2])) == (len(verdicts) - twisted, twisted)


# Sides to probe check_shape with: small ones, every multiple of 4 to 64, the edges of the side rule.
PROBE = sorted({*range(1, 10), *range(12, 65, 4), 72, 96, 128, 144, 252, 256, 260, 288, 576})


@pytest.mark.parametrize("name", NAMES)
def test_check_shape_agrees_with_the_enumeration(name: str) -> None:
    g = gen(name)
    plain, twisted = set(g.accepted_shapes()), set(g.accepted_shapes(twisted=True))
    for dims in itertools.product(PROBE, repeat=3):
        assert g.accepts(dims) == (dims in plain), dims
        assert g.accepts(dims, twisted=True) == (dims in twisted), dims


@pytest.mark.parametrize("dims", [(16, 24, 24), (12, 12, 36), (4, 36, 64), (4, 4, 144), (12, 12, 12), (2, 2, 1)])
def test_tpu7x_accepts_the_new_shapes(dims: Vec) -> None:
    gen("tpu7x").check_shape(dims)


def test_16x24x24_takes_the_whole_tpu7x_superpod() -> None:
    g = gen("tpu7x")
    assert g.cubes_of((16, 24, 24)) == 144 == g.pod_cubes and math.prod((16, 24, 24)) == g.pod_chips


@pytest.mark.parametrize(
    ("name", "dims", "twisted", "message"),
    [
        ("tpu7x", (20, 24, 28), False, "bad shape 20x24x28 for tpu7x: 210 cubes, at most 144"),
        ("tpu7x", (4, 4, 260), False, "bad shape 4x4x260 for tpu7x: a side is over 256"),
        (
            "tpu7x",
            (6, 8, 8),
            False,
            "bad shape 6x8x8 for tpu7x: sides must be multiples of 4 (or a sub-cube shape 2x2x1, 2x2x2, 2x2x4, 2x4x4)",
        ),
        (
            "tpu7x",
            (24, 24, 16),
            False,
            "bad shape 24x24x16 for tpu7x: sides must be non-decreasing, A <= B <= C (e.g. 16x24x24)",
        ),
        ("tpu-v5p", (16, 16, 36), False, "bad shape 16x16x36 for tpu-v5p: 144 cubes, at most 140"),
        ("tpu-v4", (8, 8, 68), False, "bad shape 8x8x68 for tpu-v4: 68 cubes, at most 64"),
        ("tpu-v4", (0, 4, 4), False, "bad shape 0x4x4 for tpu-v4: every side must be at least 1"),
        ("tpu-v4", (1, 2, 2), False, "bad shape 1x2x2 for tpu-v4: sides must be multiples of 4"),
        (
            "tpu7x",
            (4, 4, 4),
            True,
            "bad shape 4x4x4 twisted for tpu7x: twisted tori exist only for (4k,4k,8k) and (4k,8k,8k), sides in that order",
        ),
        ("tpu-v4", (8, 4, 4), True, "bad shape 8x4x4 twisted for tpu-v4: twisted tori exist only for"),
    ],
)
def test_a_refused_shape_names_the_rule_and_the_generation(name: str, dims: Vec, twisted: bool, message: str) -> None:
    with pytest.raises(BadInput, match="^" + re.escape(message)) as info:
        gen(name).check_shape(dims, twisted)
    assert info.value.exit_code == 2


def test_v4_takes_sides_in_any_order_and_the_others_do_not() -> None:
    gen("tpu-v4").check_shape((8, 4, 4))
    assert not gen("tpu-v5p").accepts((8, 4, 4)) and gen("tpu-v5p").accepts((4, 4, 8))


# ---- v4: nothing changes for v4 users ---------------------------------------------------------------------------
def accepted_by_tpufleet_today(twisted: bool, max_cubes: int) -> set[Vec]:
    """The canonical shapes tpufleet.shapes accepts for a slice (parse, then allocatable), at most max_cubes cubes."""
    sides = sorted({*range(1, 17), *range(4, 261, 4), 1024})
    found = set()
    for a, b, c in itertools.combinations_with_replacement(sides, 3):
        try:
            shape = require_allocatable(parse_shape(f"{a}x{b}x{c}", twisted))
        except BadInput:
            continue
        if shape.cubes <= max_cubes:
            found.add(shape.dims)
    return found


@pytest.mark.parametrize("twisted", [False, True])
def test_v4_accepts_what_tpufleet_accepted_for_a_v4_pod(twisted: bool) -> None:
    v4 = gen("tpu-v4")
    today = accepted_by_tpufleet_today(twisted, v4.max_slice_cubes)
    assert {canonical_dims(d) for d in v4.accepted_shapes(twisted)} == today
    for dims in v4.accepted_shapes(twisted):  # and every one of them, as written, parses to its canonical form
        assert parse_shape(shape_text(dims), twisted).dims == canonical_dims(dims)


def test_v4_refuses_what_tpufleet_accepted_beyond_a_v4_pod() -> None:
    """tpufleet.shapes still accepts up to 16,384 chips (for `topology`); a v4 slice stops at 64 cubes, as in xpk."""
    v4 = gen("tpu-v4")
    beyond = accepted_by_tpufleet_today(False, 256) - accepted_by_tpufleet_today(False, 64)
    assert beyond and not any(v4.accepts(d) for d in beyond)


# ---- malformed profiles -----------------------------------------------------------------------------------------
def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value


_DELETE = object()

MALFORMED = [
    ("pod.cubes.value", "many", "pod.cubes.value"),
    ("pod.cubes.value", 0, "pod.cubes.value"),
    ("chip.peak_bf16_flops.value", -1.0, "chip.peak_bf16_flops.value"),
    ("chip.hbm_bytes.value", 1.5, "chip.hbm_bytes.value"),
    ("slices.side_order.value", "sorted", "slices.side_order.value"),
    ("slices.twisted.value", ["4k,4k,4k"], "slices.twisted.value.0"),
    ("slices.subcube_shapes.value", [[2, 2, 8]], "slices.subcube_shapes.value.0"),
    ("gke_accelerator.value", "TPU 7x", "gke_accelerator.value"),
    ("faults.repair_hours.value.host", True, "faults.repair_hours.value.host"),
    ("faults.ocs_per_day.value", 2.0, "faults.ocs_per_day.value"),
    ("ici.link_bandwidth.source", "", "ici.link_bandwidth.source"),
    ("pod.colour", {"value": 1, "source": "x"}, "pod"),
    ("schema_version", 2, "schema_version"),
    ("schema_version", 1.0, "schema_version"),  # equal to 1 in Python, not the integer the file holds
    ("ici.link_bandwidth.value", float("nan"), "ici.link_bandwidth.value"),
    ("pod.cubes.value", 10**30, "pod.cubes.value"),
]
CROSS = [
    ("pod.chips.value", 9000, "pod.chips.value", "pod.cubes x 64"),
    ("pod.ocs_ports.value", 200, "pod.ocs_ports.value", "at least 2 x pod.cubes = 288"),
    ("pod.ocs.value", 47, "pod.ocs.value", "one OCS per dimension and face position"),
    ("slices.max_cubes.value", 145, "slices.max_cubes.value", "at most pod.cubes"),
    ("slices.max_side.value", 250, "slices.max_side.value", "multiple of 4"),
    ("slices.subcube_shapes.value", [[1, 1, 1]], "slices.subcube_shapes.value.0", "whole hosts"),
]


@pytest.mark.parametrize(("path", "value", "field"), MALFORMED)
def test_a_malformed_profile_file_is_refused_naming_the_field(
    tmp_path: Path, path: str, value: Any, field: str
) -> None:
    doc = doc_of("tpu7x")
    _set(doc, path, value)
    bad = tmp_path / "tpu7x.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(BadStateFile) as info:
        shipped_generations.load(bad)
    assert info.value.file == str(bad) and info.value.field.startswith(field)


@pytest.mark.parametrize(("path", "value", "field"), MALFORMED)
def test_the_pure_converter_refuses_the_same_documents(path: str, value: Any, field: str) -> None:
    doc = copy.deepcopy(doc_of("tpu7x"))
    _set(doc, path, value)
    with pytest.raises(BadStateFile) as info:
        from_document(doc, "p.yaml")
    assert info.value.file == "p.yaml" and info.value.field.startswith(field)
    assert str(info.value).startswith(f"p.yaml: field {info.value.field}: ")


@pytest.mark.parametrize(("path", "value", "field", "problem"), CROSS)
def test_figures_that_contradict_each_other_are_refused(
    tmp_path: Path, path: str, value: Any, field: str, problem: str
) -> None:
    doc = doc_of("tpu7x")
    _set(doc, path, value)
    bad = tmp_path / "tpu7x.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(BadStateFile, match=problem) as info:
        shipped_generations.load(bad)
    assert (info.value.field, info.value.value) == (field, value if not isinstance(value, list) else value[0])


def test_a_missing_figure_or_source_is_refused_naming_it() -> None:
    for path in ("chip.hbm_bytes", "chip.hbm_bytes.source", "title"):
        doc = copy.deepcopy(doc_of("tpu7x"))
        _set(doc, path, _DELETE)
        with pytest.raises(BadStateFile, match="is required") as info:
            from_document(doc, "p.yaml")
        assert info.value.field == path


def test_a_shipped_file_must_carry_its_own_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = doc_of("tpu7x")
    (tmp_path / "tpu8.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(shipped_generations, "SHIPPED_DIR", tmp_path)
    shipped_generations.shipped.cache_clear()
    try:
        assert shipped_generations.names() == ["tpu8"]
        with pytest.raises(BadStateFile, match="must be the file's name, tpu8") as info:
            shipped_generations.shipped("tpu8")
        assert info.value.field == "name"
    finally:
        shipped_generations.shipped.cache_clear()


# ---- layers ------------------------------------------------------------------------------------------------------
def test_the_core_module_touches_no_file_and_imports_no_state() -> None:
    module = ROOT / "tpufleet" / "generations.py"
    spec = importlib.util.spec_from_file_location("check_core_io", ROOT / "tools" / "check_core_io.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.file_calls(module) == {}
    imported = {
        node.module or "" for node in ast.walk(ast.parse(module.read_text())) if isinstance(node, ast.ImportFrom)
    } | {
        alias.name
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not {m for m in imported if m.startswith(("tpufleet.state", "tpufleet.ops", "tpufleet.cli"))}
