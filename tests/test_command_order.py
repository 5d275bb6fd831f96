"""`tpufleet --help` lists the commands as an operator's day goes (the README's command reference), and every
command has its place in that order."""

from __future__ import annotations

from tpufleet.cli.commandorder import WORKFLOW


def _listed(help_text: str) -> list[str]:
    lines = help_text.split("Commands:\n", 1)[1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")]


def test_help_lists_every_command_in_the_workflow_order(cli):
    r = cli("--help", state=False)
    assert r.code == 0
    assert _listed(r.out) == list(WORKFLOW)


def test_the_readme_reference_names_the_commands_in_the_same_order():
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    reference = readme.split("| `init ", 1)[1].split("\n\n", 1)[0]
    firsts = [line.split("`")[1].split()[0] for line in ("| `init " + reference).splitlines() if line.startswith("| `")]
    assert list(dict.fromkeys(firsts)) == list(WORKFLOW)
