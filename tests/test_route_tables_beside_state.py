"""The routing tables kept beside the state (`routes/SLICE.npz`): what `status`, `release` and the readers of the
index make of a file that is not the one tpufleet wrote there (a symbolic link, damage inside a member's data).
Through the CLI; no sleeps."""

from __future__ import annotations

from pathlib import Path

import pytest


def linked_away(routed, tmp_path: Path) -> tuple[Path, Path]:
    """routes/s.npz made a symbolic link to a copy of the slice's own tables outside the state: (link, target)."""
    tables, outside = routed.state / "routes" / "s.npz", tmp_path / "outside.npz"
    outside.write_bytes(tables.read_bytes())
    tables.unlink()
    tables.symlink_to(outside)
    return tables, outside


def test_status_gives_the_step_routes_takes_for_a_symlink_at_a_slices_tables(routed, tmp_path):
    """`status` said "make them with `tpufleet routes SLICE`" for tables missing behind a symbolic link, which
    `routes` refuses (naming the link to remove). It now gives the step `explain` gives, the link's removal first,
    and its JSON names the link (`linked_routes`); `missing_routes` still lists the slice."""
    tables, _ = linked_away(routed, tmp_path)
    r = routed("status", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["missing_routes"] == ["s"] and r.json["linked_routes"] == {"s": str(tables)}
    report = routed("report", "-o", "json").json  # the report says it as status does
    assert report["missing_routes"] == ["s"] and report["linked_routes"] == {"s": str(tables)}
    text = routed("status").out
    assert "make them with `tpufleet routes SLICE`" not in text
    assert f"rm -- {tables}, then run `tpufleet routes s`" in text
    tables.unlink()
    r = routed("status", "-o", "json")
    assert r.json["missing_routes"] == ["s"] and r.json["linked_routes"] == {}
    assert (
        "routing tables missing (make them with `tpufleet routes SLICE`, all: `tpufleet routes --stale`): s"
        in routed("status").out
    )
    assert routed("routes", "s").code == 0 and routed("status", "-o", "json").json["missing_routes"] == []


@pytest.mark.parametrize("how", ["release s", "init --force"])
def test_a_symlink_at_released_tables_is_left_as_routes_leaves_it(routed, tmp_path, how):
    """`release` (and `init --force`) removed a symbolic link found where the slice's tables were, and the next
    command removed one standing where no indexed slice's tables belong, while `routes` refuses such a link and
    leaves it to the operator. Both now leave it (and never touch what it points to); `release` says so."""
    tables, outside = linked_away(routed, tmp_path)
    content = outside.read_bytes()
    r = routed(*how.split(), "-o", "json")
    assert r.code == 0, r.err
    if how == "release s":
        assert r.json["linked_routes"] == {"s": str(tables)}
    assert routed("allocate", "t", "--shape", "4x4x4").code == 0  # another transaction: no orphan cleanup of it
    assert tables.is_symlink() and outside.read_bytes() == content


def test_release_says_which_link_it_left(routed, tmp_path):
    tables, _ = linked_away(routed, tmp_path)
    r = routed("release", "s")
    assert r.code == 0, r.err
    assert f"left the symbolic link {tables} where the routing tables of s were" in r.out


def test_release_deletes_the_tables_it_wrote(routed):
    tables = routed.state / "routes" / "s.npz"
    r = routed("release", "s", "-o", "json")
    assert r.code == 0 and r.json["linked_routes"] == {}
    assert not tables.exists()


def _member_data_damaged(tables: Path, member: str) -> None:
    """One byte in the middle of a member's deflated data flipped: the zip still opens, its directory and `meta`
    read, and so does every other member."""
    import struct
    import zipfile

    with zipfile.ZipFile(tables) as zf:
        info = zf.getinfo(f"{member}.npy")
    data = bytearray(tables.read_bytes())
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    data[info.header_offset + 30 + name_len + extra_len + info.compress_size // 2] ^= 0xFF
    tables.write_bytes(bytes(data))


def _member_rewritten(tables: Path, member: str, array) -> None:
    """The member replaced by another array (whole and readable: only its dtype or shape is not the tables')."""
    import io
    import zipfile

    import numpy as np

    with zipfile.ZipFile(tables) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    out = io.BytesIO()
    np.lib.format.write_array(out, array, allow_pickle=False)
    members[f"{member}.npy"] = out.getvalue()
    with zipfile.ZipFile(tables, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _damage(tables: Path, how: str) -> None:
    import numpy as np

    member, kind = how.split(":")
    if kind == "bytes":
        _member_data_damaged(tables, member)
    elif kind == "dtype":
        _member_rewritten(tables, member, np.zeros((64, 64), np.int16))
    else:
        _member_rewritten(tables, member, np.zeros((64, 63), np.int8 if member == "port" else np.int32))


@pytest.mark.parametrize(
    "how", ["port:bytes", "neighbors:bytes", "hops:bytes", "port:dtype", "port:shape", "neighbors:shape", "hops:shape"]
)
def test_tables_damaged_inside_a_members_data_are_missing_not_fresh(routed, how):
    """Bytes damaged inside a member's data (or a member of another dtype or shape) left `status`, `report` and
    `metrics` showing the tables fresh, as they read only the zip's directory and `meta`, while `collective`
    refused them (exit 2). They now read each member `collective` reads to its end (the zip's CRC-32) and its
    array header: `missing`, as for tables that cannot be read at all; `routes` stores them again."""
    tables = routed.state / "routes" / "s.npz"
    _damage(tables, how)
    op = ("--op", "all-to-all") if how.startswith("hops") else ("--op", "all-reduce")
    assert routed("collective", "s", *op, "--bytes", "1MB").code == 2
    assert routed("status", "-o", "json").json["missing_routes"] == ["s"]
    assert routed("report", "-o", "json").json["missing_routes"] == ["s"]
    assert "tpufleet_missing_route_tables 1" in routed("metrics").out
    r = routed("routes", "s", "-o", "json")
    assert r.code == 0 and r.json["changed"], r.err
    assert routed("status", "-o", "json").json["missing_routes"] == []
    assert routed("collective", "s", *op, "--bytes", "1MB").code == 0


def test_a_copy_of_tables_kept_under_another_name_is_not_deleted(routed):
    """Every command that changes the state deleted each `routes/*.npz` no slice indexes (meant for the tables a
    `release` killed before deleting them leaves behind), so a copy the operator kept there under another name
    (`routes/s.before-maintenance.npz`) was deleted by an unrelated `inject-fault`. Only tables of the slice their
    name gives are deleted now."""
    tables = routed.state / "routes" / "s.npz"
    kept = routed.state / "routes" / "s.before-maintenance.npz"
    kept.write_bytes(tables.read_bytes())
    assert routed("inject-fault", "host:c30/1").code == 0
    assert kept.read_bytes()[:2] == b"PK"
    leftover = routed.state / "routes" / "gone.npz"  # a released slice's own tables, left by a killed release
    assert routed("allocate", "gone", "--shape", "4x4x4").code == 0
    assert routed("plan-xconnect", "gone", "--apply").code == 0 and routed("routes", "gone").code == 0
    saved = leftover.read_bytes()
    assert routed("release", "gone").code == 0 and not leftover.exists()
    leftover.write_bytes(saved)
    assert routed("clear-fault", "f1").code == 0
    assert not leftover.exists() and kept.exists()


def test_every_routes_hint_removes_a_symlink_at_the_slices_tables_first(routed, tmp_path):
    """`inject-fault`, `clear-fault`, `plan-xconnect --apply`, `apply-xconnect` and `reschedule` said `next:
    tpufleet routes SLICE` where a symbolic link stood in place of the slice's tables, which `routes` refuses;
    `explain` gave the link's removal first. Each hint now gives it first too."""
    tables, _ = linked_away(routed, tmp_path)
    rm = f"rm -- {tables}"
    out = routed("inject-fault", "ocs:pod0/x/5").out  # f1: s rerouted
    assert f"    next: {rm}  " in out and out.index(rm) < out.index("    next: tpufleet routes s")
    out = routed("clear-fault", "f1").out
    assert f"  s: routing tables stale; {rm} " in out and out.index(rm) < out.index("`tpufleet routes s`")
    plan = tmp_path / "s.plan"
    assert routed("plan-xconnect", "s", "--out", plan).code == 0
    for args in (("plan-xconnect", "s", "--apply"), ("apply-xconnect", plan)):
        out = routed(*args).out
        assert out.endswith(
            f"\n  next: {rm}  (a symbolic link where its tables belong)\n  next: tpufleet routes s  (its stored tables are stale)\n"
        )
    assert routed("inject-fault", "host:c00/1").code == 0  # s evicted
    out = routed("reschedule", "s").out
    assert out.endswith(
        f"\n  next: {rm}  (a symbolic link where its tables belong)\n  next: tpufleet routes s  (its stored tables were made before the move)\n"
    )
    tables.unlink()
    assert routed("routes", "s").code == 0
    assert "rm --" not in routed("plan-xconnect", "s", "--apply").out
