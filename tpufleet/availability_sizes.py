"""`simulate-availability --cubes` and `--chips` read as the cube counts of the slice sizes simulated. Pure."""

from __future__ import annotations

from tpufleet.constants import CHIPS_PER_CUBE, CUBES_PER_POD


def parse_sizes(text: str, unit: str, pod_cubes: int = CUBES_PER_POD) -> list[int]:
    """`--cubes` or `--chips` as cube counts, sorted; BadInput naming a bad size as typed (`'0' is outside ...`)."""
    from tpufleet.errors import BadInput, shown

    sizes = _typed_sizes(text, unit)
    seen: dict[int, str] = {}
    for item, v in sizes:
        if v in seen:
            again = "" if seen[v] == item else f" (as {shown(seen[v])})"
            raise BadInput(f"bad option --{unit}: {shown(item)} is given twice{again}")
        seen[v] = item
    for item, v in sizes:
        if unit == "chips":
            _check_chips(item, v, pod_cubes)
        elif not 1 <= v <= pod_cubes:
            raise BadInput(f"bad option --cubes: {shown(item)} is outside 1-{pod_cubes} cubes (the pod's)")
    return sorted(v // CHIPS_PER_CUBE if unit == "chips" else v for _, v in sizes)


def _typed_sizes(text: str, unit: str) -> list[tuple[str, int]]:
    """The sizes of a `--cubes`/`--chips` list, each with its text as typed."""
    from tpufleet.errors import BadInput, shown

    try:
        if not text.isascii() or "_" in text:  # int() reads digits of every script, and 1_0 as 10
            raise ValueError(text)
        items = [v.strip() for v in text.split(",")]
        if "" in items and text.strip():  # an empty item is a typo (`1,,2`), not nothing
            raise ValueError(text)
        sizes = [(v, int(v)) for v in items if v]
    except ValueError:
        raise BadInput(f"bad option --{unit}: {shown(text)} is not a comma-separated list of whole numbers") from None
    if not sizes:
        raise BadInput(f"bad option --{unit}: empty list")
    return sizes


def _check_chips(item: str, chips: int, pod_cubes: int) -> None:
    """A `--chips` size: whole cubes of one pod (out of range first: 0 and -64 are multiples of 64 but no slice)."""
    from tpufleet.errors import BadInput, shown

    if not CHIPS_PER_CUBE <= chips <= pod_cubes * CHIPS_PER_CUBE:
        raise BadInput(
            f"bad option --chips: {shown(item)} is outside {CHIPS_PER_CUBE}-{pod_cubes * CHIPS_PER_CUBE} chips "
            f"(1-{pod_cubes} cubes, the pod's)"
        )
    if chips % CHIPS_PER_CUBE:
        raise BadInput(
            f"bad option --chips: {shown(item)} is not a whole number of cubes (multiples of {CHIPS_PER_CUBE})"
        )
