"""`simulate-availability --static-pod tpu-v3`: a TPU v3 pod (32x32 chips, hosts of 2x2) in the static column, its
search against trying every box, its JSON, and its refusals (exit 2 naming the option and the value)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers import one_line
from tpufleet import static_torus
from tpufleet.static_torus import TPU_V3


def _brute(up: Any, boxes: list[tuple[int, int]]) -> bool:
    """Whether some a x b box of hosts is all up, every offset tried with wraparound (the oracle)."""
    import numpy as np

    grid = up.reshape(TPU_V3.host_grid)
    for a, b in boxes:
        window = np.ones_like(grid)
        for dx in range(a):
            for dy in range(b):
                window &= np.roll(grid, (-dx, -dy), axis=(0, 1))
        if window.any():
            return True
    return False


@pytest.mark.parametrize("p", [0.99, 0.95, 0.8, 0.0])
def test_search_agrees_with_trying_every_box(p: float) -> None:
    import numpy as np

    up = np.random.default_rng(3).random((40, TPU_V3.hosts)) < p
    sizes = [static_torus.host_boxes(TPU_V3, chips) for chips in (4, 64, 192, 256, 512, 1024)]
    got = static_torus.successes(TPU_V3, up, sizes)
    assert list(got) == [sum(_brute(row, boxes) for row in up) for boxes in sizes]


def _json(cli: Any, *args: str) -> dict[str, Any]:
    r = cli("simulate-availability", *args, "--trials", "2000", "-o", "json", state=False)
    assert r.code == 0, r.err
    return r.json


def test_tpu_v3_changes_the_static_column_alone(cli: Any) -> None:
    twin = _json(cli, "--cubes", "4,8,16,17")
    v3 = _json(cli, "--cubes", "4,8,16,17", "--static-pod", "tpu-v3")
    assert (twin["static_pod"], v3["static_pod"]) == ("tpu-v4", "tpu-v3")
    for a, b in zip(twin["results"], v3["results"], strict=True):  # the same seed: the same reconfigurable draws
        assert {k: v for k, v in a.items() if not k.startswith("static")} == {
            k: v for k, v in b.items() if not k.startswith("static")
        }
    rows = {row["cubes"]: row for row in v3["results"]}
    assert rows[4]["static_boxes"] == ["8x32", "16x16", "32x8"] and rows[4]["static_method"] == "monte-carlo"
    assert (rows[16]["static_boxes"], rows[16]["static_method"]) == (["32x32"], "exact")
    assert rows[16]["static"] == pytest.approx(0.99**256)
    assert (rows[17]["static"], rows[17]["static_method"], rows[17]["static_boxes"]) == (0.0, "exact", [])
    assert _json(cli, "--static-pod", "tpu-v4", "--cubes", "8") == _json(cli, "--cubes", "8")
    assert _json(cli, "--generation", "tpu7x", "--cubes", "8")["static_pod"] is None


def test_tpu_v3_beside_another_generations_pods(cli: Any) -> None:
    rows = _json(cli, "--generation", "tpu7x", "--cubes", "8,144", "--static-pod", "tpu-v3")["results"]
    assert [row["static_method"] for row in rows] == ["monte-carlo", "exact"] and rows[1]["static"] == 0.0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--static-pod", "tpu-v9"), "--static-pod: 'tpu-v9'"),
        (("--static-pod", ""), "--static-pod: ''"),
        (("--static-pod", "tpu-v4", "--generation", "tpu7x"), "--static-pod 'tpu-v4'"),
    ],
)
def test_a_bad_static_pod_is_exit_2_naming_it(cli: Any, args: tuple[str, ...], said: str) -> None:
    line = one_line(cli("simulate-availability", *args, "--trials", "10", state=False))
    assert said in line
    r = cli("simulate-availability", *args, "--trials", "10", "-o", "json", state=False)
    assert r.code == 2 and said in json.loads(r.err)["error"]


def test_the_table_names_the_pod_and_its_exact_zero(cli: Any) -> None:
    r = cli("simulate-availability", "--static-pod", "tpu-v3", "--cubes", "16,17", "--trials", "100", state=False)
    assert r.code == 0, r.err
    assert "static tpu-v3 [MC 95% CI]" in r.out and "larger than the tpu-v3 pod" in r.out


def test_a_size_larger_than_the_pod_has_no_monte_carlo_interval(cli: Any) -> None:
    # no box of the pod holds it: 0 whatever the draws, so its interval is [0, 0], not the Wilson interval of 0
    # successes, which reads as a chance of up to 0.0019 at 2,000 trials
    rows = _json(cli, "--cubes", "17,64", "--static-pod", "tpu-v3")["results"]
    assert [(row["static"], row["static_ci"]) for row in rows] == [(0.0, [0.0, 0.0])] * 2
