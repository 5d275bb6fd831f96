"""Every command's --help, as an operator reads it: walked over the whole command tree as `main` builds it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tpufleet.cli import _click_command, main


def _commands(command=None, path=()) -> Iterator[tuple[tuple[str, ...], object]]:
    command = command or _click_command()
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def _help(capsys, path: tuple[str, ...]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main([*path, "--help"])
    assert done.value.code in (0, None)
    return capsys.readouterr().out


def test_every_argument_has_its_help_shown_once(capsys):
    """Typer set an argument's help before Click's constructor set it again to None: `import k8s --help` showed
    `FILE|-  [required]`, not what the file is; so did every command's arguments."""
    arguments = 0
    for path, command in _commands():
        declared = [p for p in getattr(command, "params", []) if p.param_type_name == "argument"]
        if not declared:
            continue
        text = "".join(_help(capsys, path).split())  # the help's wrapping aside (it may break after a hyphen)
        for param in declared:
            arguments += 1
            said = "".join(str(param.help or "").split())
            assert said and text.count(said) == 1, (path, param.name, text[:300])
    assert arguments > 20


def test_no_help_says_stdin(capsys):
    """`import k8s --help` and `goodput-report --help` said "- for stdin", where every message says "standard
    input"; the `export` commands' `--out` "instead of stdout", where every message says "standard output"."""
    helps = {path: _help(capsys, path) for path, _ in _commands()}
    assert len(helps) > 40
    assert [path for path, text in helps.items() if re.search(r"\bstd(in|out)\b", text, re.IGNORECASE)] == []
    assert "- for standard input" in " ".join(helps[("import", "k8s")].split())


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("simulate-availability", "--seed", "-1"), f"bad option --seed: '-1' is not between 0 and {2**63 - 1}"),
        (("goodput-report", "x.jsonl", "--period", "month"), "bad option --period: 'month' is not one of"),
        (("show", "everything"), "bad argument WHAT: 'everything' is not one of"),
        (("--lock-timeout", "abc", "status"), "bad option --lock-timeout: 'abc' is not a number"),
    ],
)
def test_a_bad_value_is_said_as_every_message_says_one(cli, args, said):
    """Click's own checks said `Invalid value for '--seed': ...` where tpufleet's say `bad option --seed: ...`."""
    r = cli(*args)
    (line,) = r.err.strip().splitlines()
    assert r.code == 2 and line.startswith(f"tpufleet: error: {said}"), line
    assert not line.endswith(".")


def test_a_bad_output_format_is_said_alike_before_and_after_the_command(cli):
    """`tpufleet -o bogus status` said `bad option -o/--output: 'bogus'; choose one of ...`, `tpufleet status -o
    bogus` `bad option --output: 'bogus' is not one of ...`."""
    before, after = cli("-o", "bogus", "status"), cli("status", "-o", "bogus")
    assert before.code == after.code == 2
    said = "tpufleet: error: bad option --output: 'bogus' is not one of 'table', 'json', 'yaml'"
    assert before.err.startswith(said) and after.err.startswith(said)


def test_plan_maintenance_names_its_notices_file_as_every_input_file_is_named(fleet, tmp_path):
    """`plan-maintenance --notices missing.yaml` said `no such notices` (`give the notices's name` for `-`), where
    every other input says `no such mapping file`, `no such workload file`."""
    r = fleet("plan-maintenance", "--notices", tmp_path / "missing.yaml")
    assert r.code == 2 and r.err.strip().endswith("cannot be read: no such notices file")
    r = fleet("plan-maintenance", "--notices", "-")
    assert r.code == 2 and r.err.strip().endswith("give the notices file's name")


