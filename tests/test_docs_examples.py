"""The examples the documentation gives an operator: `make demo`'s steps, and every `--help` epilog's command lines."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import click
import pytest
import typer

from tpufleet.cli import app, plain_metavars
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


def _leaves(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    subs = getattr(command, "commands", None)
    if not subs:
        yield path, command
        return
    for name, sub in subs.items():
        yield from _leaves(sub, (*path, name))


def _epilog_examples() -> Iterator[tuple[str, list[str]]]:
    """Each `tpufleet ...` invocation of every epilog (a line's `| && >` pieces split apart, comments dropped), with
    the command it must name ("" for a second invocation on a line: any command)."""
    root = typer.main.get_command(app)
    plain_metavars(root)
    for path, command in _leaves(root):
        for line in (command.epilog or "").splitlines()[2:]:
            words = shlex.split(line, comments=True)
            piece: list[str] = []
            own = " ".join(path)  # the line's first `tpufleet` is the epilog's own command; a pipe may add another
            for word in [*words, "|"]:
                if word in ("|", "&&", ">"):
                    if piece[:1] == ["tpufleet"]:
                        yield own, piece[1:]
                        own = ""
                    piece = [] if word != ">" else ["(redirect)"]
                else:
                    piece.append(word)


EXAMPLES = list(_epilog_examples())


def test_the_epilogs_hold_examples():
    assert len(EXAMPLES) >= 100
    assert {command for command, _ in EXAMPLES} >= {"routes", "import k8s", "export slices", "state migrate"}


@pytest.mark.parametrize(("command", "argv"), EXAMPLES, ids=[" ".join(argv) for _, argv in EXAMPLES])
def test_every_epilog_example_parses(command, argv):
    """Each example names its own command and parses: known options, values of their types, arguments in place."""
    root: click.Command = typer.main.get_command(app)
    words = list(argv)
    names: list[str] = []
    ctx = root.make_context("tpufleet", words)
    while isinstance(ctx.command, click.Group):
        # a group parses its own options and stops at the sub-command's name; the rest is left in ctx.args
        name = words[len(words) - len(ctx.args) - 1]
        _, sub, words = ctx.command.resolve_command(ctx, [name, *ctx.args])
        assert sub is not None, argv
        names.append(name)
        ctx = sub.make_context(name, list(words), parent=ctx)
    assert not command or " ".join(names) == command, argv
