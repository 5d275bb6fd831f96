"""The columnar reader of native logs (Apache Arrow's typed columns, `tpufleet.goodput.columnar`) against the
standard line-by-line reader: the same report, the same table and the same first error (file, line, field,
value) on generated logs with random defects, including the values a lenient column reader would coerce."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_goodput_fastpath import varied_log

from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread, render
from tpufleet.ops.goodput import build
from tpufleet.state import goodputpool, goodputstreams

pytestmark = pytest.mark.skipif(not columnar.available(), reason="PyArrow is not installed: no columnar path to check")

B = 1767571200.0
# Lines another column reader accepts with another value, or that only the standard reader can judge.
DEFECTS = [
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":true}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":5.0}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":"5"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":1,"step":2}',
    '{"type":"event","job":5,"time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"\\ud800","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j1","time":NaN,"event":"job_start"}',
    '{"type":"event","job":"j1","time":1e400,"event":"job_start"}',
    '{"type":"event","job":"j1","time":0,"event":"job_start"}',
    '{"type":"event","job":"j1","time":-0.0,"event":"job_start"}',
    '{"type":"event","job":"j1","time":1767571300,"event":"job_start"}',
    '{"type":"event","job":"j1","time":"1767571300.5","event":"job_start"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":-1}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":null}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"allocation","chips":99999999999999999999}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"allocation","chips":10000001}',
    '{"type":"event","job":"","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"lunch"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"job_start","label":""}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"job_start","note":NaN}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"allocation","chips":8,"slice":0}',
    '{"type": "job", "job": "j0", "chips": 8, "ideal_step_s": 1}',
    '{"type":"job","job":"j9","chips":"8"}',
    '{"type":"job","job":"j9","chips":"\uff18"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":"1_0"}',
    '{"type":"job","job":"j9","chips":0}',
    '{"type":"job","job":"j9","chips":8,"framework":""}',
    '{"type":"job","job":"j9","chips":8,"phase":""}',
    '{"job":"j9","type":"job","chips":8}',
    '{"type":"capacity","time":"2026-01-05T10:00:00Z","accelerator":"tpu-v4","chips":512}',
    '{"type":"capacity","time":1767571300.0,"accelerator":"tpu-v4","chips":8}',
    '{"type":"job","job":"j1","accelerator":"tpu-v9","chips":8}',
    '{"type":"schema","version":2}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"job_start"} x',
    "[1, 2]",
    "{}",
    "",
    "   ",
    '{"type":"event","job":"j0","time":1767571300.0,"event":"job_start"}\r',
    "null",
    'null{"type":"event","job":"j0","time":1767571300.0,"event":"job_start"}',
    ' 1 {"type":"event","job":"j0","time":1767571300.0,"event":"job_start"}',
]


def report(paths: list[Path], columns: bool, skip_bad: bool, chunk: int) -> tuple[Any, int]:
    """((report, table) or ("error", message), pieces the columnar reader vouched for): msgspec off, the columnar
    reader on or off (then every line is read the standard way)."""
    vouched: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputstreams, "CHUNK_BYTES", chunk)
        mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
        mp.setattr(fastread, "_DECODER", None)
        if columns:
            real = columnar.decode_piece

            def counted(piece: bytes) -> Any:
                decoded = real(piece)
                vouched.append(decoded is not None)
                return decoded

            mp.setattr(columnar, "decode_piece", counted)
        else:
            mp.setattr(columnar, "pa", None)
        try:
            r = build(paths, by=["accelerator", "phase"], period="day", skip_bad=skip_bad)
        except BadInput as exc:
            return ("error", str(exc)), sum(vouched)
    return (r, render.to_table(r, top=50)), sum(vouched)


def with_defects(seed: int, jobs: int, defects: int) -> list[str]:
    rng = random.Random(seed)
    lines = varied_log(seed, jobs, 0)
    for _ in range(defects):
        lines.insert(rng.randrange(1, len(lines) + 1), rng.choice(DEFECTS))
    return lines


@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 5),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from([512, 8192, 1 << 20]),
)
def test_columnar_and_line_readers_give_the_same_report_and_first_error(
    tmp_path_factory, seed, jobs, defects, skip_bad, chunk
):
    lines = with_defects(seed, jobs, defects)
    directory = tmp_path_factory.mktemp("logs")
    half = len(lines) // 2  # two files: a job's events may span both
    paths = [directory / "a.jsonl", directory / "b.jsonl"]
    paths[0].write_text("\n".join(lines[:half]) + "\n")
    paths[1].write_text("\n".join(lines[half:]))
    columns, _ = report(paths, True, skip_bad, chunk)
    assert columns == report(paths, False, skip_bad, chunk)[0]


CRASHED_ARROW = [b"null", b" null", b"nullnull", b"null{}\n", b'{"type":"event"}\nnull', b'\tnull{"a":1}', b"1{}"]


def test_arrow_is_never_given_a_value_outside_an_object():
    """PyArrow's JSON reader crashed the process (a segmentation fault) on a value before an object or after the
    last line: such pieces are read the standard way, which names the line. Run in a child process, so that a
    crash fails this test only."""
    code = (
        "import sys; from tpufleet.goodput import columnar\n"
        f"print([columnar.decode_piece(p) for p in {CRASHED_ARROW!r}])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr([None] * len(CRASHED_ARROW))


def test_a_log_ending_in_null_is_bad_input_naming_its_line(tmp_path, capsys):
    lines = varied_log(3, 2, 0)
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(lines) + "\nnull")
    with pytest.raises(BadInput, match=f"g.jsonl:{len(lines) + 1}: .*must be an object"):
        build([path], by=["accelerator"], period="day", skip_bad=False)


def test_a_clean_log_is_read_by_columns_alone(tmp_path):
    """No piece of a plain log goes the standard way; the report is the standard reader's."""
    lines = [line for line in varied_log(3, 4, 0) if '"note"' not in line and '"slice_counts"' not in line]
    lines = [line for line in lines if '"time": "' not in line]
    path = tmp_path / "clean.jsonl"
    path.write_text("\n".join(lines) + "\n")
    columns, vouched = report([path], True, False, 4096)
    pieces = -(-path.stat().st_size // 4096)
    assert vouched >= pieces - 1 and columns == report([path], False, False, 4096)[0]


def test_the_first_defect_is_named_with_its_line(tmp_path):
    lines = [
        json.dumps({"type": "event", "job": "j0", "time": B + k, "event": "step_start", "step": k}) for k in range(300)
    ]
    lines.insert(201, DEFECTS[0])
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (kind, message), _ = report([path], True, False, 4096)
    assert kind == "error" and message.startswith(f"{path}:202: field step: must be a whole number from 0 to")


def test_a_piece_of_events_decodes_to_typed_columns_in_job_order():
    text = (
        '{"type":"event","job":"b","time":10.5,"event":"job_start"}\n'
        '{"type":"job","job":"a","chips":8}\n'
        '{"type":"event","job":"a","time":11.0,"event":"custom_badput_start","label":"eval"}\n'
        '{"type":"event","job":"b","time":12.0,"event":"step_start","step":7}\n'
    )
    decoded = columnar.decode_piece(text.encode())
    assert decoded is not None and decoded.lines == 4
    batch = decoded.batch
    assert batch.jobs == ["b", "a"] and batch.bounds.tolist() == [0, 2, 3]
    assert batch.t.tolist() == [10.5, 12.0, 11.0] and batch.step.tolist() == [-1, 7, -1]
    assert batch.labels == {2: "eval"} and decoded.others == [(1, "job", {"job": "a", "chips": 8})]
