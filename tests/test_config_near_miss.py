"""A config file setting misspelt (`stat`, `lock-timeout`) or an output format near one (`jsn`): refused (exit 2)
naming the file, the key and the value, and the setting or format it may mean."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize(
    "text, meant",
    [('stat = "x"\n', "state"), ("lock-timeout = 5\n", "lock_timeout"), ('output = "jsn"\n', "json")],
)
def test_a_near_miss_in_the_config_file_names_the_setting_meant(fleet, tmp_path, monkeypatch, text, meant):
    config = tmp_path / "config.toml"
    config.write_text(text)
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    before = snapshot(fleet.state)
    line = one_line(fleet("status"), 2)
    assert str(config) in line and f"did you mean {meant}?" in line
    assert snapshot(fleet.state) == before


def test_a_setting_like_none_gets_no_guess(fleet, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text("colour = 1\n")
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    assert "did you mean" not in one_line(fleet("status"), 2)


def test_a_config_file_that_is_no_toml_shows_none_of_its_text(fleet, tmp_path, monkeypatch):
    """A syntax error quoted the file's first 40 characters as its value: a database URL's password with them."""
    config = tmp_path / "config.toml"
    config.write_text('state = "postgresql://ops:s3cret@db/fleet"\noutput = json\n')  # json unquoted: no TOML
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    for extra in ([], ["-o", "json"]):
        r = fleet("status", *extra)
        assert r.code == 2 and str(config) in r.err and "not valid TOML" in r.err and "line 2" in r.err
        assert "s3cret" not in r.err + r.out and "postgresql" not in r.err + r.out
