"""The README's table of the accelerator generations (pure): one column per generation, one row per figure of
`generations.FIGURES` with its source's note number (**A** for an assumption), and the shapes each accepts,
counted from its rule. `python -m tpufleet.cli.generations_table` prints it; a test holds README.md to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from tpufleet.generations import Generation, RepairHours, Vec, is_assumption, shape_text

# ---- the README's table of the generations --------------------------------------------------------------------
TABLE_START: Final = "<!-- generations-table:start -->"
TABLE_END: Final = "<!-- generations-table:end -->"
# Each figure of FIGURES: its row label and how its value reads.
_ROWS: Final[Mapping[str, tuple[str, Callable[[Generation], str]]]] = {
    "gke_accelerator": ("GKE accelerator label", lambda g: f"`{g.gke_accelerator}`"),
    "machine_type": ("machine type", lambda g: f"`{g.machine_type}`"),
    "host_shape": ("chips per host (VM)", lambda g: f"{g.chips_per_host} ({shape_text(g.host_shape)})"),
    "pod.chips": ("chips per pod", lambda g: f"{g.pod_chips:,}"),
    "pod.cubes": ("cubes (4x4x4) per pod", lambda g: f"{g.pod_cubes:,}"),
    "pod.ocs": ("OCS per pod", lambda g: f"{g.ocs_count}"),
    "pod.ocs_ports": ("ports per OCS", lambda g: f"{g.ocs_ports}"),
    "slices.max_cubes": ("largest slice", lambda g: f"{g.max_slice_cubes} cubes"),
    "slices.max_side": ("longest side", lambda g: f"{g.max_side}"),
    "slices.side_order": (
        "side order",
        lambda g: "any" if g.side_order == "any" else "A <= B <= C",
    ),
    "slices.subcube_shapes": ("sub-cube shapes", lambda g: ", ".join(shape_text(s) for s in g.subcube_shapes)),
    "slices.twisted": (
        "twisted families",
        lambda g: ", ".join(f"({f})" for f in g.twist_families) or "none",
    ),
    "ici.links_per_chip": ("ICI links per chip", lambda g: f"{g.ici_links_per_chip}"),
    "ici.link_bandwidth": ("ICI bandwidth per link, one direction", lambda g: _gb(g.ici_link_bandwidth)),
    "chip.peak_bf16_flops": ("peak BF16 per chip", lambda g: f"{g.peak_bf16_flops / 1e12:,g} TFLOP/s"),
    "chip.hbm_bytes": ("HBM per chip", lambda g: f"{g.hbm_bytes / 2**30:,g} GiB"),
    "chip.hbm_bandwidth": ("HBM bandwidth per chip", lambda g: _gb(g.hbm_bandwidth)),
    "dcn.chip_bandwidth": (
        "DCN per chip, one direction",
        lambda g: f"{g.dcn_chip_bandwidth * 8 / 1e9:,g} Gb/s",
    ),
    "faults.host_per_day": ("host failures", lambda g: _pct(g.faults.host_per_day)),
    "faults.link_per_day": ("optical link failures", lambda g: _pct(g.faults.link_per_day)),
    "faults.ocs_per_day": ("OCS failures", lambda g: _pct(g.faults.ocs_per_day)),
    "faults.drain_per_day": ("planned host drains", lambda g: _pct(g.faults.drain_per_day)),
    "faults.repair_hours": ("repair times", lambda g: _hours(g.faults.repair_hours)),
}


def _pct(rate: float) -> str:
    return f"{rate * 100:g}% a day"


def _hours(h: RepairHours) -> str:
    return f"host {h.host:g} h, link {h.link:g} h, OCS {h.ocs:g} h, drain {h.drain:g} h"


def _gb(value: float) -> str:
    return f"{value / 1e9:,.4g} GB/s"


def markdown_table(gens: Sequence[Generation]) -> str:
    """The Markdown table of the generations (one column each, one row per figure of FIGURES, and the shapes each
    accepts, counted from its rule), every figure followed by its source's note number, **A** marking an
    ASSUMPTION; the notes (each source or assumption once, in full) under the table.

    >>> from tpufleet.generations_document import _EXAMPLE, from_document
    >>> text = markdown_table([from_document(_EXAMPLE, "example.yaml")])
    >>> text.splitlines()[2]
    '| GKE accelerator label | `tpu7x` [1] |'
    >>> text.splitlines()[-1]
    '- [1] example'
    """
    notes: dict[str, int] = {}
    lines = ["| figure | " + " | ".join(g.name for g in gens) + " |", "|---" * (len(gens) + 1) + "|"]
    for path, (label, text) in _ROWS.items():
        cells = []
        for gen in gens:
            source = gen.source(path)
            number = notes.setdefault(source, len(notes) + 1)
            mark = " **A**" if is_assumption(source) else ""
            cells.append(f"{text(gen)}{mark} [{number}]")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    counts = [_shape_counts(g) for g in gens]
    lines.append(
        "| accepted slice shapes (sides A <= B <= C), counted from the rule (N twisted: N of them may also be twisted, "
        "a shape of its own in `capacity`) | " + " | ".join(counts) + " |"
    )
    lines += ["", "**A**: an assumption (no public figure), its reasoning in the note. Notes:", ""]
    lines += [f"- [{n}] {_cell(source)}" for source, n in notes.items()]
    return "\n".join(lines)


def _shape_counts(gen: Generation) -> str:
    """The shapes the rule accepts, each once with its sides in canonical order (8x4x4 is 4x4x8, as `allocate`
    reads it), and how many of them may be twisted; where the rule takes the sides in any order (v4), also both
    counts with the sides in every order (xpk's list).

    >>> from tpufleet.generations_document import _EXAMPLE, from_document
    >>> _shape_counts(from_document(_EXAMPLE, "example.yaml"))
    '432 (7 twisted)'
    """
    ordered: list[Vec] = [(a, b, c) for a, b, c in map(sorted, gen.accepted_shapes())]
    text = f"{len(set(ordered)):,} ({len(gen.accepted_shapes(twisted=True))} twisted)"
    if len(set(ordered)) == len(ordered):
        return text
    return f"{text}; in any order {len(ordered):,} ({sum(map(gen.twistable, ordered))} twisted)"


def _cell(text: str) -> str:
    """A source as one line of Markdown: no line break, no table bar."""
    return " ".join(text.split()).replace("|", "\\|")


def between_markers(text: str) -> str | None:
    """What a document holds between TABLE_START and TABLE_END (without the blank lines around it), None without
    both markers in that order."""
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        return None
    return text[start + len(TABLE_START) : end].strip("\n")
