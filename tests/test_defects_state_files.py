"""Regression tests for files planted in a state directory: hard links to files outside it, FIFOs beside a
waiting table, huge or sparse files and compressed memory bombs. Each is refused naming the file (exit 2), never
written through, waited on for good, or an internal error (exit 70)."""

from __future__ import annotations

import os
import shutil

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("name", ["journal.jsonl", ".lock.info"])
def test_a_state_file_hard_linked_to_a_file_outside_is_refused_and_that_file_is_untouched(fleet, tmp_path, name):
    outside = tmp_path / "notes.txt"
    outside.write_bytes(b"an operator's notes\n")
    linked = fleet.state / name
    linked.unlink(missing_ok=True)
    os.link(outside, linked)
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "cube:c03"))
    assert str(linked) in line and "hard link" in line
    assert outside.read_bytes() == b"an operator's notes\n"  # neither appended to nor truncated
    assert snapshot(fleet.state) == before
    shutil.copy2(linked, f"{linked}.copy")  # the copy the message asks for: then the next command works
    os.replace(f"{linked}.copy", linked)
    assert fleet("inject-fault", "cube:c03").code == 0
    assert outside.read_bytes() == b"an operator's notes\n"
