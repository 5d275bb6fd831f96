"""File names on the command line that end in '/' or '/.': a file's is refused (Path would drop the slash and write or
read the file without it), a directory's is taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import one_line, snapshot

SWEEP_SPEC = Path(__file__).parent.parent / "fixtures/sweeps/checkpoint-interval.yaml"

# Every parameter that names a file, as (command line before the value, the parameter as the error names it).
# The other arguments are placeholders: the name is refused while parsing, before the command reads anything.
FILE_PARAMETERS = [
    (("simulate-availability", "--fault-rates"), "option --fault-rates"),
    (("simulate-availability", "--plot"), "option --plot"),
    (("capacity", "--fault-rates"), "option --fault-rates"),
    (("collective", "s", "--op", "all-reduce", "--bytes", "1MiB", "--profile"), "option --profile"),
    (("inject-fault", "--from"), "option --from"),
    (("metrics", "--out"), "option --out"),
    (("metrics", "--goodput"), "option --goodput"),
    (("metrics", "--drift-nodes"), "option --drift-nodes"),
    (("metrics", "--drift-mapping"), "option --drift-mapping"),
    (("metrics", "--drift-reservation"), "option --drift-reservation"),
    (("metrics", "--drift-slices"), "option --drift-slices"),
    (("goodput-report",), "argument FILE"),
    (("goodput-report", "log.jsonl", "--exclude"), "option --exclude"),
    (("goodput-report", "log.jsonl", "--out"), "option --out"),
    (("plan-maintenance", "--notices"), "option --notices"),
    (("plan-maintenance", "--out"), "option --out"),
    (("apply-maintenance",), "argument PLAN"),
    (("drift", "--nodes"), "option --nodes"),
    (("drift", "--mapping"), "option --mapping"),
    (("drift", "--reservation"), "option --reservation"),
    (("drift", "--slices"), "option --slices"),
    (("report", "--out"), "option --out"),
    (("routes", "s", "--out"), "option --out"),
    (("serve", "--token-file"), "option --token-file"),
    (("serve", "--goodput"), "option --goodput"),
    (("simulate-fleet", "--out"), "option --out"),
    (("simulate-fleet", "--workload"), "option --workload"),
    (("simulate-fleet", "--fault-rates"), "option --fault-rates"),
    (("plan-spares", "--fault-rates"), "option --fault-rates"),
    (("sweep",), "argument SPEC.yaml"),
    (("plan-xconnect", "s", "--out"), "option --out"),
    (("apply-xconnect",), "argument PLAN"),
    (("import", "k8s"), "argument FILE|-"),
    (("import", "k8s", "-", "--mapping"), "option --mapping"),
    (("import", "reservation"), "argument FILE|-"),
    (("import", "slices"), "argument FILE|-"),
    (("export", "node-labels", "--mapping"), "option --mapping"),
    (("export", "node-labels", "--out"), "option --out"),
    (("export", "kueue-topology", "--mapping"), "option --mapping"),
    (("export", "kueue-topology", "--out"), "option --out"),
    (("export", "slurm-topology", "--out"), "option --out"),
    (("export", "slices", "--out"), "option --out"),
]


@pytest.mark.parametrize("suffix", ["/", "/."])
@pytest.mark.parametrize("before, named", FILE_PARAMETERS)
def test_a_file_name_ending_in_a_slash_is_refused_naming_the_parameter_and_value(
    fleet, tmp_path, monkeypatch, before, named, suffix
):
    """`report --out r.html/` and `simulate-fleet --out e.jsonl/` wrote r.html and e.jsonl; `--from f.yaml/` read
    f.yaml: Typer's Path drops the trailing slash. Only `--plot` refused such a name."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.x").write_text("[]\n")  # the file the name without its slash would have read
    given = f"f.x{suffix}"
    state_before = snapshot(fleet.state)
    line = one_line(fleet(*before, given), 2)
    assert (
        line == f"tpufleet: error: bad {named} '{given}': it ends in '/' or '/.', naming a directory; give a file name"
    )
    assert snapshot(fleet.state) == state_before
    assert (tmp_path / "f.x").read_text() == "[]\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p != fleet.state) == ["f.x"]


