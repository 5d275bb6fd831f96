"""A directory named '-' is refused as every output named '-' is (`report --out -`, `--state -`): `sweep --out -`
made a directory named '-' and `state pull URL -` a state directory so named."""

from __future__ import annotations

from pathlib import Path

from helpers import one_line

SPEC = Path(__file__).parent.parent / "fixtures" / "sweeps" / "checkpoint-interval.yaml"


def test_sweep_out_dash_is_refused_and_nothing_is_made(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = one_line(cli("sweep", SPEC, "--out", "-", "--serial", state=False))
    assert said == "tpufleet: error: bad option --out '-': give a directory name ('-' is not standard output here)"
    assert list(tmp_path.iterdir()) == []


def test_state_pull_and_push_refuse_a_directory_named_dash(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = "tpufleet: error: bad argument DIR '-': '-' is not standard input or output here; name a directory"
    assert one_line(cli("state", "pull", "postgresql://u@127.0.0.1:1/db", "-", state=False)).startswith(said)
    assert one_line(cli("state", "push", "-", "postgresql://u@127.0.0.1:1/db", state=False)).startswith(said)
    assert list(tmp_path.iterdir()) == []
