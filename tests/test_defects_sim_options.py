"""Options of the simulations and the collective model that were read as something else than given."""

from __future__ import annotations

import pytest

from helpers import one_line


@pytest.mark.parametrize("suffix", ["/", "/."])
def test_a_plot_name_ending_in_a_slash_is_refused_and_nothing_is_written(cli, tmp_path, monkeypatch, suffix):
    """`--plot dir/x.png/` wrote the file dir/x.png (the trailing slash was dropped)."""
    monkeypatch.chdir(tmp_path)
    given = f"x.png{suffix}"
    r = cli("simulate-availability", "--trials", "10", "--plot", given, state=False)
    assert one_line(r, 2).startswith(f"tpufleet: error: bad option --plot '{given}'")
    assert not (tmp_path / "x.png").exists()
