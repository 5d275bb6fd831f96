"""Compound faults through the CLI, as a property (from the issue tracker).

Over random compound fault sets (OCS, optical links, hosts; 1 to 6 faults) on one slice of any multi-cube shape
up to 8x8x16 twisted: the CLI never exits 70, every fault is recorded once, stored tables are always routable,
deadlock-free and within the hardware's 3 VCs, and a subset fault (an optical link) never routes worse than its
superset (the OCS the link is cabled to).

Cost: every injection analyses the slice's routes and so does every `routes` and what-if after it: a fraction of a
second on the small shapes, seconds on 4x8x8 and up once faults span dimensions. So the draws favour the small
shapes, and the bigger slices take fewer faults and fewer link-versus-OCS what-ifs (MAX_FAULTS, LINK_CHECKS).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from helpers import snapshot
from tpufleet.routing.patterns import COMBINED_OCS_LIMIT

HARDWARE_VCS = 3
CUBES_PER_POD = 64
DIMS = ("x", "y", "z")

# Weighted by repetition toward the cheap shapes (an example runs two to four route analyses per fault); in three
# tests, so that the suite's two workers share the draws instead of one running them all.
SHAPE_GROUPS = {
    "small": (*(("4x4x4", False),) * 4, *(("4x4x8", False),) * 4, *(("4x4x8", True),) * 4),
    "medium": (*(("4x8x8", False),) * 3, *(("4x8x8", True),) * 3),
    "large": (*(("8x8x8", False),) * 2, ("8x8x16", False), ("8x8x16", True)),
}
EXAMPLES = {"small": 6, "medium": 4, "large": 2}  # 12 in all, about the shares one draw over every shape gave
# Faults per example: 1 to 6, fewer on the slow shapes.
MAX_FAULTS = {"4x8x8": 4, "8x8x8": 3, "8x8x16": 2}
# Links checked against their whole OCS per example (two more analyses each): every one, fewer on the slow shapes.
LINK_CHECKS = {"8x8x8": 1, "8x8x16": 1}


@dataclass(frozen=True)
class Spec:
    """A fault in terms of the slice it will hit (its cubes are known only once allocated)."""

    kind: str  # ocs | link | host
    dim: str = "x"
    index: int = 0  # face index of an OCS or link, machine of a host
    polarity: str = "out"
    slice_cube: int | None = None  # position in the slice's cube list (links always; hosts sometimes)
    any_cube: int = 0  # a host on any cube of the pod (when slice_cube is None)

    def target(self, cubes: list[str]) -> str:
        if self.kind == "ocs":
            return f"ocs:pod0/{self.dim}/{self.index}"
        cube = cubes[self.slice_cube % len(cubes)] if self.slice_cube is not None else f"c{self.any_cube:02d}"
        if self.kind == "link":
            return f"link:{cube}/{self.dim}/{self.index}/{self.polarity}"
        return f"host:{cube}/{self.index}"


faces = st.integers(0, 15)
ocs_specs = st.builds(Spec, kind=st.just("ocs"), dim=st.sampled_from(DIMS), index=faces)
link_specs = st.builds(
    Spec,
    kind=st.just("link"),
    dim=st.sampled_from(DIMS),
    index=faces,
    polarity=st.sampled_from(("out", "in")),
    slice_cube=st.integers(0, 31),
)
host_specs = st.builds(
    Spec,
    kind=st.just("host"),
    index=faces,
    slice_cube=st.none() | st.integers(0, 31),
    any_cube=st.integers(0, CUBES_PER_POD - 1),
)
# Hosts on the slice evict it (no more routing to check), so they are drawn less often.
fault_specs = st.one_of(ocs_specs, link_specs, link_specs, ocs_specs, host_specs)


@st.composite
def scenarios(
    draw: st.DrawFn, shapes: tuple[tuple[str, bool], ...]
) -> tuple[tuple[str, bool], list[Spec], tuple[int, int]]:
    shape = draw(st.sampled_from(shapes))
    specs = draw(st.lists(fault_specs, min_size=1, max_size=MAX_FAULTS.get(shape[0], 6)))
    # faults[start:start + length] go in one `--from` file when that is at least two of them
    batch = draw(st.tuples(st.integers(0, 5), st.integers(0, 6)))
    return shape, specs, batch


def _ok(r: Any, what: str) -> Any:
    """The JSON output of a command that must succeed (never 70, the internal error); its stderr if not."""
    assert r.code == 0, f"{what}: exit {r.code}\n{r.err}"
    return r.json


def _groups(targets: list[str], batch: tuple[int, int]) -> list[list[str]]:
    """The injections in order: single targets, and at most one run of two or more in a `--from` file."""
    start, length = batch
    if length < 2 or start + length > len(targets):
        return [[t] for t in targets]
    return [[t] for t in targets[:start]] + [targets[start : start + length]] + [[t] for t in targets[start + length :]]


def _slice_row(fleet: Any) -> Any:
    (row,) = _ok(fleet("show", "slices", "-o", "json"), "show slices")
    assert row["name"] == "s"
    if row["state"] == "degraded":
        assert row["degraded"]["vcs"] <= HARDWARE_VCS, row
        assert row["degraded"]["all_to_all_retained"] > 0, row
    return row


def _check_routes(fleet: Any) -> None:
    """`routes` either stores tables that route every pair, deadlock-free, within the VCs; or stores nothing."""
    before = snapshot(fleet.state)
    r = fleet("routes", "s", "-o", "json")
    assert r.code in (0, 1), f"routes: exit {r.code}\n{r.err}"
    if r.code == 1:
        assert "not stored" in r.err, r.err
        assert snapshot(fleet.state) == before, "a refused `routes` changed the state"
        return
    out = r.json
    assert out["stored"] is True, out
    assert out["unroutable_pairs"] == 0, out
    assert out["deadlock_free"] is True, out
    assert out["vcs"] <= HARDWARE_VCS, out
    with np.load(fleet.state / "routes" / "s.npz") as tables:
        port = tables["port"]
        meta = json.loads(str(tables["meta"]))
    off_diagonal = ~np.eye(port.shape[0], dtype=bool)
    assert (port[off_diagonal] >= 0).all(), "stored tables with unroutable pairs"
    assert (np.diag(port) == -1).all()
    assert meta["vcs"] <= HARDWARE_VCS, meta


def _ocs_of(link: str) -> str:
    """The OCS a link is cabled to: `link:c07/x/5/out` -> `ocs:pod0/x/5` (one pod)."""
    return "ocs:pod0/{}/{}".format(*link.split("/")[1:3])


def _partly_dead_ocs(recorded: list[str], link: str) -> set[str]:
    """The OCS with a dead link that are not down as a whole, once `link` is down too."""
    return {_ocs_of(t) for t in [*recorded, link] if t.startswith("link:")} - set(recorded)


def _check_link_vs_its_ocs(fleet: Any, link: str) -> None:
    """Both what-ifs on the same state: the link's cable is one of the OCS's, so it never routes worse."""
    ocs = _ocs_of(link)
    by_link = _ok(fleet("inject-fault", link, "--dry-run", "-o", "json"), f"dry run {link}")
    by_ocs = _ok(fleet("inject-fault", ocs, "--dry-run", "-o", "json"), f"dry run {ocs}")
    (link_impact,) = by_link["slices"]
    (ocs_impact,) = by_ocs["slices"]
    if ocs_impact["action"] == "reroute":  # the superset reroutes: so does the subset, at least as well
        assert link_impact["action"] == "reroute", (link, link_impact, ocs, ocs_impact)
        kept_link = link_impact["reroute"]["all_to_all_retained"]
        kept_ocs = ocs_impact["reroute"]["all_to_all_retained"]
        assert kept_link >= kept_ocs, f"{link} keeps {kept_link}, its whole {ocs} keeps {kept_ocs}"


def _property(group: str) -> Any:
    """The property over the shapes of `group`."""

    @settings(
        max_examples=EXAMPLES[group],
        deadline=None,
        # No shrinking: an example costs seconds and shrinking one ran past five minutes; a failure prints the
        # whole scenario (at most six faults) with its targets.
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(scenario=scenarios(SHAPE_GROUPS[group]))
    def test(fleet: Any, tmp_path: Path, scenario: tuple[tuple[str, bool], list[Spec], tuple[int, int]]) -> None:
        _compound_faults_are_recorded_and_routed_within_budget(fleet, tmp_path, scenario)

    return pytest.mark.slow(test)


test_compound_faults_on_small_shapes = _property("small")
test_compound_faults_on_medium_shapes = _property("medium")
test_compound_faults_on_large_shapes = _property("large")


def _compound_faults_are_recorded_and_routed_within_budget(
    fleet: Any, tmp_path: Path, scenario: tuple[tuple[str, bool], list[Spec], tuple[int, int]]
) -> None:
    (shape, twisted), specs, batch = scenario
    _ok(fleet("init", "--force", "-o", "json"), "init")
    allocated = _ok(
        fleet("allocate", "s", "--shape", shape, *(["--twisted"] if twisted else []), "-o", "json"), "allocate"
    )
    _ok(fleet("plan-xconnect", "s", "--apply", "-o", "json"), "plan-xconnect")
    _check_routes(fleet)
    cubes: list[str] = allocated["cubes"]
    targets = [spec.target(cubes) for spec in specs]
    note(f"slice {shape}{' twisted' if twisted else ''} on {','.join(cubes)}; faults {targets}; batch {batch}")

    recorded: list[str] = []
    link_checks = LINK_CHECKS.get(shape, len(targets))
    for group in _groups(targets, batch):
        if _slice_row(fleet)["state"] in ("connected", "degraded"):
            for link in dict.fromkeys(t for t in group if t.startswith("link:")):
                # On a twisted torus the rule holds with links of up to COMBINED_OCS_LIMIT OCS down (README)
                within = not twisted or len(_partly_dead_ocs(recorded, link)) <= COMBINED_OCS_LIMIT
                if link_checks and link not in recorded and _ocs_of(link) not in recorded and within:
                    _check_link_vs_its_ocs(fleet, link)
                    link_checks -= 1

        before = snapshot(fleet.state)
        if len(group) == 1:
            r = fleet("inject-fault", group[0], "-o", "json")
            radii = [_ok(r, f"inject-fault {group[0]}")]
        else:
            scenario_file = tmp_path / "faults.json"
            scenario_file.write_text(json.dumps(group))
            radii = _ok(fleet("inject-fault", "--from", scenario_file, "-o", "json"), f"inject-fault --from {group}")
        assert [radius["target"] for radius in radii] == group
        for radius in radii:
            if radius["target"] in recorded:  # a repeat of an open fault is a no-op
                assert radius.get("duplicate_of"), radius
            else:
                assert not radius.get("duplicate_of"), radius
                recorded.append(radius["target"])
            for impact in radius["slices"]:
                if impact["action"] == "reroute":
                    rr = impact["reroute"]
                    assert rr["fully_routable"] and rr["deadlock_free"] and rr["vcs"] <= HARDWARE_VCS, impact
        if all(radius.get("duplicate_of") for radius in radii):
            assert snapshot(fleet.state) == before, "a repeated fault changed the state"

        faults = _ok(fleet("faults", "-o", "json"), "faults")
        assert [f["target"] for f in faults] == recorded

        row = _slice_row(fleet)
        if row["state"] in ("connected", "degraded") and row["routes"] != "fresh":
            _check_routes(fleet)
            _slice_row(fleet)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("shape", "before", "link"),
    [
        # found by the property too; passes since b9965a4
        (["4x4x8", "--twisted"], ["link:c01/y/4/in"], "link:c00/y/12/in"),
        # found by the property: after one link fault, a second link kept 0.8205 and its whole OCS 0.8312; the
        # router now also tries the failure pattern of each OCS on its own, which is what the OCS itself gets
        (["4x4x8"], ["link:c00/z/14/out"], "link:c00/x/14/in"),
        (["4x8x8"], ["link:c01/z/14/out"], "link:c01/x/4/in"),
        # found by the property: with links of x/10 and z/4 down, a z/8 link kept 0.975 and its whole OCS 1.0, its
        # tables made for z/8 and z/4 together; a link's candidates now combine the patterns of its OCS and others
        (["4x4x8", "--twisted"], ["link:c01/z/4/in", "link:c00/x/10/out"], "link:c01/z/8/in"),
    ],
)
def test_a_link_never_routes_worse_than_its_ocs_after_other_faults(
    fleet: Any, shape: list[str], before: list[str], link: str
) -> None:
    """The property's subset check, on the scenarios it found, as quick regression cases."""
    _ok(fleet("allocate", "s", "--shape", *shape, "-o", "json"), "allocate")
    _ok(fleet("plan-xconnect", "s", "--apply", "-o", "json"), "plan-xconnect")
    for target in before:
        _ok(fleet("inject-fault", target, "-o", "json"), f"inject-fault {target}")
    _check_link_vs_its_ocs(fleet, link)
