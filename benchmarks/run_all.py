"""Speed and memory figures, each beside a baseline run in the same process, printed as a ratio.

Run with `make bench` (not part of `make test`). Takes a few minutes: the networkx baselines are slow on purpose.
Times are medians of repeated runs (`median_of`); the figures are also written to benchmarks/latest.json.
Peak memory is measured from outside a fresh child (benchmarks/peak.py), beside the same child importing only.

    python benchmarks/run_all.py --only tables simulate   # some groups only (latest.json is then left alone)
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "latest.json"  # the figures of the last run, as JSON (not committed: machine-specific)
CLI = [sys.executable, "-m", "tpufleet"]
rows: list[tuple[str, float, str, float, str]] = []
sys.path.insert(0, str(ROOT / "benchmarks"))
import peak as measure  # noqa: E402  # a child measured from outside (its own peak RSS)
from bench_compound import installed_env  # noqa: E402  # tpufleet's bytecode cached, as installed
from bench_routing_fast import median_of  # noqa: E402  # one median for every benchmark


def wall(args, repeat=7, env=None):
    def run():
        subprocess.run(args, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

    return median_of(run, repeat)


def record(name, value, target, baseline_name, baseline):
    ratio = baseline / value if value else float("inf")
    rows.append((name, value, target, baseline, f"{baseline_name}: {ratio:.1f}x"))
    print(
        f"{name:<58} {value:8.3f} s  (target {target})   baseline {baseline:8.3f} s  {baseline_name}, ratio {ratio:.1f}x",
        flush=True,
    )


def bench_cli(state):
    base = wall([sys.executable, "-c", "pass"])
    bare = wall([sys.executable, "-c", "import typer"])
    record("tpufleet --help (median wall)", wall([*CLI, "--help"]), "<= 0.3 s", "python -c 'import typer'", bare)
    record(
        "tpufleet status, default pod (median wall)",
        wall([*CLI, "--state", state, "status"]),
        "<= 0.5 s",
        "python -c pass",
        base,
    )
    subprocess.run(
        [*CLI, "--state", state, "allocate", "pod", "--shape", "16x16x16"], check=True, stdout=subprocess.DEVNULL
    )
    record(
        "tpufleet plan-xconnect 16x16x16 (median wall)",
        wall([*CLI, "--state", state, "plan-xconnect", "pod", "-o", "json"]),
        "<= 0.6 s",
        "python -c pass",
        base,
    )
    subprocess.run([*CLI, "--state", state, "release", "pod"], check=True, stdout=subprocess.DEVNULL)


_FIRST_VALIDATION = """
import json, sys, time
from tpufleet.generated import state_validator as made
if sys.argv[2] == "compiled":
    made.SCHEMA_KEY = "another schema"  # as a validator made from another schema: compiled at start, as before
