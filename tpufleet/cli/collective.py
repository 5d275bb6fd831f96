"""`tpufleet collective SLICE --op ... --bytes SIZE`: time and bus bandwidth of a collective on the slice's tables."""
