"""`status`, `show slices`, `explain`, `report`, `metrics` and `serve` read each stored tables file's members to their
end (the zip's CRC-32: 0.15-0.2 s of CPU for a TPU7x superpod's) only when the file's bytes are not known whole: the
command that writes tables remembers their SHA-256 digest after its commit (`cache/whole-tables`); a command that only
reads writes nothing. Damage since, however it kept the file's size, times and inode, hashes otherwise and is found
as before; a list that cannot be trusted proves nothing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tpufleet.state import tablesindex
from tpufleet.state.wholetables import MAGIC, MAX_DIGESTS, WHOLE_FILE, WholeTables


@pytest.fixture
def throughs(monkeypatch):
    """Whether each check of a file's members read their data through (True) or only their headers (False)."""
    seen: list[bool] = []
    real = tablesindex._members_sound

    def spy(zf, meta, through=True):
        seen.append(through)
        return real(zf, meta, through=through)

    monkeypatch.setattr(tablesindex, "_members_sound", spy)
    return seen


def _damaged_in_place(tables: Path, member: str) -> None:
    """One byte inside the member's deflated data flipped in place: the file keeps its inode, size and times."""
    import struct
    import zipfile

    with zipfile.ZipFile(tables) as zf:
        info = zf.getinfo(f"{member}.npy")
    before = os.stat(tables)
    with open(tables, "r+b") as fh:
        fh.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", fh.read(4))
        fh.seek(info.header_offset + 30 + name_len + extra_len + info.compress_size // 2)
        byte = fh.read(1)[0]
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte ^ 0xFF]))
    os.utime(tables, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(tables)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def _listed(state: Path) -> list[str]:
    return (state / "cache" / WHOLE_FILE).read_text().splitlines()


def test_tables_written_are_known_whole_and_never_read_through(routed, throughs):
    listed = _listed(routed.state)
    assert listed[0] == MAGIC and len(listed) == 2  # `routes s` remembered what it wrote
    before = (routed.state / "cache" / WHOLE_FILE).stat().st_mtime_ns
    for _ in range(3):
        assert routed("status", "-o", "json").json["missing_routes"] == []
    assert routed("report", "-o", "json").json["missing_routes"] == []
    assert routed("explain", "s", "-o", "json").json["routes"] == "fresh"
    assert throughs == [False] * 5
    assert (routed.state / "cache" / WHOLE_FILE).stat().st_mtime_ns == before  # readers write nothing


def test_tables_never_remembered_are_read_through_every_time_and_nothing_is_written(routed, throughs):
    """Tables stored before the list existed (or its file removed): read through on every command, as ever, and a
    command that only reads does not write the list."""
    (routed.state / "cache" / WHOLE_FILE).unlink()
    for _ in range(2):
        assert routed("status", "-o", "json").json["missing_routes"] == []
    assert throughs == [True, True]
    assert not (routed.state / "cache" / WHOLE_FILE).exists()


@pytest.mark.parametrize("member", ["port", "neighbors", "hops"])
def test_damage_after_the_tables_were_found_whole_is_still_found(routed, throughs, member):
    """Remembered by the bytes, not by name, size, times or inode: damaged in place with all of those kept, the
    tables are read through and shown `missing`, as `collective` refuses them; `routes` stores them again."""
    assert routed("status", "-o", "json").json["missing_routes"] == []
    _damaged_in_place(routed.state / "routes" / "s.npz", member)
    del throughs[:]
    assert routed("status", "-o", "json").json["missing_routes"] == ["s"]
    assert routed("report", "-o", "json").json["missing_routes"] == ["s"]
    assert routed("explain", "s", "-o", "json").json["routes"] == "missing"
    assert "tpufleet_missing_route_tables 1" in routed("metrics").out
    assert all(throughs) and len(throughs) == 4
    op = "all-to-all" if member == "hops" else "all-reduce"
    assert routed("collective", "s", "--op", op, "--bytes", "1MB").code == 2
    assert routed("routes", "s").code == 0
    del throughs[:]
    assert routed("status", "-o", "json").json["missing_routes"] == []
    assert throughs == [False]


def test_a_list_in_a_cache_others_may_write_proves_nothing(routed, throughs):
    assert routed("status", "-o", "json").json["missing_routes"] == []
    cache = routed.state / "cache"
    cache.chmod(0o777)
    try:
        assert routed("status", "-o", "json").json["missing_routes"] == []
    finally:
        cache.chmod(0o700)
    assert throughs == [False, True]


@pytest.mark.parametrize("text", ["", "not ours\n", "TPUFLEET-WHOLE-TABLES-0\n{digest}\n", "\0\xff garbage"])
def test_a_list_that_is_not_ours_proves_nothing_until_tables_are_written_again(routed, throughs, text):
    [_, digest] = _listed(routed.state)
    listed = routed.state / "cache" / WHOLE_FILE
    listed.write_bytes(text.format(digest=digest).encode("latin-1"))
    assert routed("status", "-o", "json").json["missing_routes"] == []
    assert routed("status", "-o", "json").json["missing_routes"] == []
    assert throughs == [True, True]
    assert listed.read_bytes() == text.format(digest=digest).encode("latin-1")  # a reader writes nothing
    assert routed("routes", "s", "--algorithm", "dor", "-o", "json").code == 0  # tables written: a list again
    [magic, written] = _listed(routed.state)
    assert magic == MAGIC and written == hashlib.sha256((routed.state / "routes" / "s.npz").read_bytes()).hexdigest()
    del throughs[:]
    assert routed("status", "-o", "json").json["missing_routes"] == []
    assert throughs == [False]


def test_the_list_keeps_the_digests_remembered_last(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    digests = [f"{i:064x}" for i in range(MAX_DIGESTS + 2)]
    WholeTables(state).remember(digests[:MAX_DIGESTS])
    again = WholeTables(state)
    assert list(again.known) == digests[:MAX_DIGESTS]
    assert again.holds(digests[0]) and not again.holds(digests[-1])
    again.remember([digests[0], digests[-2], digests[-1]])  # one known already: kept where it was
    assert list(WholeTables(state).known) == digests[2:]
    mtime = (state / "cache" / WHOLE_FILE).stat().st_mtime_ns
    WholeTables(state).remember(digests[-2:])  # nothing new: the list is not written
    assert (state / "cache" / WHOLE_FILE).stat().st_mtime_ns == mtime