def test_the_list_above_is_every_file_parameter_of_every_command():
    """A file option added later must be added above (and is checked by the same mechanism)."""
    from tpufleet.cli import _click_command
    from tpufleet.cli.paths import is_checked, named

    def walk(command, path=()):
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, (*path, name))
        for param in command.params:
            yield path, param

    found = {
        (path, named(p))
        for path, p in walk(_click_command())
        if is_checked(p.type) and str(p.metavar).split("|")[0] != "DIR"
    }
    listed = {(tuple(a for a in before if a in {*path_words()}), named) for before, named in FILE_PARAMETERS}
    assert found == listed


def path_words() -> set[str]:
    """The command and group names (the words of a command line above that are not placeholders)."""
    from tpufleet.cli import _click_command

    words: set[str] = set()
    stack = [_click_command()]
    while stack:
        command = stack.pop()
        for name, sub in getattr(command, "commands", {}).items():
            words.add(name)
            stack.append(sub)
    return words


@pytest.mark.parametrize("given", ["results/", "results/."])
def test_a_directory_option_still_takes_a_name_ending_in_a_slash(cli, tmp_path, monkeypatch, given):
    """`sweep SPEC --out DIR/` names a directory: the slash is no mistake there. (The missing spec is refused after
    the options were read, so the command got past --out.)"""
    monkeypatch.chdir(tmp_path)
    line = one_line(cli("sweep", "missing.yaml", "--out", given, state=False), 2)
    assert "--out" not in line and "missing.yaml" in line


NOTICES = '- {target: cube:c01, window_start: "2026-12-01T00:00:00Z", window_end: "2026-12-01T04:00:00Z"}\n'
K8S = Path(__file__).parent.parent / "fixtures/k8s"


