"""`tpufleet show inventory|health|slices|ocs|journal` and `tpufleet status`."""

import enum
from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid
from tpufleet.text import around, printable, share_text


class What(str, enum.Enum):
    inventory = "inventory"
    health = "health"
    slices = "slices"
    jobs = "jobs"
    ocs = "ocs"
    journal = "journal"
    map = "map"


def _table(what: What, rows: list[dict]) -> str:
    if what is What.inventory:
        return _inventory_table(rows)
    if what is What.health:
        return _health_table(rows)
    if what is What.slices:
        return _slices_table(rows)
    if what is What.jobs:
        return _jobs_table(rows)
    if what is What.ocs:
        return grid(
            [[r["id"], r["health"], len(r["xconnects"]), r["ports_cabled"]] for r in rows],
            ["ocs", "health", "xconnects", "ports cabled"],
        )
    return grid(
        [[r["serial"], r["time"], printable(r["user"]), printable(r["summary"])] for r in rows],
        ["serial", "time (UTC)", "user", "summary"],
    )


def _inventory_table(rows: list[dict]) -> str:
    generations = any("generation" in r for r in rows)  # a column only when a pod has one
    degraded = any("degraded" in r for r in rows)  # and one when a cube is degraded (it still serves)
    return grid(
        [
            [
                r["cube"],
                r["pod"],
                r["position"],
                r["state"],
                ",".join(r["slices"]) or "-",
                ",".join(r["faults"]) or "-",
            ]
            + ([r.get("generation", "tpu-v4")] if generations else [])
            + ([_degraded_text(r.get("degraded"))] if degraded else [])
            for r in rows
        ],
        ["cube", "pod", "port", "state", "slices", "faults"]
        + (["generation"] if generations else [])
        + (["degraded"] if degraded else []),
    )


def _degraded_text(degraded: dict | None) -> str:
    """'1 host(s) degraded' (reservation sub-block; 'sub-block DEGRADED' where it gave no host counts), 'partition
    DEGRADED' (GKE node labels), both, or '-'."""
    if not degraded:
        return "-"
    hosts = degraded.get("degraded_hosts")
    said = (
        [f"{hosts} host(s) degraded" if hosts is not None else "sub-block DEGRADED"] if "sub_block" in degraded else []
    )
    return ", ".join(said + (["partition DEGRADED"] if "partition" in degraded else []))


def _health_table(rows: list[dict]) -> str:
    if not rows:
        return "all components healthy"
    return grid(
        [[r["target"], r["fault"], "drain" if r["planned"] else "fault", r["since"], r["effect"]] for r in rows],
        ["target", "fault", "kind", "since", "effect"],
    )


def _slices_table(rows: list[dict]) -> str:
    return grid(
        [
            [
                r["name"],
                r["shape"] + (" twisted" if r["twisted"] else ""),
                r["pod"],
                len(r["cubes"]),
                r["state"],
                r["routes"],
                share_text(r["degraded"]["all_to_all_retained"]) if r["degraded"] else "-",
                r["job"] or "-",
            ]
            for r in rows
        ],
        ["slice", "shape", "pod", "cubes", "state", "routes", "retained", "job"],
    )


def _kept(r: dict) -> str:
    """The throughput a job keeps, in words: data parallel, it is the share of its slices active."""
    if r["throughput_kept"] is None:
        return "-"
    if r["step_slowdown"] is None:
        return "0"
    if r["state"] == "running":
        return "1"
    return f"{r['throughput_kept']:g} (step x{r['step_slowdown']:g})"


def _jobs_table(rows: list[dict]) -> str:
    return grid(
        [
            [
                r["name"],
                r["shape"] + (" twisted" if r["twisted"] else ""),
                f"{r['active_slices']}/{r['total_slices']}",
                "-" if r["elastic_min"] is None else r["elastic_min"],
                r["state"],
                _kept(r),
                ",".join(r["pods"]),
                ",".join(r["evicted"]) or "-",
                ",".join(r["rerouted"]) or "-",  # a slice share says nothing of the rerouted slices' own loss
            ]
            for r in rows
        ],
        ["job", "shape", "active", "elastic min", "state", "throughput kept", "pods", "evicted", "rerouted"],
    )


