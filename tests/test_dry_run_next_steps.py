"""`inject-fault --dry-run` prints the fault's id and `next:` steps as they will be once the fault is recorded: its
last line says so, and once recorded, the steps the dry run printed run as printed."""

from __future__ import annotations

import shlex


def test_the_dry_runs_next_steps_run_once_the_fault_is_recorded(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    dry = fleet("inject-fault", "host:c00/1", "--dry-run")
    assert dry.code == 0, dry.err
    lines = dry.out.splitlines()
    assert lines[0] == "fault f1 on host:c00/1"
    assert lines[-1].startswith("(dry run: nothing was changed; the fault ids and next steps above are those of the")
    assert "run the command again without --dry-run" in lines[-1]
    steps = [line.strip().removeprefix("next: ") for line in lines if line.strip().startswith("next: ")]
    assert steps == ["tpufleet reschedule j-0", "tpufleet routes j-0"]
    assert fleet(*shlex.split(steps[0])[1:]).code == 1  # not now: nothing is evicted yet
    recorded = fleet("inject-fault", "host:c00/1")
    assert recorded.code == 0 and recorded.out.splitlines()[0] == "fault f1 on host:c00/1"
    for step in steps:
        r = fleet(*shlex.split(step)[1:])
        assert r.code == 0, (step, r.err)
