"""`tpufleet plan-spares` (spare cubes for the running slices at a confidence) and `tpufleet suspects` (hosts and
cubes that fail far more often than the fleet): options -> one use case -> render."""

from __future__ import annotations

from typing import Annotated, Any

import click
import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid
from tpufleet.text import counted, days_text, probability_text


def open_unit_interval() -> click.FloatRange:
    """A probability strictly between 0 and 1 (--confidence, --p-value): refused as typed, `'1' is not between 0
    and 1 (exclusive)`, by the checks every numeric option gets (`tpufleet.cli.numbers`)."""
    return click.FloatRange(0, 1, min_open=True, max_open=True)


def _rates_choice(fault_rates: str | None) -> Any:
    """The shipped rates, and the --fault-rates file's for every pod when given (read by the state layer; what it
    leaves out, each pod's generation profile gives)."""
    from pathlib import Path

    from tpufleet.ops.spares import RatesChoice
    from tpufleet.state.siminputs import load_rates, rates_by_generation

    shipped = load_rates(None)
    if fault_rates is None:
        return RatesChoice(shipped)
    override = rates_by_generation(None if fault_rates == "shipped" else Path(fault_rates))
    return RatesChoice(shipped, override, fault_rates)


def _names(text: str | None) -> list[str] | None:
    from tpufleet.errors import BadInput, refuse_repeats

    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise BadInput("bad option --slices: empty list")
    if not all(names):  # `s,` or `a,,b`: a name left out, as --cubes and --pod take it
        raise BadInput(f"bad option --slices: {text!r} names an empty slice (between two commas, or at an end)")
    refuse_repeats("--slices", names)
    return names


def _spares_table(result: dict[str, Any]) -> str:
    rows = []
    for p in result["pods"]:
        held = ",".join(p["hold_back"])
        rows.append(
            [
                p["pod"],
                p["cubes"],
                probability_text(p["p_cube"]),
                p["healthy_cubes_at_confidence"],
                p["needed_cubes"],
                "-" if p["spares"] is None else p["spares"],
                probability_text(p["probability"], result["confidence"]),
                (held[:60] + "...") if len(held) > 63 else (held or "-"),
            ]
        )
    head = f"confidence {result['confidence']}, horizon {days_text(result['horizon_days'])} days\n"
    notes = [f"{p['pod']}: {p['note']}" for p in result["pods"] if p["note"]]
    notes += [_joint_line(j, result["confidence"]) for j in result["jobs"]]
    table = grid(
        rows, ["pod", "cubes", "p(cube healthy)", "healthy@conf", "needed", "spares", "P(at spares)", "hold back"]
    )
    return head + table + "".join(f"\n{n}" for n in notes)


def _joint_line(job: dict[str, Any], confidence: float) -> str:
    """A job across pods: the probability every one of its pods holds (each pod's figure is for that pod alone)
    and, below the confidence, the spares per pod that reach it, or that none do."""
    below = f", below the confidence {confidence:g}" if job["below_confidence"] else ""
    line = (
        f"job {job['job']} spans pods {', '.join(job['pods'])}: P(every pod holds) "
        f"{probability_text(job['probability'], confidence)}{below}"
    )
    if not job["below_confidence"]:
        return line
    if job["spares_for_job"] is None:
        return line + "; no number of the pods' free cubes reaches it"
    held = ", ".join(f"{pod} {n}" for pod, n in job["spares_for_job"].items())
    more = job["hold_back_for_job"]
    return (
        f"{line}\n  the job reaches it holding {held} spares "
        f"({probability_text(job['probability_at_spares_for_job'], confidence)}): "
        f"{len(more)} more to hold back: {_cubes_text(more)}"
    )


def _cubes_text(cubes: list[str]) -> str:
    text = ",".join(cubes)
    return (text[:60] + "...") if len(text) > 63 else text


