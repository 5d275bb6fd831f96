"""The hardware profile of the cost model (link bandwidth and latency, peak FLOP/s, HBM) and message sizes.

The shipped profile is ``tpufleet/data/hardware-profile.yaml`` (its figures and their public sources are in the
file); ``--profile FILE`` replaces it with a file of the same form. Every hardware number the model uses comes
from a profile, so nothing else hard-codes one.

No file is read here: the state layer reads a profile file (``tpufleet.state.profiles.read_profile``) and hands
`profile_from_doc` its document. `SHIPPED_DOC` is the shipped file's document as decoded, so the core and the
simulator have the default without reading anything; a test holds it equal to the file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpufleet.constants import DIMS, GiB, KiB, MiB
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile, shown
from tpufleet.text import PLAIN_NUMBER

if TYPE_CHECKING:
    from tpufleet.generations import Generation

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "hardware-profile.yaml"  # named, never opened here
SCHEMA_VERSION = 1
# A message size beyond this is a typo, not a collective (1 PiB per chip, 30,000 times a TPUv4's HBM).
MAX_BYTES = 1 << 50
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": 1024 * GiB,
    "pb": 10**15,
    "pib": 1 << 50,  # the limit itself, so the unit that names it is accepted
}
# ASCII digits only: a Unicode \d would read an Arabic-Indic zero after a 1 as 10
_SIZE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", re.ASCII)


@dataclass(frozen=True)
class Dcn:
    """The data-centre network between slices (multislice jobs), as a host sees it."""

    host_bandwidth: float  # bytes/s one host sends (and receives) over the DCN, one direction
    latency: float  # seconds per message between two hosts, on top of its bandwidth term
    pod_oversubscription: float = 1.0  # between pods, each host gets host_bandwidth / this
    source: str = "profile"  # where the figures came from: this profile, or the shipped one


@dataclass(frozen=True)
class Profile:
    name: str
    link_bandwidth: float  # bytes/s, one link, one direction
    hop_latency: float  # seconds per hop
    peak_flops: float  # FLOP/s per chip
    hbm_bytes: float
    hbm_bandwidth: float  # bytes/s per chip
    dimension_bandwidth: dict[str, float] = field(default_factory=dict)  # per-dimension override
    sources: tuple[str, ...] = ()
    file: str = ""
    dcn: Dcn | None = None  # None only while the shipped profile itself is being read

    def dcn_link(self) -> Dcn:
        """The data-centre network figures: this profile's, else (a file without a `dcn` section) the shipped ones."""
        if self.dcn is not None:
            return self.dcn
        return replace(default_profile().dcn_link(), source=f"shipped profile ({SHIPPED.name})")

    def bandwidth(self, dim: int) -> float:
        """Bytes/s of one link of dimension `dim` (0, 1, 2), one direction."""
        return self.dimension_bandwidth.get(DIMS[dim], self.link_bandwidth)


def parse_size(text: str, what: str = "--bytes") -> int:
    """Bytes from '1GiB', '512MiB', '4096', '1.5e9' (decimal units kB..PB, binary KiB..PiB).

    >>> parse_size("1GiB"), parse_size("512MiB"), parse_size("4096"), parse_size("1.5GB"), parse_size("1.1KiB")
    (1073741824, 536870912, 4096, 1500000000, 1126)
    """
    m = _SIZE.fullmatch(text or "")
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise BadInput(f"bad option {what}: {shown(text)} is not a size (e.g. 1GiB, 512MiB, 4096)")
    if _in_bits(m.group(2)):
        raise BadInput(
            f"bad option {what}: {shown(text)} is in bits (a small b after a capital prefix, as in Gb/s); "
            f"give bytes, e.g. {m.group(1)}{m.group(2)[:-1]}B"
        )
    value = float(m.group(1)) * _UNITS[unit]
    if not math.isfinite(value) or value > MAX_BYTES:
        raise BadInput(f"bad option {what}: {shown(text)} is over the limit of {MAX_BYTES} bytes (1 PiB)")
    if value < 1:
        raise BadInput(f"bad option {what}: {shown(text)} must be at least 1 byte")
    if _UNITS[unit] == 1 and value != int(value):  # with a unit, the nearest byte (1.1GiB); without, no fraction
        raise BadInput(f"bad option {what}: {shown(text)} is not a whole number of bytes")
    return round(value)


