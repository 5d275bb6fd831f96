"""`simulate-availability`'s own words: its table (which values are exact, small probabilities not shown as
zero) and its refusals of slice sizes out of range."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import one_line


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--chips", "0"), "bad option --chips: '0' is outside 64-4096 chips (1-64 cubes, the pod's)"),
        (("--chips", "-64"), "bad option --chips: '-64' is outside 64-4096 chips (1-64 cubes, the pod's)"),
        (("--chips", "64,0"), "bad option --chips: '0' is outside 64-4096 chips (1-64 cubes, the pod's)"),
        (("--chips", "4160"), "bad option --chips: '4160' is outside 64-4096 chips (1-64 cubes, the pod's)"),
        (("--chips", "100"), "bad option --chips: '100' is not a whole number of cubes (multiples of 64)"),
        (("--cubes", "0"), "bad option --cubes: '0' is outside 1-64 cubes (the pod's)"),
        (("--cubes", "-1"), "bad option --cubes: '-1' is outside 1-64 cubes (the pod's)"),
        (
            ("--chips", "9280", "--generation", "tpu7x"),
            "bad option --chips: '9280' is outside 64-9216 chips (1-144 cubes, the pod's)",
        ),
    ],
)
def test_a_size_out_of_range_is_said_to_be(cli: Any, args: tuple[str, ...], said: str) -> None:
    assert one_line(cli("simulate-availability", *args, "--trials", "10", state=False)) == f"tpufleet: error: {said}"


def _cells(out: str, column: int) -> dict[str, str]:
    """cubes -> the table's cell in that column."""
    rows = [[c.strip() for c in line.split("  ") if c.strip()] for line in out.splitlines()[3:] if line[:1].isdigit()]
    return {r[0]: r[column] for r in rows}


def test_the_table_says_which_static_values_are_exact(cli: Any) -> None:
    r = cli("simulate-availability", "--cubes", "8,64", "--trials", "100", state=False)
    rows = {
        str(row["cubes"]): row
        for row in cli("simulate-availability", "--cubes", "8,64", "--trials", "100", "-o", "json", state=False).json[
            "results"
        ]
    }
    assert r.code == 0, r.err
    assert "static (MC" not in r.out  # the column holds exact values too
    cells = _cells(r.out, 2)
    assert rows["64"]["static_method"] == "exact" and " exact [" in cells["64"]
    assert rows["8"]["static_method"] == "monte-carlo" and " MC [" in cells["8"]


def test_small_probabilities_are_not_shown_as_zero(cli: Any) -> None:
    args = ("simulate-availability", "--chips", "4096", "--trials", "100")
    row = cli(*args, "-o", "json", state=False).json["results"][0]
    r = cli(*args, state=False)
    assert r.code == 0, r.err
    assert 0 < row["reconfigurable"] < 1e-3  # p^1024-ish: 3.2e-05 at the defaults
    for column, key in ((3, "reconfigurable"), (4, "reconfigurable_ft")):
        shown = float(_cells(r.out, column)["64"])
        assert shown == pytest.approx(row[key], rel=0.05)
    assert float(_cells(r.out, 2)["64"].split()[0]) == pytest.approx(row["static"], rel=0.05)


def test_probabilities_near_one_keep_their_digits(cli: Any) -> None:
    """Six decimals made 0.9999952 read 1.0 in JSON (a pod that never fails), and the table said 1.0000."""
    args: tuple[str, ...] = ("simulate-availability", "--host-availability", "0.99999", "--ocs-availability")
    args += ("0.9999999", "--cubes", "1,64", "--trials", "100")
    rows = {row["cubes"]: row for row in cli(*args, "-o", "json", state=False).json["results"]}
    exact = 1 - (1 - 0.99999**16) ** 64  # at least one cube of 64 up, its 16 hosts all up
    assert rows[1]["reconfigurable"] == pytest.approx(exact * 0.9999999**48, rel=1e-12)  # and all 48 OCS up
    assert 1 - rows[1]["reconfigurable"] == pytest.approx(1 - 0.9999999**48, rel=1e-6)
    r = cli(*args, state=False)
    assert r.code == 0, r.err
    assert _cells(r.out, 3)["1"] == "0.9999952"
    assert _cells(r.out, 2)["1"].startswith("1.0000 MC")  # every trial placed it: 1 is the Monte Carlo's value


def test_a_small_static_probability_keeps_its_digits(cli: Any) -> None:
    """p^1024 at p = 0.98 is 1.0e-09: six decimals made it 0.0 (never placed)."""
    args = ("simulate-availability", "--host-availability", "0.98", "--cubes", "64", "--trials", "10")
    row = cli(*args, "-o", "json", state=False).json["results"][0]
    assert row["static_method"] == "exact" and row["static"] == pytest.approx(0.98**1024, rel=1e-12)


def test_the_help_gives_the_hosts_of_each_pod_the_work_is_counted_over(cli: Any) -> None:
    """The help said the work was trials x "the pod's 1,024 hosts", though `--generation tpu7x` draws 2,304 a
    trial (and a pod without a static twin allows twice the trials): the help now gives both pods' hosts, as the
    shipped profiles count them, and the refusal agrees with it."""
    import re

    from tpufleet.availability import MAX_WORK
    from tpufleet.state.generations import shipped

    words = " ".join(cli("simulate-availability", "--help", state=False).out.split())
    for name in ("tpu-v4", "tpu7x"):
        gen = shipped(name)
        assert f"{gen.pod_cubes * gen.hosts_per_cube:,} in a" in words, (name, words)
    assert "about two million trials at the defaults, on a pod with no static twin too" in words
    trials = int(MAX_WORK // (shipped("tpu7x").pod_cubes * shipped("tpu7x").hosts_per_cube))
    assert 2_000_000 < trials < 2_500_000
    r = cli("simulate-availability", "--generation", "tpu7x", "--cubes", "1", "--trials", str(trials + 1), state=False)
    assert r.code == 2 and re.search(r"simulation too large: [\d,]+ trials", one_line(r))
