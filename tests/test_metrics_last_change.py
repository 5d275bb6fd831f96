"""With the journal's last line damaged, the last-change series gave the previous change's time as the last
commit's; it is left out until the line of the state's serial reads whole again."""

from __future__ import annotations


def _series(fleet) -> dict[str, str]:
    return {
        line.split()[0]: line.split()[1]
        for line in fleet("metrics").out.splitlines()
        if line.startswith(("tpufleet_state_serial ", "tpufleet_state_last_change_timestamp_seconds "))
    }


def test_a_damaged_last_line_gives_no_last_change_time(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert set(_series(fleet)) == {"tpufleet_state_serial", "tpufleet_state_last_change_timestamp_seconds"}
    journal = fleet.state / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][:40] + b"\n")
    assert _series(fleet) == {"tpufleet_state_serial": "2.0"}
    assert fleet("release", "a").code == 0  # the next commit's line is whole: its time is given again
    assert set(_series(fleet)) == {"tpufleet_state_serial", "tpufleet_state_last_change_timestamp_seconds"}
