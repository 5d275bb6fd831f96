"""`tpufleet capacity`: the slice shapes each pod can still place, now and after the worst K cube failures."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid
from tpufleet.cli.spares import open_unit_interval
from tpufleet.constants import MAX_AFTER
from tpufleet.text import days_text, probability_text


def _expected_line(result: dict[str, Any], p: dict[str, Any]) -> str:
    e, days = p["expected_failures"], result["horizon_days"]
    return (
        f"  expected case: at most {e['failures']} of {e['cubes_up']} cubes fail over {days_text(days)} "
        f"day{'' if days == 1 else 's'} with probability {probability_text(e['probability'], result['confidence'])} (>= {result['confidence']}; {e['rates_source']})"
    )


def _table(result: dict[str, Any]) -> str:
    lines = []
    for p in result["pods"]:
        after = p["after"]
        gen = f" ({p['generation']})" if p["generation"] else ""
        survived = (
            f", {p['fit_after']} after the worst {after} cube failure(s) (largest {p['largest_after'] or '-'})"
            if after
            else ""  # no --after: "after the worst 0 failures" would only repeat the shapes that fit now
        )
        lines.append(
            f"{p['pod']}{gen}: {p['free_healthy_cubes']} healthy free cubes; {p['fit_now']} of {p['shapes']} shapes "
            f"fit now (largest {p['largest_now'] or '-'}){survived}"
        )
        if p["expected_failures"] is not None:
            lines.append(_expected_line(result, p))
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
        "tpufleet capacity --confidence 0.95 --horizon 7d   # after the failures expected at 95 % over a week",
    ),
)
def capacity_cmd(
    ctx: typer.Context,
    after: Annotated[
        int | None,
        typer.Option("--after", min=0, max=MAX_AFTER, help="Cube failures to survive (the worst K for each shape)"),
    ] = None,
    confidence: Annotated[
        float | None,
        typer.Option(
            "--confidence",
            click_type=open_unit_interval(),
            help="Instead of --after: K = the cube failures not exceeded with this probability (plan-spares' model)",
        ),
    ] = None,
    horizon: Annotated[
        str | None,
        typer.Option("--horizon", metavar="AGE", help="With --confidence: over how long (7d, 12h, 2w; default 7d)"),
    ] = None,
    fault_rates: Annotated[
        str | None,
        typer.Option("--fault-rates", metavar="FILE|shipped", help="With --confidence: rates as plan-spares takes"),
    ] = None,
    pod: Annotated[str | None, typer.Option("--pod", metavar="POD", help="Only this pod")] = None,
    output: OutputOpt = Output.table,
) -> None:
    """The shapes of each pod's generation the allocator places now, and those that still fit after K cube failures:
    the worst K for each shape (--after K), or with --confidence P the K failures plan-spares' model does not
    exceed with probability P over the horizon (the expected case; each failure still the worst for the shape)."""
    from tpufleet.ops import capacity as ops

    outcome = ops.report(ctx.obj.store().load(), after or 0, pod, _expected(after, confidence, horizon, fault_rates))
    emit(outcome.data, output, lambda: _table(outcome.data))


def _expected(after: int | None, confidence: float | None, horizon: str | None, fault_rates: str | None) -> Any:
    """The expected case asked for (None: the worst case of --after); --after and --confidence exclude each other."""
    from tpufleet.cli.spares import _rates_choice
    from tpufleet.errors import BadInput
    from tpufleet.ops.capacity import Expected
    from tpufleet.spares import parse_days
    from tpufleet.state.store import utc_now

    if confidence is None:
        given = [name for name, value in (("--horizon", horizon), ("--fault-rates", fault_rates)) if value is not None]
        if given:  # named as given: an operator who typed only one is told of that one
            raise BadInput(
                f"bad option {'/'.join(given)}: {'they go' if len(given) > 1 else 'it goes'} with --confidence"
            )
        return None
    if after is not None:
        raise BadInput("bad option --after: give --after K or --confidence P, not both")
    return Expected(
        confidence,
        parse_days("7d" if horizon is None else horizon, "--horizon"),
        _rates_choice(fault_rates),
        utc_now(),
    )
