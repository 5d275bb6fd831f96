"""`tpufleet export ...`: the fleet out to other tools (Kueue, Slurm, GKE Slice objects, node labels).
`tpufleet import ...` is `cli.fleetimport`, `tpufleet metrics` (Prometheus) `cli.metrics`."""

import enum
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import (
    Output,
    OutputOpt,
    command_group,
    examples,
)
from tpufleet.cli.render import data_text, emit
from tpufleet.text import printable

if TYPE_CHECKING:
    pass

export_app = command_group("export", "Write the fleet for other tools: Kueue, Slurm, GKE Slice objects, node labels.")


# ---- export ------------------------------------------------------------------------------------------------
OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Write to this file (atomically) instead of standard output")
]
LabelMappingOpt = Annotated[Path | None, typer.Option("--mapping", help="Label keys of your own (as for import)")]


# The `kind` of each export's summary (kebab-case, as the export commands are named) -> what its `objects` count
EXPORT_KINDS = {
    "node-labels": "Node object",
    "kueue-topology": "Kueue object",
    "slurm-topology-conf": "topology.conf line",  # a Slurm file's are no objects
    "slurm-topology-yaml": "topology.yaml topology",
    "slices": "Slice object",
}


def _deliver(
    kind: str, text: Callable[[], str], as_json: Any, count: int, out: Path | None, output: Output, fixed: bool = False
) -> None:
    """Without --out the artefact itself goes to stdout (-o json and -o yaml: its data, the same in both); with
    --out the file gets what stdout would (`_artefact`), or with `fixed` (a file its reader knows in one format
    only, as Slurm's, which --format chooses) the artefact's own text; stdout a summary: {"kind", "file",
    "objects"}, `kind` one of `EXPORT_KINDS`."""
    if out is None:
        if getattr(output, "value", output) in ("json", "yaml"):
            emit(as_json, output, text)
        else:
            typer.echo(text(), nl=False)
        return
    from tpufleet.state.outputs import write_output

    write_output(out, (text() if fixed else _artefact(text, as_json, output)).encode())
    summary = {"kind": kind, "file": str(out), "objects": count}
    noun = EXPORT_KINDS[kind]
    emit(summary, output, lambda: f"wrote {count} {noun}{'' if count == 1 else 's'} to {printable(str(out))}")


def _artefact(text: Callable[[], str], as_json: Any, output: Output) -> str:
    """The export in the format -o asks, as `emit` prints it (as `report --out` does): -o json and -o yaml its
    data, the table output the artefact's own text (YAML manifests, topology.conf, topology.yaml)."""
    data = data_text(as_json, output)
    return text() if data is None else data


def _yaml_text(doc: Any, header: str) -> str:
    """A document as block-style YAML under its `header` line, its keys in the order written (topology.yaml
    wants `topology` first)."""
    from tpufleet.cli import yamltext

    return header + "\n" + yamltext.dump(doc, sort_keys=False, default_flow_style=False)


def _manifests(docs: list[dict[str, Any]]) -> Callable[[], str]:
    """The documents as YAML, made only when asked for (16,384 nodes take seconds even with libyaml); none as an
    empty `v1 List`, as `kubectl get -o yaml` prints one: an empty file is no document, which `import slices`
    refuses, so `export slices` of a fleet with no Slice to write would not import back."""

    def text() -> str:
        from tpufleet.cli import yamltext

        if not docs:
            return yamltext.dump(_as_list([]), sort_keys=False, default_flow_style=False)
        return yamltext.dump_all(docs, sort_keys=False, default_flow_style=False)

    return text


