"""`simulate-availability` against independent oracles: the Monte Carlo's intervals hold the exact binomial value
where hosts almost never fail, and the static-pod box search agrees with a brute-force search of every box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import one_line
from tpufleet import availability

TPU7X_CUBES = 144


def test_monte_carlo_sees_host_failures_within_3e8_of_one() -> None:
    # (1 - 2.5e-8) ** 2304 = 1 - 5.8e-5: about 6 of 100,000 trials lose a host. Float32 draws rounded p to 1.0, so
    # no trial ever did and the 95% interval, [0.99996, 1], left out the exact value.
    p, trials = 1.0 - 2.5e-8, 100_000
    counts = availability.simulate([TPU7X_CUBES], p, 1.0, trials, seed=0, pod_cubes=TPU7X_CUBES, static=False)
    exact = availability.reconfigurable_exact(TPU7X_CUBES, p, TPU7X_CUBES)
    ok = counts["reconfigurable_ft"][0]
    lo, hi = availability.wilson(ok, trials)
    assert ok < trials
    assert lo <= exact <= hi


def test_too_large_names_only_what_lowers_the_work(cli: Any, tmp_path: Path) -> None:
    # a TPU7x pod has no static search: its work is trials x hosts, whatever the sizes or the availability
    line = one_line(cli("simulate-availability", "--generation", "tpu7x", "--trials", "3000000", state=False))
    assert "simulation too large" in line
    assert line.endswith("(fewer --trials)")
    # p from a fault-rate file: --host-availability is refused next to --fault-rates, so it is not the way out
    rates = tmp_path / "rates.yaml"
    rates.write_text("schema_version: 1\nhost_per_day: 0.5\nrepair_hours: {host: 200.0}\n")
    line = one_line(cli("simulate-availability", "--fault-rates", rates, state=False))
    assert "--host-availability" not in line
    assert "lower host fault rates or repair times" in line
    line = one_line(cli("simulate-availability", "--host-availability", "0.2", state=False))
    assert line.endswith("(fewer --trials or --cubes, or a higher --host-availability)")
