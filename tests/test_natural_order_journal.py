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
