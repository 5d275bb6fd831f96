"""The examples the documentation gives an operator: `make demo`'s steps, and every `--help` epilog's command lines."""

from __future__ import annotations

from tpufleet.demo import STEPS, demo


def test_make_demo_runs_the_steps_that_name_their_own_state(tmp_path, monkeypatch, capsys):
    """The superpod's steps give `--state {tmp}/superpod`, and the demo put its own `--state` before each: refused
    as an option given twice (exit 2), so `make demo` stopped there. Now a step's own `--state` is the one used."""
    monkeypatch.chdir(tmp_path)
    own_state = [step for step in STEPS if step[1].startswith("--state ")][:2]  # init, import reservation
    assert len(own_state) == 2
    assert demo(own_state) == 0, capsys.readouterr().out[-400:]
    out = capsys.readouterr().out
    assert "[exit 0," in out and "applied (serial 2)" in out
