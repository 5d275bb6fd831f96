"""No sequence of commands leaves a state the next command refuses.

A Hypothesis state machine drives the real CLI (in-process) through allocate, release, inject-fault, clear-fault,
import k8s --apply and policy, with any values an operator or a script could pass (NaN, infinities, huge and
negative numbers, control characters in reasons). Whatever each command answers, it must never be an internal
error, and after every step `status` must load the state (exit 0).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tpufleet.cli import main

FIXTURE = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"
SHAPES = ["2x2x1", "2x2x2", "4x4x4", "4x4x8", "8x8x8", "3x3x3", "4x8x8"]
NAMES = ["a", "b", "c", "j"]
TARGETS = ["host:c01/3", "cube:c02", "ocs:pod0/x/5", "link:c00/x/3/out", "chip:c04/1,2,3", "ici:c05/0,0,0/+x"]
FLOATS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e999", "0.5", "1", "0", "-0.1", "\u0660.\u0665"]),
    st.floats(allow_nan=True, allow_infinity=True),
)
REASONS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)


def run(state: Path, *args: object) -> int:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--state", str(state), *map(str, args)])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    assert code != 70, (args, err.getvalue()[-500:])
    return code


def flapping_nodes(directory: Path, down: list[int]) -> Path:
    doc = json.loads(FIXTURE.read_text())
    for i in down:
        node = doc["items"][i % len(doc["items"])]
        for cond in node["status"]["conditions"]:
            if cond["type"] == "Ready":
                cond.update(status="False", reason="KubeletDown\n\x1b[2J")
    path = directory / "nodes.json"
    path.write_text(json.dumps(doc))
    return path


class Commands(RuleBasedStateMachine):
    @initialize()
    def fresh_state(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tpufleet-sm-"))
        self.state = self.dir / "state"
        assert run(self.state, "init") == 0

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(name=st.sampled_from(NAMES), shape=st.sampled_from(SHAPES), floor=st.none() | FLOATS, ft=st.booleans())
    def allocate(self, name, shape, floor, ft) -> None:
        args = ["allocate", name, "--shape", shape]
        args += [] if floor is None else ["--min-throughput", floor]
        args += [] if ft else ["--no-fault-tolerant-routing"]
        run(self.state, *args)

    @rule(name=st.sampled_from(NAMES), count=st.sampled_from(["2", "3", "-1", "0", "1000000000", "1e3"]))
    def allocate_job(self, name, count) -> None:
        run(self.state, "allocate", name, "--shape", "2x2x1", "--slices", count)

    @rule(name=st.sampled_from(NAMES))
    def release(self, name) -> None:
        run(self.state, "release", name)

    @rule(name=st.sampled_from(NAMES))
    def wire_and_route(self, name) -> None:
        if run(self.state, "plan-xconnect", name, "--apply") == 0:
            run(self.state, "routes", name)

    @rule(what=st.sampled_from(TARGETS), reason=REASONS, planned=st.booleans())
    def inject(self, what, reason, planned) -> None:
        run(self.state, "inject-fault", what, "--reason", reason, *(["--planned"] if planned else []))

    @rule(key=st.sampled_from([*TARGETS, "f1", "f2", "f3", "f" + "9" * 30]))
    def clear(self, key) -> None:
        run(self.state, "clear-fault", key)

    @rule(down=st.lists(st.integers(0, 300), max_size=4))
    def import_nodes(self, down) -> None:
        run(self.state, "import", "k8s", flapping_nodes(self.dir, down), "--apply")

    @rule(name=st.sampled_from(NAMES), floor=FLOATS, ft=st.sampled_from([None, True, False]))
    def policy(self, name, floor, ft) -> None:
        args = ["policy", name, "--min-throughput", floor]
        if ft is not None:
            args.append("--fault-tolerant-routing" if ft else "--no-fault-tolerant-routing")
        run(self.state, *args)

    @invariant()
    def the_next_command_loads_the_state(self) -> None:
        if hasattr(self, "state"):
            assert run(self.state, "status", "-o", "json") == 0


Commands.TestCase.settings = settings(max_examples=20, stateful_step_count=12, deadline=None)
test_no_sequence_of_commands_bricks_the_state = Commands.TestCase