from tpufleet.state import schema
doc = json.loads(open(sys.argv[1]).read())
c = time.process_time()
schema.validate(doc, "state.json")
print(time.process_time() - c)
"""


def bench_first_validation(state):
    """The first state validation of a command (every command reading the state makes one): the validator kept
    generated (tpufleet/generated/state_validator.py, its bytecode cached) against compiling it at start."""
    with tempfile.TemporaryDirectory() as tmp:
        env = installed_env(tmp)
        times: dict[str, list[float]] = {}
        for how in ("kept", "compiled", "kept", "compiled", "kept", "compiled"):
            argv = [sys.executable, "-c", _FIRST_VALIDATION, f"{state}/state.json", how]
            out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout
            times.setdefault(how, []).append(float(out))
    record(
        "first state validation of a command (CPU, median)",
        statistics.median(times["kept"]),
        "<= 0.02 s",
        "compiled at start",
        statistics.median(times["compiled"]),
    )


def bench_xconnect():
    import networkx as nx

    from tpufleet import xconnect
    from tpufleet.allocation import grid_coords
    from tpufleet.health import Health
    from tpufleet.model import default_fleet
    from tpufleet.shapes import parse_shape

    fleet = default_fleet()
    shape = parse_shape("16x16x16")
    coords = grid_coords(shape, fleet.cubes)
    ours = median_of(lambda: xconnect.plan(shape, fleet, coords, {}, Health()), 9)

    def networkx_way():
        g = nx.grid_graph(dim=[4, 4, 4], periodic=True)
        at = {tuple(v): c for c, v in coords.items()}
        pairs = []
        for node in g.nodes:
            for nb in g.neighbors(node):
                d = next(i for i in range(3) if node[i] != nb[i])
                if (node[d] + 1) % 4 == nb[d]:
                    for i in range(16):
                        pairs.append((d, i, at[node], at[nb]))
        return pairs

    record(
        "plan 16x16x16 cross-connects in-process",
        ours,
        "<= 0.020 s",
        "networkx torus + neighbour scan",
        median_of(networkx_way, 3),
    )


def bench_routing():
    import networkx as nx
    import numpy as np

    from tpufleet.routing import candidates, dor
    from tpufleet.routing.analysis import Levels, deadlock_check, flow, verify
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    shape = parse_shape("16x16x16")
    exp = neighbors(shape)
    t = time.perf_counter()
    g = nx.Graph()
    g.add_edges_from((int(a), int(b)) for a in range(len(exp)) for b in exp[a] if b >= 0)
    total = sum(sum(d.values()) for _, d in nx.all_pairs_shortest_path_length(g))
    baseline = time.perf_counter() - t
    ours = median_of(lambda: dor.tables(shape), 3)
    _P, L = dor.tables(shape)
    assert int(L.sum(dtype=np.int64)) == total
    record(
        "healthy 16x16x16 full tables (4096 chips, 16.8 M pairs)",
        ours,
        "<= 0.5 s, >= 40x",
        "networkx all-pairs BFS",
        baseline,
    )

    alive = exp.copy()
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates

    for s, c in enumerate(coordinates(shape.dims)):
        local = [int(v) % 4 for v in c]
        if local[0] == 3 and face_index("x", *local) == 5:
            alive[s, 0] = -1
            alive[exp[s, 0], 1] = -1
    wf = median_of(lambda: candidates.route(shape, exp, alive, "wild-first"), 1)
    record("wild-first tables, one OCS failure, 16x16x16", wf, "<= 3 s", "networkx all-pairs BFS", baseline)
    auto = median_of(lambda: candidates.route(shape, exp, alive, "auto"), 1)
    record(
        "auto tables (best repair), one OCS failure, 16x16x16", auto, "(no target)", "networkx all-pairs BFS", baseline
    )
    rt, _ = candidates.route(shape, exp, alive, "wild-first")

    def check():
        levels = Levels(rt.L)
        _, mask = flow(rt, verify(rt, levels), levels)
        return deadlock_check(rt, mask)

    record(
        "deadlock check (arrival proof + VC sets + CDG), pair by pair, 16x16x16",
        median_of(check, 1),
        "(the oracle)",
        "networkx all-pairs BFS",
        baseline,
    )
    from bench_routing_fast import bench as bench_fast  # benchmarks/ (this script's folder) is on sys.path

    bench_fast(record)  # the fast pieces of the fault path, each beside the implementation it replaced


def bench_big_tables():
    """Healthy 16x20x28 tables in a fresh process, its peak RSS measured from outside (benchmarks/peak.py), beside
    the same process that only imports (and the bytes of the tables it returns): the peak is the child's own,
    not this process's (which a child exec'd from it would otherwise start from)."""
    import networkx as nx

    from tpufleet.shapes import Shape
    from tpufleet.topology import neighbors

    imports = "import time; from tpufleet.routing import dor; from tpufleet.shapes import Shape"
    code = (
        f"{imports}; t = time.perf_counter(); P, L = dor.tables(Shape((16, 20, 28))); "
        "print(time.perf_counter() - t, P.nbytes + L.nbytes)"
    )
    child = measure.run([sys.executable, "-c", code], cwd=ROOT)
    seconds, table_bytes = float(child.stdout.split()[0]), int(child.stdout.split()[1])
    bare = measure.run([sys.executable, "-c", imports], cwd=ROOT)
    tables_mib = table_bytes / 2**20
    print(
        f"  16x20x28 peak RSS {child.peak_mib:.0f} MiB (measured from outside); baseline: the same imports alone"
        f" {bare.peak_mib:.0f} MiB, ratio {child.peak_mib / bare.peak_mib:.1f}x; the tables' own arrays"
        f" {tables_mib:.0f} MiB, peak / tables {child.peak_mib / tables_mib:.2f}x",
        flush=True,
    )
    small = Shape((8, 10, 14))
    t = time.perf_counter()
    gs = nx.Graph()
    es = neighbors(small)
    gs.add_edges_from((int(a), int(b)) for a in range(len(es)) for b in es[a] if b >= 0)
    sum(sum(d.values()) for _, d in nx.all_pairs_shortest_path_length(gs))
    est = (time.perf_counter() - t) * (8960 / 1120) ** 2
    record(
        f"healthy 16x20x28 tables (8960 chips), peak RSS {child.peak_mib:.0f} MiB"
        f" (imports alone {bare.peak_mib:.0f} MiB, tables {tables_mib:.0f} MiB)",
        seconds,
        "<= 3 s, <= 2 GB",
        "networkx all-pairs BFS (scaled from 8x10x14)",
        est,
    )


def bench_state(tmp):
    """A fully wired 4-pod fleet: load and validate its state (in-process), and `status` on it (wall)."""
    from tpufleet.state import Store

    state = f"{tmp}/four-pods"
    subprocess.run([*CLI, "--state", state, "init", "--pods", "4"], check=True, stdout=subprocess.DEVNULL)
    for p in range(4):
        for args in (
            ["allocate", f"p{p}", "--shape", "16x16x16", "--pod", f"pod{p}"],
            ["plan-xconnect", f"p{p}", "--apply"],
        ):
            subprocess.run([*CLI, "--state", state, *args], check=True, stdout=subprocess.DEVNULL)
    store = Store(Path(state))
    raw = store.state_path.read_bytes()
    record(
        "load + validate a fully wired 4-pod state (12,288 cross-connects)",
        median_of(store.load, 9),
        "<= 50 ms",
        "json.loads of the same file",
        median_of(lambda: json.loads(raw), 9),
    )
    import msgspec  # noqa: F401  # loaded, as in `serve` or past 128 KiB of text: the formatter's path is timed

    from tpufleet.jsontext import dumps_indented

    doc = json.loads(raw)
    record(
        "encode the 4-pod state as saved (indented, sorted keys; msgspec loaded)",
        median_of(lambda: dumps_indented(doc, 1, sort_keys=True), 9),
        "<= 0.1 s",
        "json.dumps(indent=1, sort_keys=True), the same text",
        median_of(lambda: json.dumps(doc, indent=1, sort_keys=True, allow_nan=False), 9),
    )
    record(
        "tpufleet status, fully wired 4-pod state (median wall)",
        wall([*CLI, "--state", state, "status"]),
        "<= 0.5 s",
        "python -c pass",
        wall([sys.executable, "-c", "pass"]),
    )


def bench_journal(tmp):
    """Years of history: a journal of 300,000 lines (120 MB) under `report`, `metrics`, `show journal --tail`, `diff`
    and `history --since`, which read back from its end only, against reading it whole (as they did)."""
    from tpufleet.state import Store

    state = Path(tmp) / "long-history"
    subprocess.run([*CLI, "--state", str(state), "init"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*CLI, "--state", str(state), "inject-fault", "host:c10/1"], check=True, stdout=subprocess.DEVNULL)
    line = json.loads((state / "journal.jsonl").read_bytes().splitlines()[-1])
    count = 300_000
    with open(state / "journal.jsonl", "w") as fh:
        for serial in range(1, count + 1):
            fh.write(json.dumps({**line, "serial": serial}, sort_keys=True, separators=(",", ":")) + "\n")
    doc = json.loads((state / "state.json").read_bytes())
    (state / "state.json").write_text(json.dumps({**doc, "serial": count}, indent=1, sort_keys=True))
    store = Store(state)
    record(
        "the last 15 of a 300,000-line journal (report's, in-process)",
        median_of(lambda: store.journal_tail(15, count), 5),
        "<= 10 ms",
        "the whole journal read",
        median_of(lambda: store.journal_scan(count), 1),
    )
    bare = wall([sys.executable, "-c", "pass"])
    record(
        "tpufleet report, 300,000-line journal (median wall)",
        wall([*CLI, "--state", str(state), "report", "-o", "json"], repeat=3),
        "<= 0.5 s",
        "python -c pass",
        bare,
    )
    record(
        "tpufleet diff of its last 5 serials (median wall)",
        wall([*CLI, "--state", str(state), "diff", str(count - 5), "-o", "json"], repeat=3),
        "<= 0.5 s",
        "python -c pass",
        bare,
    )


def cli_times(args, repeat=3, env=None, before=None):
    """Median wall and median CPU (user + system of the child) of a command, and the 1-minute load average after
    it: the machine is shared, so CPU time says what the command costs and the load how far wall is from it."""
    walls, cpus = [], []
    for _ in range(repeat):
        if before is not None:
            before()
        start, t = os.times(), time.perf_counter()
        subprocess.run(args, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        walls.append(time.perf_counter() - t)
        end = os.times()
        cpus.append(end.children_user - start.children_user + end.children_system - start.children_system)
    return statistics.median(walls), statistics.median(cpus), os.getloadavg()[0]


def bench_fault_path(tmp):
    """End to end through the CLI on a fully wired 16x16x16 fault-tolerant slice (the fault path's targets), with
    the bytecode cached as an installed package has it; wall, CPU and the load average."""
    import shutil

    state = f"{tmp}/full-pod"
    env = installed_env(tmp)
    for args in (["init"], ["allocate", "big", "--shape", "16x16x16"], ["plan-xconnect", "big", "--apply"]):
        subprocess.run([*CLI, "--state", state, *args], check=True, stdout=subprocess.DEVNULL, env=env)
    base = wall([*CLI, "--state", state, "status"], repeat=3, env=env)

    def row(name, times, target):
        w, cpu, load = times
        record(f"{name} [cpu {cpu:.2f} s, load {load:.1f}]", w, target, "tpufleet status", base)

    routes = [*CLI, "--state", state, "routes", "big"]
    row("routes, healthy 16x16x16, end to end", cli_times(routes, 5, env), "<= 1 s")
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    plain["PYTHONDONTWRITEBYTECODE"] = "1"
    row("  the same, tpufleet's bytecode not cached", cli_times(routes, 3, plain), "(no target)")
    dry = [*CLI, "--state", state, "inject-fault", "ocs:pod0/x/5", "--dry-run"]
    row("inject-fault ocs --dry-run, 16x16x16 slice, end to end", cli_times(dry, 3, env), "<= 2 s")
    from bench_routing_fast import bench_wiring

    bench_wiring(record, state)
    row("inject-fault ocs (recorded), 16x16x16 slice", cli_times([*dry[:-1]], 1, env), "(no target)")
    row("routes, 16x16x16 with one OCS failure, end to end", cli_times(routes, 3, env), "<= 2 s")
    cache = Path(state) / "cache"
    cold = cli_times(routes, 3, env, before=lambda: shutil.rmtree(cache, ignore_errors=True))
    row("  the same with no repair kept in cache/", cold, "(no target)")


def bench_faults(state):
    from tpufleet.availability import simulate

    t = time.perf_counter()
    simulate([1, 8, 16, 32, 50, 64], 0.99, 0.999, 100_000, 0, static=False)
    ours = time.perf_counter() - t

    def python_way(trials):
        import random

        rng = random.Random(0)
        ok = 0
        for _ in range(trials):
            up = sum(all(rng.random() < 0.99 for _ in range(16)) for _ in range(64))
            ok += up >= 50
        return ok

    t = time.perf_counter()
    python_way(2000)
    base = (time.perf_counter() - t) * 50
    record(
        "100,000 Monte Carlo trials, 64-cube pod (reconfigurable)",
        ours,
        "<= 2 s",
        "per-trial Python loop (scaled)",
        base,
    )
    t = time.perf_counter()
    simulate([1, 8, 16, 24, 32, 48, 50, 64], 0.99, 0.999, 100_000, 0, static=True)
    record(
        "100,000 trials incl. static box search",
        time.perf_counter() - t,
        "(no target)",
        "per-trial Python loop (scaled)",
        base,
    )
    sizes = [1, 2, 4, 8, 16, 24, 32, 40, 48, 50, 56, 64]  # simulate-availability's defaults
    c = time.process_time()
    simulate(sizes, 0.5, 0.999, 20_000, 0, static=False)
    draws = time.process_time() - c
    for p in (0.99, 0.5, 0.0):  # the static search costs as much whatever the hosts down
        c = time.process_time()
        simulate(sizes, p, 0.999, 20_000, 0, static=True)
        record(
            f"simulate-availability's 20,000 trials, default sizes, host availability {p:g} (CPU)",
            time.process_time() - c,
            "(no target)",
            "the same trials' host draws alone (CPU)",
            draws,
        )

    for n in range(8):
        subprocess.run(
            [*CLI, "--state", state, "allocate", f"s{n}", "--shape", "8x8x8"], check=True, stdout=subprocess.DEVNULL
        )
        subprocess.run(
            [*CLI, "--state", state, "plan-xconnect", f"s{n}", "--apply"], check=True, stdout=subprocess.DEVNULL
        )
    dry = wall([*CLI, "--state", state, "inject-fault", "ocs:pod0/x/5", "--dry-run", "-o", "json"], repeat=3)
    base = wall([*CLI, "--state", state, "status"], repeat=3)
    record("inject-fault --dry-run, OCS fault, 8 slices with reroute", dry, "<= 5 s", "tpufleet status", base)


def bench_fleetio(tmp):
    """`import k8s` of 16 pods (1,024 cubes, 16,384 nodes of GKE labels) and `metrics` on the fully wired
    4-pod state of `bench_state` (call after it). (goodput-report has its own: benchmarks/bench_goodput.py.)"""
    nodes = Path(tmp) / "nodes-16-pods.json"
    with open(nodes, "w") as fh:
        gen = [sys.executable, str(ROOT / "fixtures" / "k8s" / "make_nodes.py"), "--pods", "16"]
        subprocess.run(gen, check=True, stdout=fh)
    state = f"{tmp}/sixteen-pods"
    subprocess.run([*CLI, "--state", state, "init", "--pods", "16"], check=True, stdout=subprocess.DEVNULL)
    floor = wall([sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", str(nodes)], repeat=3)
    imp = [*CLI, "--state", state, "import", "k8s", str(nodes)]
    record(
        "tpufleet import k8s, 16 pods / 16,384 nodes: plan (median wall)",
        wall(imp, repeat=3),
        "<= 3 s",
        "json.load of the node list",
        floor,
    )
    subprocess.run([*imp, "--apply"], check=True, stdout=subprocess.DEVNULL)
    record(
        "tpufleet import k8s, 16 pods: repeat, no changes (median wall)",
        wall(imp, repeat=3),
        "<= 3 s",
        "json.load of the node list",
        floor,
    )
    wired = f"{tmp}/four-pods"
    record(
        "tpufleet metrics, fully wired 4-pod state (median wall)",
        wall([*CLI, "--state", wired, "metrics"]),
        "<= 0.5 s",
        "tpufleet status on it",
        wall([*CLI, "--state", wired, "status"]),
    )


def bench_simulate():
    """One pod x 30 days with the scheduler's fit memo and guards against the same 30 days without them, the runs
    alternated (median of 3 each; CPU seconds beside wall, the machine is shared)."""
    from tpufleet.ops.simulate import summarize
    from tpufleet.simulation import Options, Simulator
    from tpufleet.state.siminputs import load_rates, load_workload

    def one(memo):
        t, c = time.perf_counter(), time.process_time()
        sim = Simulator(load_workload(None), load_rates(None), Options(days=30, seed=0), fit_shortcuts=memo)
        summarize(sim.run(), sim)
        return time.perf_counter() - t, time.process_time() - c, len(sim.jobs)

    walls: dict[bool, list[float]] = {True: [], False: []}
    cpus: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(3):
        for memo in (True, False):
            w, cpu, jobs = one(memo)
            walls[memo].append(w)
            cpus[memo].append(cpu)
    ours, base = statistics.median(walls[True]), statistics.median(walls[False])
    cpu, base_cpu = statistics.median(cpus[True]), statistics.median(cpus[False])
    record(
        f"simulate-fleet 30 days, 1 pod, {jobs} jobs (+ summary) [cpu {cpu:.2f} s vs {base_cpu:.2f} s]",
        ours,
        "<= 10 s",
        "same 30 days, scheduler without fit memo/guards",
        base,
    )


BENCHES = (
    "cli",
    "state",
    "journal",
    "fault_path",
    "xconnect",
    "faults",
    "fleetio",
    "simulate",
    "routing",
    "tables",
    "quality",
)


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=BENCHES, help="run these groups only (default: all)")
    only = set(parser.parse_args().only or BENCHES)
    # the package, the test oracles (baselines, inputs) and this folder (the other benchmark modules)
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
    with tempfile.TemporaryDirectory() as tmp:
        state = f"{tmp}/state"
        subprocess.run([*CLI, "--state", state, "init"], check=True, stdout=subprocess.DEVNULL)
        if "cli" in only:
            bench_cli(state)
            bench_first_validation(state)
        if only & {"state", "fleetio"}:
            bench_state(tmp)  # fleetio's `metrics` row reads the 4-pod state this builds
        if "journal" in only:
            bench_journal(tmp)
        if "fault_path" in only:
            bench_fault_path(tmp)
        if "xconnect" in only:
            bench_xconnect()
        if "faults" in only:
            bench_faults(state)
        if "fleetio" in only:
            bench_fleetio(tmp)
        if "simulate" in only:
            bench_simulate()
        if "routing" in only:
            bench_routing()
        if "tables" in only:
            bench_big_tables()
    if "quality" in only:
        from routing_quality import main as routing_quality  # benchmarks/ (this script's folder) is on sys.path

        routing_quality(rows)  # tool vs exact LP optimum of the all-to-all max link load: its rows join these
    if only != set(BENCHES):
        print(f"a partial run ({', '.join(sorted(only))}): {OUT.relative_to(ROOT)} left as it was")
        return
    figures = {
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": [
            {
                "benchmark": name,
                "seconds": round(seconds, 4),
                "target": target,
                "baseline_seconds": round(base, 4),
                "ratio": ratio,
            }
            for name, seconds, target, base, ratio in rows
        ],
    }
    OUT.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"figures written to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
