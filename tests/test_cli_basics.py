import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import snapshot


def test_init_refuses_overwrite_and_force_keeps_numbering(cli):
    assert cli("init").code == 0
    r = cli("init")
    assert r.code == 1 and "--force" in r.err and r.err.count("\n") == 1
    r = cli("init", "--force", "--pods", "2", "-o", "json")
    assert r.code == 0 and r.json["serial"] == 2 and r.json["inventory"]["cubes"] == 128
    status = cli("status", "-o", "json").json
    assert status["serial"] == 2 and status["cubes"] == {"free": 128, "allocated": 0, "out": 0}
    journal = cli("show", "journal", "-o", "json").json
    assert [e["serial"] for e in journal] == [1, 2]
    assert {"serial", "time", "user", "command", "summary"} <= set(journal[0])


def test_state_dir_from_environment(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("TPUFLEET_STATE", str(tmp_path / "env-state"))
    assert cli("init", "--cubes-per-pod", "8", state=False).code == 0
    assert cli("status", "-o", "json", state=False).json["inventory"]["cubes"] == 8


def test_show_outputs(fleet):
    ocs = fleet("show", "ocs", "-o", "json").json
    assert len(ocs) == 48
    assert set(ocs[0]) >= {"id", "pod", "dim", "index", "health", "xconnects"}
    assert ocs[0]["id"] == "ocs:pod0/x/0" and ocs[0]["xconnects"] == []
    inv = fleet("show", "inventory", "-o", "json").json
    assert len(inv) == 64 and inv[7]["id"] == "cube:c07" and inv[7]["state"] == "free"
    assert fleet("show", "slices", "-o", "json").json == []
    assert fleet("show", "health", "-o", "json").json == []
    import yaml

    assert yaml.safe_load(fleet("show", "ocs", "-o", "yaml").out) == ocs
    table = fleet("show", "ocs").out
    assert "ocs:pod0/z/15" in table


def test_status_without_state_is_refused(cli):
    r = cli("status")
    assert r.code == 1 and "tpufleet init" in r.err


def test_topology_json_keys(cli):
    r = cli("topology", "4x4x8", "--twisted", "-o", "json", state=False)
    assert r.code == 0
    assert {"shape", "twisted", "chips", "cubes", "diameter", "mean_hops", "bisection_links"} <= set(r.json)
    assert (r.json["diameter"], round(r.json["mean_hops"], 4)) == (6, 3.4646)


@pytest.mark.parametrize(
    "args",
    [
        ["topology", "5x5x5"],
        ["topology", "4x4x4", "--twisted"],
        ["show", "everything"],
        ["status", "-o", "xml"],
        ["init", "--pods", "0"],
        ["init", "--cubes-per-pod", "99"],
        ["no-such-command"],
        ["status", "--bogus"],
    ],
)
def test_bad_input_is_exit_2_with_one_line(fleet, args):
    before = snapshot(fleet.state)
    r = fleet(*args)
    assert r.code == 2, (args, r.err)
    assert r.err.count("\n") == 1 and r.err.startswith("tpufleet: error:")
    assert "Traceback" not in r.err
    assert snapshot(fleet.state) == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 200) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_malformed_state_files_are_exit_2_and_untouched(fleet, data):
    from tpufleet.errors import BadStateFile
    from tpufleet.state.schema import validate

    path = fleet.state / "state.json"
    pristine = path.read_bytes()
    doc = json.loads(pristine)
    doc["slices"]["s1"] = {
        "shape": "8x8x8",
        "twisted": False,
        "pod": "pod0",
        "cubes": [f"c{i:02d}" for i in range(8)],
        "coords": {},
        "state": "allocated",
        "fault_tolerant_routing": True,
    }
    doc["ocs"]["pod0/x/0"] = [[0, 1], [1, 0]]
    paths = list(_paths(doc))
    target = data.draw(st.sampled_from(paths[1:]))
    value = data.draw(json_values)
    node = doc
    for key in target[:-1]:
        node = node[key]
    node[target[-1]] = value
    mode = data.draw(st.sampled_from(["edit", "truncate", "garbage"]))
    raw = json.dumps(doc).encode()
    if mode == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 2))]
    elif mode == "garbage":
        raw = data.draw(st.binary(max_size=40))
    path.write_bytes(raw)
    try:
        validate(json.loads(raw), "x")
        valid = True
    except (BadStateFile, ValueError, UnicodeDecodeError):
        valid = False
    try:
        before = snapshot(fleet.state)
        for args in (["status"], ["show", "ocs", "-o", "json"], ["show", "slices"]):
            r = fleet(*args)
            assert "Traceback" not in r.err and "internal error" not in r.err, r.err
            if not valid:
                assert r.code == 2, (args, target, value, r.err)
                assert r.err.count("\n") == 1 and "state.json" in r.err
        assert snapshot(fleet.state) == before
    finally:
        path.write_bytes(pristine)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.text(max_size=12), twisted=st.booleans(), target=st.text(max_size=20))
def test_random_shapes_and_ids_never_crash(fleet, shape, twisted, target):
    before = snapshot(fleet.state)
    r = fleet("topology", shape, *(["--twisted"] if twisted else []), "-o", "json")
    assert r.code in (0, 2) and "Traceback" not in r.err
    if r.code == 2:
        assert r.err.count("\n") == 1
    r = fleet("inject-fault", target, "--dry-run")
    assert r.code in (0, 2) and "Traceback" not in r.err and "internal error" not in r.err
    assert snapshot(fleet.state) == before
