"""The shipped reroute-cost table, ``tpufleet/data/reroute-costs.json``: read once per process, checked, handed in.

The fleet simulation looks up the all-reduce terms of a job's slice, healthy and around one OCS or optical-link
fault, in this table instead of modelling them (`tpufleet.simulation.reroute`; `python tools/make_reroute_costs.py`
writes it). The core opens no file: `simulate-fleet` and the sweep's runs get the table from here (the sweep
sends it to its workers with the other shipped inputs).

>>> sorted(shipped_costs()["shapes"])[:2]
['4x4x4', '4x4x8/twisted']
"""

from __future__ import annotations

import functools

from tpufleet.simulation.reroute import TABLE, RerouteCosts, costs_from_doc
from tpufleet.state.inputfiles import load_json_file

__all__ = ["TABLE", "shipped_costs"]


@functools.cache
def shipped_costs() -> RerouteCosts:
    """The shipped table's document (BadStateFile naming the file and field if it is malformed)."""
    return costs_from_doc(load_json_file(TABLE, "reroute-cost table"), str(TABLE))
