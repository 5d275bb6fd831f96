"""`tpufleet serve`: the fleet live over HTTP for dashboards, wall screens, Prometheus and Alertmanager.

Part of the shell (beside `tpufleet.cli`): it calls the use cases of `tpufleet.ops` and reads the state through
`tpufleet.state`; nothing below imports it. Needs the `serve` extra (Starlette and uvicorn).
"""
