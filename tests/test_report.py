"""`tpufleet report`: the JSON, markdown and the self-contained HTML page (parsed here; rendered in Chromium
by the `browser` tests, which `make test-browser` runs)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest


@pytest.fixture
def two_pods(cli):
    steps = [
        ("init", "--pods", "2"),
        ("allocate", "big", "--shape", "4x8x8"),
        ("plan-xconnect", "big", "--apply"),
        ("allocate", "mid", "--shape", "4x4x8", "--pod", "pod1"),
        ("inject-fault", "ocs:pod0/x/3"),
        ("inject-fault", "cube:c40"),
        ("inject-fault", "host:c41/3", "--planned"),
    ]
    for step in steps:
        r = cli(*step)
        assert r.code == 0, (step, r.err)
    return cli


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.titles: list[str] = []
        self.refs: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_title = tag == "title"
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]

    def handle_data(self, data):
        if self._in_title:
            self.titles.append(data)
            self._in_title = False


def test_report_json(two_pods):
    r = two_pods("report", "-o", "json").json
    assert r["serial"] == 7 and [p["pod"] for p in r["map"]["pods"]] == ["pod0", "pod1"]
    assert [e["serial"] for e in r["journal"]] == [7, 6, 5, 4, 3, 2, 1]  # latest first
    assert [f["target"] for f in r["faults"]] == ["ocs:pod0/x/3", "cube:c40", "host:c41/3"]
    assert all(f["age_seconds"] is not None and f["age_seconds"] >= 0 for f in r["faults"])
    assert {s["name"]: s["state"] for s in r["slices"]} == {"big": "degraded", "mid": "allocated"}


def test_report_html_is_self_contained_and_names_every_cube_and_ocs(two_pods, tmp_path):
    out = tmp_path / "fleet.html"
    r = two_pods("report", "-o", "html", "--out", out)
    assert r.code == 0, r.err
    page = _Page()
    page.feed(out.read_text())
    assert page.refs == []  # nothing fetched: no src or href at all
    cube_titles = [t for t in page.titles if t.startswith("cube ")]
    ocs_titles = [t for t in page.titles if t.startswith("ocs:")]
    assert len(cube_titles) == 128 and len(ocs_titles) == 96
    assert "cube c40 (position 40): out; faults f2" in cube_titles
    assert "cube c41 (position 41): drained; faults f3" in cube_titles
    assert any(t.startswith("cube c00 (position 0): slice; slice big 4x8x8 degraded") for t in cube_titles)
    assert [t for t in ocs_titles if "failed" in t] == ["ocs:pod0/x/3: failed, 4 cross-connects"]
    text = out.read_text()
    assert "Slices" in text and "Open faults" in text and "Latest changes" in text
    assert not re.search(r"\bbrief\b|seed 00", text)


def _md_rows(md: str, first: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith(f"| {first}")
    ]


def test_report_markdown(two_pods):
    md = two_pods("report", "-o", "md").out
    big = _md_rows(md, "big")
    assert big and big[0][:6] == ["big", "4x8x8", "degraded", "4", "none", "0"] and big[0][6].startswith("keeps ")
    assert _md_rows(md, "f3")[0][:3] == ["f3", "host:c41/3", "drain"]
    assert "```\npod pod0:" in md and "\x1b[" not in md


def test_report_markdown_escapes_what_users_typed(two_pods, monkeypatch):
    monkeypatch.setenv("USER", "ev|il<img src=x>")
    monkeypatch.setenv("LOGNAME", "ev|il<img src=x>")
    assert two_pods("release", "mid").code == 0
    md = two_pods("report", "-o", "md").out
    assert "<img" not in md and "ev\\|il&lt;img src=x&gt;" in md


def test_report_markdown_shows_what_users_typed_as_text_not_markdown(two_pods, monkeypatch):
    """The journal's user went into the Markdown report as Markdown: an image every viewer fetched, a link."""
    user = "![x](http://tracker.invalid/p.png)[ok](http://phish.invalid)*now*"
    monkeypatch.setenv("USER", user)
    monkeypatch.setenv("LOGNAME", user)
    assert two_pods("release", "mid").code == 0
    md = two_pods("report", "-o", "md").out
    markdown_it = pytest.importorskip("markdown_it")
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert "<img" not in page and "<a " not in page and "<em>" not in page
    assert f"<td>{user}</td>" in page


# ---- in a real browser -----------------------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on this machine; `make test-browser` installs Debian's and runs these tests"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    cmd = [CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})