def _in_bits(unit: str) -> bool:
    """A unit written the way bits are (Mb, Gb, Kib): a capital prefix, then a small b. Read as bytes it was a size
    eight times too large; units all in small letters (mb, gb) stay bytes, as they were always read."""
    return len(unit) > 1 and unit.endswith("b") and any(c.isupper() for c in unit[:-1])


# The range each figure may take: wide enough for any real machine, narrow enough that no figure turns a model's
# time into 0 or infinity (1e-300 bytes/s is a positive number, and a nonsense one).
_BANDWIDTH = (1e6, 1e15)  # bytes/s
_RANGES = {
    "ici.link_bandwidth": _BANDWIDTH,
    "ici.dimension_bandwidth": _BANDWIDTH,
    "ici.hop_latency": (1e-12, 1.0),
    "chip.peak_flops": (1e9, 1e18),
    "chip.hbm_bytes": (1e6, 1e15),
    "chip.hbm_bandwidth": _BANDWIDTH,
    "dcn.host_bandwidth": _BANDWIDTH,
    "dcn.latency": (1e-12, 1.0),
    "dcn.pod_oversubscription": (1.0, 1000.0),
}


def _number(doc: dict[str, Any], key: str, file: str, where: str) -> float:
    raw = value = doc.get(key)
    path = f"{where}.{key}"
    if key not in doc:
        raise BadStateFile(file, path, NO_VALUE, "is required")
    if isinstance(value, str):  # YAML 1.1 reads 50e9 and 50.0e9 (no sign in the exponent) as text
        if not PLAIN_NUMBER.fullmatch(value):  # float() also takes "5_0e9", other scripts' digits, spaces
            raise BadStateFile(file, path, raw, "must be a number")
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadStateFile(file, path, raw, "must be a number")
    # a number written as text is named as the number it is read as (1e308 -> 1e+308), as YAML's own floats are
    if not _finite(value) or value <= 0:
        raise BadStateFile(file, path, value, "must be a positive number")
    lo, hi = _RANGES.get(where if where == "ici.dimension_bandwidth" else path, (0.0, math.inf))
    if not lo <= value <= hi:
        raise BadStateFile(file, path, value, f"must be from {lo:g} to {hi:g}")
    return float(value)


def _section(doc: dict[str, Any], key: str, file: str, allowed: set[str]) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        raise BadStateFile(file, key, value, "must be a mapping")
    for k in value:
        if k not in allowed:
            raise BadStateFile(file, f"{key}.{k}", value[k], f"unknown key; expected {', '.join(sorted(allowed))}")
    return value


def profile_from_doc(doc: object, file: str, shipped: bool = False) -> Profile:
    """Validate a loaded profile document; BadStateFile naming file, field and value. The `shipped` profile must
    have the `dcn` section the others may leave out."""
    if not isinstance(doc, dict):
        raise BadStateFile(file, "", doc, "must be a mapping")
    allowed = {"schema_version", "name", "ici", "chip", "dcn", "sources"}
    for k in doc:
        if k not in allowed:
            raise BadStateFile(file, str(k), doc[k], f"unknown key; expected {', '.join(sorted(allowed))}")
    version = doc.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:  # not `true` nor 1.0, which equal 1 in Python
        raise BadStateFile(file, "schema_version", doc.get("schema_version", NO_VALUE), f"must be {SCHEMA_VERSION}")
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BadStateFile(file, "name", name, "must be a non-empty string")
    ici = _section(doc, "ici", file, {"link_bandwidth", "hop_latency", "dimension_bandwidth"})
    chip = _section(doc, "chip", file, {"peak_flops", "hbm_bytes", "hbm_bandwidth"})
    per_dim = ici.get("dimension_bandwidth") or {}
    if not isinstance(per_dim, dict):
        raise BadStateFile(file, "ici.dimension_bandwidth", per_dim, "must be a mapping of x, y, z to bytes/s")
    for k in per_dim:
        if k not in DIMS:
            raise BadStateFile(file, f"ici.dimension_bandwidth.{k}", per_dim[k], "unknown dimension; expected x, y, z")
    sources = doc.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise BadStateFile(file, "sources", sources, "must be a list of strings")
    return Profile(
        name=name.strip(),
        link_bandwidth=_number(ici, "link_bandwidth", file, "ici"),
        hop_latency=_number(ici, "hop_latency", file, "ici"),
        peak_flops=_number(chip, "peak_flops", file, "chip"),
        hbm_bytes=_number(chip, "hbm_bytes", file, "chip"),
        hbm_bandwidth=_number(chip, "hbm_bandwidth", file, "chip"),
        dimension_bandwidth={str(k): _number(per_dim, k, file, "ici.dimension_bandwidth") for k in per_dim},
        sources=tuple(sources),
        file=file,
        dcn=_dcn(doc, file, shipped),
    )


