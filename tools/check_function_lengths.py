"""Functions stay short enough to read: `make lint` runs this.

A function's body (after its signature and docstring, so a command's option declarations do not count) may be at
most 60 lines, and at most 40 in `tpufleet/cli/`, where a command should only parse, call one use case and render.
KNOWN lists the functions still over their limit, with their length then (the list only shrinks, and a listed
function may not grow).

    python tools/check_function_lengths.py [ROOT]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

LIMIT, CLI_LIMIT = 60, 40
KNOWN: dict[str, int] = {}


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def long_functions(root: Path) -> dict[str, tuple[int, int]]:
    """`path:function` -> (body lines, limit) for every function over its limit."""
    out = {}
    for path in sorted((root / "tpufleet").rglob("*.py")):
        key = path.relative_to(root).as_posix()
        if key.startswith("tpufleet/generated/"):  # written by tools/make_*.py, not by hand
            continue
        limit = CLI_LIMIT if key.startswith("tpufleet/cli/") else LIMIT
        for node in ast.walk(ast.parse(path.read_text(), key)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(node) > limit:
                out[f"{key}:{node.name}"] = (body_lines(node), limit)
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    found = long_functions(root)
    problems = [
        f"{name}: {lines} lines, over the {limit} allowed"
        for name, (lines, limit) in found.items()
        if lines > KNOWN.get(name, limit)
    ]
    problems += [f"{name}: now within its limit: take it off KNOWN" for name in KNOWN if name not in found]
    for line in problems:
        print(line, file=sys.stderr)
    print(f"function lengths: {len(found)} over the limit ({len(KNOWN)} known), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
