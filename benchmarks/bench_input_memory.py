"""Memory per input byte of the readers that take large files (issue figures: 26x before the field-by-field
decode), each beside a baseline in the same run: the same process importing only, and a plain `json.loads`.

    python benchmarks/bench_input_memory.py

1. `import k8s` of a 48 MiB node list whose one node carries 16 million empty objects in a field the import does
   not read (skipped unread: exit 0), and of 1.2 million minimal nodes (refused before they are built: exit 2).
2. `goodput-report` of 20,000 one-line jobs: the peak, and its growth per job.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import peak

ROOT = Path(__file__).resolve().parents[1]
SIZE = 48 * 2**20


def node_list(path: Path, kind: str) -> Path:
    if kind == "ignored-field":
        body = b'{"metadata":{"name":"n1","labels":{}},"images":[' + b"{}," * (SIZE // 3) + b"{}]}"
    else:
        body = b",".join(b'{"metadata":{"name":"n%d","labels":{}}}' % i for i in range(SIZE // 40))
    path.write_bytes(b'{"kind":"List","items":[' + body + b"]}")
    return path


def tpufleet(*args: object) -> peak.Child:
    return peak.run([sys.executable, "-m", "tpufleet", *map(str, args)], cwd=ROOT, check=False)


def imports_only() -> float:
    return peak.run([sys.executable, "-c", "import tpufleet.cli, msgspec, numpy"], cwd=ROOT).peak_mib


def json_loads(path: Path) -> float:
    code = f"import json; json.loads(open({str(path)!r}, 'rb').read())"
    return peak.run([sys.executable, "-c", code], cwd=ROOT).peak_mib


def main() -> None:
    bare = imports_only()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        state = tmp / "state"
        tpufleet("--state", state, "init")
        for kind in ("ignored-field", "many-nodes"):
            nodes = node_list(tmp / f"{kind}.json", kind)
            child = tpufleet("--state", state, "import", "k8s", nodes, "-o", "json")
            plain = json_loads(nodes)
            print(
                f"import k8s, 48 MiB node list ({kind}): exit {child.returncode}, peak {child.peak_mib:.0f} MiB; "
                f"imports only {bare:.0f} MiB; json.loads of the list {plain:.0f} MiB: {plain / child.peak_mib:.1f}x"
            )
        log = tmp / "jobs.jsonl"
        with open(log, "w") as fh:
            for k in range(20_000):
                fh.write(f'{{"type":"event","job":"j{k:05d}","time":{1767225600 + k:.1f},"event":"job_start"}}\n')
        child = tpufleet("goodput-report", log, "-o", "json")
        grown = (child.peak_mib - bare) * 1024 / 20_000
        print(
            f"goodput-report, 20,000 one-line jobs: peak {child.peak_mib:.0f} MiB, {grown:.1f} KiB a job over "
            f"the imports' {bare:.0f} MiB (12.8 KiB a job before the fix)"
        )


if __name__ == "__main__":
    main()
