"""`make test` collects the doctests of every module here (--doctest-modules): `linekernel` and `accountkernel`, the
compiled loop and helpers, import Numba at their top and are left out where Numba is not installed (the `columnar`
extra, `make sweep-deps`). tpufleet itself imports them only once Numba is found (`linescan`), so without it there is
nothing there to test."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["linekernel.py", "accountkernel.py"]
