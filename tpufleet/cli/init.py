"""`tpufleet init`: write the default fleet into the state directory."""

from __future__ import annotations

from typing import Annotated

import typer

from tpufleet.cli.app import OutputOpt, Output, app
from tpufleet.cli.render import emit


@app.command("init")
def init_cmd(
    ctx: typer.Context,
    pods: Annotated[int, typer.Option("--pods", help="Number of pods")] = 1,
    cubes_per_pod: Annotated[int, typer.Option("--cubes-per-pod", help="Cubes per pod (at most 68)")] = 64,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing fleet state")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Create the fleet state (default: one TPUv4 pod of 64 cubes)."""
    from tpufleet.errors import Refused
    from tpufleet.model import default_fleet, inventory_counts
    from tpufleet.state.store import new_state_doc

    fleet = default_fleet(pods, cubes_per_pod)
    store = ctx.obj.store()
    if store.exists() and not force:
        raise Refused(f"a fleet state already exists in {store.dir}; use --force to replace it")
    with store.transaction(create=True, replace=force) as tx:
        tx.doc = new_state_doc(fleet.to_doc())
        tx.summary = f"init: {pods} pod(s) x {cubes_per_pod} cubes" + (" (replaced)" if force else "")
    serial = tx.doc["serial"]
    counts = inventory_counts(fleet)
    emit(
        {"state_dir": str(store.dir), "serial": serial, "inventory": counts},
        output,
        lambda: f"fleet written to {store.dir} (serial {serial}): "
        + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items()),
    )