@pytest.mark.parametrize(
    "args, text",
    [
        (("plan-maintenance", "--notices", "in.x"), NOTICES),
        (("export", "node-labels", "--mapping", "in.x"), (K8S / "mapping.yaml").read_text()),
        (("export", "kueue-topology", "--mapping", "in.x"), (K8S / "mapping.yaml").read_text()),
        (("metrics", "--drift-nodes", "in.x"), (K8S / "pod-64.json").read_text()),
        (
            ("metrics", "--drift-nodes", str(K8S / "pod-64.json"), "--drift-mapping", "in.x"),
            (K8S / "mapping.yaml").read_text(),
        ),
    ],
)
def test_an_output_that_is_the_input_read_is_refused_and_the_input_kept(fleet, tmp_path, monkeypatch, args, text):
    """`plan-maintenance --notices n.yaml --out n.yaml` replaced the notices with the plan, `export node-labels
    --mapping m.yaml --out m.yaml` the mapping with the Nodes, `metrics --drift-nodes n.json --out n.json` the
    node list with the metrics, at exit 0 (`goodput-report` and `simulate-fleet` refused this)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.x").write_text(text)
    before = snapshot(fleet.state)
    line = one_line(fleet(*args, "--out", "in.x"), 2)
    assert line == "tpufleet: error: bad option --out 'in.x': it is the input 'in.x'; the output would replace it"
    assert (tmp_path / "in.x").read_text() == text
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("given", ["--debug", "-v"])
@pytest.mark.parametrize(
    "before, named",
    [*[(b, n) for b, n in FILE_PARAMETERS if n.startswith("option")], (("sweep", "s.yaml", "--out"), "option --out")],
)
def test_an_option_for_a_file_value_is_refused_naming_the_option(fleet, tmp_path, monkeypatch, before, named, given):
    """`report --out --debug` wrote a file named --debug (Click gives an option the next word, whatever it is)."""
    monkeypatch.chdir(tmp_path)
    state_before = snapshot(fleet.state)
    line = one_line(fleet(*before, given), 2)
    said = f"bad {named} '{given}': a file name, not an option (for a file named so: ./{given})"
    assert line == f"tpufleet: error: {said}"
    assert snapshot(fleet.state) == state_before
    assert [p for p in tmp_path.iterdir() if p != fleet.state] == []


def test_a_file_named_with_a_leading_dash_is_given_as_a_path(fleet, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert fleet("report", "--out", "./-v").code == 0
    assert (tmp_path / "-v").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ("apply-xconnect", "-"),
        ("apply-maintenance", "-", "--wave", "1"),
        ("inject-fault", "--from", "-"),
        ("plan-maintenance", "--notices", "-"),
        ("export", "node-labels", "--mapping", "-"),
        ("collective", "--topology", "4x4x4", "--op", "all-reduce", "--bytes", "1MiB", "--profile", "-"),
        ("simulate-fleet", "--days", "1", "--workload", "-"),
        ("sweep", "-", "--out", "results"),
    ],
)
def test_a_dash_where_standard_input_is_not_read_says_so(fleet, tmp_path, monkeypatch, args):
    """`cat x.plan | tpufleet apply-xconnect -` was told `-: ... cannot be read: no such plan file`."""
    monkeypatch.chdir(tmp_path)
    before = snapshot(fleet.state)
    line = one_line(fleet(*args), 2)
    assert line.startswith("tpufleet: error: -: field <root>: '-' is not standard input here; give the ")
    assert snapshot(fleet.state) == before


def test_a_dash_as_the_token_file_says_standard_input_is_not_read(fleet, tmp_path, monkeypatch):
    """`serve --token-file -` was told `cannot be read: No such file or directory`, as if a file named - were meant."""
    monkeypatch.chdir(tmp_path)
    line = one_line(fleet("serve", "--listen", "127.0.0.1:0", "--token-file", "-"), 2)
    said = "bad option --token-file '-': '-' is not standard input here; give the token file's name"
    assert line == f"tpufleet: error: {said}"


@pytest.mark.parametrize("drift", ["--drift-nodes", "--drift-reservation", "--drift-slices"])
def test_metrics_refuses_standard_input_for_a_goodput_log_and_an_export_both(fleet, drift):
    """`metrics --goodput - --drift-nodes -`: the log read the node list from standard input and called it a bad
    goodput log (or, the log first, the export found standard input empty)."""
    line = one_line(fleet("metrics", "--goodput", "-", drift, "-"), 2)
    assert line == f"tpufleet: error: bad options --goodput and {drift}: each is - (standard input); only one can be"


@pytest.mark.parametrize("inside", ["", "results", "results/"])
def test_sweep_refuses_an_out_directory_in_the_state_directory(fleet, tmp_path, inside):
    """`sweep SPEC --out $STATE/results` wrote sweep.json, sweep.csv, the plot and the points among the state's
    files, where every other output is refused."""
    spec = tmp_path / "tiny.yaml"
    spec.write_text("schema_version: 1\nsimulation: availability\nseeds: 1\nfixed: {trials: 20}\ngrid: {cubes: [8]}\n")
    before = sorted(p.name for p in fleet.state.rglob("*"))
    given = f"{fleet.state}/{inside}"
    line = one_line(fleet("sweep", spec, "--out", given, "--serial"), 2)
    assert "bad option --out '" in line and "it is inside the state directory" in line
    assert sorted(p.name for p in fleet.state.rglob("*")) == before


def test_an_empty_directory_name_is_called_one(cli, tmp_path):
    """`sweep SPEC --out ""` was told `empty file name`, of an option that takes a directory."""
    line = one_line(cli("sweep", SWEEP_SPEC, "--out", "", state=False), 2)
    assert line == "tpufleet: error: bad option --out: empty directory name"


GOODPUT_LOG = Path(__file__).parent.parent / "fixtures/goodput/slow_steps.jsonl"


@pytest.mark.parametrize(
    "args",
    [
        ("goodput-report", GOODPUT_LOG, GOODPUT_LOG),
        ("metrics", "--goodput", GOODPUT_LOG, "--goodput", GOODPUT_LOG),
    ],
)
def test_a_goodput_log_given_twice_names_no_argument_the_command_lacks(fleet, args):
    """A log given twice was `bad argument LOGS`: goodput-report's argument is FILE..., and metrics takes the logs
    as --goodput."""
    line = one_line(fleet(*args), 2)
    assert line.startswith(f"tpufleet: error: bad goodput logs: {GOODPUT_LOG} is given twice (also as ")


def test_a_token_file_others_can_read_is_warned_of_on_one_line_its_name_escaped(tmp_path, capsys):
    """`serve --token-file`'s warning that others can read the token wrote the file's name raw: a newline in it split
    the line and an escape sequence reached the terminal. It is written escaped, as errors write it."""
    from tpufleet.cli.serve import read_token

    token = tmp_path / "tok\nen\x1b[31m"
    token.write_text("0123456789abcdef0123456789abcdef\n")
    token.chmod(0o644)
    assert read_token(token) == b"0123456789abcdef0123456789abcdef"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err
    assert err.startswith("tpufleet: warning: ") and err.rstrip().endswith("can be read by others; chmod 600 it")
    token.chmod(0o600)
    read_token(token)
    assert capsys.readouterr().err == ""
