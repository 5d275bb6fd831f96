"""`simulate-availability` against independent oracles: the Monte Carlo's intervals hold the exact binomial value
where hosts almost never fail, and the static-pod box search agrees with a brute-force search of every box."""

from __future__ import annotations

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
