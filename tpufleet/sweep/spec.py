"""A sweep specification: read, checked and expanded into points, every one of them checked before any work.

A spec is YAML (read through the bounded reader by `tpufleet.state.sweepstore.load_spec`, which hands its mapping
to `build`): which simulation, `seeds` replications per point, a base
`seed`, `fixed` parameters, and the points as a `grid` (every combination of the listed values, in file order)
and/or a list of `points` (each combined with every grid combination). Any problem is one line naming the file,
the field and the value (exit 2), before a single run starts.

Seeds come from the spec alone: replication r of every point runs with `derive_seed(seed, r)`, whichever machine
runs it, so a sweep gives the same numbers serially, on a local cluster and on a remote one. All points share
those seeds (common random numbers), which makes differences between points less noisy than independent draws.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tpufleet.doccheck import check
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile
from tpufleet.shapes import parse_shape
from tpufleet.simulation.inputs import MAX_SEED
from tpufleet.sweep import params as P

MAX_SEEDS = 1000
MAX_RUNS = 100_000  # points times seeds
SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema_version", "simulation"],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": 1},
        "simulation": {"enum": list(P.SIMULATIONS)},
        "name": {"type": "string", "maxLength": 200},
        "description": {"type": "string", "maxLength": 4000},
        "seeds": {"type": "integer", "minimum": 1, "maximum": MAX_SEEDS},
        "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
        "fixed": {"type": "object"},
        "grid": {"type": "object", "additionalProperties": {"type": "array", "maxItems": 10_000}},
        "points": {"type": "array", "items": {"type": "object"}, "minItems": 1, "maxItems": MAX_RUNS},
        "plot": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "metric": {"type": "string", "maxLength": 200},
                "young_daly_for": {"type": "string", "maxLength": 64},
            },
        },
    },
}


@dataclass(frozen=True)
class Point:
    index: int
    params: dict[str, Any]  # every parameter of the simulation, defaults filled in
    key: str  # identifies the point's work (parameters, input files' contents, seeds): its resume file's name


@dataclass(frozen=True)
class SweepSpec:
    path: str
    name: str
    simulation: P.Simulation
    base_seed: int
    seeds: tuple[int, ...]  # one per replication, the same for every point
    swept: tuple[str, ...]  # parameters that vary, in the spec's order
    points: tuple[Point, ...]
    metric: str  # the figure plotted
    young_daly_for: str | None  # a shape whose Young/Daly checkpoint interval the plot marks
    inputs: dict[str, Any]  # input file name (as written in the spec) -> its contents
    shipped: dict[str, Any]  # what the runs default to: the shipped workload and fault rates (`runs.fleet_inputs`)


ReadInput = Callable[[str, str], dict[str, Any]]  # (parameter, file name as the spec gives it) -> its mapping
ReadGeneration = Callable[[str], dict[str, Any]]  # a shipped generation's name -> its profile document


def derive_seed(base: int, replication: int) -> int:
    """The seed of one replication: a 63-bit hash of the base seed and the replication number.

    >>> derive_seed(0, 0) == derive_seed(0, 0) != derive_seed(0, 1)
    True
    """
    digest = hashlib.sha256(f"tpufleet-sweep/{base}/{replication}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def build(
    doc: Mapping[str, Any],
    file: str,
    stem: str,
    read_input: ReadInput,
    shipped: dict[str, Any],
    read_generation: ReadGeneration | None = None,
    code: str = "",
) -> SweepSpec:
    """Check and expand a sweep spec's mapping (already checked against SPEC_SCHEMA; `file` names it, `stem` is
    its default name); BadStateFile naming file, field and value on the first problem. `read_input` gives the
    mapping of an input file a point names, `shipped` what the runs default to, `read_generation` the profile
    document of a generation a point names (they go to the runs in ``shipped["generations"]``), `code` the version
    of the code that runs the points (a point's key holds it, so `--resume` never takes a point another version
    ran).

    Everything is checked before any run: the number of runs (counted from the grid's axes before a point is
    built), every value, the plot's figure and shape, and every point's simulation inputs."""
    simulation: P.Simulation = doc["simulation"]
    fixed = _checked(file, simulation, "fixed", doc.get("fixed", {}))
    entries = [_checked(file, simulation, f"points.{i}", e) for i, e in enumerate(doc.get("points", []))]
    grid = _grid(file, simulation, doc.get("grid", {}))
    _check_overlap(file, entries, grid, fixed)
    if not grid and not entries:
        raise BadStateFile(file, "grid", doc.get("grid", NO_VALUE), "nothing to sweep: give grid values or points")
    swept = tuple(dict.fromkeys([*grid, *(k for e in entries for k in e)]))
    base_seed = int(doc.get("seed", 0))
    seeds = tuple(derive_seed(base_seed, r) for r in range(int(doc.get("seeds", 1))))
    _check_runs(file, "grid" if grid else "points", [len(entries) or 1, *map(len, grid.values())], len(seeds))
    combos = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    unset = dict.fromkeys(swept)  # a point that does not set a swept parameter shows it as null
    merged = [{**unset, **P.DEFAULTS[simulation], **fixed, **e, **c} for e in (entries or [{}]) for c in combos]
    inputs = _read_inputs(read_input, merged)
    generations = _read_generations(file, read_generation, merged)
    if generations:
        shipped = {**shipped, "generations": generations}
    metric, young_daly_for = _plot(file, simulation, doc.get("plot", {}), merged, shipped)
    points = tuple(Point(i, p, point_key(simulation, p, inputs, seeds, code)) for i, p in enumerate(merged))
    _check_distinct(file, points, "points" if entries else "grid")
    _check_points(file, simulation, points, inputs, shipped, "points" if entries else "grid")
    return SweepSpec(
        file, doc.get("name", stem), simulation, base_seed, seeds, swept, points, metric, young_daly_for,
        inputs, shipped,
    )  # fmt: skip


def _check_runs(file: str, field: str, axes: list[int], seeds: int) -> None:
    """Refuse more than MAX_RUNS runs, counted from the number of values on each axis (entries, then each grid
    parameter): a few KB of grid can ask for 10^11 combinations, which must not be built to be counted."""
    exponent = math.fsum(math.log10(n) for n in axes)
    points = math.prod(axes) if exponent < 15 else None  # past 10^15 only the order of magnitude matters
    if points is not None and points * seeds <= MAX_RUNS:
        return
    count = f"{points:,} points" if points is not None else f"about 10^{exponent:.0f} points"
    raise BadStateFile(file, field, points, f"{count} x {seeds} seed(s) is over the limit of {MAX_RUNS:,} runs")


def _plot(
    file: str,
    simulation: P.Simulation,
    plot: Mapping[str, Any],
    points: list[dict[str, Any]],
    shipped: Mapping[str, Any],
) -> tuple[str, str | None]:
    """The figure to plot (the spec's, which some point must give, or the default) and the Young/Daly shape."""
    from tpufleet.sweep.runs import figure_names, sizes_of

    sizes = [set(sizes_of(p)) for p in points] if simulation == "availability" else []
    metric = plot["metric"] if "metric" in plot else P.default_metric(simulation, sizes)
    names = figure_names(simulation, points, shipped)
    if metric not in names:
        some = ", ".join(sorted(names)[:8]) + (", ..." if len(names) > 8 else "")
        raise BadStateFile(file, "plot.metric", metric, f"no point of this sweep gives this figure (it gives {some})")
    return metric, _young_daly_shape(file, simulation, plot.get("young_daly_for"))


def _young_daly_shape(file: str, simulation: P.Simulation, text: str | None) -> str | None:
    """`plot.young_daly_for` checked: a fleet sweep's shape, optionally followed by ``twisted``."""
    from tpufleet.shapes import parse_shape, require_allocatable

    if text is None:
        return None
    field = "plot.young_daly_for"
    if simulation != "fleet":
        raise BadStateFile(file, field, text, "only a fleet sweep has checkpoint intervals to mark")
    words = text.split()
    if not words or words[1:] not in ([], ["twisted"]):
        raise BadStateFile(file, field, text, "give a shape, optionally followed by 'twisted' (8x16x16 twisted)")
    try:
        require_allocatable(parse_shape(words[0], twisted=words[1:] == ["twisted"]))  # a slice's, as `topology`'s
    except BadInput as exc:
        raise BadStateFile(file, field, text, str(exc)) from None
    return text


def _known(file: str, simulation: P.Simulation, where: str, name: str, value: Any) -> dict[str, Any]:
    """The schema of a parameter the simulation has; BadStateFile naming `where` if it has none."""
    known = P.PARAMS[simulation]
    if name not in known:
        raise BadStateFile(file, where, value, f"unknown {simulation} parameter; known: {', '.join(known)}")
    return known[name]


def _checked(file: str, simulation: P.Simulation, where: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's parameters, each known to the simulation and within its range."""
    checked = {}
    for name, value in entry.items():
        schema = _known(file, simulation, f"{where}.{name}", name, value)
        check(schema, value, file, prefix=f"{where}.{name}")
        checked[name] = P.canonical(name, _whole(schema, value))
    return checked


def _grid(file: str, simulation: P.Simulation, grid: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
    checked = {}
    for name, values in grid.items():
        schema = _known(file, simulation, f"grid.{name}", name, values)
        if not values:
            raise BadStateFile(file, f"grid.{name}", values, "no values: list at least one")
        for i, value in enumerate(values):
            check(schema, value, file, prefix=f"grid.{name}.{i}")
        checked[name] = [P.canonical(name, _whole(schema, value)) for value in values]
    return checked


def _whole(schema: Mapping[str, Any], value: Any) -> Any:
    """The value, checked against `schema`, with a float where the schema asks for an integer (``8.0``, which
    the schema admits) made an int: a count a run uses as one, a slice size that names its figures (``.8``)."""
    if isinstance(value, float) and schema.get("type") == "integer":
        return int(value)
    if isinstance(value, list) and "items" in schema:
        return [_whole(schema["items"], v) for v in value]
    for branch in schema.get("anyOf", ()):
        value = _whole(branch, value)
    return value


def _check_overlap(
    file: str, entries: list[dict[str, Any]], grid: Mapping[str, list[Any]], fixed: Mapping[str, Any]
) -> None:
    """Refuse a parameter a `points` entry sets that the grid also sets (every combination would take the grid's
    value and drop the point's), and one `fixed`, the parameters of every point, sets that a point or the grid
    sets again (which value was meant is unknown)."""
    for i, entry in enumerate(entries):
        for name in entry:
            if name in grid:
                raise BadStateFile(
                    file, f"points.{i}.{name}", entry[name], f"also set by grid.{name}: give it in one of them"
                )
            if name in fixed:
                raise BadStateFile(
                    file, f"points.{i}.{name}", entry[name], f"also set by fixed.{name}, the value of every point"
                )
    for name in grid:
        if name in fixed:
            raise BadStateFile(file, f"grid.{name}", grid[name], f"also set by fixed.{name}, the value of every point")


def _read_inputs(read_input: ReadInput, points: list[dict[str, Any]]) -> dict[str, Any]:
    """Every input file the points name, read once."""
    inputs: dict[str, Any] = {}
    for point in points:
        for param in P.FILE_PARAMS:
            name = point.get(param)
            if name is None or name in inputs:
                continue
            inputs[name] = read_input(param, name)
    return inputs


def _read_generations(
    file: str, read_generation: ReadGeneration | None, points: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The profile documents of the generations the points name, read once; BadStateFile for an unknown one."""
    docs: dict[str, dict[str, Any]] = {}
    for point in points:
        name = point.get("generation")
        if name is None or name in docs:
            continue
        if read_generation is None:
            raise BadStateFile(file, "generation", name, "no generation profiles to read here")
        try:
            docs[name] = read_generation(name)
        except BadStateFile:
            raise
        except BadInput as exc:
            raise BadStateFile(file, "generation", name, str(exc)) from None
    return docs


def point_key(
    simulation: str, params: Mapping[str, Any], inputs: Mapping[str, Any], seeds: tuple[int, ...], code: str = ""
) -> str:
    """A name for the point's work: equal keys mean equal results (parameters, input contents, seeds and `code`,
    the version of the code and shipped inputs that run it). A whole float counts as the int (``days: 1`` and
    ``days: 1.0`` are one point), as every run takes it; an input file counts by its contents, not the name it is
    given by (``a.yaml`` and ``./a.yaml`` are one point, as are two copies of one file, not one file with its
    mappings in another order)."""
    used = {p: inputs[params[p]] for p in P.FILE_PARAMS if params.get(p) is not None}
    named = {p: v for p, v in params.items() if p not in used}  # the other parameters, no file names
    if isinstance(named.get("size_mix"), Mapping):
        named["size_mix"] = _canonical_mix(named["size_mix"])
    text = json.dumps([simulation, _plain(named), seeds, code], sort_keys=True, separators=(",", ":"))
    # An input file's keys in its own order: a run draws from a mapping in that order (a workload's phases), so
    # one file with its keys in another order gives other figures and is another point.
    text += json.dumps(used, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _canonical_mix(mix: Mapping[str, Any]) -> list[list[Any]]:
    """The size mix as [shape, weight] pairs in the order given, each shape named as the run parses it (``8x4x4`` is
    ``4x4x8``), so one mix written two ways is one point; names unchanged when a name is no shape or two name one
    shape (the run refuses those). The order stays: the run draws each job's shape from the shapes in that order,
    so one mix in another order gives other figures (a key that sorted it reused them on --resume)."""
    given = [[str(text), weight] for text, weight in mix.items()]
    canonical: list[list[Any]] = []
    for text, weight in given:
        words = text.split()
        if not words or words[1:] not in ([], ["twisted"]):
            return given
        try:
            shape = parse_shape(words[0], twisted=words[1:] == ["twisted"])
        except BadInput:
            return given
        canonical.append([str(shape), weight])
    return canonical if len({shape for shape, _ in canonical}) == len(mix) else given


def _plain(value: Any) -> Any:
    """The value with every whole float (``1.0``) made an int, in lists and mappings too."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _check_distinct(file: str, points: tuple[Point, ...], where: str) -> None:
    """Refuse two points of the same work (a grid value or a point given twice): they would run twice and share
    one resume file."""
    first: dict[str, int] = {}
    for point in points:
        index = first.setdefault(point.key, point.index)
        if index != point.index:
            raise BadStateFile(
                file, where, point.params, f"points {index} and {point.index} are the same (give more seeds instead)"
            )


def _check_points(
    file: str,
    simulation: P.Simulation,
    points: tuple[Point, ...],
    inputs: Mapping[str, Any],
    shipped: Mapping[str, Any],
    where: str,
) -> None:
    """Build every point's simulation inputs now, so a bad combination is refused before any work."""
    from tpufleet.sweep.runs import check_point

    for point in points:
        try:
            check_point(simulation, point.params, inputs, shipped)
        except BadStateFile:
            raise
        except BadInput as exc:
            raise BadStateFile(file, where, point.params, f"point {point.index}: {exc}") from None