def test_options_of_one_name_name_their_value_alike():
    """`plan-spares --help` said `--pod POD`, `allocate`, `capacity`, `show` and `import reservation` `--pod TEXT`;
    `suspects --window AGE`, `goodput-report --window TEXT`."""
    seen: dict[str, set[str]] = {}
    for _, command in _commands():
        for param in getattr(command, "params", []):
            if param.param_type_name == "option" and {"--pod", "--window", "--horizon"} & set(param.opts):
                seen.setdefault(max(param.opts, key=len), set()).add(str(param.metavar).removesuffix(",..."))
    assert seen == {"--pod": {"POD"}, "--window": {"AGE"}, "--horizon": {"AGE"}}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--lock-timeout", "-1", "status"), "bad option --lock-timeout: '-1' is not between 0 and 86400"),
        (("--lock-timeout", "1e5", "status"), "bad option --lock-timeout: '1e5' is not between 0 and 86400"),
        (("plan-maintenance", "n.json", "--spares", "-3"), "bad option --spares: '-3' is below 0"),
    ],
)
def test_a_number_out_of_range_is_named_as_typed_with_its_bounds(cli, args, said):
    """Click said "-1.0 is not in the range 0<=x<=86400": the number it had converted, in its own notation."""
    r = cli(*args)
    (line,) = r.err.strip().splitlines()
    assert r.code == 2 and line == f"tpufleet: error: {said}", line


def test_the_goodput_logs_option_says_standard_input_where_it_is_read(capsys):
    """`metrics --goodput -` reads standard input, `serve --goodput -` is refused (it reads its logs again when
    they change): the help said FILE for both."""
    metrics = " ".join(_help(capsys, ("metrics",)).split())
    serve = " ".join(_help(capsys, ("serve",)).split())
    assert "--goodput FILE|- Goodput event logs (- for standard input)" in metrics
    assert "--goodput FILE|-" not in serve and "standard input" not in serve.partition("--goodput ")[2][:120]


def test_collective_profile_help_names_every_profile_it_takes_by_name(capsys):
    """`collective --help` gave --profile as "Hardware profile YAML" (metavar FILE) while it also takes a shipped
    profile by name (`--profile tpu-v3`, the help's own example; a generation's, `tpu7x`), as the README says."""
    from tpufleet.state.generations import names
    from tpufleet.state.profiles import SHIPPED_PROFILES

    text = " ".join(_help(capsys, ("collective",)).split())
    option = text.partition("--profile ")[2].partition(" --table-capacity")[0]
    assert option.startswith("FILE|NAME ")
    assert [n for n in sorted({*SHIPPED_PROFILES, *names()}) if n not in option] == []


def test_import_reservation_help_gives_its_detailed_exit_code_as_it_is(capsys):
    """`import reservation --detailed-exitcode` exits 4 for sub-blocks it cannot place as for changes (README,
    "Exit codes"; `drift --reservation` counts them alike); its help said 4 for changes only."""
    text = " ".join(_help(capsys, ("import", "reservation")).split())
    said = text.partition("--detailed-exitcode ")[2].partition(" -o, --output")[0]
    assert "sub- blocks it cannot place" in said or "sub-blocks it cannot place" in said, said
    others = " ".join(_help(capsys, ("import", "k8s")).split())
    assert "cannot place" not in others.partition("--detailed-exitcode ")[2].partition(" -o, --output")[0]


def test_plan_xconnect_verbose_help_says_which_pairs_it_lists(fleet, capsys):
    """`plan-xconnect -v` lists the pairs to add and to remove (a plan keeps only the count of those in place);
    its help said it lists every port pair, so a wired slice's `-v`, listing none, looked broken."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    wired = fleet("plan-xconnect", "s", "-v")
    assert wired.code == 0 and " -> S" not in wired.out and "48 already in place" in wired.out
    text = " ".join(_help(capsys, ("plan-xconnect",)).split())
    assert "-v, --verbose List every port pair to add or remove " in text


def test_export_slices_type_help_says_whose_slices_it_types(cli, capsys):
    """`export slices --type` gives the type of the Slices of pods without a generation only (a TPU7x pod's are
    `tpu7x` whatever it says, a note on stderr); its help said "spec.type of every Slice"."""
    assert cli("init", "--generation", "tpu7x", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "s", "--shape", "4x4x8").code == 0
    r = cli("export", "slices", "--type", "v6e", "-o", "json")
    assert r.code == 0 and [i["spec"]["type"] for i in r.json["items"]] == ["tpu7x"] and "--type" in r.err
    text = " ".join(_help(capsys, ("export", "slices")).split())
    assert "--type TEXT spec.type of the Slices of pods without a generation" in text
