"""Reading at scale: the streamed, msgspec-decoded native reader must give exactly what the standard reader
gives (records, events in log order, skipped counts, and the same one-line error), piece boundaries anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import read_in_blocks
from tpufleet.errors import BadInput
from tpufleet.goodput import eventlines, fastread
from tpufleet.state import goodputlogs

pytestmark = pytest.mark.skipif(not fastread.available(), reason="msgspec is not installed: no fast reader to check")

GOOD = [
    '{"type":"event","job":"a","time":1767571200.0,"event":"job_start"}',
    '{"type":"event","job":"a","time":1767571210.5,"event":"step_start","step":1}',
    '{"type":"event","job":"b","time":1767571211.0,"event":"allocation","chips":64}',
    '{"type":"event","job":"a","time":1767571212.0,"event":"custom_badput_start","label":"eval"}',
    '{"type": "event", "job": "b", "time": 1767571215, "event": "step_start", "step": 7, "extra": [1, 2]}',
    '{"type":"job","job":"a","accelerator":"tpu-v4","chips":256,"ideal_step_s":1.5}',
    '{"type":"capacity","time":"2026-01-05T00:00:00Z","accelerator":"tpu-v4","chips":4096}',
    '{"type":"schema","version":1}',
    '{"type":"job","job":"b","chips":"64","ideal_step_s":"2.5","phase":"serving","notes":{"a":[1,{"b":2}]}}',
    '{"type":"job","job":"c","chips":8,"flops_per_step":1e15,"peak_flops_per_chip":2.75e14,"topology":"2x2x2"}',
    '{"type":"event","job":"b","time":1767571216.0,"event":"slice_counts","active_slices":2,"total_slices":4}',
    '{"type":"event","job":"b","time":1767571217.0,"event":"elastic_reinit_start"}',
]
BAD = [
    '{"type":"event","job":"a","time":"2026-01-05T00:00:09Z","event":"job_end"}',  # good, but text time
    '{"type":"event","job":"a","time":1e400,"event":"job_end"}',
    '{"type":"event","job":"a","time":NaN,"event":"job_end"}',
    '{"type":"event","job":"a","time":1767571200.0,"event":"step_start"}',
    '{"type":"event","job":"a","time":1767571200.0,"event":"step_start","step":-1}',
    '{"type":"event","job":"a","time":1767571200.0,"event":"step_start","step":5.0}',
    '{"type":"event","job":"a","time":1767571200.0,"event":"allocation","chips":99999999999}',
    '{"type":"event","job":"","time":1767571200.0,"event":"job_end"}',
    '{"type":"event","job":"a","time":1767571200.0,"event":"lunch"}',
    '{"type":"event","job":"b","time":1767571216.0,"event":"slice_counts","active_slices":5,"total_slices":4}',
    '{"type":"event","job":"b","time":1767571216.0,"event":"slice_counts"}',
    '{"type":"job","job":"a","chips":0}',
    '{"type":"job","job":"a","chips":100000000000000000000000000001}',
    '{"type":"capacity","time":1767571200,"accelerator":"tpu-v4","chips":true}',
    '{"type":"schema","version":2}',
    '{"type":"bogus"}',
    "[1, 2]",
    "{not json",
    "",
    "   ",
    '{"type":"event","job":"a\\u2028b","time":1767571200.0,"event":"job_end"}',
    '\ufeff{"type":"schema","version":1}',
    '{"type":"event","job":"a\x1cb","time":1767571200.0,"event":"job_end"}',
    '{"type":"event","job":"a\x85b","time":1767571200.0,"event":"job_end"}',
    '{"type":"event",\x0b"job":"a","time":1767571200.0,"event":"job_end"}',
]


def snapshot(paths: list[Path], skip_bad: bool) -> Any:
    try:
        log = goodputlogs.load(paths, "native", skip_bad)
    except BadInput as exc:
        return ("error", str(exc))
    by_job = {job: list(columns) for job, columns in log.events.items()}
    jobs = {k: vars(v) for k, v in log.jobs.items()}
    return by_job, jobs, log.capacity, log.slices, log.records, log.skipped


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    st.lists(st.sampled_from(GOOD + BAD), min_size=1, max_size=30),
    st.sampled_from([40, 97, 300, 1 << 20]),
    st.booleans(),
    st.sampled_from(["\n", "\r\n"]),
)
def test_fast_reader_gives_what_the_standard_reader_gives(tmp_path_factory, lines, chunk, skip_bad, newline):
    path = tmp_path_factory.mktemp("log") / "log.jsonl"
    path.write_bytes(newline.join(lines).encode())
    with pytest.MonkeyPatch.context() as mp:
        blocks = read_in_blocks(mp, chunk)
        fast = snapshot([path], skip_bad)
        mp.setattr(fastread, "_DECODER", None)
        slow = snapshot([path], skip_bad)
    assert fast == slow
    assert blocks.as_asked()
    if fast[0] != "error":  # (an error ends the reading at its piece)
        assert [len(r) for r in blocks.reads] == [-(-path.stat().st_size // chunk)] * 2


def test_large_plain_logs_take_the_fast_path(tmp_path, monkeypatch):
    lines = [GOOD[5]] + [
        json.dumps({"type": "event", "job": f"j{k % 7}", "time": 1767571200.0 + k, "event": "step_start", "step": k})
        for k in range(20_000)
    ]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    calls: list[int] = []
    real = eventlines.read_native_lines

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(eventlines, "read_native_lines", counted)
    blocks = read_in_blocks(monkeypatch, 64 * 1024)
    log = goodputlogs.load([path], "native", False)
    assert sum(len(c) for c in log.events.values()) == 20_000 and log.records == 20_001
    assert not calls and blocks.fewest() > 1  # every one of the pieces was vouched for by the fast reader
