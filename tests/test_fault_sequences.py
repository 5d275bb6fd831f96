"""Seeded sequences of the fault lifecycle on pods of every generation, with invariants after every step.

Unlike the state machine of `test_state_machine.py` (any values, one TPU v4 pod), these drive what an operator
runs: slices and multislice jobs (elastic or not, spread over two pods), some twisted or without fault-tolerant
routing, wired and routed; faults of every kind on their cubes and on free ones, planned drains, `--from` batches
and `--random` draws; clears by id and by target in any order; `reschedule`, `policy`, `release`. Small pods
(8-20 cubes) keep moves short of room, so proposals go pending and reserved moves are hit. After every step:

* no command exits 70, and `status` loads the state;
* `inject-fault --dry-run` answers exactly what the real run then answers;
* `status`, `show health`, `faults`, `show slices`, `show inventory`, `show jobs` and `explain` agree;
* no cube is in two whole-cube slices, and no reserved move takes another slice's cube;
* a slice on a cube out of the pool is evicted; a degraded slice routes around open faults only, and a slice with
  fresh tables routes around exactly the network faults under it;
* the `next` steps of `explain` (each evicted or degraded slice, each job) all succeed in order, on a copy of the
  state, and leave no slice of it evicted.

Derandomized: each sequence comes from its seed alone.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import shlex
import shutil
from pathlib import Path

import pytest

from tpufleet.cli import main

SHAPES = {
    "tpu-v4": ["4x4x4", "4x4x8", "8x8x8", "2x2x2", "2x2x1"],
    "tpu-v5p": ["4x4x4", "4x4x8", "2x2x4"],
    "tpu7x": ["4x4x4", "4x4x8", "2x4x4"],
}
COMPUTE = ("host", "chip", "ici", "cube")


def run(state: Path, *args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--state", str(state), *map(str, args)])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    assert code != 70, (args, err.getvalue()[-800:])
    return code, out.getvalue(), err.getvalue()


def js(state: Path, *args: object):
    code, out, err = run(state, *args, "-o", "json")
    assert code == 0, (args, err)
    return json.loads(out)


STEPS = {  # command -> weight
    "allocate": 2,
    "job": 2,
    "wire": 3,
    "inject": 5,
    "inject_from": 1,
    "inject_random": 1,
    "clear": 4,
    "reschedule": 3,
    "policy": 1,
    "release": 0.5,
}


class Sequence:
    def __init__(self, seed: int, directory: Path):
        self.r = random.Random(seed)
        self.dir, self.state = directory, directory / "state"
        self.gen = self.r.choice(list(SHAPES))
        self.pods = self.r.choice([1, 1, 2])
        size = self.r.choice([[], ["--cubes-per-pod", 8], ["--cubes-per-pod", 12], ["--cubes-per-pod", 20]])
        assert run(self.state, "init", "--generation", self.gen, "--pods", self.pods, *size)[0] == 0
        self.cubes = [c["cube"] for c in js(self.state, "show", "inventory")]
        self.count = 0
        for _ in range(2):
            self.r.choice([self.allocate, self.job])()
            self.wire()

    def slices(self) -> list[dict]:
        return js(self.state, "show", "slices")

    def name(self, states: set[str] | None = None) -> str:
        sl = [s for s in self.slices() if states is None or s["state"] in states]
        names = [s["name"] for s in sl] + sorted({s["job"] for s in sl if s.get("job")})
        return self.r.choice(names) if names else "none"

    def target(self) -> str:
        r, sl = self.r, self.slices()
        near = [c for s in sl for c in s["cubes"] + (s.get("proposal") or {}).get("cubes", [])]
        c = r.choice(near if near and r.random() < 0.8 else self.cubes)
        p = [r.randrange(4), r.randrange(4), r.randrange(4)]
        return r.choice(
            [
                f"host:{c}/{r.randrange(16)}",
                f"chip:{c}/{p[0]},{p[1]},{p[2]}",
                f"ici:{c}/{p[0]},{p[1]},{min(p[2], 2)}/+z",
                f"cube:{c}",
                f"link:{c}/{r.choice('xyz')}/{r.randrange(16)}/{r.choice(['in', 'out'])}",
                f"link:{c}/{r.choice('xyz')}/{r.randrange(16)}/{r.choice(['in', 'out'])}",
                f"ocs:pod{r.randrange(self.pods)}/{r.choice('xyz')}/{r.randrange(16)}",
                f"ocs:pod{r.randrange(self.pods)}/{r.choice('xyz')}/{r.randrange(16)}",
            ]
        )

    # ---- the commands ------------------------------------------------------------------------------------
    def allocate(self) -> None:
        self.count += 1
        args = ["allocate", f"s{self.count}", "--shape", self.r.choice(SHAPES[self.gen])]
        args += ["--twisted"] if args[-1] == "4x4x8" and self.r.random() < 0.4 else []
        args += ["--no-fault-tolerant-routing"] if self.r.random() < 0.2 else []
        args += ["--min-throughput", self.r.choice(["0.3", "0.9", "0.99"])] if self.r.random() < 0.2 else []
        run(self.state, *args)

    def job(self) -> None:
        self.count += 1
        n = self.r.choice([2, 3])
        args = ["allocate", f"j{self.count}", "--shape", self.r.choice(SHAPES[self.gen][:2]), "--slices", n]
        args += ["--elastic", self.r.randrange(1, n + 1)] if self.r.random() < 0.5 else []
        args += ["--spread"] if self.pods > 1 and self.r.random() < 0.5 else []
        args += ["--no-fault-tolerant-routing"] if self.r.random() < 0.15 else []
        run(self.state, *args)

    def wire(self) -> None:
        name = self.name({"allocated", "connected", "degraded"})
        if run(self.state, "plan-xconnect", name, "--apply")[0] == 0:
            run(self.state, "routes", name)

    def dry_run_then_real(self, *args: object) -> None:
        dry, real = run(self.state, *args, "--dry-run", "-o", "json"), run(self.state, *args, "-o", "json")
        assert dry[0] == real[0], (args, dry[2], real[2])
        if dry[0] == 0:
            assert json.loads(dry[1]) == json.loads(real[1]), args

    def inject(self) -> None:
        self.dry_run_then_real("inject-fault", self.target(), *(["--planned"] if self.r.random() < 0.25 else []))

    def inject_from(self) -> None:
        items = [{"target": self.target(), "planned": self.r.random() < 0.3} for _ in range(self.r.randrange(2, 4))]
        batch = self.dir / "faults.json"
        batch.write_text(json.dumps(items))
        self.dry_run_then_real("inject-fault", "--from", batch)

    def inject_random(self) -> None:
        self.dry_run_then_real("inject-fault", "--random", self.r.randrange(1, 4), "--seed", self.r.randrange(100))

    def clear(self) -> None:
        open_faults = js(self.state, "faults")
        if open_faults:
            f = self.r.choice(open_faults)
            key = f["id"] if self.r.random() < 0.7 else f["target"]
            assert run(self.state, "clear-fault", key)[0] == 0, key

    def reschedule(self) -> None:
        run(self.state, "reschedule", self.name({"evicted"}))

    def policy(self) -> None:
        ft = self.r.choice(["--fault-tolerant-routing", "--no-fault-tolerant-routing"])
        run(self.state, "policy", self.name(), "--min-throughput", self.r.choice(["0.2", "0.5", "0.9"]), ft)

    def release(self) -> None:
        names = sorted({s.get("job") or s["name"] for s in self.slices()})
        if names:
            run(self.state, "release", self.r.choice(names))

    def step(self) -> None:
        getattr(self, self.r.choices(list(STEPS), list(STEPS.values()))[0])()
        self.check()

    # ---- the invariants ----------------------------------------------------------------------------------
    def check(self) -> None:
        status, faults, sl = js(self.state, "status"), js(self.state, "faults"), self.slices()
        assert status["open_faults"] == len(faults)
        assert sorted(f["fault"] for f in js(self.state, "show", "health")) == sorted(f["id"] for f in faults)
        assert {s["name"]: s["state"] for s in status["slices"]} == {s["name"]: s["state"] for s in sl}
        self.check_cubes(faults, sl)
        self.check_reroutes(faults, sl)
        for job in js(self.state, "show", "jobs"):
            assert js(self.state, "explain", job["name"])["state"] == job["state"], job["name"]
        for name in [s["name"] for s in sl if s["state"] in ("evicted", "degraded")] + sorted(
            {s["job"] for s in sl if s.get("job")}
        ):
            self.check_next(name)

    def check_cubes(self, faults: list[dict], sl: list[dict]) -> None:
        out = {f["target"].split(":")[1].split("/")[0] for f in faults if f["target"].split(":")[0] in COMPUTE}
        for cube in js(self.state, "show", "inventory"):
            assert (cube["state"] == "out") == (cube["cube"] in out), cube
        owner: dict[str, str] = {}
        for s in (s for s in sl if not s["machines"]):
            for c in s["cubes"]:
                assert c not in owner, (c, owner.get(c), s["name"])
                owner[c] = s["name"]
            assert s["state"] == "evicted" or not set(s["cubes"]) & out, s
        for s in sl:
            taken = [c for c in (s.get("proposal") or {}).get("cubes", []) if owner.get(c, s["name"]) != s["name"]]
            assert not taken, (s["name"], taken)

    def check_reroutes(self, faults: list[dict], sl: list[dict]) -> None:
        open_ids = {f["id"] for f in faults}
        for s in sl:
            around = set((s.get("degraded") or {}).get("faults", []))
            assert (s["state"] == "degraded") == (s.get("degraded") is not None), s
            assert around <= open_ids, s
            if s["machines"] or s["state"] not in ("connected", "degraded") or s["routes"] != "fresh":
                continue
            under = {
                f["id"]
                for f in faults
                if f["target"].startswith(f"ocs:{s['pod']}/")
                or (f["target"].startswith("link:") and f["target"][5:].split("/")[0] in s["cubes"])
            }
            assert under == around, (s, under)

    def check_next(self, name: str) -> None:
        steps = js(self.state, "explain", name)["next"]
        copy = self.dir / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(self.state, copy)
        for step in steps:
            argv = shlex.split(step)
            assert argv[0] == "tpufleet", step
            code, _, err = run(copy, *argv[1:])
            assert code == 0, (name, step, steps, err)
        if steps:
            after = [s for s in js(copy, "show", "slices") if name in (s["name"], s.get("job"))]
            assert all(s["state"] != "evicted" for s in after), (name, steps, after)


SEEDS = [3, 6, 11, 17, 28, 102, 110]  # every generation, one and two pods


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_fault_lifecycle_sequences_keep_their_invariants(seed, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    sequence = Sequence(seed, tmp_path)
    for _ in range(14):
        sequence.step()
