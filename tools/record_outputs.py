"""Record every command's JSON output on a fixed runbook, to prove a refactoring changed no behaviour.

    python tools/record_outputs.py OUT.json            # record
    python tools/record_outputs.py NEW.json --against OUT.json   # record again and compare (exit 1 on a change)
    python tools/record_outputs.py PG.json --state postgresql://USER@HOST/EMPTYDB --against OUT.json  # backends

The runbook builds a fleet with slices, a job, wiring, routes, faults, an import, and calls the read commands in
every shape they take. Times of day and the temporary directory are replaced by placeholders (they differ run to
run); everything else must be byte-identical. With --state URL the runbook runs on that PostgreSQL database (an
empty one: the runbook starts with `init`) instead of a temporary directory; the URL and the database's place of a
slice's tables (`routes/NAME.npz`) are written as the directory's, so the recording compares with a directory's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODES = ROOT / "fixtures" / "k8s" / "pod-64.json"
GOODPUT = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_AGE = re.compile(r'"(age|age_seconds)": [^,}\n]+')
_COMMAND = re.compile(r'"command": "[^"]*"')  # the recording process's own command line
_EPOCH = re.compile(r'"value": 1[5-9][0-9]{8}(\.[0-9]+)?')  # seconds since the epoch (a metric's time of day)
_DB_TABLES = re.compile(r"(?<![\w./-])routes/(?=[\w.-]+\.npz)")  # a database's place of a slice's tables


def runbook(state: Path, tmp: Path) -> list[list[str]]:
    plan = str(tmp / "p.json")
    return [
        ["init", "--pods", "2"],
        ["topology", "4x4x8", "--twisted"],
        ["allocate", "llm", "--shape", "4x8x8", "--twisted"],
        ["allocate", "mid", "--shape", "4x4x8"],
        ["allocate", "dev", "--shape", "2x2x4"],
        ["allocate", "job", "--shape", "4x4x4", "--slices", "2", "--spread"],
        ["plan-xconnect", "llm", "--out", plan],
        ["apply-xconnect", plan],
        ["plan-xconnect", "mid", "--apply"],
        ["plan-xconnect", "job", "--apply"],
        ["routes", "llm"],
        ["routes", "mid"],
        ["routes", "job"],
        ["collective", "mid", "--op", "all-reduce", "--bytes", "1GiB"],
        ["collective", "job", "--op", "all-reduce", "--bytes", "1GiB"],
        ["inject-fault", "ocs:pod0/x/5", "--dry-run"],
        ["inject-fault", "ocs:pod0/x/5"],
        ["inject-fault", "host:c03/2", "--reason", "healthd"],
        ["inject-fault", "link:c01/y/4/out", "--planned"],
        ["routes", "mid"],
        ["policy", "mid", "--min-throughput", "0.9"],
        ["import", "k8s", str(NODES)],
        ["status"],
        ["faults", "--all"],
        ["show", "inventory"],
        ["show", "health"],
        ["show", "slices"],
        ["show", "jobs"],
        ["show", "ocs"],
        ["show", "map"],
        ["explain", "mid"],
        ["explain", "job"],
        ["explain", "ocs:pod0/x/5"],
        ["history"],
        ["diff", "3"],
        ["report"],
        ["export", "node-labels"],
        ["export", "kueue-topology"],
        ["export", "slurm-topology"],
        ["export", "slices"],
        ["metrics"],
        ["clear-fault", "host:c03/2"],
        ["reschedule", "mid"],
        ["release", "dev"],
        ["release", "job"],
        ["simulate-availability", "--trials", "200"],
        ["simulate-fleet", "--days", "2", "--seed", "3"],
        ["goodput-report", str(GOODPUT)],
    ]


def call(state: Path | str, args: list[str]) -> dict[str, object]:
    from tpufleet.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--state", str(state), *args, "-o", "json"])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return {"args": args, "exit": code, "out": out.getvalue(), "err": err.getvalue()}


def as_directory(text: str, url: str, state: Path) -> str:
    """A database's output written as a state directory's: its URL (as typed and as messages name it, without a
    password) as the directory, its place of a slice's tables (`routes/NAME.npz`) inside that directory."""
    from tpufleet.state.pgurl import redacted

    scheme, sep, rest = url.partition("://")
    typed = {url, scheme.lower() + sep + rest}  # (tpufleet names a URL with its scheme in lower case)
    for name in sorted(typed | {redacted(u) for u in typed}, key=len, reverse=True):
        text = text.replace(name, str(state))
    return _DB_TABLES.sub(f"{state}/routes/", text)


def normalized(text: str, tmp: Path) -> str:
    # The checkout's own path (a shipped file's, a fixture's) too: two checkouts compared must differ in code only.
    text = _TIME.sub("TIME", text.replace(str(tmp), "TMP").replace(str(ROOT), "ROOT"))
    return _EPOCH.sub('"value": EPOCH', _COMMAND.sub('"command": CMD', _AGE.sub(r'"\1": AGE', text)))


def record(url: str | None = None, upto: int | None = None) -> list[dict[str, object]]:
    """The runbook's rows (its first `upto` commands), on a temporary directory or on the database at `url`."""
    with tempfile.TemporaryDirectory(prefix="tpufleet-record-") as name:
        tmp = Path(name)
        state = tmp / "state"
        rows = []
        for args in runbook(state, tmp)[:upto]:
            row = call(url or state, args)
            if url:
                row = {k: as_directory(v, url, state) if isinstance(v, str) else v for k, v in row.items()}
            row["args"] = [normalized(a, tmp) for a in args]
            rows.append({k: normalized(v, tmp) if isinstance(v, str) else v for k, v in row.items()})
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--against", type=Path)
    parser.add_argument("--state", metavar="URL", help="run on this (empty) PostgreSQL database, not a directory")
    opts = parser.parse_args()
    if opts.state is not None and not opts.state.lower().startswith(("postgresql://", "postgres://")):
        parser.error("--state takes a postgresql:// URL (without it the runbook runs on a temporary directory)")
    rows = record(opts.state)
    opts.out.write_text(json.dumps(rows, indent=1) + "\n")
    if opts.against is None:
        print(f"recorded {len(rows)} commands to {opts.out}")
        return 0
    old = json.loads(opts.against.read_text())
    changed = [new["args"] for new, was in zip(rows, old, strict=True) if new != was]
    for args in changed:
        print("changed:", " ".join(str(a) for a in args), file=sys.stderr)  # type: ignore[attr-defined]
    print(f"{len(rows) - len(changed)} of {len(rows)} commands unchanged")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
