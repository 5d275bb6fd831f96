"""Modules stay small enough to read whole: `make lint` runs this.

A module of `tpufleet/` may have at most 400 lines. KNOWN lists the modules kept longer, each with its length then
and the reason it is one module (the list only shrinks, a listed module may not grow, and one back within the
limit must be taken off the list).

    python tools/check_module_lengths.py [ROOT]
"""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 400
KNOWN: dict[str, tuple[int, str]] = {
    "tpufleet/routing/cdg.py": (410, "the hop keys' bit layout and the cycle search that unpacks it"),
    "tpufleet/fleetstate.py": (421, "every transition of the fleet state in one place"),
    "tpufleet/routing/analysis.py": (438, "the level-by-level passes (arrival, load, VCs) share one block layout"),
    "tpufleet/simulation/summary.py": (
        440,
        "one pass per job over a run's events; its interval helpers serve it alone",
    ),
    "tpufleet/simulation/inputs.py": (449, "the simulation files' schemas beside the types and ranges they fill"),
    "tpufleet/state/store.py": (448, "the transaction protocol (lock, serial, journal, commit order) in one class"),
}


def long_modules(root: Path) -> dict[str, int]:
    """`path` -> lines, for every module of tpufleet/ over the limit."""
    out = {}
    for path in sorted((root / "tpufleet").rglob("*.py")):
        if "generated" in path.relative_to(root).parts:  # written by tools/make_*.py, not by hand
            continue
        lines = len(path.read_text().splitlines())
        if lines > LIMIT:
            out[path.relative_to(root).as_posix()] = lines
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    found = long_modules(root)
    problems = [
        f"{name}: {lines} lines, over the {LIMIT} allowed" + (f" (listed at {KNOWN[name][0]})" if name in KNOWN else "")
        for name, lines in found.items()
        if lines > KNOWN.get(name, (LIMIT, ""))[0]
    ]
    problems += [f"{name}: now within the limit: take it off KNOWN" for name in KNOWN if name not in found]
    for line in problems:
        print(line, file=sys.stderr)
    print(f"module lengths: {len(found)} over the limit ({len(KNOWN)} known), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
