"""The wall-screen HTML page: self-contained, every input string escaped, the sections an operations team needs;
and rendered by a real browser (headless Chromium from the distribution's packages) with its script run to the
end, screenshots at 1920x1080 and at 800 px wide. The browser test is skipped where no Chromium is installed
(``make test-browser`` installs one)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "goodput"
EVIL = "<script>alert(1)</script>&\"'</svg></script><!--"


def page(cli, tmp_path: Path, *logs: Path, extra: tuple[str, ...] = ()) -> str:
    out = tmp_path / "r.html"
    r = cli("goodput-report", *logs, "--window", "1h,6h", *extra, "-o", "html", "--out", out, state=False)
    assert r.code == 0, r.err
    return out.read_text()


def evil_log(tmp_path: Path) -> Path:
    log = tmp_path / "evil.jsonl"
    text = (FIX / "disrupted_training.jsonl").read_text().replace('"train-a"', json.dumps(EVIL))
    log.write_text(text.replace('"jax"', json.dumps(EVIL)))
    return log


def test_every_input_string_is_escaped_and_nothing_is_fetched(cli, tmp_path):
    html = page(cli, tmp_path, evil_log(tmp_path), FIX / "fleet.jsonl")
    assert EVIL not in html and "<script>alert" not in html and "</svg></script><!--" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # in the jobs table
    assert "\\u003cscript\\u003ealert(1)" in html  # in the drill-down data
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", html)  # no network at view time
    assert "@import" not in html and "url(" not in html


def test_the_page_has_what_the_wall_needs(cli, tmp_path):
    html = page(cli, tmp_path, FIX / "disrupted_training.jsonl", FIX / "fleet.jsonl", FIX / "slow_steps.jsonl")
    for needle in (
        "Scheduling (SG)",
        "Runtime (RG)",
        "Program (PG)",
        "MPG and its factors over time",  # periods are chosen (day) when none is asked for
        "Badput over time",
        "Badput breakdown",
        "Rolling windows",
        "Disruptions and checkpoint advice",
        "Young",
        "Daly",
        "generated at",
        "partial period",
        "ML Productivity Goodput paper",
    ):
        assert needle in html, needle
    rows = row_jobs(html)
    assert rows[0] == "waiter"  # the worst MPG first, not by name
    assert "the brief" not in html.lower() and "seed 00" not in html.lower()
    found = re.search(r"id='drill-data'>(.*?)</script>", html, re.S)
    assert found is not None
    data = json.loads(found[1])
    assert set(data) == {"train-a", "serve", "waiter", "slow"}
    assert {s[2] for s in data["train-a"]["segments"]} >= {"productive", "checkpoint_save", "tpu_initialization"}


def row_jobs(page_text: str) -> list[str]:
    """The job each row of the jobs table stands for, as the page's script reads it (JSON in `data-job`)."""
    return [json.loads(html.unescape(x)) for x in re.findall(r"<tr data-job='([^']*)'", page_text)]


def drill_data(page_text: str) -> dict[str, object]:
    found = re.search(r"id='drill-data'>(.*?)</script>", page_text, re.S)
    assert found is not None
    data: dict[str, object] = json.loads(found[1])
    return data


def test_each_row_finds_its_own_timeline_whatever_its_name(cli, tmp_path):
    # a tab in a name is shown escaped ("a\\tb"), as a job may be named too: the row must still name its job
    names = ["a\tb", "a\\tb", "line\nbreak", "cr\rx"]
    text = (FIX / "disrupted_training.jsonl").read_text()
    logs = []
    for k, name in enumerate(names):
        logs.append(tmp_path / f"j{k}.jsonl")
        logs[-1].write_text(text.replace('"train-a"', json.dumps(name)))
    page_text = page(cli, tmp_path, *logs, extra=("--capacity", "tpu-v4=4096"))
    assert sorted(row_jobs(page_text)) == sorted(names)
    assert set(drill_data(page_text)) == set(names)


CHROMIUM: str | None = next(
    (path for n in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(n))), None
)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (make test-browser installs one)")
@pytest.mark.parametrize("size", ["1920,1080", "800,1400"])
def test_a_real_browser_renders_it_without_script_errors(cli, tmp_path, size):
    html = tmp_path / "wall.html"
    html.write_text(page(cli, tmp_path, evil_log(tmp_path), FIX / "fleet.jsonl", FIX / "slow_steps.jsonl"))
    shot = tmp_path / f"wall-{size.split(',')[0]}.png"
    assert CHROMIUM is not None
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={size}"]
    done = subprocess.run(
        [*base, "--enable-logging=stderr", "--v=0", "--dump-dom", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert 'data-ready="1"' in done.stdout  # the page's script ran to its last line
    assert not [line for line in done.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    subprocess.run([*base, f"--screenshot={shot}", html.as_uri()], capture_output=True, timeout=120, check=False)
    assert shot.stat().st_size > 10_000
