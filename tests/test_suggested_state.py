"""A command a table or an error suggests carries the `--state` the operator gave on the command line, so the line
copied runs on the same fleet, not on ./.tpufleet or $TPUFLEET_STATE. JSON and YAML keep the commands as the
contract gives them, and a state from $TPUFLEET_STATE reaches the next command by itself."""

from __future__ import annotations

import json
import shlex
from html.parser import HTMLParser


def _cli(cli, state, *args):
    return cli("--state", state, *args, state=False)  # as printed: the fixture's reading left out


def test_next_lines_carry_the_state_and_run_on_it(cli, tmp_path):
    state = tmp_path / "my fleet"
    assert _cli(cli, state, "init").code == 0
    r = _cli(cli, state, "allocate", "a", "--shape", "4x4x4")
    steps = [line.removeprefix("next: ") for line in r.out.splitlines() if line.startswith("next: ")]
    quoted = shlex.quote(str(state))
    assert steps == [f"tpufleet --state {quoted} plan-xconnect a --apply", f"tpufleet --state {quoted} routes a"]
    for step in steps:  # copied as printed: each runs on this fleet
        assert cli(*shlex.split(step)[1:], state=False).code == 0
    assert json.loads(_cli(cli, state, "status", "-o", "json").out)["slices"][0]["state"] == "connected"


def test_an_error_suggests_the_command_with_the_state(cli, tmp_path):
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    assert _cli(cli, state, "inject-fault", "ocs:pod0/x/3").code == 0
    r = _cli(cli, state, "explain", "f1")
    assert r.code == 1 and f"`tpufleet --state {state} explain ocs:pod0/x/3`" in r.err


def test_json_and_an_environment_state_keep_the_commands_as_they_are(cli, tmp_path, monkeypatch):
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    r = _cli(cli, state, "allocate", "a", "--shape", "4x4x4", "-o", "json")
    assert json.loads(r.out)["next"] == ["tpufleet plan-xconnect a --apply", "tpufleet routes a"]
    monkeypatch.setenv("TPUFLEET_STATE", str(state))
    r = cli("allocate", "b", "--shape", "4x4x4", state=False)
    assert r.code == 0 and "next: tpufleet plan-xconnect b --apply" in r.out.splitlines()


def test_a_note_on_stderr_suggests_the_command_with_the_state(cli, tmp_path):
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    assert _cli(cli, state, "allocate", "train", "--shape", "4x4x4").code == 0
    r = _cli(cli, state, "history", "--slice", "trian")
    assert r.code == 0 and f"`tpufleet --state {state} history --slice train`" in r.err


def test_a_database_urls_password_is_never_printed_in_a_suggestion():
    from tpufleet.cli.suggested import on_this_state

    for url in ("postgresql://ops:s3cr%40t@db:5432/fleet", "postgresql://ops@db/fleet?sslmode=require&password=s3cr@t"):
        line = on_this_state("next: tpufleet routes s1", url)
        assert "s3cr" not in line and line.startswith("next: tpufleet --state ") and line.endswith(" routes s1")


def test_a_suggested_command_never_prints_the_database_password(cli):
    url = "postgresql://bob:s3cret@127.0.0.1:1/fleet"
    r = cli("--state", url, "allocate", "a", "--generation", "v4", state=False)  # refused before connecting
    assert r.code == 2 and "s3cret" not in r.err + r.out
    assert "`tpufleet --state postgresql://bob@127.0.0.1:1/fleet status`" in r.err


