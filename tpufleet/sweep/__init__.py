"""What-if sweeps: a grid of simulation points with seeded replications, run serially or on Dask."""
