"""`tpufleet sweep SPEC.yaml`: grids of fleet and availability simulations, serially or on a Dask cluster."""
