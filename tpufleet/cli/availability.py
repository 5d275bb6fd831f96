"""`tpufleet simulate-availability`: probability a job can be placed, static vs reconfigurable (Fig. 1 of the TPUv4 "Resiliency at Scale" paper)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

from tpufleet.cli.app import ReportOutput, app, examples, report_output_option
from tpufleet.cli.render import emit, flat_table, grid
from tpufleet.text import printable, probability_text

if TYPE_CHECKING:
    from tpufleet.generations import Generation

DEFAULT_CUBES = "1,2,4,8,16,24,32,40,48,50,56,64"
STATIC_POD_NAMES = ("tpu-v4", "tpu-v3")  # the 64-cube pod's static twin, and static_torus.STATIC_PODS


def _static_cell(row: dict) -> str:
    """The static value, marked MC (Monte Carlo) or exact (p^hosts: only the whole pod holds the slice), beside
    the Monte Carlo's 95% interval."""
    if "static" not in row:
        return "-"
    lo, hi = row["static_ci"]
    method = "exact" if row["static_method"] == "exact" else "MC"
    return f"{probability_text(row['static'])} {method} [{probability_text(lo)}, {probability_text(hi)}]"


def _table(result: dict) -> str:
    rows = []
    for r in result["results"]:
        rows.append(
            [
                r["cubes"],
                r["chips"],
                _static_cell(r),
                probability_text(r["reconfigurable"]),
                probability_text(r["reconfigurable_ft"]),
                probability_text(r["reconfigurable_ft_mc"]),
            ]
        )
    other = result["static_pod"] not in (None, "tpu-v4")
    head = (
        f"host availability {result['host_availability']}, OCS availability {result['ocs_availability']}, "
        f"{result['trials']} Monte Carlo trials (seed {result['seed']})\n"
        + (
            f"static: a {result['static_pod']} pod (its own hosts, as available), beside the reconfigurable pod\n"
            if other
            else ""
        )
    )
    static = f"static {result['static_pod']} [MC 95% CI]" if other else "static [MC 95% CI]"
    table = grid(rows, ["cubes", "chips", static, "reconfigurable", "reconfig. + FT", "reconfig. + FT (MC)"])
    exact = [r for r in result["results"] if r.get("static_method") == "exact"]
    if any(r["static"] or r["static_boxes"] for r in exact):
        table += "\nstatic exact: only the whole pod holds the slice (every host up); [ ] is the Monte Carlo's interval"
    if any(not r["static_boxes"] for r in exact):
        table += f"\nstatic exact 0: larger than the {result['static_pod']} pod, which never holds the slice"
    return head + table


@app.command(
    "simulate-availability",
    epilog=examples(
        "tpufleet simulate-availability                               # the operating point of the paper's Fig. 1",
        "tpufleet simulate-availability --host-availability 0.995 --cubes 16,32,64",
        "tpufleet simulate-availability --fault-rates shipped --plot availability.png",
        "tpufleet simulate-availability --static-pod tpu-v3 --chips 64,128,256,512,1024   # the paper's TPU v3 curve",
    ),
)
def simulate_cmd(
    cubes: Annotated[
        str | None,
        typer.Option(
            "--cubes",
            help=f"Slice sizes in cubes (default {DEFAULT_CUBES}; "
            "another generation's pod: doubling to 16, then every eighth)",
        ),
    ] = None,
    chips: Annotated[str | None, typer.Option("--chips", help="Slice sizes in chips (multiples of 64)")] = None,
    host_availability: Annotated[
        float | None,
        typer.Option("--host-availability", min=0.0, max=1.0, help="Per-host availability p [default: 0.99]"),
    ] = None,
    ocs_availability: Annotated[
        float | None,
        typer.Option("--ocs-availability", min=0.0, max=1.0, help="Per-OCS availability q [default: 0.999]"),
    ] = None,
    fault_rates: Annotated[
        str | None,
        typer.Option(
            "--fault-rates",
            metavar="FILE|shipped",
            help="Take p and q from daily fault rates and repair times "
            "(steady state MTBF/(MTBF+MTTR)); 'shipped' is the fault-rate file simulate-fleet and "
            "inject-fault --random use (with --generation: the generation profile's rates)",
        ),
    ] = None,
    generation: Annotated[
        str | None,
        typer.Option("--generation", help="Pods of this generation (its pod size; tpu7x: 144 cubes, no static twin)"),
    ] = None,
    static_pod: Annotated[
        str | None,
        typer.Option(
            "--static-pod",
            click_type=click.Choice(STATIC_POD_NAMES),
            help="The static pod compared: tpu-v4, the pod's own 4x4x4 cube torus wired fixed (the default on 64-cube "
            "pods), or tpu-v3, a TPU v3 pod of 32x32 chips (the static curve the paper's Fig. 1 measured)",
        ),
    ] = None,
    trials: Annotated[int, typer.Option("--trials", min=1, max=10_000_000, help="Monte Carlo trials")] = 20000,
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**63 - 1, help="Random seed, 0 or more")] = 0,
    plot_name: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE",
            help='Write a PNG or SVG plot like Fig. 1 of the "Resiliency at Scale" TPUv4 paper',
        ),
    ] = None,
    output: Annotated[
        ReportOutput,
        report_output_option(ReportOutput.csv, ReportOutput.md, help_text="table, json, yaml, csv or md"),
    ] = ReportOutput.table,
) -> None:
    """For each slice size, the probability a job can be placed on a static pod, a reconfigurable pod, and a
    reconfigurable pod with fault-tolerant routing (exact binomial values, Monte Carlo with 95% intervals).

    The Monte Carlo is capped by its work, trials x (the pod's hosts, 1,024 in a TPU v4 pod and 2,304 in a TPU7x one,
    + on a 64-cube pod the static search, about 1,200 at the default sizes, or with --static-pod tpu-v3 that pod's 256
    hosts and its search, about 670), at 5,000,000,000 (about two million trials at the defaults, on a pod with no
    static twin too), whatever the availability: more is refused before it starts (exit 2)."""
    from tpufleet import availability, availability_sizes
    from tpufleet.constants import CUBES_PER_POD
    from tpufleet.errors import BadInput
    from tpufleet.ops import availability as ops

    if cubes is not None and chips is not None:
        raise BadInput("bad options --cubes and --chips: give one of them, not both")
    gen = _generation(generation)
    p, q, source = _availabilities(host_availability, ocs_availability, fault_rates, gen)
    pod_cubes = None if gen is None else gen.pod_cubes
    other = _static_pod(static_pod, gen)
    default = DEFAULT_CUBES if pod_cubes in (None, CUBES_PER_POD) else ",".join(map(str, _sizes_up_to(pod_cubes)))
    ks = (
        availability_sizes.parse_sizes(chips, "chips", pod_cubes or CUBES_PER_POD)
        if chips is not None
        else availability_sizes.parse_sizes(default if cubes is None else cubes, "cubes", pod_cubes or CUBES_PER_POD)
    )
    plot = _plot_file(plot_name)
    from tpufleet.cli.progress import progress

    with progress("simulating pods", trials) as bar:
        result = ops.report(ks, p, q, trials, seed, source, bar.advance, pod_cubes, other)
    if plot is not None:
        from tpufleet.state.outputs import write_output

        write_output(plot, availability.plot(result, plot.suffix.lower()[1:]))
        result["plot"] = str(plot)
    emit(
        result,
        output,
        lambda: _table(result) + (f"\nplot written to {printable(str(plot))}" if plot else ""),
        {"csv": lambda: flat_table(result["results"], "csv"), "md": lambda: flat_table(result["results"], "md")},
    )


