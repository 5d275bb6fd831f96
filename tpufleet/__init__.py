"""tpufleet: a digital twin and planner for OCS-reconfigurable TPU pods."""

__version__ = "0.1.0"
