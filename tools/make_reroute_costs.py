"""Write tpufleet/data/reroute-costs.json: the all-reduce terms of single network faults for the multi-cube
shapes of the shipped workload, under the shipped hardware profile (see tpufleet/collectives/reroute_table.py).

Run it again after changing either file: `python tools/make_reroute_costs.py` (a few minutes on two cores);
tests/test_simulate_reroute.py fails while the table is out of date.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tpufleet.collectives.profile import default_profile
from tpufleet.collectives.reroute_table import make_table
from tpufleet.state.siminputs import load_workload

OUT = Path(__file__).resolve().parents[1] / "tpufleet" / "data" / "reroute-costs.json"


def main() -> None:
    started = time.perf_counter()
    shapes = list(dict.fromkeys(shape for shape, _weight in load_workload(None).shapes))
    table = make_table(shapes, default_profile())
    OUT.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{OUT}: {len(table['shapes'])} shapes in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
