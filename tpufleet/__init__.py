"""tpufleet: a digital twin and planner for OCS-reconfigurable TPU pods."""

__version__ = "0.3.0.dev0"
