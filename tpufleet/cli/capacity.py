"""`tpufleet capacity`: the slice shapes each pod can still place, now and after the worst K cube failures."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid


def _table(result: dict[str, Any]) -> str:
    after = result["after"]
    lines = []
    for p in result["pods"]:
        gen = f" ({p['generation']})" if p["generation"] else ""
        lines.append(
            f"{p['pod']}{gen}: {p['free_healthy_cubes']} healthy free cubes; {p['fit_now']} of {p['shapes']} shapes "
            f"fit now (largest {p['largest_now'] or '-'}), {p['fit_after']} after the worst {after} cube failure(s) "
            f"(largest {p['largest_after'] or '-'})"
        )
        lost = [v for v in p["verdicts"] if v["fits_now"] and not v["fits_after"]]
        if lost:
            rows = [[v["shape"] + (" twisted" if v["twisted"] else ""), v["cubes"]] for v in lost]
            lines.append(f"  fit now, not after {after} failure(s):")
            lines += ["  " + line for line in grid(rows, ["shape", "cubes"]).splitlines()]
    return "\n".join(lines)


@app.command(
    "capacity",
    epilog=examples(
        "tpufleet capacity                  # what fits now in each pod",
        "tpufleet capacity --after 3        # and after the three cube failures that hurt each shape most",
        "tpufleet capacity --pod pod1 -o json",
    ),
)
def capacity_cmd(
    ctx: typer.Context,
    after: Annotated[
        int, typer.Option("--after", min=0, help="Cube failures to survive (the worst K for each shape)")
    ] = 0,
    pod: Annotated[str | None, typer.Option("--pod", help="Only this pod")] = None,
    output: OutputOpt = Output.table,
) -> None:
    """The shapes of each pod's generation the allocator places now, and those that still fit after K cube failures."""
    from tpufleet.ops import capacity as ops

    outcome = ops.report(ctx.obj.store().load(), after, pod)
    emit(outcome.data, output, lambda: _table(outcome.data))
