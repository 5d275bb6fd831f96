"""The hardware's numbers, the axes and the units, each defined once ("Resiliency at Scale" section 2-3).

What no generation changes (the 4x4x4 cube, a chip's six ports, a host of 2x2x1 chips, the OCS per face position,
the hardware's 3 VCs, the units) is here; a pod's size, its OCS ports and its chips' figures are its generation's
(`tpufleet/data/generations/`). The few figures of the built-in TPU v4 model, the pod of every state without a
generation, are grouped below and equal the tpu-v4 profile's (`tests/test_generations.py` holds them equal).
Every other module imports them from here; a literal 16, 48, 64 or 96 (or 3600, 86400, 2**20) elsewhere is a bug
waiting to drift.

>>> CHIPS_PER_CUBE, MACHINES_PER_CUBE, OPTICAL_LINKS_PER_CUBE, OCS_PER_POD
(64, 16, 96, 48)
>>> OPTICAL_LINKS_PER_CUBE * CUBES_PER_POD  # optical links in a pod
6144
>>> OPPOSITE, DAY // HOUR, MiB
((1, 0, 3, 2, 5, 4), 24, 1048576)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    # The array aliases of annotations (import them under TYPE_CHECKING): two integer meanings, two names.
    Int64Array = npt.NDArray[np.int64]  # chip ids, ring orders, counts: always int64
    IntArray = npt.NDArray[np.signedinteger[Any]]  # indices of any signed width (int8 to int64, chosen by size)
    BoolArray = npt.NDArray[np.bool_]

DIMS: Final = ("x", "y", "z")
DIRECTIONS: Final = ("+x", "-x", "+y", "-y", "+z", "-z")  # a chip's six ICI ports, in port-number order
# The port facing the other way, by port number: OPPOSITE[p] is -x for +x, +x for -x, ...
OPPOSITE: Final = tuple(DIRECTIONS.index({"+": "-", "-": "+"}[d[0]] + d[1]) for d in DIRECTIONS)
POLARITIES: Final = ("out", "in")  # out links leave the + face, in links enter the - face

CUBE_EDGE: Final = 4  # a cube is a 4x4x4 electrical mesh of chips
CHIPS_PER_CUBE: Final = CUBE_EDGE**3
CHIPS_PER_MACHINE: Final = 4  # a machine (host) is a 2x2x1 block of chips
MACHINES_PER_CUBE: Final = CHIPS_PER_CUBE // CHIPS_PER_MACHINE
FACE_LINKS: Final = CUBE_EDGE * CUBE_EDGE  # optical links on one face of a cube
OPTICAL_LINKS_PER_CUBE: Final = 2 * len(DIMS) * FACE_LINKS  # 6 faces x 16
# Directed electrical links inside a cube: per dimension, 3 hops x 16 rows x 2 directions.
ICI_LINKS_PER_CUBE: Final = len(DIMS) * (CUBE_EDGE - 1) * FACE_LINKS * 2

OCS_PER_DIM: Final = FACE_LINKS  # OCS {d, i} serves face index i of dimension d
OCS_PER_POD: Final = len(DIMS) * OCS_PER_DIM

# The built-in TPU v4 model (a pod without a generation): the tpu-v4 profile's figures.
CUBES_PER_POD: Final = 64  # its default pod; a fleet may declare fewer or more (up to the OCS's free ports)
OCS_PORTS: Final = 136  # a Palomar OCS: 136 ports, half on the north side, half on the south
PORTS_PER_SIDE: Final = OCS_PORTS // 2
# A static (non-reconfigurable) pod, the twin the availability study compares with: one fixed torus of 4x4x4 cubes.
STATIC_CUBE_GRID: Final = (4, 4, 4)

MAX_PODS: Final = 64
# The longest text kept with a fault (its reason) or a slice (why it was evicted, why its tables are stale):
# the state stays proportional to the fleet, whatever an input file or a node list carries.
MAX_REASON_CHARS: Final = 1024
# Alertmanager alerts that opened a fault, remembered in the state (`alert_marks`) until their resolution clears it,
# so that a repeat does not open the fault again once it was cleared by hand and left the state (the state keeps the
# 128 most recently cleared faults): the most recent ones only. Alertmanager re-sends a firing alert every
# `repeat_interval` (4 h by default) for as long as it fires; a thousand other alerts opening faults between two
# repeats is far more than a fleet sees, and the state stays bounded (about 150 KB of it at most).
ALERT_MARKS_KEPT: Final = 1024
# A fault id is "f" and the fault's number, at most 18 digits (an id of at most 19 characters): the number stays a
# signed 64-bit integer wherever it is read back (a database, a metric label).
MAX_FAULT_NUMBER: Final = 10**18 - 1
MAX_FAULT_ID_CHARS: Final = len(f"f{MAX_FAULT_NUMBER}")
MAX_NAME_CHARS: Final = 64  # a slice or job name (it becomes a file name and a Kubernetes label value)
# The largest slice the tool plans, routes or measures: 16,384 chips (a TPUv4 pod is 4,096, a TPU7x pod 9,216).
MAX_SLICE_CHIPS: Final = 16384
MAX_TABLE_CAPACITY: Final = 1 << 20  # destinations a chip's sparse table may hold (`--table-capacity`)

# Virtual channels per ICI link in the hardware ("turns, datelines, balance"): routing tables that need more
# cannot be loaded on a slice.
HARDWARE_VCS: Final = 3

# Units. Times are seconds and sizes bytes everywhere; these name the multiples.
MINUTE: Final = 60
HOUR: Final = 60 * MINUTE
DAY: Final = 24 * HOUR
WEEK: Final = 7 * DAY
# simulated days of `simulate-fleet` and of a sweep's fleet points: at least a quarter hour, at most ten years
MIN_SIM_DAYS: Final = 0.01
MAX_SIM_DAYS: Final = 3650
HOURS_PER_DAY: Final = DAY // HOUR
KiB: Final = 1024
MiB: Final = 1024 * KiB
GiB: Final = 1024 * MiB

# why a rescheduled slice's tables are stale: made on the cubes it left, they route it nowhere now (whatever made
# them stale before; `explain` gives its `routes` before any clear)
MOVED_TABLES_REASON: Final = "rescheduled: made before the move"
MAX_AFTER: Final = 1000  # `capacity --after`: cube failures to plan for, more than any pod has cubes
# the files `routes --out` writes (`--format`; else the one the file's suffix names, else npz)
EXPORT_FORMATS: Final = ("npz", "json", "ibroute")
