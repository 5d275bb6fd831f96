"""`collective --topology` reads AxB[xC] as `allocate --shape` and `topology` read a shape."""

from __future__ import annotations

from helpers import one_line


def test_a_side_of_thousands_of_digits_is_bad_input_not_an_internal_error(fleet):
    """`collective --topology 999...9x2` (5,000 digits) was exit 70: Python refuses int() of so many digits."""
    line = one_line(fleet("collective", "--topology", "9" * 5000 + "x2", "--op", "all-reduce", "--bytes", "1GiB"))
    assert line.startswith("tpufleet: error: bad option --topology: '999")
    assert line.endswith("has more than 4096 chips; model 2 to 4096")


def test_spaces_and_a_capital_x_are_read_as_a_shape_reads_them(fleet):
    """`--topology ' 4X4 '` was "not AxB or AxBxC", where `allocate --shape ' 4X4X8'` reads its shape."""
    given = fleet("collective", "--topology", " 4X4 ", "--op", "all-reduce", "--bytes", "1GiB", "-o", "json")
    plain = fleet("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1GiB", "-o", "json")
    assert given.code == plain.code == 0, given.err
    assert given.json == plain.json
