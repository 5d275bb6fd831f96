"""`tpufleet topology SHAPE`: figures of a torus, twisted torus or mesh slice."""

from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid


@app.command(
    "topology",
    epilog=examples(
        "tpufleet topology 4x4x8",
        "tpufleet topology 4x8x8 --twisted -o json",
        "tpufleet topology 16x24x24 --generation tpu7x   # a whole TPU7x superpod",
    ),
)
def topology_cmd(
    shape: Annotated[str, typer.Argument(help="AxBxC in chips, e.g. 4x4x8")],
    twisted: Annotated[bool, typer.Option("--twisted", help="Twisted torus ((4k,4k,8k) or (4k,8k,8k) only)")] = False,
    generation: Annotated[
        str | None,
        typer.Option("--generation", help="Apply this generation's shape rule (tpu-v4, tpu-v5p, tpu7x)"),
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Validate a slice shape and report chips, cubes, diameter, mean hops and bisection links."""
    from tpufleet.shapes import parse_shape, require_allocatable
    from tpufleet.state import generations
    from tpufleet.topology import metrics

    gen = None if generation is None else generations.shipped(generation)
    m = metrics(require_allocatable(parse_shape(shape, twisted, gen)))
    if gen is not None:
        m["generation"] = gen.name
    emit(m, output, lambda: grid([[k, v] for k, v in m.items()], ["", ""]))
