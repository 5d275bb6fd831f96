"""No core module touches a file: `make lint` runs this beside import-linter's layer contracts.

The core (fleet model, planning, routing, faults, availability, goodput, simulation) takes typed values and returns
results; reading and writing files is the state layer's (`tpufleet/state/`) or the shell's. This walks the core's
syntax trees for the calls that open, read, write, list or remove files, and fails on any not in KNOWN, the
breaches still to be moved out (that list only shrinks: a listed call that is gone must be taken off it too).

    python tools/check_core_io.py [ROOT]     # ROOT: the directory holding the tpufleet package (default: here)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# Everything in the package but the shell, the use cases and the state layer is core: a new module is checked without
# being listed (tests/test_layers.py holds the `core` contract of .importlinter to the same set).
NOT_CORE = {"cli", "serve", "ops", "state", "demo", "__main__", "__init__", "data"}


def core_names(package: Path) -> list[str]:
    """The core's top-level modules and packages, by name."""
    names = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    return sorted(names - NOT_CORE)


FILE_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob", "rglob", "mkdir"}
FILE_CALLS |= {"unlink", "rmdir", "scandir", "listdir", "replace", "rename", "mkstemp", "NamedTemporaryFile"}
FILE_CALLS |= {"ZipFile", "load", "save", "savez", "savez_compressed", "fromfile", "tofile", "savefig", "fsync"}
# Receivers whose `.load`/`.save`/`.replace` are not files (json.loads is not listed: it takes text).
NOT_FILES = {"str", "text", "line", "name", "json", "yaml", "pickle", "msgspec", "dataclasses", "tomllib"}

# module -> calls it still makes (name: count). Shrinks as the I/O moves to tpufleet/state/.
KNOWN: dict[str, dict[str, int]] = {}


def _callee(node: ast.Call) -> tuple[str, str]:
    """(receiver, name) of a call: ("", "open") for open(), ("os", "open") for os.open(), ("path", "read_text")..."""
    func = node.func
    if isinstance(func, ast.Name):
        return "", func.id
    if isinstance(func, ast.Attribute):
        receiver = func.value
        text = (
            receiver.id
            if isinstance(receiver, ast.Name)
            else receiver.attr
            if isinstance(receiver, ast.Attribute)
            else ""
        )
        return text, func.attr
    return "", ""


def _in_memory(node: ast.Call) -> bool:
    """The call's first argument is a memory buffer: a name like `buf`, or `io.BytesIO(...)` itself."""
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Name):
        return first.id in {"buf", "buffer"}
    return isinstance(first, ast.Call) and _callee(first)[1] in {"BytesIO", "StringIO"}


def file_calls(path: Path) -> dict[str, int]:
    """The file-touching calls in one module, counted by name."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        receiver, name = _callee(node)
        if name not in FILE_CALLS or receiver in NOT_FILES:
            continue
        if name in {"load", "save", "replace"} and receiver not in {"np", "numpy", "os", "torch"}:
            continue  # str.replace, a dataclass's replace, a profile's load: not files
        if _in_memory(node) or (name == "open" and receiver == "zf"):
            continue  # a figure or an archive written to a buffer; a member of an archive already open
        found[name] = found.get(name, 0) + 1
    return found


def core_modules(root: Path) -> list[Path]:
    package = root / "tpufleet"
    out = []
    for name in core_names(package):
        module = package / f"{name}.py"
        out += [module] if module.exists() else sorted((package / name).rglob("*.py"))
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    problems = []
    for module in core_modules(root):
        key = module.relative_to(root).as_posix()
        found, allowed = file_calls(module), KNOWN.get(key, {})
        for name, count in sorted(found.items()):
            if count > allowed.get(name, 0):
                problems.append(
                    f"{key}: {name}() touches files ({count}x); the core takes values, the state layer reads"
                )
        for name, count in sorted(allowed.items()):
            if found.get(name, 0) < count:
                problems.append(f"{key}: {name}() is gone ({found.get(name, 0)} of {count}): take it off KNOWN")
    for line in problems:
        print(line, file=sys.stderr)
    print(f"core file access: {len(core_modules(root))} modules checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
