"""`tpufleet import ...` and `tpufleet export ...`: a real fleet in (Kubernetes/GKE) and out (Kueue, Slurm, Prometheus)."""
