"""A real fleet in and out: Kubernetes/GKE node inventories, Kueue and Slurm topologies, Slice objects, Prometheus."""