def _dcn(doc: dict[str, Any], file: str, shipped: bool) -> Dcn | None:
    """The optional `dcn` section. A file written before it existed models DCN with the shipped figures (the
    shipped profile must have it)."""
    if "dcn" not in doc:
        if shipped:
            raise BadStateFile(file, "dcn", NO_VALUE, "is required in the shipped profile")
        return None
    dcn = _section(doc, "dcn", file, {"host_bandwidth", "latency", "pod_oversubscription"})
    over = _number(dcn, "pod_oversubscription", file, "dcn") if "pod_oversubscription" in dcn else 1.0
    return Dcn(_number(dcn, "host_bandwidth", file, "dcn"), _number(dcn, "latency", file, "dcn"), over)


# The document of the shipped `tpufleet/data/hardware-profile.yaml` (the file gives each figure's source and
# reasoning; `tests/test_collective.py` holds the two equal).
SHIPPED_DOC: dict[str, Any] = {
    "schema_version": 1,
    "name": "tpu-v4",
    "ici": {"link_bandwidth": 50.0e9, "hop_latency": 1.0e-6, "dimension_bandwidth": {}},
    "chip": {"peak_flops": 275.0e12, "hbm_bytes": 34359738368, "hbm_bandwidth": 1200.0e9},
    "dcn": {"host_bandwidth": 25.0e9, "latency": 1.0e-5, "pod_oversubscription": 1.0},
    "sources": [
        "Cloud TPU v4 documentation, https://cloud.google.com/tpu/docs/v4 (peak compute, HBM, all-reduce bandwidth "
        "per pod)",
        "Resiliency at Scale: Managing Google's TPUv4 Machine Learning Supercomputer, NSDI 2024, section 2 (50 GB/s "
        "per ICI link per direction)",
        "Exploring the limits of concurrency in ML training on Google TPUs, MLSys 2021, section 3.3 "
        "(dimension-by-dimension all-reduce)",
        "Cloud TPU Multislice overview, https://cloud.google.com/tpu/docs/multislice-introduction (slices exchange "
        "data through their hosts over the DCN)",
        "Cloud TPU v5p documentation, https://cloud.google.com/tpu/docs/v5p (DCN bandwidth 50 Gbps per chip; the v4 "
        "DCN figure is an assumption based on it)",
        "Cloud TPU v5e documentation, https://cloud.google.com/tpu/docs/v5e (DCN bandwidth 6.4 Tbps per 256-chip pod)",
    ],
}

_DEFAULT: list[Profile] = []


def default_profile() -> Profile:
    """The shipped profile (decoded once per process from `SHIPPED_DOC`)."""
    if not _DEFAULT:
        _DEFAULT.append(profile_from_doc(SHIPPED_DOC, str(SHIPPED), shipped=True))
    return _DEFAULT[0]


def for_generation(base: Profile, gen: Generation) -> Profile:
    """`base` (the shipped TPU v4 profile) with a generation's own figures: ICI link bandwidth, peak BF16 FLOP/s,
    HBM size and bandwidth, and its DCN bandwidth per host (per chip x chips per host). Latencies, the DCN's
    oversubscription and per-dimension overrides are not in a generation profile: they stay `base`'s (said in
    `sources`)."""
    dcn = replace(
        base.dcn_link(),
        host_bandwidth=gen.dcn_chip_bandwidth * gen.chips_per_host,
        source=f"generation {gen.name} (latency and oversubscription: {base.name})",
    )
    return replace(
        base,
        name=gen.name,
        link_bandwidth=gen.ici_link_bandwidth,
        peak_flops=gen.peak_bf16_flops,
        hbm_bytes=float(gen.hbm_bytes),
        hbm_bandwidth=gen.hbm_bandwidth,
        dimension_bandwidth={},
        sources=(f"generation profile {gen.name} (bandwidths, FLOP/s, HBM)", f"{base.name} (latencies)"),
        file="",
        dcn=dcn,
    )


def _finite(value: float) -> bool:
    """Whether `value` is a finite float or an int a float can hold (YAML reads 1 followed by 400 zeros as an int)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
