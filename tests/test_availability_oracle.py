"""`simulate-availability` against independent oracles: the Monte Carlo's intervals hold the exact binomial value
where hosts almost never fail, and the static-pod box search agrees with a brute-force search of every box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
    # the static search costs as much whatever the availability: no higher availability is a way out
    line = one_line(cli("simulate-availability", "--trials", "3000000", state=False))
    assert line.endswith("(fewer --trials or --cubes)")
    for p in ("0.2", "0"):
        assert cli("simulate-availability", "--host-availability", p, "--trials", "2000", state=False).code == 0


def _brute_static(host_up: Any, boxes: list[tuple[int, int, int]]) -> bool:
    """Whether some host box of these sides is all up, every offset tried with wraparound (the oracle)."""
    import numpy as np

    hx, hy, hz = availability._host_coords()
    grid = np.zeros(availability.STATIC_HOST_GRID, dtype=bool)
    grid[hx, hy, hz] = host_up
    for a, b, c in boxes:
        window = np.ones_like(grid)
        for dx in range(a):
            for dy in range(b):
                for dz in range(c):
                    window &= np.roll(grid, (-dx, -dy, -dz), axis=(0, 1, 2))
        if window.any():
            return True
    return False


@pytest.mark.parametrize(("p", "ks"), [(0.99, [16, 24, 32]), (0.9, [1, 2, 4, 5, 8, 12]), (0.6, [1, 2]), (0.0, [1])])
def test_static_search_agrees_with_trying_every_box(p: float, ks: list[int]) -> None:
    """The static search on planes of bits against every box tried at every offset, at availabilities from a few
    hosts down to every host down (the search once marked origins failure by failure: p 0 was refused)."""
    import numpy as np

    rng = np.random.default_rng(7)
    host_up = rng.random((30, availability.STATIC_POD_CUBES * 16)) < p
    boxes = {k: [availability._host_box(s) for s in availability.static_boxes(k)] for k in ks}
    got = availability._static_batch(host_up, ks, boxes)
    expected = [sum(_brute_static(row, boxes[k]) for row in host_up) for k in ks]
    assert list(got) == expected
    if p > 0:
        assert any(0 < e < len(host_up) for e in expected)  # some size is neither always nor never placed
