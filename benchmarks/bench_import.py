"""Importing a fleet of 16 TPU7x superpods: `import k8s` of its 36,864 nodes and `import reservation` of its 2,304
sub-blocks (goal <= 3 s each), each beside a baseline in the same run, printed as a ratio.

    python benchmarks/bench_import.py

The inputs are written into a temporary directory from the shapes of the shipped fixtures: the nodes as
`fixtures/k8s/make_nodes.py` writes a pod's (one `gce-topology-block` a superpod, one 4x4x4 partition of 16 nodes a
cube), with TPU7x's accelerator and machine type; the sub-blocks as `fixtures/gke/tpu7x-reservation-subblocks.json`
(one block of 144 sub-blocks a superpod, its physical block the nodes' `gce-topology-block`), three DEGRADED and two
under maintenance a superpod as in the fixture. The state is `init --generation tpu7x --pods 16`.

Baselines: `tpufleet --version` (the cost of starting the command) and `python -c "json.load(...)"` of the same
file (the cost of reading it at all).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path

import peak
from bench_generations import row
from bench_routing_fast import median_of

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures" / "k8s"))
import make_nodes  # type: ignore[import-not-found]  # noqa: E402  # the shipped fixture's generator: the same node shape

PODS, CUBES = 16, 144


def node_list(path: Path) -> None:
    """36,864 TPU7x nodes, one JSON node a line (as make_nodes.py writes the fixture)."""
    lines = []
    for pod in range(PODS):
        for cube in range(CUBES):
            for host in range(16):
                node = make_nodes.tpu_node(pod, cube, host, "HEALTHY", scenario=False)
                labels = node["metadata"]["labels"]
                labels["cloud.google.com/gke-tpu-accelerator"] = "tpu7x"
                labels["node.kubernetes.io/instance-type"] = "tpu7x-standard-4t"
                labels["cloud.google.com/gke-nodepool"] = f"tpu7x-p{pod:02d}-{cube:03d}"
                lines.append(json.dumps(node, separators=(",", ":")))
    path.write_text('{"apiVersion":"v1","kind":"List","items":[\n' + ",\n".join(lines) + "\n]}\n")


def sub_blocks(path: Path) -> None:
    """2,304 sub-blocks: the fixture's 144 once a superpod, each superpod its own physical block."""
    template = json.loads((ROOT / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json").read_text())
    items = []
    for pod in range(PODS):
        block = make_nodes._hash("block", pod)  # the nodes' gce-topology-block of that superpod
        for sb in template:
            item = copy.deepcopy(sb)
            item["name"] = f"{sb['name'][:-4]}p{pod:02d}-{sb['name'][-4:]}"
            item["physicalTopology"]["block"] = block
            items.append(item)
    path.write_text(json.dumps(items))


def main() -> None:
    def tpufleet(state: Path, *args: str) -> peak.Child:
        return peak.run([sys.executable, "-m", "tpufleet", "--state", str(state), *args], cwd=ROOT)

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        nodes, reservation = tmp / "nodes.json", tmp / "sub-blocks.json"
        node_list(nodes)
        sub_blocks(reservation)
        version = median_of(lambda: peak.run([sys.executable, "-m", "tpufleet", "--version"], cwd=ROOT))
        read = [sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))"]
        read_nodes = median_of(lambda: peak.run([*read, str(nodes)], cwd=ROOT))
        read_reservation = median_of(lambda: peak.run([*read, str(reservation)], cwd=ROOT))
        print(
            f"inputs: {nodes.stat().st_size / 2**20:.0f} MiB of nodes, {reservation.stat().st_size / 2**20:.1f} MiB of sub-blocks"
        )

        state = tmp / "state"
        tpufleet(state, "init", "--generation", "tpu7x", "--pods", str(PODS))
        plan = median_of(lambda: tpufleet(state, "import", "k8s", str(nodes)), repeat=1)
        row("import k8s, 36,864 TPU7x nodes, plan", plan, "<= 3 s", "--version", version)
        row("  the same", plan, "<= 3 s", "json.load of the list", read_nodes)
        child = tpufleet(state, "import", "k8s", str(nodes), "--apply", "-o", "json")
        assert json.loads(child.stdout)["placed"] == PODS * CUBES * 16, child.stdout[:500]
        row("import k8s, 36,864 TPU7x nodes, --apply", child.wall, "<= 3 s", "--version", version)
        print(f"  peak of that process {child.peak_mib:.0f} MiB")
        again = median_of(lambda: tpufleet(state, "import", "k8s", str(nodes), "--detailed-exitcode"), repeat=1)
        row("import k8s again (nothing to do)", again, "<= 3 s", "--version", version)

        plan = median_of(lambda: tpufleet(state, "import", "reservation", str(reservation)), repeat=1)
        row("import reservation, 2,304 sub-blocks, plan", plan, "<= 3 s", "--version", version)
        row("  the same", plan, "<= 3 s", "json.load of the list", read_reservation)
        child = tpufleet(state, "import", "reservation", str(reservation), "--apply", "-o", "json")
        done = json.loads(child.stdout)
        assert (done["mapped"], len(done["degraded"])) == (PODS * CUBES, 3 * PODS), child.stdout[:500]
        row("import reservation, 2,304 sub-blocks, --apply", child.wall, "<= 3 s", "--version", version)
        row(
            "status, 16 superpods imported",
            median_of(lambda: tpufleet(state, "status")),
            "-",
            "--version",
            version,
        )


if __name__ == "__main__":
    main()
