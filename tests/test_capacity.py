"""`tpufleet capacity` against an exhaustive check: every shape tried with `allocate` on a copy of the state, now
and after each possible cube failure."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from helpers import snapshot


def _busy(fleet, seed: int, faults: int, slices: int) -> None:
    """Random faults and allocations (some refused: that is fine, the state is what it is)."""
    rng = random.Random(seed)
    cubes = [c["cube"] for c in fleet("show", "inventory", "-o", "json").json]
    for _ in range(faults):
        cube = rng.choice(cubes)
        target = rng.choice(
            [
                f"cube:{cube}",
                f"host:{cube}/{rng.randrange(16)}",
                f"ocs:pod0/x/{rng.randrange(16)}",
                f"link:{cube}/x/{rng.randrange(4)}/out",  # the cube stays in the pool, a torus cannot use it
            ]
        )
        fleet("inject-fault", target)
    for i in range(slices):
        fleet("allocate", f"s{i}", "--shape", rng.choice(["2x2x1", "2x2x2", "2x4x4", "4x4x4", "4x4x8"]))


def _fits(fleet, tmp_path: Path, shape: str, twisted: bool, fault: str | None = None) -> bool:
    """`allocate` of this shape on a copy of the state (after `fault`, if given) succeeds."""
    copy = tmp_path / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(fleet.state, copy)
    run = type(fleet)(fleet.capsys, copy)
    if fault is not None:
        assert run("inject-fault", fault).code == 0
    r = run("allocate", "probe", "--shape", shape, *(["--twisted"] if twisted else []))
    assert r.code in (0, 1), r.err
    return r.code == 0


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_verdicts_now_and_after_one_failure_equal_an_exhaustive_check(cli, tmp_path, seed):
    assert cli("init", "--cubes-per-pod", "8").code == 0
    _busy(cli, seed, faults=2, slices=4)
    before = snapshot(cli.state)
    r = cli("capacity", "--after", "1", "-o", "json")
    assert r.code == 0, r.err
    assert snapshot(cli.state) == before
    (pod,) = r.json["pods"]
    healthy = [c["cube"] for c in cli("show", "inventory", "-o", "json").json if c["state"] != "out"]
    for v in pod["verdicts"]:
        now = _fits(cli, tmp_path, v["shape"], v["twisted"])
        assert v["fits_now"] == now, v
        if now:  # the worst single failure: fits after every one
            after = all(_fits(cli, tmp_path, v["shape"], v["twisted"], f"cube:{c}") for c in healthy)
            assert v["fits_after"] == after, v
        else:
            assert not v["fits_after"]
    assert pod["fit_now"] == sum(v["fits_now"] for v in pod["verdicts"])


def test_verdicts_on_a_64_cube_pod_equal_the_use_case_on_copies(cli, tmp_path):
    """Every shape of the built-in TPU v4 model, each tried with the allocate use case on a fresh load."""
    from tpufleet.errors import BadInput, Refused
    from tpufleet.ops import slices
    from tpufleet.shapes import parse_shape
    from tpufleet.state import Store

    assert cli("init").code == 0
    _busy(cli, 7, faults=6, slices=12)
    pod = cli("capacity", "-o", "json").json["pods"][0]
    assert pod["shapes"] > 100
    for v in pod["verdicts"]:
        state = Store(cli.state).load()
        try:
            slices.allocate(state, "probe", parse_shape(v["shape"], v["twisted"]), "now")
            fits = True
        except (Refused, BadInput):
            fits = False
        assert v["fits_now"] == fits, v


def test_the_largest_shape_after_k_failures_follows_the_free_cubes(cli):
    assert cli("init", "--cubes-per-pod", "16").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8").code == 0  # 14 free
    pod = cli("capacity", "--after", "6", "-o", "json").json["pods"][0]
    assert pod["free_healthy_cubes"] == 14
    tori = [v for v in pod["verdicts"] if v["cubes"] > 1]
    assert all(v["fits_now"] == (v["cubes"] <= 14) for v in tori)
    assert all(v["fits_after"] == (v["cubes"] <= 8) for v in tori)


def test_bad_options(cli):
    assert cli("init").code == 0
    assert cli("capacity", "--after", "-1").code == 2
    r = cli("capacity", "--pod", "pod9")
    assert r.code == 2 and "pod9" in r.err


def test_without_after_the_table_does_not_speak_of_surviving_zero_failures(cli):
    """Plain `capacity` said "... 64 after the worst 0 cube failure(s)", repeating the shapes that fit now."""
    assert cli("init").code == 0
    line = cli("capacity").out.splitlines()[0]
    assert "fit now (largest 16x16x16)" in line and "after the worst" not in line
    assert "after the worst 1 cube failure(s)" in cli("capacity", "--after", "1").out
