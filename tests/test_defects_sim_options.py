"""Options of the simulations and the collective model that were read as something else than given."""

from __future__ import annotations

import pytest

from helpers import one_line


@pytest.mark.parametrize("suffix", ["/", "/."])
def test_a_plot_name_ending_in_a_slash_is_refused_and_nothing_is_written(cli, tmp_path, monkeypatch, suffix):
    """`--plot dir/x.png/` wrote the file dir/x.png (the trailing slash was dropped)."""
    monkeypatch.chdir(tmp_path)
    given = f"x.png{suffix}"
    r = cli("simulate-availability", "--trials", "10", "--plot", given, state=False)
    assert one_line(r, 2).startswith(f"tpufleet: error: bad option --plot '{given}'")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("given", ["1e-400", "-1e-400", "0.1e-330", "1e-99999999999999999999"])
def test_a_float_option_that_reads_as_0_only_by_underflow_is_refused_naming_the_option_and_text(cli, given):
    """`--host-availability 1e-400` was silently read as 0.0 (every host down)."""
    r = cli("simulate-availability", "--trials", "10", "--cubes", "8", "--host-availability", given, state=False)
    line = one_line(r, 2)
    assert "--host-availability" in line and f"'{given}'" in line and "too small" in line


@pytest.mark.parametrize("given", ["0", "0e-400", "-0.0", "1e-310"])
def test_a_float_option_that_is_0_or_representable_is_still_read(cli, given):
    r = cli("simulate-availability", "--trials", "10", "--cubes", "8", "--host-availability", given, "-o", "json",
            state=False)  # fmt: skip
    assert r.code == 0, r.err
    assert r.json["host_availability"] == float(given)


@pytest.mark.parametrize("scale", ["1e-400", "host=1e-400", "ocs=2, link=0.1e-330"])
def test_a_fault_scale_that_reads_as_0_only_by_underflow_is_refused(cli, scale):
    """`simulate-fleet --fault-scale 1e-400` ran with no faults of the kind (read as 0), though a number too small
    to be told from 0 is refused at every numeric option; exit 2 naming the option and the value."""
    r = cli("simulate-fleet", "--days", "0.01", "--fault-scale", scale, state=False)
    line = one_line(r, 2)
    assert line.startswith(f"tpufleet: error: bad option --fault-scale '{scale}'") and "too small" in line
    assert cli("simulate-fleet", "--days", "0.01", "--fault-scale", "0e-400", state=False).code == 0


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_a_goodput_window_edge_that_reads_as_0_only_by_underflow_is_refused(cli, option):
    """`goodput-report --since 1e-400` read the POSIX seconds as 0, the epoch: exit 2 naming the option and value."""
    r = cli("goodput-report", "fixtures/goodput/fleet.jsonl", option, "1e-400", state=False)
    assert one_line(r, 2).startswith(f"tpufleet: error: bad option {option} '1e-400'")


def test_assume_healthy_with_a_what_if_topology_is_refused_naming_both_options(cli):
    """`collective --topology 4x4 --assume-healthy` was accepted silently: a what-if has no stored tables."""
    r = cli("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1MiB", "--assume-healthy", state=False)
    line = one_line(r, 2)
    assert "--assume-healthy" in line and "--topology" in line
    ok = cli("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1MiB", "-o", "json", state=False)
    assert ok.code == 0 and ok.json["tables"]["source"] == "what-if"


@pytest.mark.parametrize("name", ["events.csv", "events.csv.gz", "EVENTS.CSV"])
def test_simulate_fleet_refuses_an_events_file_named_as_a_csv_log(cli, tmp_path, monkeypatch, name):
    """`simulate-fleet --out events.csv` wrote JSON lines there and said to read them with `goodput-report
    events.csv`, which reads a *.csv log as CSV and refused it (exit 2, a row past the header's columns)."""
    monkeypatch.chdir(tmp_path)
    r = cli("simulate-fleet", "--days", "0.01", "--out", name, state=False)
    assert one_line(r, 2).startswith(f"tpufleet: error: bad option --out '{name}'")
    assert not (tmp_path / name).exists()
    assert cli("simulate-fleet", "--days", "0.01", "--out", "events.jsonl.gz", state=False).code == 0
    assert cli("goodput-report", "events.jsonl.gz", state=False).code == 0