def _console_errors(stderr: str) -> list[str]:
    """Console messages and uncaught errors of the page (Chromium logs each as one ':CONSOLE' line; the report has
    no script, so any such line is a fault)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.browser
@needs_browser
def test_console_check_catches_errors(tmp_path):
    """The console check itself can fail: a page that logs an error is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><script>console.error('broken on purpose')</script>")
    r = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert any("broken on purpose" in line for line in _console_errors(r.stderr)), r.stderr[-2000:]


@pytest.mark.browser
@needs_browser
def test_report_renders_in_chromium(two_pods, tmp_path):
    out = tmp_path / "fleet.html"
    assert two_pods("report", "-o", "html", "--out", out).code == 0
    shot = tmp_path / "fleet.png"
    r = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1920,1080", out.as_uri())
    assert shot.exists(), r.stderr[-2000:]
    assert _png_size(shot) == (1920, 1080)
    assert _console_errors(r.stderr) == []
    dom = _chromium(tmp_path, "--dump-dom", out.as_uri())
    assert dom.stdout.count("<svg") == 2 and dom.stdout.count("<rect") == 2 * (64 + 48)
    assert json.dumps("Fleet report")[1:-1] in dom.stdout


class _Cells(HTMLParser):
    """The text of each table row's cells, one list a row."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_report_html_says_no_missing_cross_connects_as_0(two_pods, tmp_path):
    """The html page's `missing cross-connects` cell was blank for a slice missing none; the table and md say 0."""
    out = tmp_path / "fleet.html"
    assert two_pods("report", "-o", "html", "--out", out).code == 0
    cells = _Cells()
    cells.feed(out.read_text())
    rows = {row[0]: row for row in cells.rows if row and row[0] in ("big", "mid")}
    assert rows["big"][5] == rows["mid"][5] == "0", rows
    md = {row[0]: row[5] for name in ("big", "mid") for row in _md_rows(two_pods("report", "-o", "md").out, name)}
    assert md == {"big": "0", "mid": "0"}


class _Items(HTMLParser):
    """The text of each list item."""

    def __init__(self):
        super().__init__()
        self.items: list[str] = []
        self._item: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "li":
            self._item = []

    def handle_endtag(self, tag):
        if tag == "li" and self._item is not None:
            self.items.append("".join(self._item))
            self._item = None

    def handle_data(self, data):
        if self._item is not None:
            self._item.append(data)


def _items(page: str) -> list[str]:
    items = _Items()
    items.feed(page)
    return items.items


def test_report_html_notes_what_the_maps_legend_says_of_a_slice(fleet):
    """The table and md reports' map legend says what evicted a slice, the cubes reserved for it and the command
    that moves it; the html page said none of it."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x4").code == 0
    assert fleet("inject-fault", "host:c00/1").code == 0
    note = "evicted by f1; c03,c01 reserved: `tpufleet reschedule a`"
    assert f"  A  a                4x4x8            evicted  ({note})" in fleet("report").out.splitlines()
    assert f"  A  a                4x4x8            evicted  ({note})" in fleet("report", "-o", "md").out.splitlines()
    assert _items(fleet("report", "-o", "html").out) == [f"A a: {note}"]  # b, allocated, has nothing to add


def test_the_legend_of_a_slice_whose_fault_was_cleared_names_no_reserved_cubes(fleet):
    """Once the fault that evicted it is cleared, `reschedule` takes a slice back onto its own cubes when they
    serve, not onto the ones reserved while it was open: the legend said `c03,c01 reserved` still."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "host:c00/1").code == 0
    assert fleet("clear-fault", "f1").code == 0
    note = "evicted by f1, cleared since: `tpufleet reschedule a`"
    assert f"  A  a                4x4x8            evicted  ({note})" in fleet("report").out.splitlines()
    moved = fleet("reschedule", "a", "-o", "json")
    assert moved.code == 0 and moved.json["in_place"] is True, moved.err


# ---- what the provider reports: DEGRADED cubes and maintenance announced ----------------------------------------
RESERVATION = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
SUB = "ironwood-superpod-block-0001-sub-"


@pytest.fixture
def announced(reserved, tmp_path):
    """The reserved superpod (c17, c58, c121 DEGRADED; c40, c99 drained for maintenance past) with `train` on c04
    and c05 and maintenance announced far ahead on c05's sub-block: c05 still serves."""
    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    sub_blocks = json.loads(RESERVATION.read_text())
    upcoming = copy.deepcopy(sub_blocks[40]["reservationSubBlockMaintenance"])
    upcoming["upcomingGroupMaintenance"].update(
        windowStartTime="2099-06-16T09:00:00Z", windowEndTime="2099-06-16T13:00:00Z"
    )
    sub_blocks[5]["reservationSubBlockMaintenance"] = upcoming
    given = tmp_path / "announced.json"
    given.write_text(json.dumps(sub_blocks))
    r = reserved("import", "reservation", given, "--apply")
    assert r.code == 0, r.err
    return reserved


