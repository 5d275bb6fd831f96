"""An option that only means something with another is refused without it, as `show inventory --tail 5` and
`capacity --horizon 7d` (without --confidence) are, not taken and ignored unsaid."""

from __future__ import annotations

from helpers import one_line, snapshot


def test_inject_fault_seed_without_random_is_refused(fleet):
    """`inject-fault cube:c01 --seed 5` recorded the fault and ignored the seed, which only --random draws with."""
    before = snapshot(fleet.state)
    assert one_line(fleet("inject-fault", "cube:c01", "--seed", "5")) == (
        "tpufleet: error: bad option --seed: only with --random"
    )
    assert snapshot(fleet.state) == before
    assert fleet("inject-fault", "--random", "1", "--seed", "5", "--dry-run").code == 0