@app.command(
    "show",
    epilog=examples(
        "tpufleet show map                      # every pod: cubes by slice, failures, drains, the OCS strip",
        "tpufleet show slices -o json | jq '.[] | select(.state == \"degraded\")'",
        "tpufleet show journal --tail 20",
        "tpufleet show jobs -o json | jq '.[] | select(.state != \"running\")'",
    ),
)
def show_cmd(
    ctx: typer.Context,
    what: Annotated[
        What,
        typer.Argument(
            help="inventory (cubes), health (open faults), slices, jobs (multislice jobs and their state), "
            "ocs (switches and cross-connects), journal (every change, numbered) or map (a picture of each pod)"
        ),
    ],
    tail: Annotated[int | None, typer.Option("--tail", min=1, help="journal: only the last N entries")] = None,
    pod: Annotated[
        str | None, typer.Option("--pod", metavar="POD", help="map: only this pod (default: every pod)")
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """List one part of the fleet state; with -o json, a list of objects (map: one object)."""
    from tpufleet.errors import BadInput
    from tpufleet.ops import views

    for option, given, only in (("--tail", tail, What.journal), ("--pod", pod, What.map)):
        if given is not None and what is not only:  # not silently ignored
            raise BadInput(f"bad option {option}: only with `show {only.value}`")
    store = ctx.obj.store()
    if what is What.map:
        from tpufleet.cli.mapview import render_map

        fm = views.show_map(store, pod)
        emit(fm.record(), output, lambda: render_map(fm))
        return
    from tpufleet.cli.history import warn_journal

    listing = views.show(store, what.value, tail)
    if listing.journal is not None:
        warn_journal(store.journal_label, listing.journal)
    emit(listing.rows, output, lambda: _table(what, listing.rows))


_TO_DO = (  # status keys listing slices with something to do: what is wrong, and the command that mends it
    ("incomplete_wiring", "cross-connects missing", "run `tpufleet plan-xconnect SLICE --apply`"),
    ("stale_routes", "stale routing tables", "regenerate with `tpufleet routes SLICE`, all: `tpufleet routes --stale`"),
    (
        "missing_routes",
        "routing tables missing",
        "make them with `tpufleet routes SLICE`, all: `tpufleet routes --stale`",
    ),
    (
        "degraded_without_routes",
        "degraded with no routing tables, running through their faults",
        "make them with `tpufleet routes SLICE`, all: `tpufleet routes --stale`",
    ),
)


def _status_text(s: dict) -> str:
    from tpufleet.ops.fleet import count_words

    inv, cubes = s["inventory"], s["cubes"]
    gens = s.get("generations", {})
    lines = [
        f"serial {s['serial']}  ·  {count_words({k: inv[k] for k in ('pods', 'cubes', 'chips', 'ocs')})}"
        + (f"  ·  {_generations_text(gens, inv['pods'])}" if gens else ""),
        f"cubes: {cubes['free']} free, {cubes['allocated']} allocated, {cubes['out']} out of the pool",
        f"OCS: {s['ocs']['failed']} failed, "
        + (f"{s['ocs']['drained']} drained, " if s["ocs"]["drained"] else "")
        + f"{s['ocs']['xconnects']} cross-connects in place",
        _faults_line(s),
    ]
    for f in s["faults"][:10]:
        lines.append(
            f"  {f['fault']:>5}  {f['target']:<28} {f['effect']}" + (" (planned drain)" if f["planned"] else "")
        )
    if len(s["faults"]) > 10:
        lines.append(f"  ... {len(s['faults']) - 10} more (`tpufleet show health`)")
    lines.append(f"slices: {len(s['slices'])}")
    for sl in s["slices"]:
        shape = sl["shape"] + (" twisted" if sl["twisted"] else "")
        line = f"  {sl['name']:<16} {shape:<16} {len(sl['cubes']):>3} cube(s)  {sl['state']:<10} routes {sl['routes']}"
        if sl["job"]:
            line += f"  job {sl['job']}"
        if sl["degraded"]:
            d = sl["degraded"]
            line += f"  (keeps {share_text(d['all_to_all_retained'])} of all-to-all, {d['vcs']} VCs, around {around(d['faults'], ',')})"
        lines.append(line)
    if s["jobs"]:
        lines.append(f"jobs: {len(s['jobs'])}")
        for j in s["jobs"]:
            kept = f", keeps {_kept(j)}" if j["state"] == "degraded" else ""
            lines.append(
                f"  {j['name']:<16} {j['active_slices']}/{j['total_slices']} slices active  {j['state']}{kept}"
            )
    lines += _to_do_lines(s)
    return "\n".join([*lines, *_k8s_lines(s.get("k8s"), cubes["free"]), *_reservation_lines(s.get("reservation"))])


def _faults_line(s: dict) -> str:
    """'open faults: 3 (2 unplanned, 1 planned drain)': the JSON's `open_faults`, and apart the unplanned ones that
    `tpufleet_open_faults` counts."""
    from tpufleet.ops.fleet import counted

    drains = s["planned_drains"]
    apart = f" ({s['unplanned_faults']} unplanned, {counted(drains, 'planned_drains')})" if drains else ""
    return f"open faults: {s['open_faults']}{apart}"


def _to_do_lines(s: dict) -> list[str]:
    """The slices with something to do, each with the command that mends it."""
    waits, linked = s["wiring_waits"], s["linked_routes"]
    # `routes` refuses an evicted slice until `reschedule` moved it: its tables wait for that move
    evicted = [sl["name"] for sl in s["slices"] if sl["state"] == "evicted"]
    moving = [n for n in evicted if n in s["stale_routes"] or n in s["missing_routes"]]
    todo = {
        **s,
        "incomplete_wiring": [n for n in s["incomplete_wiring"] if n not in waits],
        "stale_routes": [n for n in s["stale_routes"] if n not in moving],
        "missing_routes": [n for n in s["missing_routes"] if n not in linked and n not in moving],  # linked: below
    }
    lines = [f"{what} ({do}): {', '.join(todo[key])}" for key, what, do in _TO_DO if todo[key]]
    if moving:
        lines.append(
            f"routing tables of evicted slice(s) to make again once moved (`tpufleet explain SLICE` says how): "
            f"{', '.join(moving)}"
        )
    lines += [f"cross-connects missing on {name}: {why}" for name, why in waits.items()]
    return lines + [_linked_line(name, path, name in evicted) for name, path in linked.items()]


def _linked_line(name: str, path: str, evicted: bool) -> str:
    """The step for tables missing behind a symbolic link: `routes` refuses the link, and tpufleet never removes it;
    an evicted slice's tables are made once it has moved (`routes` refuses it until then)."""
    import shlex

    then = f"`tpufleet explain {name}` says how to move it first" if evicted else f"run `tpufleet routes {name}`"
    return (
        f"routing tables of {name} missing: a symbolic link stands in their place, never followed "
        f"(remove it, rm -- {shlex.quote(path)}, then {then})"
    )


def _reservation_lines(reservation: dict | None) -> list[str]:
    """The reservation's DEGRADED sub-blocks (cubes that still serve with hosts degraded) and its maintenance
    announced for a later window (cubes that serve until then: the drained ones are among the faults)."""
    if not reservation:
        return []
    lines = []
    if reservation["degraded_cubes"]:
        from tpufleet.views import hosts_degraded

        hosts = [(g["cube"], hosts_degraded(g)) for g in reservation["degraded_cubes"]]  # counts are optional
        cubes = ", ".join(cube + (f" ({of} hosts degraded)" if of else "") for cube, of in hosts)
        lines.append(f"degraded cubes (reservation sub-block DEGRADED, still serving): {cubes}")
    ahead = [m for m in reservation["maintenance"] if not m["out_of_pool"]]
    if ahead:
        from tpufleet.state.store import utc_now

        now = utc_now()
        cubes = ", ".join(_maintenance_text(m, now) for m in ahead)
        lines.append(f"maintenance announced (serving until its window; `tpufleet plan-maintenance`): {cubes}")
    return lines


def _maintenance_text(m: dict, now: str) -> str:
    """One cube under announced maintenance; past its window's start the drain waits for the next import."""
    start = m["window_start"]
    due = (
        " (started: `tpufleet import reservation SUB-BLOCKS.json --apply` opens its drain)"
        if start is not None and start <= now
        else ""
    )
    on = f" ({', '.join(m['slices'])} on it)" if m["slices"] else ""
    return f"{m['cube']} from {start or '?'}{due}{on}"


def _k8s_lines(k8s: dict | None, free: int) -> list[str]:
    """Node pools held as unplaced slices (and the free cubes they leave), DEGRADED partitions."""
    if not k8s:
        return []
    unplaced = k8s["unplaced_slices"]
    lines = []
    if unplaced["slices"]:
        lines.append(
            f"unplaced node-pool slices: {len(unplaced['slices'])}, holding {unplaced['cubes']} cube(s): "
            f"{k8s['free_after_unplaced']} of the {free} free cubes are left to allocate"
        )
        lines += [
            f"  {p['node_pool']:<16} {p['shape']:<16} {p['accelerator']} on {p['pod']}, {len(p['nodes'])} node(s)"
            + (
                f", {p['cubes']} cube(s) held, the rest on {', '.join(p['placed_cubes'])}"
                if "placed_cubes" in p
                else ""
            )
            for p in unplaced["slices"]
        ]
        lines += [
            f"  over-committed: the node pools on {pod} hold {n} more cube(s) than it has free "
            "(the state and the cluster disagree: see `tpufleet drift`)"
            for pod, n in k8s.get("over_committed", {}).items()
        ]
    if k8s["degraded_cubes"]:
        cubes = ", ".join(f"{g['cube']} (partition {g['partition'] or '?'})" for g in k8s["degraded_cubes"])
        lines.append(f"degraded cubes (GKE partition DEGRADED, still serving): {cubes}")
    return lines


def _generations_text(gens: dict[str, str], pods: int) -> str:
    """'tpu7x' when every pod is of one generation, else 'pod0 tpu-v4, pod1 tpu7x' (built-in v4: 'tpu-v4')."""
    if len(gens) == pods and len(set(gens.values())) == 1:
        return next(iter(gens.values()))
    others = " (others: built-in tpu-v4)" if len(gens) < pods else ""  # only when a pod has no generation
    return ", ".join(f"{pod} {gen}" for pod, gen in gens.items()) + others


@app.command("status", epilog=examples("tpufleet status", "tpufleet status -o json | jq .open_faults"))
def status_cmd(ctx: typer.Context, output: OutputOpt = Output.table) -> None:
    """One screen: cubes free / allocated / out of the pool, open faults, slices, state serial."""
    from tpufleet.ops import views

    s = views.status(ctx.obj.store())
    emit(s, output, lambda: _status_text(s))
