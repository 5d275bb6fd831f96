"""`--fault-rates shipped` names the shipped fault-rate file wherever `--fault-rates` is taken."""

from __future__ import annotations


def test_simulate_fleet_takes_shipped_as_the_other_fault_rate_options_do(cli, tmp_path, monkeypatch):
    """`simulate-fleet --fault-rates shipped` was "no such fault-rate file", where `plan-spares`, `capacity` and
    `simulate-availability` read `shipped` as the shipped file, the one simulate-fleet uses by default."""
    monkeypatch.chdir(tmp_path)  # no file named `shipped` here
    given = cli("simulate-fleet", "--days", "0.5", "--fault-rates", "shipped", "-o", "json", state=False)
    assert given.code == 0, given.err
    assert given.json == cli("simulate-fleet", "--days", "0.5", "-o", "json", state=False).json