def _plot_file(name: str | None) -> Path | None:
    """--plot as a file to write, its format from its extension; checked before the long simulation."""
    if name is None:
        return None
    from tpufleet.errors import BadInput, shown
    from tpufleet.state.outputs import check_output_path, refuse_standard_output

    plot = Path(name)  # a name ending in '/' or '/.' was refused while parsing (tpufleet.cli.paths)
    refuse_standard_output(plot, "--plot")  # before the extension: '-' was told it must end in .png or .svg
    ext = plot.name[-4:]  # Path reads ".png" as a name without an extension; " .png" is as nameless
    if ext.lower() in (".png", ".svg") and not plot.name[:-4].strip():
        raise BadInput(f"bad option --plot {shown(name)}: no name before the extension (e.g. fig1{ext})")
    if plot.suffix.lower() not in (".png", ".svg"):
        raise BadInput(f"bad option --plot {shown(name)}: the name must end in .png or .svg")
    check_output_path(plot, "--plot")
    return plot


def _generation(name: str | None) -> "Generation | None":
    """The shipped profile of `--generation` (through the state layer); None without it."""
    if name is None:
        return None
    from tpufleet.state.generations import named_by_option

    return named_by_option(name)


def _static_pod(name: str | None, gen: "Generation | None") -> str | None:
    """--static-pod as the other static pod compared (None: the 64-cube pod's own twin, or none on other pods);
    tpu-v4, the twin, is refused beside pods of another size."""
    from tpufleet.constants import CUBES_PER_POD
    from tpufleet.errors import BadInput

    if name != "tpu-v4":
        return name
    if gen is not None and gen.pod_cubes != CUBES_PER_POD:
        raise BadInput(
            f"bad option --static-pod 'tpu-v4': the static twin is the 64-cube pod's 4x4x4 cube torus, and "
            f"{gen.name} pods have {gen.pod_cubes} cubes (--static-pod tpu-v3 compares a TPU v3 pod with them)"
        )
    return None


def _sizes_up_to(pod_cubes: int) -> list[int]:
    """The default slice sizes for a pod of this many cubes other than the built-in TPU v4 pod's 64: doubling from
    1, then every eighth of the pod. A 64-cube pod (`--generation tpu-v4` too) keeps `DEFAULT_CUBES`, which adds
    50, the operating point of the paper's Fig. 1: the same pod gives the same figures with or without its name."""
    sizes = {1, 2, 4, 8, 16, pod_cubes}
    sizes |= {pod_cubes * i // 8 for i in range(1, 8)}
    return sorted(s for s in sizes if 1 <= s <= pod_cubes)


def _availabilities(
    p: float | None, q: float | None, fault_rates: str | None, gen: "Generation | None"
) -> tuple[float, float, str]:
    """p and q as given, or from a fault-rate file (on pods of `gen`, a rate or repair time it leaves out, or
    all of them for 'shipped', is the generation profile's); the defaults are the operating point of Fig. 1 of
    the paper."""
    from tpufleet.errors import BadInput

    if fault_rates is None:
        return (0.99 if p is None else p), (0.999 if q is None else q), "given"
    if p is not None or q is not None:
        raise BadInput(
            "bad options --fault-rates and --host-availability/--ocs-availability: give one of them, not both"
        )
    from tpufleet.ops.availability import availabilities_from_rates
    from tpufleet.state.siminputs import load_rates

    path = None if fault_rates == "shipped" else Path(fault_rates)
    p, q = availabilities_from_rates(load_rates(path, gen))
    defaults = "" if gen is None else f", defaults of the {gen.name} profile"
    return p, q, f"fault rates ({fault_rates}{defaults})"
