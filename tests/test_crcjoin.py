"""The CRC-32 of two byte strings one after the other, joined from each one's (`state.crcjoin`), against zlib's
CRC-32 of the two joined: what tells a log from a copy of it, whatever pieces it was read in."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpufleet.state.crcjoin import crc32, joined


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_two_crcs_joined_are_the_crc_of_the_bytes_joined(first: bytes, second: bytes) -> None:
    assert joined(zlib.crc32(first), zlib.crc32(second), len(second)) == zlib.crc32(first + second)


@given(st.lists(st.binary(max_size=64), max_size=12), st.integers(0, 3 << 20))
def test_crcs_joined_piece_by_piece_are_the_crc_of_the_whole(pieces: list[bytes], zeros: int) -> None:
    """Pieces joined in order, one of them long (zeros: the lengths a log's pieces have, megabytes)."""
    pieces = [*pieces, bytes(zeros), *pieces]
    crc = 0
    for piece in pieces:
        crc = joined(crc, zlib.crc32(piece), len(piece))
    assert crc == zlib.crc32(b"".join(pieces))


def test_an_empty_second_leaves_the_first():
    assert joined(0x1234ABCD, 0, 0) == 0x1234ABCD


_ISAL = "isal is not installed (`make sweep-deps`): zlib's CRC-32 is taken, nothing to compare"


@given(st.binary(max_size=5000), st.integers(0, 63))
def test_the_crc_taken_is_zlibs(data: bytes, skip: int) -> None:
    """ISA-L's CRC-32 where it is installed: zlib's values, from any start in memory (its folding works on aligned
    blocks; a view starts anywhere, where a slice's copy starts on the allocator's alignment)."""
    pytest.importorskip("isal", reason=_ISAL)
    assert crc32(memoryview(data)[skip:]) == zlib.crc32(data[skip:])


def test_a_large_logs_crc_is_zlibs_and_isal_takes_it_where_installed() -> None:
    isal_zlib = pytest.importorskip("isal.isal_zlib", reason=_ISAL)
    assert crc32 is isal_zlib.crc32
    data = bytes(range(256)) * 40_000 + b"tail"  # 10 MB: every folding width and a tail
    assert crc32(data) == zlib.crc32(data)
