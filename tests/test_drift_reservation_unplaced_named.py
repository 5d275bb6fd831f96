"""`drift --reservation` counted sub-blocks it cannot place as drift (`144 unplaced`) and said nothing more in its
table, where `import reservation` says why; the table says why too, and the import command that places a block no
pod holds (the `--pod POD` the reason names is the import's option, not drift's)."""

from __future__ import annotations

from pathlib import Path

RESERVATION = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def test_the_table_names_why_sub_blocks_are_unplaced(cli):
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    r = cli("drift", "--reservation", RESERVATION)
    assert r.code == 4
    assert "144 drift item(s): 144 unplaced" in r.out
    assert "? not placed: 144 sub-blocks (ironwood-superpod-block-0001-sub-0000 ... " in r.out
    assert "unknown block 'block-5d21e0b4': give --pod POD to place it" in r.out
    assert f"(`tpufleet import reservation {RESERVATION} --pod POD` places a block no pod holds)" in r.out
    assert cli("import", "reservation", RESERVATION, "--pod", "pod0", "--apply").code == 0
    again = cli("drift", "--reservation", RESERVATION)
    assert again.code == 0 and "not placed" not in again.out and "--pod POD" not in again.out
