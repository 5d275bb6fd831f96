"""Build the kernels of `tpufleet.goodput.prebuilt` ahead of time: ``python -m tpufleet.state.prebuiltbuild DIRECTORY
NAME`` writes the extension module NAME into DIRECTORY, with Numba's ahead-of-time compiler (``numba.pycc``).
`prebuiltcache` runs it in a process of its own (the compiler's output and failures stay there) and imports what
it wrote.

Built for a generic CPU of this machine's kind, as ``numba.pycc`` builds by default: a module in a cache shared by
machines of one kind runs on each. The wrappers release the interpreter's lock while a function runs, as the JIT's
``nogil`` does (the reading's threads run the loop side by side); ``numba.pycc``'s own flags would hold it.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

from tpufleet.goodput.prebuilt import EXPORTS


def build(directory: str, name: str) -> None:
    """Compile EXPORTS into the extension module `name` in `directory` (its file named as Python imports it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numba.pycc's pending deprecation: without it, the JIT is used)
        pycc: Any = importlib.import_module("numba.pycc")
    pycc_compiler: Any = importlib.import_module("numba.pycc.compiler")
    pycc_compiler.Flags = _releasing_the_lock(importlib.import_module("numba.core.compiler").Flags)
    cc = pycc.CC(name)
    cc.output_dir = directory
    cc.verbose = False
    for export, (module, function, signature) in EXPORTS.items():
        dispatcher = getattr(importlib.import_module(f"tpufleet.goodput.{module}"), function)
        cc.export(export, signature)(dispatcher.py_func)
    cc.compile()


def _releasing_the_lock(flags: Any) -> Any:
    """Numba's compiler flags, with the wrappers releasing the interpreter's lock (the JIT's ``nogil``)."""

    class Releasing(flags):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    return Releasing


def main(directory: str, name: str) -> int:
    """Build `name`, unless the sources found here are not those it names (another tpufleet's on the path)."""
    from tpufleet.state import prebuiltcache

    if prebuiltcache.module_name() != name:
        print(f"the sources here are {prebuiltcache.module_name()}'s, not {name}'s", file=sys.stderr)
        return 1
    build(directory, name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
