"""Make the README's pictures: `show map` as a terminal capture (SVG) and the HTML report in Chromium (PNG).

.venv/bin/python docs/screenshots.py      # needs Debian's chromium for the PNG (`make test-browser`)
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
STEPS = [
    ["init", "--pods", "2"],
    ["allocate", "big", "--shape", "4x8x8"],
    ["allocate", "mid", "--shape", "4x4x8"],
    ["allocate", "small", "--shape", "4x4x4"],
    ["plan-xconnect", "big", "--apply"],
    ["plan-xconnect", "mid", "--apply"],
    ["allocate", "p1", "--shape", "8x8x8", "--pod", "pod1"],
    ["plan-xconnect", "p1", "--apply"],
    ["inject-fault", "ocs:pod0/x/3"],
    ["inject-fault", "cube:c40"],
    ["inject-fault", "host:c41/3", "--planned"],
    ["routes", "big"],
]


def tpufleet(state: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "tpufleet", "--state", str(state), *args], check=True, capture_output=True)


def map_svg(state: Path) -> None:
    from rich.console import Console
    from rich.text import Text

    from tpufleet.cli.mapview import render_map
    from tpufleet.fleetmap import fleet_map
    from tpufleet.state import Store

    console = Console(record=True, width=112, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    console.print(
        Text.from_ansi("$ tpufleet show map --pod pod0\n" + render_map(fleet_map(Store(state).load(), "pod0")))
    )
    console.save_svg(str(DOCS / "show-map.svg"), title="tpufleet show map")


def report_png(state: Path, tmp: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("no chromium: docs/report.png not made (make test-browser installs it)", file=sys.stderr)
        return
    page = tmp / "report.html"
    tpufleet(state, "report", "-o", "html", "--out", str(page))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    shot = ["--hide-scrollbars", "--window-size=1920,1080", f"--screenshot={DOCS / 'report.png'}"]
    subprocess.run(
        [chromium, *flags, f"--user-data-dir={tmp / 'profile'}", *shot, page.as_uri()], check=True, capture_output=True
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        for step in STEPS:
            tpufleet(state, *step)
        map_svg(state)
        report_png(state, Path(tmp))


if __name__ == "__main__":
    main()
