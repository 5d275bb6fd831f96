"""The journal's deltas as `history` and `show journal` give them: OCS and slices keyed as the fleet counts them
(pod0/x/2 before pod0/x/10, s9 before s10), as `diff` orders the same keys, though each line is written with its
keys sorted as text."""

from __future__ import annotations

from tpufleet.ids import natural_key


def _counted(keys):
    return sorted(keys, key=natural_key)


def test_history_and_show_journal_key_ocs_and_slices_as_counted(fleet):
    for name in ("s10", "s9"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    for rows in (fleet("history", "-o", "json").json, fleet("show", "journal", "-o", "json").json):
        wired, faulted = rows[-2]["delta"], rows[-1]["delta"]
        assert len(wired["ocs"]) > 10
        assert list(wired["ocs"]) == _counted(wired["ocs"])
        assert list(faulted["slices"]["changed"]) == ["s9", "s10"]


def test_lines_written_before_0_3_list_slice_names_as_counted(fleet):
    """Lines written before 0.3 listed the slices added, removed and whose tables were stored, dropped or made
    stale as text (s10 before s9); `history` and `show journal` give them as the fleet counts them too."""
    import json
    from pathlib import Path

    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "11").code == 0
    path = Path(fleet.state) / "journal.jsonl"
    lines = path.read_bytes().splitlines()
    doc = json.loads(lines[-1])
    names = sorted(doc["delta"]["slices"]["added"])  # as text, as an older version wrote them
    assert names[:3] == ["j-0", "j-1", "j-10"]
    doc["delta"]["slices"]["added"] = names
    doc["delta"]["routes"] = {"stored": [], "dropped": ["j-10", "j-9"], "stale": ["j-10", "j-9"]}
    lines[-1] = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    counted = _counted(names)
    for rows in (fleet("history", "-o", "json").json, fleet("show", "journal", "-o", "json").json):
        delta = rows[-1]["delta"]
        assert delta["slices"]["added"] == counted
        assert delta["routes"]["dropped"] == delta["routes"]["stale"] == ["j-9", "j-10"]
