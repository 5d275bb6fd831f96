"""Collective operations on a slice's real routing tables: an alpha-beta cost model and a link-level check."""
