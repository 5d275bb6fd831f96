"""What a use case returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpufleet.fleetstate import Change


@dataclass
class Outcome:
    data: Any  # the documented JSON result (a dict, or a list for batch commands)
    change: Change | None = None  # what to journal; None: nothing to commit
