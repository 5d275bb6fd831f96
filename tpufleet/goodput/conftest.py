"""`make test` collects the doctests of every module here (--doctest-modules): the compiled loop and helpers import
Numba at their top (`linekernel` itself, `accountkernel` and `sumkernel` through it) and are left out where Numba is
not installed (the `columnar` extra, `make sweep-deps`). tpufleet itself imports them only once Numba is found
(`linescan`), so without it there is nothing there to test."""

import importlib.util

COMPILED = ["linekernel.py", "accountkernel.py", "sumkernel.py"]
collect_ignore = [] if importlib.util.find_spec("numba") else COMPILED