def _as_list(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": docs}


@export_app.command(
    "node-labels",
    epilog=examples(
        "tpufleet export node-labels --out nodes.yaml",
        "tpufleet export node-labels -o json > nodes.json && tpufleet import k8s nodes.json",
        "tpufleet export node-labels --tpufleet-labels-only --out labels.yaml && kubectl apply --server-side -f labels.yaml",
    ),
)
def export_node_labels_cmd(
    ctx: typer.Context,
    own_only: Annotated[
        bool,
        typer.Option("--tpufleet-labels-only", help="Only the tpufleet.io/ labels: safe to apply to a live cluster"),
    ] = False,
    mapping: LabelMappingOpt = None,
    out: OutOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Every machine as a Kubernetes Node: placement labels, cordons for drains, Ready=False for failures.
    `import k8s` reads it back."""
    from tpufleet.integrations import exports
    from tpufleet.integrations.k8s_plan import check_mapping_fits
    from tpufleet.state.nodelists import read_mapping
    from tpufleet.state.outputs import check_output_path

    if out is not None:
        check_output_path(out, "--out", [mapping])  # the export must not replace the mapping it reads
    state = ctx.obj.store().load()
    given = read_mapping(mapping)
    check_mapping_fits(state.fleet, given)  # as `import k8s` and `drift` judge the same file
    doc = exports.node_labels(state, given.labels, own_only, given.drain_taints)
    _note_left_out(exports.machines_without_node(state))
    _deliver("node-labels", _manifests([doc]), doc, len(doc["items"]), out, output)


def _note_left_out(machines: int) -> None:
    if machines:
        typer.echo(
            f"tpufleet: note: {machines} machine(s) have no node in the imported cluster and were left out",
            err=True,
        )


# A Kubernetes object's name (a DNS-1123 subdomain): lower-case dot-separated parts, each alphanumeric at both ends.
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _note_partial_cubes(cubes: list[str], plugin: str) -> None:
    why = {
        "block": "left out of the blocks: some of their machines are no node, and Slurm refuses a block of fewer "
        "than a cube's 16 nodes",
        "torus3d": "left out of the torus regions: some of their machines are no node, and a region maps every "
        "coordinate of its cube",
    }
    if cubes and plugin in why:
        typer.echo(f"tpufleet: note: cube(s) {', '.join(cubes)} {why[plugin]}", err=True)


@export_app.command(
    "kueue-topology",
    epilog=examples(
        "tpufleet export kueue-topology --out kueue-topology.yaml && kubectl apply -f kueue-topology.yaml",
        "tpufleet export kueue-topology --name tpu-v4 -o json",
    ),
)
def export_kueue_cmd(
    ctx: typer.Context,
    name: Annotated[
        str,
        typer.Option(
            "--name",
            help="Name of the Topology; the flavors are NAME-ACCELERATOR (partitions), NAME-ACCELERATOR-TOPOLOGY "
            "(node pools) or NAME-nodepool-POOL-TOPOLOGY (pools beside partitions)",
        ),
    ] = "tpufleet",
    mapping: LabelMappingOpt = None,
    api_version: Annotated[
        str, typer.Option("--api-version", help="Kueue's API version: v1beta2 (Kueue 0.15 and later) or v1beta1")
    ] = "v1beta2",
    out: OutOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """A Kueue Topology (block, 4x4x4 partition, host) and a ResourceFlavor of the TPU nodes that uses it; for node
    pools, a ResourceFlavor per accelerator and topology (alone, for a cluster of node pools only; per pool beside
    partitions of its accelerator)."""
    from tpufleet.errors import BadInput
    from tpufleet.integrations import kueue
    from tpufleet.integrations.k8s import LABEL_VALUE
    from tpufleet.integrations.k8s_plan import check_mapping_fits
    from tpufleet.state.nodelists import read_mapping
    from tpufleet.state.outputs import check_output_path

    if not LABEL_VALUE.fullmatch(name) or not _OBJECT_NAME.fullmatch(name):  # else the API server refuses it
        raise BadInput(
            f"bad option --name {name!r}: a Kubernetes object name (lower-case letters, digits, '-', '.'; "
            "each part between dots starts and ends with a letter or digit; at most 63 characters)"
        )
    if out is not None:
        check_output_path(out, "--out", [mapping])  # the export must not replace the mapping it reads
    if api_version not in kueue.KUEUE_API_VERSIONS:
        raise BadInput(f"bad option --api-version {api_version!r}: one of {', '.join(kueue.KUEUE_API_VERSIONS)}")
    api = f"kueue.x-k8s.io/{api_version}"
    given, state = read_mapping(mapping), ctx.obj.store().load()
    check_mapping_fits(state.fleet, given)  # as `import k8s` and `drift` judge the same file
    _refuse_hostname_above_hosts(given.labels, mapping)
    docs = kueue.kueue_topology(state, name, given.labels, api)
    _deliver("kueue-topology", _manifests(docs), _as_list(docs), len(docs), out, output)


_KUEUE_HOST_LEVEL = "kubernetes.io/hostname"


def _refuse_hostname_above_hosts(keys: Any, mapping: Path | None) -> None:
    """Kueue's Topology takes kubernetes.io/hostname only as its last level (a validation rule of its CRD): a
    mapping that gives that key to the block or partition role would export a Topology the API server refuses."""
    from tpufleet.errors import BadInput

    for role in ("block", "partition"):
        if getattr(keys, role) == _KUEUE_HOST_LEVEL:
            raise BadInput(
                f"{mapping}: field labels.{role}: Kueue's Topology takes {_KUEUE_HOST_LEVEL} only as its last "
                f"level, the host's; the {role} level needs a label of its own (value {_KUEUE_HOST_LEVEL!r})"
            )


class SlurmPlugin(str, enum.Enum):
    tree = "tree"
    block = "block"
    torus3d = "torus3d"  # Slurm 26.05; topology.yaml only


class SlurmFile(str, enum.Enum):
    conf = "conf"  # topology.conf
    yaml = "yaml"  # topology.yaml (Slurm 25.05 and later; read before topology.conf when both exist)


@export_app.command(
    "slurm-topology",
    epilog=examples(
        "tpufleet export slurm-topology --out /etc/slurm/topology.conf",
        "tpufleet export slurm-topology --plugin block --out /etc/slurm/topology.conf",
        "tpufleet export slurm-topology --format yaml --out /etc/slurm/topology.yaml",
        "tpufleet export slurm-topology --plugin torus3d --format yaml --out /etc/slurm/topology.yaml",
    ),
)
def export_slurm_cmd(
    ctx: typer.Context,
    plugin: Annotated[
        SlurmPlugin,
        typer.Option("--plugin", help="tree (switches), block (BlockName, BlockSizes) or torus3d (topology.yaml only)"),
    ] = SlurmPlugin.tree,
    file_format: Annotated[
        SlurmFile, typer.Option("--format", help="conf (topology.conf) or yaml (topology.yaml, Slurm 25.05+)")
    ] = SlurmFile.conf,
    out: OutOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Slurm's topology.conf (or topology.yaml): one switch or block per cube (its 16 machines), pods above them."""
    from tpufleet.integrations import exports, slurm
    from tpufleet.state.outputs import check_output_path

    if out is not None:
        check_output_path(out, "--out")
    if plugin is SlurmPlugin.torus3d and file_format is not SlurmFile.yaml:
        from tpufleet.errors import BadInput

        raise BadInput("bad option --plugin: torus3d is configured only in topology.yaml (add --format yaml)")
    state = ctx.obj.store().load()
    exports.refuse_without_nodes(state, "Slurm topology")
    _note_left_out(exports.machines_without_node(state))
    _note_partial_cubes(slurm.partial_cubes(state), plugin.value)  # blocks and torus regions are whole cubes
    if file_format is SlurmFile.yaml:
        doc = slurm.slurm_topology_yaml(state, plugin.value)
        header = slurm.header("topology.yaml", plugin.value, state.serial)
        _deliver("slurm-topology-yaml", lambda: _yaml_text(doc, header), doc, len(doc), out, output, fixed=True)
        return
    text = slurm.slurm_topology(state, plugin.value)
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    data = {"plugin": plugin.value, "lines": lines}
    _deliver("slurm-topology-conf", lambda: text, data, len(lines), out, output, fixed=True)


@export_app.command(
    "slices",
    epilog=examples(
        "tpufleet export slices --out slices.yaml && kubectl apply -f slices.yaml",
        "tpufleet export slices --type tpu7x -o json",
    ),
)
def export_slices_cmd(
    ctx: typer.Context,
    accelerator: Annotated[
        str,
        typer.Option(
            "--type", help="spec.type of the Slices of pods without a generation (a pod's generation gives its own)"
        ),
    ] = "tpu-v4-podslice",
    out: OutOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """One GKE Slice (accelerator.gke.io/v1beta1) per whole-cube slice: topology, partition ids, Ready condition.
    Sub-cube slices are skipped and named on stderr."""
    from click.core import ParameterSource

    from tpufleet.errors import BadInput
    from tpufleet.integrations import exports
    from tpufleet.integrations.k8s import DEFAULT_ACCELERATORS, LABEL_VALUE
    from tpufleet.state.outputs import check_output_path

    if not accelerator or not LABEL_VALUE.fullmatch(accelerator):
        raise BadInput(f"bad option --type {accelerator!r}: a label value such as tpu-v4-podslice or tpu7x")
    if accelerator not in exports.CRD_SLICE_TYPES | {DEFAULT_ACCELERATORS[0]}:  # a typo wrote no Slice, at exit 0
        accepted = " and ".join(sorted(exports.CRD_SLICE_TYPES))
        raise BadInput(f"bad option --type {accelerator!r}: the Slice CRD's spec.type accepts {accepted}")
    if out is not None:
        check_output_path(out, "--out")
    state = ctx.obj.store().load()
    if ctx.get_parameter_source("accelerator") is not ParameterSource.DEFAULT and (kinds := exports.types_of(state)):
        typer.echo(
            f"tpufleet: note: --type {accelerator} is ignored: every pod has a generation, which gives its Slices' "
            f"type ({kinds})",
            err=True,
        )
    docs, skipped = exports.slices(state, accelerator)
    for s in skipped:
        typer.echo(f"tpufleet: skipped slice {s['slice']}: {s['reason']}", err=True)
    _deliver("slices", _manifests(docs), _as_list(docs), len(docs), out, output)