def _reported(cube: str, hosts: str) -> list[str]:
    return [cube, "pod0", f"reservation sub-block {SUB}0{cube[1:]:>03}", hosts]


DEGRADED_ROWS = [_reported("c17", "1 of 16"), _reported("c58", "2 of 16"), _reported("c121", "1 of 16")]
MAINTENANCE_ROWS = [
    ["c40", "pod0", f"{SUB}0040", "PENDING", "2026-06-16T09:00:00Z", "2026-06-16T13:00:00Z", "drained"],
    ["c99", "pod0", f"{SUB}0099", "PENDING", "2026-06-18T09:00:00Z", "2026-06-18T13:00:00Z", "drained"],
    ["c05", "pod0", f"{SUB}0005", "PENDING", "2099-06-16T09:00:00Z", "2099-06-16T13:00:00Z", "serving (train on it)"],
]


def test_report_json_carries_the_providers_degraded_cubes_and_maintenance(announced):
    """`status` named the reservation's DEGRADED sub-blocks and its announced maintenance; the report, the page an
    operator hands on, said nothing of them."""
    provider = announced("report", "-o", "json").json["provider"]
    assert provider["degraded_cubes"] == [
        {"cube": "c17", "pod": "pod0", "sub_block": f"{SUB}0017", "healthy_hosts": 15, "degraded_hosts": 1}
        | {"source": "reservation"},
        {"cube": "c58", "pod": "pod0", "sub_block": f"{SUB}0058", "healthy_hosts": 14, "degraded_hosts": 2}
        | {"source": "reservation"},
        {"cube": "c121", "pod": "pod0", "sub_block": f"{SUB}0121", "healthy_hosts": 15, "degraded_hosts": 1}
        | {"source": "reservation"},
    ]
    assert provider["maintenance"] == announced("status", "-o", "json").json["reservation"]["maintenance"]
    assert [(m["cube"], m["window_start"], m["window_end"], m["slices"]) for m in provider["maintenance"]] == [
        ("c40", "2026-06-16T09:00:00Z", "2026-06-16T13:00:00Z", []),
        ("c99", "2026-06-18T09:00:00Z", "2026-06-18T13:00:00Z", []),
        ("c05", "2099-06-16T09:00:00Z", "2099-06-16T13:00:00Z", ["train"]),
    ]
    import yaml

    assert yaml.safe_load(announced("report", "-o", "yaml").out)["provider"] == provider


