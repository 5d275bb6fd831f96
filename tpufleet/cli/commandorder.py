"""The order `tpufleet --help` lists the commands in: an operator's day, as the README's command reference has it
(set up and look, place and wire, fail and repair, the cluster, plans, simulation), not the order the modules
happen to register them in."""

from __future__ import annotations

from typing import Any

WORKFLOW = (
    "init", "state", "serve", "status", "show", "explain", "history", "diff", "report", "topology",
    "allocate", "policy", "release", "plan-xconnect", "apply-xconnect", "routes", "collective",
    "inject-fault", "clear-fault", "faults", "reschedule",
    "import", "drift", "export", "metrics",
    "plan-spares", "capacity", "plan-maintenance", "apply-maintenance", "suspects",
    "simulate-availability", "simulate-fleet", "sweep", "goodput-report",
)  # fmt: skip


def in_workflow_order(group: Any) -> None:
    """Reorder a Click group's commands (a dict, listed in its order) as WORKFLOW; any other command last, as
    registered."""
    rank = {name: i for i, name in enumerate(WORKFLOW)}
    ordered = sorted(group.commands.items(), key=lambda item: rank.get(item[0], len(WORKFLOW)))
    group.commands = dict(ordered)
