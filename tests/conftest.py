from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tpufleet.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)


class Cli:
    """Runs the real entry point in-process (fast), capturing output and the exit code."""

    def __init__(self, capsys, state: Path):
        self.capsys = capsys
        self.state = state

    def __call__(self, *args: str, state: bool = True) -> Result:
        argv = (["--state", str(self.state)] if state else []) + [str(a) for a in args]
        self.capsys.readouterr()
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)


@pytest.fixture
def cli(tmp_path, capsys):
    return Cli(capsys, tmp_path / "state")


@pytest.fixture
def fleet(cli):
    r = cli("init")
    assert r.code == 0, r.err
    return cli


@pytest.fixture(autouse=True)
def _no_env_state(monkeypatch):
    monkeypatch.delenv("TPUFLEET_STATE", raising=False)
    monkeypatch.delenv("TPUFLEET_DEBUG", raising=False)
    os.environ.setdefault("COLUMNS", "200")