def _section(text: str, title: str) -> list[list[str]]:
    """The rows of the table report's section `title` (the lines between its dashes and the blank line after)."""
    lines = text.split(f"\n{title}:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines[2:]]


def _md_section(md: str, title: str) -> list[list[str]]:
    """The rows of the md report's section `title` (under its header and separator lines)."""
    lines = md.split(f"\n## {title}\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[2:]]


def test_report_table_md_and_html_show_the_providers_degraded_cubes_and_maintenance(announced, tmp_path):
    table = announced("report").out
    assert _section(table, "degraded cubes (still serving)") == DEGRADED_ROWS
    assert _section(table, "maintenance announced") == MAINTENANCE_ROWS
    assert table.index("open faults:") < table.index("degraded cubes") < table.index("maintenance announced:")
    assert table.index("maintenance announced:") < table.index("latest changes:")
    assert announced("report", "--out", tmp_path / "fleet.txt").code == 0
    assert _section((tmp_path / "fleet.txt").read_text(), "maintenance announced") == MAINTENANCE_ROWS
    md = announced("report", "-o", "md").out
    assert "\n## Degraded cubes (still serving)\n\n| cube " in md and "\n## Maintenance announced\n\n| cube " in md
    assert _md_section(md, "Degraded cubes (still serving)") == DEGRADED_ROWS
    assert _md_section(md, "Maintenance announced") == MAINTENANCE_ROWS
    page = announced("report", "-o", "html").out
    cells = _Cells()
    cells.feed(page)
    assert [row for row in cells.rows if row and row[0] in ("c17", "c58", "c121")] == DEGRADED_ROWS
    assert [row for row in cells.rows if len(row) == 7 and row[0] in ("c40", "c99", "c05")] == MAINTENANCE_ROWS
    assert "<h2>Degraded cubes (still serving)</h2>" in page and "<h2>Maintenance announced</h2>" in page


def test_a_degraded_sub_block_without_host_counts_is_listed_without_them(cli, tmp_path):
    """A DEGRADED sub-block may come without its host counts (they are optional): `status`, the report and serve's
    page (`report -o html`) added them up and stopped with an internal error; the cube is listed without them."""
    sub_blocks = json.loads(RESERVATION.read_text())
    (item,) = [s for s in sub_blocks if s["name"] == f"{SUB}0017"]
    item["healthInfo"] = {"healthStatus": "DEGRADED"}
    given = tmp_path / "no-counts.json"
    given.write_text(json.dumps(sub_blocks))
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", given, "--apply").code == 0
    status = cli("status")
    assert status.code == 0, status.err
    assert status.out.splitlines()[-1] == (
        "degraded cubes (reservation sub-block DEGRADED, still serving): c17, c58 (2 of 16 hosts degraded), "
        "c121 (1 of 16 hosts degraded)"
    )
    rows = [_reported("c17", ""), *DEGRADED_ROWS[1:]]
    table = cli("report")
    assert table.code == 0, table.err
    assert _section(table.out, "degraded cubes (still serving)") == [rows[0][:3], *rows[1:]]
    md = cli("report", "-o", "md")
    assert md.code == 0, md.err
    assert _md_section(md.out, "Degraded cubes (still serving)") == rows
    page = cli("report", "-o", "html")
    assert page.code == 0, page.err
    assert f"<td>reservation sub-block {SUB}0017</td><td></td>" in page.out


def test_report_shows_a_gke_partition_degraded(fleet):
    """A cube whose GKE partition the node list reports DEGRADED (`import k8s`) is listed as the reservation's are."""
    assert (
        fleet("import", "k8s", Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json", "--apply").code == 0
    )
    partition = fleet("status", "-o", "json").json["k8s"]["degraded_cubes"][0]["partition"]
    provider = fleet("report", "-o", "json").json["provider"]
    assert provider == {
        "degraded_cubes": [{"cube": "c17", "pod": "pod0", "partition": partition, "source": "k8s"}],
        "maintenance": [],
    }
    row = ["c17", "pod0", f"GKE partition {partition}", ""]
    assert _section(fleet("report").out, "degraded cubes (still serving)") == [row[:3]]  # no hosts counted
    assert _md_section(fleet("report", "-o", "md").out, "Degraded cubes (still serving)") == [row]
    assert "maintenance announced" not in fleet("report").out.lower()


def test_a_degraded_cube_of_no_known_partition_reads_alike_in_status_and_report(fleet):
    """A cube the state holds DEGRADED by GKE whose partition id it does not know was 'partition None' in status
    (the report's '?'): both say '?'."""
    assert (
        fleet("import", "k8s", Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json", "--apply").code == 0
    )
    file = fleet.state / "state.json"
    doc = json.loads(file.read_text())
    doc["k8s"]["partitions"] = {k: cube for k, cube in doc["k8s"]["partitions"].items() if cube != "c17"}
    file.write_text(json.dumps(doc))
    line = next(x for x in fleet("status").out.splitlines() if x.startswith("degraded cubes (GKE"))
    assert line.endswith(": c17 (partition ?)")
    assert _section(fleet("report").out, "degraded cubes (still serving)") == [["c17", "pod0", "GKE partition ?"]]


def test_report_without_an_import_has_no_provider_sections(two_pods):
    assert two_pods("report", "-o", "json").json["provider"] == {"degraded_cubes": [], "maintenance": []}
    for fmt in ("table", "md", "html"):
        text = two_pods("report", "-o", fmt).out.lower()
        assert "degraded cubes" not in text and "maintenance announced" not in text, fmt


def test_report_html_escapes_the_providers_names(announced):
    """The sub-block's name is the provider's text: the page escapes it as every cell."""
    from tpufleet.cli.fleetpage import render_page

    doc = announced("report", "-o", "json").json
    doc["provider"]["maintenance"][0]["sub_block"] = "<img src=x>"
    doc["provider"]["degraded_cubes"][0]["sub_block"] = "a&b"
    page = render_page(doc)
    assert "<img" not in page and "<td>&lt;img src=x&gt;</td>" in page
    assert "<td>reservation sub-block a&amp;b</td>" in page


# ---- the node pools `import k8s` holds as unplaced slices ---------------------------------------------------------
POOLS_ROWS = [
    ["v5p-2x2x1", "2x2x1", "tpu-v5p-slice", "pod0", "1", "1 machine(s)"],
    ["v5p-4x4x8", "4x4x8", "tpu-v5p-slice", "pod0", "32", "2 cube(s)"],
]
POOLS_NOTE = (  # a 2x2x1 pool holds 1 machine, rounded up to a cube in the count; its row says the machine
    "2 node pool(s) hold 3 cube(s) (machines of sub-cube pools rounded up to whole cubes), which ones unknown: 137 of "
    "the 140 free cubes are left to allocate"
)


@pytest.fixture
def pools(cli):
    """A TPU v5p cluster of ordinary node pools: a 4x4x8 pool and a 2x2x1 pool, held as unplaced slices."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    nodes = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"
    r = cli("import", "k8s", nodes, "--apply")
    assert r.code == 0, r.err
    return cli


def test_report_json_carries_the_node_pools_status_counts(pools):
    """`status`, `capacity` and `plan-spares` counted the node pools' cubes out of the free ones (137 of 140 left);
    the report, and serve's page made of it, said "140 free" and "slices: (none)" with not a word of the pools."""
    status = pools("status", "-o", "json").json
    doc = pools("report", "-o", "json").json
    assert doc["node_pools"] == {**status["k8s"]["unplaced_slices"], "free_after_unplaced": 137}
    assert [p["node_pool"] for p in doc["node_pools"]["slices"]] == ["v5p-2x2x1", "v5p-4x4x8"]
    import yaml

    assert yaml.safe_load(pools("report", "-o", "yaml").out)["node_pools"] == doc["node_pools"]


def test_report_table_md_and_html_show_the_node_pools(pools):
    table = pools("report").out
    assert _section(table, "unplaced node-pool slices") == [*POOLS_ROWS, [POOLS_NOTE]]
    assert table.index("slices:") < table.index("unplaced node-pool slices:") < table.index("open faults:")
    md = pools("report", "-o", "md").out
    assert _md_section(md, "Unplaced node-pool slices") == POOLS_ROWS
    assert f"\n\n{POOLS_NOTE}\n\n## Open faults" in md
    page = pools("report", "-o", "html").out
    cells = _Cells()
    cells.feed(page)
    assert [row for row in cells.rows if row and row[0].startswith("v5p-")] == POOLS_ROWS
    assert "<h2>Unplaced node-pool slices</h2>" in page and POOLS_NOTE in page


def test_report_without_node_pools_has_no_pools_section(two_pods):
    assert two_pods("report", "-o", "json").json["node_pools"] == {
        "slices": [],
        "cubes": 0,
        "by_pod": {},
        "free_after_unplaced": two_pods("status", "-o", "json").json["cubes"]["free"],
    }
    for fmt in ("table", "md", "html"):
        assert "node pool" not in two_pods("report", "-o", fmt).out.lower(), fmt


def test_report_html_map_keys_name_every_colour_of_an_ocs(two_pods, tmp_path):
    """The page's keys named only an OCS in use: a failed OCS (drawn in the red of a cube out of the pool), a drained
    one and an unused one went unexplained, where the table map's legend names each."""
    assert two_pods("inject-fault", "ocs:pod1/y/2", "--planned").code == 0
    page = two_pods("report", "-o", "html").out
    keys = dict(re.findall(r'<span class="key" style="background:(#\w+)"></span>(OCS [^<]+)', page))
    drawn = set(re.findall(r'<rect x="\d+" y="\d+" width="15" height="15" rx="2" fill="(#\w+)"/>', page))
    assert len(drawn) == 4 and drawn <= set(keys), (drawn, keys)  # unused, in use, failed, drained
    assert {keys[c] for c in drawn} == {"OCS unused", "OCS in use", "OCS failed", "OCS drained"}


def test_report_html_summary_sets_the_drained_cubes_apart_as_the_panels_do(fleet):
    """A drained cube is 'out of the pool' in the page's summary line and 'drained', not 'out', in its pod's panel:
    the summary says how many of the out are drained."""
    assert fleet("inject-fault", "cube:c05", "--planned").code == 0
    assert fleet("inject-fault", "host:c07/0").code == 0
    page = fleet("report", "-o", "html").out
    assert "cubes 62 free, 0 allocated, 2 out of the pool (1 of them drained); OCS" in page
    assert "0 reserved, 1 out, 1 drained</span>" in page


def test_report_html_keys_say_what_the_plus_on_a_cube_is(fleet):
    """Two sub-cube slices on one cube mark it `+` on the map, which the table map's legend explains and the page's
    keys did not."""
    assert fleet("allocate", "a", "--shape", "2x2x1").code == 0
    assert fleet("allocate", "b", "--shape", "2x2x1").code == 0
    page = fleet("report", "-o", "html").out
    assert ">+</text>" in page  # drawn on the shared cube
    assert "<b>+</b>&nbsp;a cube shared by sub-cube slices</span>" in page
