"""The examples the documentation gives an operator: `make demo`'s steps, and every `--help` epilog's command lines."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

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


# ---- the README's worked example of spares and maintenance -------------------------------------------------------
ROOT = Path(__file__).parent.parent


def _worked_example() -> tuple[str, list[tuple[list[str], list[str]]]]:
    """The README's worked example on the fixture reservation: its `notices.yaml` and each `$ tpufleet` command with
    the lines shown under it (none: its output is not shown)."""
    text = (ROOT / "README.md").read_text()
    part = text[text.index("A worked example on the fixture reservation") : text.index("### ML Productivity Goodput")]
    blocks = re.findall(r"```(yaml|console)\n(.*?)```", part, re.S)
    notices = next(body for kind, body in blocks if kind == "yaml")
    steps: list[tuple[list[str], list[str]]] = []
    for line in (line for kind, body in blocks if kind == "console" for line in body.splitlines()):
        if line.startswith("$ tpufleet "):
            steps.append((shlex.split(line[len("$ tpufleet ") :], comments=True), []))
        elif line.strip():
            steps[-1][1].append(line.rstrip())
    return notices, steps


def _shows(shown: list[str], printed: list[str]) -> bool:
    """Whether `printed` is what `shown` shows: line for line, a line `...` standing for any lines."""
    if not shown:
        return not printed
    if shown[0].strip() == "...":
        return any(_shows(shown[1:], printed[i:]) for i in range(len(printed) + 1))
    return bool(printed) and printed[0] == shown[0] and _shows(shown[1:], printed[1:])


@pytest.mark.slow
def test_the_readme_worked_example_prints_what_it_shows(tmp_path, monkeypatch, capsys):
    """The example's notices lay ahead when it was written and its `apply-maintenance --wave 1` showed them "left
    open"; once their day had passed it printed `clear cube:c00: f3` instead. Its notices are now far ahead, and
    every command prints what the README shows (the clock fixed: whatever day the tests run)."""
    from conftest import Cli

    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: "2030-01-01T00:00:00Z")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    notices, steps = _worked_example()
    (tmp_path / "notices.yaml").write_text(notices)
    cli = Cli(capsys, tmp_path / "state")
    assert len(steps) >= 10 and any(argv[:1] == ["apply-maintenance"] for argv, _ in steps)
    for argv, shown in steps:
        r = cli(*argv)
        assert r.code in (0, 1), (argv, r.err)
        printed = [line.rstrip() for line in (r.out + r.err).splitlines() if line.strip()]
        assert not shown or _shows(shown, printed), (argv, printed)


# ---- the README's command reference against each command's options ---------------------------------------------
def _reference_rows() -> dict[str, set[str]]:
    """Each command the README's command table names (its leading words, `show map` apart from `show`), with the
    long options its row gives."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| command | what it does |") : text.index("### Cross-connect planning")]
    rows: dict[str, set[str]] = {}
    for row in (line for line in table.splitlines() if line.startswith("| `")):
        synopsis = row[3:].split("` |")[0]
        words = []
        for word in synopsis.split():
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            words.append(word)
        rows.setdefault(" ".join(words), set()).update(re.findall(r"--[a-z][a-z0-9-]*", synopsis))
    return rows


def _long_options(command: click.Command) -> set[str]:
    names = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
    # -o and -v are given by their short names, as every command has them
    return {name for name in names if name.startswith("--")} - {"--help", "--output", "--verbose"}


def test_the_command_reference_names_every_option_and_only_real_ones():
    """`serve --goodput-format` was in no row of the command table: an operator reading the reference for how to
    serve ml-goodput logs found no way to. Each row names each option its command has, and none it lacks (an
    export's own options are described in its section, so only those named in the table must exist)."""
    rows = _reference_rows()
    root = typer.main.get_command(app)
    for path, command in _leaves(root):
        name = " ".join(path)
        named = rows.get(name) or rows.get(path[0], set())
        if path[0] == "show":
            named = rows["show"] | rows["show map"]
        have = _long_options(command)
        assert named <= have, (name, sorted(named - have))
        if path[0] != "export":
            assert have <= named, (name, sorted(have - named))


