"""The fleet page's layout in a real browser (headless Chromium, skipped without it): nothing runs off the window.

Each test measures a copy of the page with a line of script appended (the page itself has none): the width of the
document and how far right each table reaches, against the window's width."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine; `make test-browser` installs one"),
]
MEASURE = (
    "<script>document.title=JSON.stringify({window:innerWidth,page:document.documentElement.scrollWidth,"
    "tables:[...document.querySelectorAll('table')].map(t=>Math.ceil(t.getBoundingClientRect().right)),"
    "apart:[...document.querySelectorAll('.key')].filter(k=>{const r=document.createRange();"
    "r.selectNodeContents(k.nextSibling);const t=r.getClientRects()[0];"
    "return Math.abs(t.top-k.getBoundingClientRect().top)>12}).map(k=>k.nextSibling.textContent)})</script>"
)


def _layout(tmp_path: Path, page: str, width: int) -> dict:
    """The window's width, the page's, each table's right edge and the labels on another line than their key, with
    the page laid out `width` pixels wide."""
    measured = tmp_path / f"measured-{width}.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size={width},1000"]
    profile = f"--user-data-dir={tmp_path / f'profile-{width}'}"
    cmd = [CHROMIUM or "chromium", *flags, profile, "--dump-dom", measured.as_uri()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    found = re.search(r"<title>(\{.*?\})</title>", r.stdout)
    assert found, r.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.mark.parametrize("width", [1400, 500])  # (500: the narrowest window headless Chromium lays out)
def test_a_superpods_map_stays_within_the_window(cli, tmp_path, width):
    """A TPU7x superpod's map (nine layers of cubes, 1422 pixels) ran past the window's right edge on anything
    narrower than a wall screen, its panel cut; the map scrolls in its panel and the page keeps to the window."""
    assert cli("init", "--generation", "tpu7x").code == 0
    page = cli("report", "-o", "html").out
    layout = _layout(tmp_path, page, width)
    assert layout["page"] <= layout["window"], layout


def test_a_long_list_of_cubes_wraps_within_the_window(cli, tmp_path):
    """An allocation's journal line and an evicted slice's note name each of its cubes ('c00,c01,...', 64 of them
    on a TPU7x 16x16x16, no space to break at): the latest changes' table and the note under the map ran far past
    the window's right edge; both wrap."""
    steps = [
        ("init", "--generation", "tpu7x"),
        ("allocate", "eval", "--shape", "16x16x16"),
        ("inject-fault", "host:c00/1"),
    ]
    for step in steps:
        assert cli(*step).code == 0, step
    page = cli("report", "-o", "html").out
    assert "c00,c01," in page and " reserved: " in page  # the journal's line and the evicted slice's note
    layout = _layout(tmp_path, page, 1400)
    assert layout["page"] <= layout["window"] and max(layout["tables"]) <= layout["window"], layout


def test_a_key_keeps_to_its_label_in_a_narrow_window(cli, tmp_path):
    """In a narrow window the line of the map's keys broke between a colour and its label (the red square at the
    end of one line, 'out of the pool' on the next), and a slice's name fell under its colour; each stays by its
    key."""
    steps = [("init",), ("allocate", "a-long-slice-name", "--shape", "4x4x8"), ("inject-fault", "host:c00/1")]
    for step in steps:
        assert cli(*step).code == 0, step
    for width in (500, 640, 800):
        layout = _layout(tmp_path, cli("report", "-o", "html").out, width)
        assert layout["apart"] == [], (width, layout)


def test_a_changes_time_keeps_to_one_line_in_a_narrow_window(cli, tmp_path):
    """The latest changes' time (2026-12-02T14:43:29Z, no space to break at) broke over two or three lines beside a
    long summary in a narrow window; it keeps to one, the summary wraps."""
    steps = [("init", "--generation", "tpu7x"), ("allocate", "eval", "--shape", "16x16x16")]
    for step in steps:
        assert cli(*step).code == 0, step
    script = (
        "<script>document.title=JSON.stringify([...document.querySelectorAll('table.journal tbody tr')].map(tr=>{"
        "const r=document.createRange();r.selectNodeContents(tr.children[1]);"
        "const tops=new Set([...r.getClientRects()].map(q=>Math.round(q.top)));"
        "const s=document.createRange();s.selectNodeContents(tr.children[3]);"
        "return [tops.size,new Set([...s.getClientRects()].map(q=>Math.round(q.top))).size]}))</script>"
    )
    page = tmp_path / "page.html"
    page.write_text(cli("report", "-o", "html").out.replace("</body>", script + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=500,1000"]
    cmd = [CHROMIUM or "chromium", *flags, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    found = re.search(r"<title>(\[.*?\])</title>", r.stdout)
    assert found, r.stderr[-2000:]
    rows = json.loads(found.group(1))
    assert len(rows) == 2 and max(summary for _, summary in rows) > 1  # the allocation's long line wraps
    assert [time for time, _ in rows] == [1, 1], rows
