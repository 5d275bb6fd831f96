"""The fleet as Slurm sees it (pure): a `topology.conf` for the tree or block plugin, its YAML form, and the
hostlist expressions both use. Node names are the ones `exports.Names` gives (imported, else `tpu-CUBE-mMM`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState
from tpufleet.integrations.exports import Doc, Names


# ---- Slurm -------------------------------------------------------------------------------------------------
def hostlist(names: Iterable[str]) -> str:
    """Slurm's hostlist expression: runs of names that differ only in a number with the same digit count become
    `prefix[a-b,...]suffix` ("tpu-c05-m[00-15]"); other names are listed as they are, comma-separated."""
    groups: dict[tuple[str, int, str], list[int]] = {}
    order: list[tuple[str, int, str] | str] = []
    for name in names:
        match = re.fullmatch(r"(.*?)([0-9]+)([^0-9]*)", name)
        if match is None:
            order.append(name)
            continue
        key = (match.group(1), len(match.group(2)), match.group(3))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(match.group(2)))
    return ",".join(item if isinstance(item, str) else _ranges(item, groups[item]) for item in order)


def ordered_hostlist(names: Iterable[str]) -> str:
    """A hostlist expression that expands to `names` in their order (Slurm maps a torus region's nodes in list
    order): only runs of consecutive numbers with the same prefix, width and suffix are folded.

    >>> ordered_hostlist(["n03", "n04", "n05", "n01", "m"])
    'n[03-05],n01,m'
    """
    parts: list[tuple[tuple[str, int, str] | None, list[str | int]]] = []
    for name in names:
        match = re.fullmatch(r"(.*?)([0-9]+)([^0-9]*)", name)
        if match is None:
            parts.append((None, [name]))
            continue
        key, number = (match.group(1), len(match.group(2)), match.group(3)), int(match.group(2))
        last = parts[-1] if parts else None
        if last is not None and last[0] == key and last[1][-1] == number - 1:
            last[1].append(number)
        else:
            parts.append((key, [number]))
    return ",".join(str(run[0]) if key is None else _ranges(key, [int(n) for n in run]) for key, run in parts)


def _ranges(key: tuple[str, int, str], numbers: list[int]) -> str:
    prefix, width, suffix = key
    if len(numbers) == 1:
        return f"{prefix}{numbers[0]:0{width}d}{suffix}"
    numbers, runs = sorted(numbers), []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        runs.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(runs)}]{suffix}"


def _slurm_parts(state: FleetState) -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
    """(cube -> its nodes as a hostlist, pods with the cubes that have nodes). A cube without nodes is no switch."""
    names = Names(state)
    cube_nodes = {c: hostlist(names.node(h) for h in names.machines(c)) for c in state.fleet.cubes}
    cube_nodes = {c: nodes for c, nodes in cube_nodes.items() if nodes}
    pods = [(p.name, [c for c in p.cubes if c in cube_nodes]) for p in state.fleet.pods]
    return cube_nodes, [(pod, cubes) for pod, cubes in pods if cubes]


def partial_cubes(state: FleetState) -> list[str]:
    """The cubes some but not all of whose 16 machines are nodes of the imported cluster: no block (below the base
    block size) and no torus region (a region maps every coordinate of its cube) can hold them."""
    names = Names(state)
    return [c for c in state.fleet.cubes if 0 < len(names.machines(c)) < MACHINES_PER_CUBE]


def slurm_blocks(state: FleetState) -> tuple[list[tuple[str, str]], list[int], list[str]]:
    """(blocks: (cube, its nodes) in pod order, the block sizes in nodes, the cubes with nodes left out).

    Slurm's topology/block stops slurmctld (fatal) on a block with fewer nodes than the base block size, the
    first BlockSizes value (one cube, 16), so a cube some of whose machines are no node is no block (its nodes
    are named by no block: Slurm warns and places no job there; a whole-cube job could not run on it anyway).
    Slurm joins consecutive blocks in file order, so the sizes double only up to the largest power of two
    dividing every pod's count of blocks: an aggregated block never spans two pods (cubes of different pods
    share no OCS). Refused when no cube is whole: an empty BlockSizes stops slurmctld too."""
    names = Names(state)
    whole = {c for c in state.fleet.cubes if len(names.machines(c)) == MACHINES_PER_CUBE}
    per_pod_cubes = [[c for c in p.cubes if c in whole] for p in state.fleet.pods]
    blocks = [(c, hostlist(names.node(h) for h in names.machines(c))) for cubes in per_pod_cubes for c in cubes]
    if not blocks:
        raise Refused(
            "no cube has all its 16 machines as nodes of the imported cluster: Slurm's topology/block needs "
            "blocks of at least one cube; nothing written"
        )
    left_out = partial_cubes(state)
    per_pod = min(len(cubes) & -len(cubes) for cubes in per_pod_cubes if cubes)  # largest power of two dividing all
    sizes, size = [], 1
    while size <= per_pod:
        sizes.append(size * MACHINES_PER_CUBE)
        size *= 2
    return blocks, sizes, left_out


def header(file: str, plugin: str, serial: int) -> str:
    """The comment line a Slurm file starts with, naming the state's serial it was written from.

    >>> header("topology.yaml", "tree", 7)
    "# topology.yaml for Slurm's topology/tree plugin, written by tpufleet (serial 7)"
    """
    return f"# {file} for Slurm's topology/{plugin} plugin, written by tpufleet (serial {serial})"


def slurm_topology(state: FleetState, plugin: str = "tree") -> str:
    """topology.conf. tree: a switch per cube (its 16 machines), one per pod (its cubes), one over the pods.
    block: a block per whole cube, and the block sizes of `slurm_blocks`."""
    lines = [header("topology.conf", plugin, state.serial)]
    if plugin == "tree":
        cube_nodes, pods = _slurm_parts(state)
        for pod, cubes in pods:
            lines += [f"SwitchName={c} Nodes={cube_nodes[c]}" for c in cubes]
            lines.append(f"SwitchName={pod} Switches={hostlist(cubes)}")
        if len(pods) > 1:
            lines.append(f"SwitchName=fleet Switches={hostlist(pod for pod, _ in pods)}")
    else:
        blocks, sizes, _ = slurm_blocks(state)
        lines += [f"BlockName={c} Nodes={nodes}" for c, nodes in blocks]
        lines.append(f"BlockSizes={','.join(map(str, sizes))}")
    return "\n".join(lines) + "\n"


def slurm_topology_yaml(state: FleetState, plugin: str = "tree") -> list[Doc]:
    """topology.yaml (Slurm 25.05 and later; topology.yaml(5)): one topology, the cluster's default, named
    `tpufleet-PLUGIN`, with the same switches or blocks as `slurm_topology` writes to topology.conf."""
    if plugin == "torus3d":
        from tpufleet.integrations.slurm_torus import torus3d_yaml

        return torus3d_yaml(state)
    topology: Doc = {"topology": f"tpufleet-{plugin}", "cluster_default": True}
    if plugin == "tree":
        cube_nodes, pods = _slurm_parts(state)
        switches: list[Doc] = []
        for pod, cubes in pods:
            switches += [{"switch": c, "nodes": cube_nodes[c]} for c in cubes]
            switches.append({"switch": pod, "children": hostlist(cubes)})
        if len(pods) > 1:
            switches.append({"switch": "fleet", "children": hostlist(pod for pod, _ in pods)})
        topology["tree"] = {"switches": switches}
    else:
        blocks, sizes, _ = slurm_blocks(state)
        topology["block"] = {"block_sizes": sizes, "blocks": [{"block": c, "nodes": nodes} for c, nodes in blocks]}
    return [topology]