def test_a_state_that_is_a_file_is_never_put_in_a_suggested_command(cli, tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("x\n")
    r = _cli(cli, file, "status")
    assert r.code == 2 and f"--state {file} " not in r.err and "not a directory" in r.err


def test_a_markdown_runbooks_commands_carry_the_state(cli, tmp_path):
    """`plan-maintenance -o md` is a runbook pasted into a change ticket: its commands run on the same fleet."""
    state, notices = tmp_path / "fleet", tmp_path / "notices.yaml"
    notices.write_text(
        "- {target: 'cube:c00', window_start: '2026-07-01T09:00:00Z', window_end: '2026-07-01T13:00:00Z'}\n"
    )
    assert _cli(cli, state, "init").code == 0
    assert _cli(cli, state, "allocate", "a", "--shape", "4x4x4").code == 0
    r = _cli(cli, state, "plan-maintenance", "--notices", notices, "-o", "md")
    steps = [line for line in r.out.splitlines() if line[:1].isdigit()]
    assert r.code == 0 and steps and all(f"`tpufleet --state {state} " in line for line in steps), r.out
    plain = json.loads(_cli(cli, state, "plan-maintenance", "--notices", notices, "-o", "json").out)
    assert all(c.startswith("tpufleet ") and "--state" not in c for w in plain["waves"] for c in w["commands"])


def test_a_wave_applied_out_of_order_names_the_earlier_wave_on_the_same_fleet(cli, tmp_path):
    """The refusal gave the wave to apply first in parentheses, which were left as written: copied, it ran on
    another fleet."""
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    assert _cli(cli, state, "allocate", "a", "--shape", "4x4x4").code == 0  # c00
    notices = tmp_path / "notices.yaml"
    notices.write_text(
        "- {target: cube:c00, window_start: 2099-07-01T09:00:00Z, window_end: 2099-07-01T13:00:00Z}\n"
        "- {target: cube:c05, window_start: 2099-07-02T09:00:00Z, window_end: 2099-07-02T13:00:00Z}\n"
    )
    plan = tmp_path / "plan.json"
    assert _cli(cli, state, "plan-maintenance", "--notices", notices, "--max-parallel", "1", "--out", plan).code == 0
    r = _cli(cli, state, "apply-maintenance", plan, "--wave", "2")
    first = f"tpufleet --state {state} apply-maintenance {plan} --wave 1"
    assert r.code == 1 and f"`{first}`" in r.err, r.err
    assert cli(*shlex.split(first)[1:], state=False).code == 0


def test_a_stale_tables_note_names_each_routes_command_on_the_same_fleet(cli, tmp_path):
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    assert _cli(cli, state, "allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    assert _cli(cli, state, "plan-xconnect", "j", "--apply").code == 0
    assert _cli(cli, state, "routes", "j").code == 0
    assert _cli(cli, state, "inject-fault", "ocs:pod0/x/0").code == 0  # rerouted around: both tables stale
    r = _cli(cli, state, "collective", "j", "--op", "all-reduce", "--bytes", "1GiB")
    assert r.code == 0, r.err
    assert f"`tpufleet --state {state} routes j-0`, `tpufleet --state {state} routes j-1`" in r.out, r.out


def test_the_items_under_an_error_line_suggest_commands_on_the_same_fleet(capsys, monkeypatch):
    from tpufleet.cli import report_error
    from tpufleet.cli.app import SETTINGS

    monkeypatch.setattr(SETTINGS, "state_option", "/srv/fleet")
    report_error("the plan does not meet its notices", 1, ["wave 1: slice a: run `tpufleet explain a`"], None)
    assert capsys.readouterr().err.splitlines() == [
        "tpufleet: error: the plan does not meet its notices",
        "  wave 1: slice a: run `tpufleet --state /srv/fleet explain a`",
    ]


def test_suspects_quarantine_commands_carry_the_state_and_run_on_it(cli, tmp_path):
    """`suspects`' quarantine commands, each on a line of its own, were printed without the --state given: copied,
    they ran on another fleet. Each carries it now, and runs as printed."""
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    for _ in range(3):
        assert _cli(cli, state, "inject-fault", "host:c05/2").code == 0
        assert _cli(cli, state, "clear-fault", "host:c05/2").code == 0
    r = _cli(cli, state, "suspects")
    lines = r.out.splitlines()
    commands = lines[lines.index("to quarantine:") + 1 :]
    assert r.code == 0 and commands, r.out
    assert all(c.startswith(f"tpufleet --state {state} inject-fault ") for c in commands), commands
    assert cli(*shlex.split(commands[0])[1:], state=False).code == 0


class _Texts(HTMLParser):
    """The text of each list item and paragraph of a page, as a browser shows it (entities read)."""

    def __init__(self):
        super().__init__()
        self.texts: list[str] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("li", "p"):
            self._open = []

    def handle_endtag(self, tag):
        if tag in ("li", "p") and self._open is not None:
            self.texts.append("".join(self._open))
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            self._open.append(data)


def test_the_md_and_html_reports_suggest_commands_on_the_same_fleet(cli, tmp_path):
    """`report -o md|html` (and the table written with --out) gave the map legend's `tpufleet reschedule a` and the
    damaged journal note's `tpufleet show journal` without the --state given, as the table on stdout gives them."""
    state = tmp_path / "a&b <fleet>"  # the html page escapes the quoted state with the rest of its text
    quoted = shlex.quote(str(state))
    for step in (("init",), ("allocate", "a", "--shape", "4x4x8"), ("inject-fault", "host:c00/1")):
        assert _cli(cli, state, *step).code == 0, step
    journal = state / "journal.jsonl"
    journal.write_bytes(journal.read_bytes() + b'{"serial": 4, damaged\n')
    move = f"evicted by f1; c02,c01 reserved: `tpufleet --state {quoted} reschedule a`"
    legend = f"  A  a                4x4x8            evicted  ({move})"
    note = (
        f"Damaged journal line(s) 4 skipped: a change may be missing here (`tpufleet --state {quoted} show journal` "
        "names them)."
    )
    assert legend in _cli(cli, state, "report").out.splitlines()  # the rule: the table on a terminal
    md = _cli(cli, state, "report", "-o", "md").out.splitlines()
    assert legend in md and note in md
    table = tmp_path / "report.txt"
    assert _cli(cli, state, "report", "--out", table).code == 0
    assert legend in table.read_text().splitlines()
    page = _cli(cli, state, "report", "-o", "html").out
    assert "<fleet>" not in page
    texts = _Texts()
    texts.feed(page)
    assert texts.texts == [f"A a: {move}", note]
    assert _cli(cli, state, "reschedule", "a").code == 0  # the command as suggested runs on this fleet


def test_inject_faults_one_command_for_all_stale_tables_carries_the_state(cli, tmp_path):
    """`all of them at once: tpufleet routes --stale` under a fault hitting two slices went without the `--state`
    given: copied, it routed another fleet's slices."""
    state = tmp_path / "fleet"
    assert _cli(cli, state, "init").code == 0
    for name in ("a", "b"):
        for step in (("allocate", name, "--shape", "4x4x8"), ("plan-xconnect", name, "--apply"), ("routes", name)):
            assert _cli(cli, state, *step).code == 0, step
    r = _cli(cli, state, "inject-fault", "ocs:pod0/z/0")
    assert r.code == 0 and r.out.rstrip().endswith(f"all of them at once: `tpufleet --state {state} routes --stale`")
