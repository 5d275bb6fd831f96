"""`tpufleet init`: write the default fleet into the state directory."""

from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit


@app.command(
    "init",
    epilog=examples(
        "tpufleet init",
        "tpufleet init --pods 4",
        "tpufleet init --generation tpu7x --pods 2      # two TPU7x superpods of 144 cubes",
        "tpufleet --state /srv/tpufleet init --force",
    ),
)
def init_cmd(
    ctx: typer.Context,
    pods: Annotated[int, typer.Option("--pods", help="Number of pods")] = 1,
    cubes_per_pod: Annotated[
        int | None,
        typer.Option(
            "--cubes-per-pod",
            # Per shipped generation (tests/test_defects_gke7x.py holds these figures to the profiles): reading
            # the profiles here would slow every command's start-up.
            help="Cubes per pod (default: the generation's pod: tpu-v4 64, tpu-v5p 140, tpu7x 144, 64 without one; "
            "at most its OCS ports per side: tpu-v4 68, tpu-v5p 140, tpu7x 144, 68 without one)",
        ),
    ] = None,
    generation: Annotated[
        str | None,
        typer.Option(
            "--generation",
            help="Accelerator generation of the pods: tpu-v4, tpu-v5p or tpu7x (default: the built-in TPU v4 model)",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing fleet state")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Create the fleet state (default: one TPUv4 pod of 64 cubes)."""
    from tpufleet.model import default_fleet
    from tpufleet.ops import fleet as fleet_ops
    from tpufleet.state import generations
    from tpufleet.text import printable

    gen = None if generation is None else generations.named_by_option(generation)
    fleet = default_fleet(pods, cubes_per_pod, gen)
    store = ctx.obj.store()
    with store.creation(fleet, replace=force) as tx:  # refuses an existing state unless --force, under the lock
        outcome = fleet_ops.init(tx.state, replaced=tx.replaced)
        tx.commit(outcome.change)
    data = {"state_dir": store.where, **outcome.data}
    counts = data["inventory"]
    emit(
        data,
        output,
        lambda: (
            f"fleet written to {printable(store.where)} (serial {data['serial']}"
            + (f", generation {data['generation']}" if "generation" in data else "")
            + "): "
            + fleet_ops.count_words(counts)
            + (f"\nreplaced {fleet_ops.replaced_words(data['replaced'])}" if "replaced" in data else "")
        ),
    )
