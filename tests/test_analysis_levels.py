"""`analysis.Levels`: pairs grouped by hop count, from one stable sort (on 8-bit keys when the hops fit)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tpufleet.routing.analysis import Levels


@given(hnp.arrays(np.int16, st.tuples(st.integers(1, 12), st.integers(1, 12)), elements=st.integers(-1, 300)))
def test_levels_are_the_stable_order_of_the_hop_counts(L):
    levels = Levels(L)
    flat = L.ravel()
    assert np.array_equal(levels.order, np.argsort(flat, kind="stable"))
    for k in range(-1, int(flat.max()) + 1):
        assert np.array_equal(levels.at(k), np.flatnonzero(flat == k))
        assert np.array_equal(levels.pos[levels.at(k)], np.arange(len(levels.at(k))))
