"""The routing tables kept beside the state (`routes/SLICE.npz`): what `status`, `release` and the readers of the
index make of a file that is not the one tpufleet wrote there (a symbolic link, damage inside a member's data).
Through the CLI; no sleeps."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def routed(fleet):
    """A fleet with slice `s` wired and its tables stored."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("routes", "s").code == 0
    return fleet


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
    text = routed("status").out
    assert "make them with `tpufleet routes SLICE`" not in text
    assert f"rm -- {tables}, then run `tpufleet routes s`" in text
    tables.unlink()
    r = routed("status", "-o", "json")
    assert r.json["missing_routes"] == ["s"] and r.json["linked_routes"] == {}
    assert "routing tables missing (make them with `tpufleet routes SLICE`): s" in routed("status").out
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
