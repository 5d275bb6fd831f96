"""Where the routing core may keep and find the results of its slowest search: the wild-first choices.

The core does no I/O: a caller that has a place for them (the CLI: the state directory's ``cache/``) installs a
`ChoiceCache` around its work with `using`, and `wild_first` asks `current()`. An entry is only ever a hint: the
choices read back are checked (each a live first hop to a neighbour whose own route is intact, every broken pair
covered) before they are applied, and the tables and every figure are then worked out from them as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# Part of every key: a change to how wild-first chooses must bump it, so no entry of the old choices is used.
CHOICES_VERSION = 1


class ChoiceCache(Protocol):
    def get(self, key: str) -> npt.NDArray[np.int8] | None: ...

    def put(self, key: str, choices: npt.NDArray[np.int8]) -> None: ...


_current: ContextVar[ChoiceCache | None] = ContextVar("tpufleet_choice_cache", default=None)


def current() -> ChoiceCache | None:
    return _current.get()


@contextmanager
def using(cache: ChoiceCache | None) -> Iterator[None]:
    token = _current.set(cache)
    try:
        yield
    finally:
        _current.reset(token)


def key(*parts: object) -> str:
    """A digest of everything the choices depend on (arrays by their dtype, shape and bytes)."""
    import hashlib

    import numpy as np

    h = hashlib.blake2b(digest_size=20)
    h.update(f"wild-first choices v{CHOICES_VERSION}".encode())
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(f"|{part.dtype.str}{part.shape}|".encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(f"|{part!r}|".encode())
    return h.hexdigest()
