"""A hardware profile's figure out of range is named as the number given, whether YAML read it as a number
(`1.0e+308`) or as text (`1e308`: YAML 1.1 wants a dot in a float), as every other range error names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import one_line

SHIPPED = (Path(__file__).resolve().parents[1] / "tpufleet" / "data" / "hardware-profile.yaml").read_text()


@pytest.mark.parametrize(
    "written, problem",
    [
        ("1e308", "must be from 1e+09 to 1e+18 (value 1e+308)"),
        ("1.0e+308", "must be from 1e+09 to 1e+18 (value 1e+308)"),
        ("5e5", "must be from 1e+09 to 1e+18 (value 500000.0)"),
        ("0e1", "must be a positive number (value 0.0)"),
    ],
)
def test_a_figure_out_of_range_is_named_as_the_number_given(cli, tmp_path, written, problem):
    profile = tmp_path / "p.yaml"
    profile.write_text(SHIPPED.replace("peak_flops: 275.0e+12", f"peak_flops: {written}"))
    args = ("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1MiB", "--profile", profile)
    line = one_line(cli(*args, state=False))
    assert line == f"tpufleet: error: {profile}: field chip.peak_flops: {problem}"


@pytest.mark.parametrize(("written", "shown"), [("true", "True"), ("1.0", "1.0")])
def test_a_schema_version_that_only_equals_1_in_python_is_refused(cli, tmp_path, written, shown):
    """`schema_version: true` and `1.0` were taken (Python's True == 1.0 == 1) where every other input file
    refuses them."""
    profile = tmp_path / "p.yaml"
    profile.write_text(SHIPPED.replace("schema_version: 1\n", f"schema_version: {written}\n", 1))
    args = ("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1MiB", "--profile", profile)
    line = one_line(cli(*args, state=False))
    assert line == f"tpufleet: error: {profile}: field schema_version: must be 1 (value {shown})"
