"""`make test` collects the doctests of every module here (--doctest-modules): `linekernel`, the compiled loop,
imports Numba at its top and is left out where Numba is not installed (the `columnar` extra, `make sweep-deps`).
tpufleet itself imports it only once Numba is found (`linescan`), so without it there is nothing there to test."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["linekernel.py"]
