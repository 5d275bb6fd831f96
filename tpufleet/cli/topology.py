"""`tpufleet topology SHAPE`: figures of a torus, twisted torus or mesh slice."""

from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit


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
    from tpufleet.ops import views

    m = views.topology(shape, twisted, generation)
    emit(m, output, lambda: _pairs(m))


def _pairs(m: dict[str, object]) -> str:
    """One line a figure, its name first (no header: a table of one thing)."""
    width = max(map(len, m), default=0)
    return "\n".join(f"{k:<{width}}  {_cell(k, v)}" for k, v in m.items())


def _cell(key: str, value: object) -> object:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "generations":  # the pods that could hold the shape
        return ", ".join(value) if isinstance(value, list) and value else "none (no pod of these generations holds it)"
    return value