# ---- the README's JSON contract against what commands emit ------------------------------------------------------
def _contract_fields(entry: str) -> tuple[set[str], set[str]]:
    """The fields the README's JSON contract gives the object of `entry` (`- `report`: `{...}``): (those always
    there, those marked `?`); a list's objects for a list; parenthesized notes and nested objects set aside."""
    text = (ROOT / "README.md").read_text()
    at = text.index(f"\n- `{entry}`: `") + len(entry) + 7
    fields: tuple[set[str], set[str]] = (set(), set())
    depth, level, i = 0, None, at
    while True:
        c = text[i]
        if c == "(":  # a note: `"map" (as show map)`
            i = _closing(text, i)
        elif c in "{[":
            depth += 1
            level = depth if c == "{" and level is None else level
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return fields
        elif c == '"':
            end = text.index('"', i + 1)
            if depth == level:
                fields[text[end + 1] == "?"].add(text[i + 1 : end])
            i = end
        i += 1


def _closing(text: str, i: int) -> int:
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j
    raise AssertionError("unclosed note")


def test_the_json_contract_of_report_names_every_field_it_emits(reserved, tmp_path):
    """`report -o json` emitted `generations` on a fleet of shipped generations, which the README's contract left
    out; `show health` (whose rows `report`'s faults repeat) the window of a maintenance drain."""
    always, maybe = _contract_fields("report")
    assert set(reserved("report", "-o", "json").json) == always | maybe  # a TPU7x superpod: its generations
    v4 = tmp_path / "v4"  # the built-in TPU v4 model: no generation
    assert reserved("--state", v4, "init", state=False).code == 0
    assert always <= set(reserved("--state", v4, "report", "-o", "json", state=False).json) <= always | maybe
    always, maybe = _contract_fields("show health")
    rows = reserved("show", "health", "-o", "json").json
    assert all(always <= row.keys() <= always | maybe for row in rows)
    assert any(row.keys() == always | maybe for row in rows)  # a drain of announced maintenance


def test_the_command_reference_gives_each_synopsis_one_row():
    """Changes to `explain` and `history` each added their row again instead of editing it: the table gave
    `explain` four rows and `history` two, each saying part of what the command does. One row each now."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| command | what it does |") : text.index("### Cross-connect planning")]
    synopses = [line[3:].split("` |")[0] for line in table.splitlines() if line.startswith("| `")]
    assert sorted(s for s in set(synopses) if synopses.count(s) > 1) == []


def test_the_json_contract_of_init_names_every_field_it_emits(cli):
    """`init --generation` emitted `generation`, which the README's contract for `init` left out."""
    always, maybe = _contract_fields("init")
    assert set(cli("init", "-o", "json").json) == always
    assert set(cli("init", "--force", "--generation", "tpu-v5p", "-o", "json").json) == always | maybe


def test_the_json_contract_of_show_journal_names_every_field_of_a_slices_delta(cli):
    """A journal line's `delta.slices` carried `was` and `now` (the records of the slices removed and added, from
    which `diff` tells a slice made again), which the README's contract for `show journal` did not name."""
    text = (ROOT / "README.md").read_text()
    entry = text[text.index("\n- `show journal`: `") : text.index("\n- `history`: `")]
    assert cli("init").code == 0
    assert cli("allocate", "s", "--shape", "2x2x1").code == 0
    assert cli("release", "s").code == 0
    keys = {k for line in cli("show", "journal", "-o", "json").json for k in line["delta"]["slices"]}
    assert {"was", "now"} <= keys
    assert [k for k in sorted(keys) if f'"{k}"' not in entry] == []
