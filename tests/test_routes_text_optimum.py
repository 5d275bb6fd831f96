"""`routes`' table says against what its throughput is retained: on a twisted torus the healthy tables are not the
healthy optimum, so the text gives both figures, the same as `-o json`; where they agree it gives one."""

from __future__ import annotations

import re

import pytest


def _wired(fleet, shape: str, *flags: str) -> None:
    assert fleet("allocate", "s", "--shape", shape, *flags).code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0


def _all_to_all_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith("all-to-all"))


def test_a_twisted_slice_says_what_it_keeps_of_the_tables_and_of_the_optimum(fleet):
    _wired(fleet, "4x4x8", "--twisted")
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    data = fleet("routes", "s", "-o", "json").json
    kept_tables = data["throughput_retained_vs_tables"]["all-to-all"]
    kept_optimum = data["throughput_retained_vs_optimum"]["all-to-all"]
    assert data["healthy_optimum_exact"] is True
    assert f"{kept_tables:.3f}" != f"{kept_optimum:.3f}"  # the optimum is lighter than the tables (73.3 against 78)
    line = _all_to_all_line(fleet("routes", "s").out)
    optimum = data["healthy_optimum_max_link_load"]["all-to-all"]
    assert line.endswith(
        f"throughput retained {kept_tables:.3f} of the healthy tables, {kept_optimum:.3f} of the healthy optimum "
        f"({optimum:g})"
    )


@pytest.mark.parametrize("fault", [None, "ocs:pod0/x/3"])
def test_an_untwisted_slice_gives_one_figure(fleet, fault):
    """On an untwisted torus the healthy tables reach the optimum: the two figures are one."""
    _wired(fleet, "4x4x8")
    if fault:
        assert fleet("inject-fault", fault).code == 0
    data = fleet("routes", "s", "-o", "json").json
    line = _all_to_all_line(fleet("routes", "s").out)
    kept = data["throughput_retained"]["all-to-all"]
    assert re.search(rf"throughput retained {kept:.3f}$", line), line
    assert "optimum" not in line


def test_inject_fault_says_what_a_reroute_keeps_of_the_optimum_too(fleet):
    """`inject-fault`'s reroute gives the share of the healthy optimum beside that of the healthy tables, as
    `routes` does, in its JSON (`all_to_all_retained_vs_optimum`) and its line."""
    _wired(fleet, "4x4x8", "--twisted")
    assert fleet("routes", "s").code == 0
    dry = fleet("inject-fault", "ocs:pod0/x/3", "--dry-run", "-o", "json").json
    reroute = next(s for s in dry["slices"] if s["slice"] == "s")["reroute"]
    r = fleet("inject-fault", "ocs:pod0/x/3")
    assert r.code == 0
    routed = fleet("routes", "s", "-o", "json").json
    assert reroute["all_to_all_retained"] == routed["throughput_retained"]["all-to-all"]
    assert reroute["all_to_all_retained_vs_optimum"] == routed["throughput_retained_vs_optimum"]["all-to-all"]
    assert f"{reroute['all_to_all_retained']:.3f}" != f"{reroute['all_to_all_retained_vs_optimum']:.3f}"
    assert (
        f"all-to-all throughput retained {reroute['all_to_all_retained']:.3f} of the healthy tables, "
        f"{reroute['all_to_all_retained_vs_optimum']:.3f} of the healthy optimum"
    ) in r.out


def test_inject_fault_on_an_untwisted_slice_gives_one_share(fleet):
    _wired(fleet, "4x4x8")
    r = fleet("inject-fault", "ocs:pod0/x/3")
    assert r.code == 0 and "throughput retained" in r.out and "optimum" not in r.out
