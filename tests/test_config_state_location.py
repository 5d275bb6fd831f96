"""The config file's `state` is read as `--state` and `$TPUFLEET_STATE` read a state location."""

from __future__ import annotations

import pytest

from helpers import one_line


@pytest.mark.parametrize("given", ["postgresql:/u:pw@db.example/fleet", "postgres:/db.example/fleet"])
def test_a_mistyped_url_in_the_config_file_is_refused_as_the_option_refuses_it(cli, tmp_path, monkeypatch, given):
    """`state = "postgresql:/..."` (a slash missing) was taken as a directory beside the file: `init` made a fleet in
    `postgresql:/...`, where `--state` and `$TPUFLEET_STATE` refuse the text as no postgresql:// URL."""
    config = tmp_path / "config.toml"
    config.write_text(f'state = "{given}"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    line = one_line(cli("init", state=False))
    assert line.startswith(f"tpufleet: error: {config}: field state: is no postgresql:// URL")
    assert "pw" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]
    assert "is no postgresql:// URL" in one_line(cli("--state", given, "init", state=False))


def test_an_empty_group_option_is_refused_as_an_empty_state_option_is(fleet):
    """`--group ""` (a script's unset variable) fell back to the config file's group, or the owner only, unsaid,
    where `--state ""` and the config file's `group = ""` are refused."""
    assert one_line(fleet("--group", "", "status")) == (
        "tpufleet: error: bad option --group: the group is empty (''); name a group, or leave the option out"
    )


@pytest.mark.parametrize("given", ["mysql://u:secret@db.example/fleet", "s3://bucket/fleet"])
def test_a_url_of_another_kind_is_refused_naming_where_it_was_given(cli, tmp_path, monkeypatch, given):
    """A `mysql://` state in the config file was refused without the file or the key; the option and the
    environment variable each say which they are. The password never shows."""
    scheme = given.split("://")[0]
    config = tmp_path / "config.toml"
    config.write_text(f'state = "{given}"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    line = one_line(cli("init", state=False))
    assert (
        line
        == f"tpufleet: error: {config}: field state: is no directory nor postgresql:// URL (value '{scheme}://...')"
    )
    monkeypatch.delenv("TPUFLEET_CONFIG")
    monkeypatch.setenv("TPUFLEET_STATE", given)
    said = f": a {scheme}:// URL; give a directory or a postgresql:// URL"
    assert one_line(cli("status", state=False)) == f"tpufleet: error: bad environment variable TPUFLEET_STATE{said}"
    assert one_line(cli("--state", given, "status", state=False)) == f"tpufleet: error: bad option --state{said}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]
    assert "secret" not in line
