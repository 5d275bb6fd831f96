"""ML Productivity Goodput (the ML Productivity Goodput paper): MPG = SG x RG x PG from job event logs."""

from typing import Literal, get_args

# The event logs `goodput-report` reads: tpufleet's own, or the ml-goodput package's export.
# (Here, not in `events`, so that the command line names the choices without importing the readers.)
LogFormat = Literal["native", "ml-goodput"]
LOG_FORMATS: tuple[LogFormat, ...] = get_args(LogFormat)
Period = Literal["day", "week"]  # --period: UTC days or ISO weeks
PERIODS: tuple[Period, ...] = get_args(Period)
