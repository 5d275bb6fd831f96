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


@pytest.mark.parametrize(
    "text, field, problem",
    [
        ("lock_timeout = 1e-400\n", "lock_timeout", "too small to be told from 0"),
        ("lock_timeout = 5e-324000\n", "lock_timeout", "too small to be told from 0"),
        ("state = 1e-400\n", "state", "must be a directory"),
    ],
)
def test_a_number_too_small_to_tell_from_0_is_refused_as_at_the_option(
    fleet, tmp_path, monkeypatch, text, field, problem
):
    """`--lock-timeout 1e-400` is refused (it would be read as 0: no wait), but the config file's `lock_timeout =
    1e-400` was taken as 0. Refused naming the file, the key and the value as written; 0.0 itself stays 0."""
    config = tmp_path / "config.toml"
    config.write_text(text)
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    before = snapshot(fleet.state)
    line = one_line(fleet("status"), 2)
    value = text.split("= ")[1].strip()
    assert str(config) in line and f"field {field}: {problem}" in line and f"(value '{value}')" in line
    assert snapshot(fleet.state) == before
    config.write_text("lock_timeout = 0.0\n")
    assert fleet("status").code == 0