@app.command(
    "plan-spares",
    epilog=examples(
        "tpufleet plan-spares                                  # every pod, 95% over 7 days",
        "tpufleet plan-spares --confidence 0.99 --horizon 30d --slices train",
        "tpufleet plan-spares --fault-rates shipped --pod pod0 -o json",
    ),
)
def plan_spares_cmd(
    ctx: typer.Context,
    confidence: Annotated[
        float,
        typer.Option("--confidence", click_type=open_unit_interval(), help="Probability the slices keep a placement"),
    ] = 0.95,
    horizon: Annotated[str, typer.Option("--horizon", metavar="AGE", help="How long: 7d, 12h, 2w")] = "7d",
    fault_rates: Annotated[
        str | None,
        typer.Option(
            "--fault-rates",
            metavar="FILE|shipped",
            help="Rates and repair times for every pod (default: each pod's generation, else the shipped file)",
        ),
    ] = None,
    slices: Annotated[
        str | None, typer.Option("--slices", metavar="NAME,...", help="These slices, a job: its slices (default: all)")
    ] = None,
    pod: Annotated[str | None, typer.Option("--pod", metavar="POD", help="Only this pod")] = None,
    output: OutputOpt = Output.table,
) -> None:
    """For each pod: each cube's probability of staying fully healthy over the horizon (every host and optical link
    up), the healthy cubes at the confidence, and the spare cubes to hold back so that the running slices keep a
    healthy placement with that confidence (binomial, or Poisson-binomial where cubes differ)."""
    from tpufleet.ops import spares as ops
    from tpufleet.spares import parse_days
    from tpufleet.state.store import utc_now

    days = parse_days(horizon, "--horizon")
    choice = _rates_choice(fault_rates)
    state = ctx.obj.store().load()
    result = ops.plan(state, choice, confidence, days, _names(slices), pod, utc_now()).data
    emit(result, output, lambda: _spares_table(result))


def _suspects_table(result: dict[str, Any]) -> str:
    head = (
        f"{counted(result['faults_in_window'], 'unplanned fault')} in the last {days_text(result['window_days'])} "
        f"day{'' if result['window_days'] == 1 else 's'} on {counted(result['hosts'], 'host')} and "
        f"{counted(result['cubes'], 'cube')}; suspects at p < {result['p_value']:g}\n"
    )
    if not result["suspects"]:
        return head + "no suspects"
    rows = [
        [s["target"], s["faults"], f"{s['expected']:.3g}", f"{s['p_value']:.3g}", "yes" if s["quarantined"] else "no"]
        for s in result["suspects"]
    ]
    commands = "\n".join(s["quarantine"] for s in result["suspects"] if not s["quarantined"])
    table = grid(rows, ["target", "faults", "fleet mean", "p-value", "quarantined"])
    return head + table + ("\n\nto quarantine:\n" + commands if commands else "")


@app.command(
    "suspects",
    epilog=examples("tpufleet suspects", "tpufleet suspects --window 90d --p-value 0.001 -o json"),
)
def suspects_cmd(
    ctx: typer.Context,
    window: Annotated[
        str, typer.Option("--window", metavar="AGE", help="Faults opened this recently: 30d, 2w")
    ] = "30d",
    p_value: Annotated[
        float,
        typer.Option("--p-value", click_type=open_unit_interval(), help="Flag a unit below this one-sided p-value"),
    ] = 0.01,
    output: OutputOpt = Output.table,
) -> None:
    """Hosts and cubes whose unplanned faults in the window (open, cleared, and those moved to the journal) are far
    more than units that fail alike would have (one-sided exact test given the fleet's count), each with the
    `inject-fault --planned` that quarantines it."""
    from tpufleet.ops import spares as ops
    from tpufleet.spares import parse_days
    from tpufleet.timeparse import parse_stamp

    days = parse_days(window, "--window")
    store = ctx.obj.store()
    from tpufleet.state.store import utc_now

    now = parse_stamp(utc_now())
    assert now is not None  # utc_now writes the tool's own stamp
    outcome, read = ops.suspects_in(store, days, p_value, now)
    result = outcome.data
    from tpufleet.cli.history import warn_journal

    warn_journal(store.journal_label, read)  # a damaged or lost line's faults not counted
    emit(result, output, lambda: _suspects_table(result))
