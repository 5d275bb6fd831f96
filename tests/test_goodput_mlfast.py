"""The columnar reader of ml-goodput-measurement logs (msgspec's typed records, `tpufleet.goodput.mlfast`) against
the standard entry-by-entry importer: the same report and the same first error (file, line, field, value) on
the package's logs and on entries with random defects, metadata, adopted checkpoint entries and several jobs."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_goodput_mlimport import KEYS, VALUES, package_logs

from tpufleet.errors import BadInput
from tpufleet.goodput import mlbatch, mlfast
from tpufleet.ops.goodput import build

pytestmark = pytest.mark.skipif(not mlfast.available(), reason="msgspec is not installed: no fast path to check")

# Entries the typed decoder might take with another value, or that only the standard importer can judge.
DEFECTS = [
    '{"job_name": "j", "step_count": true, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": 5.0, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": "5", "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": -1, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": "x"}',
    '{"job_name": "j", "job_start_time": 1767571300.0, "job_start_time": true}',
    '{"job_name": "j", "job_start_time": true, "job_start_time": 1767571300.0}',
    '{"job_name": "j", "job_start_time": null}',
    '{"job_name": "j", "job_start_time": "1767571300"}',
    '{"job_name": "j", "job_start_time": 1e400}',
    '{"job_name": "j", "job_start_time": 1e-9}',
    '{"job_name": "j", "job_start_time": 0}',
    '{"job_name": "j", "job_start_time": -0.0}',
    '{"job_name": "j", "job_start_time": 99999999999999999999999999999}',
    '{"job_name": "j", "job_end_time": 7258118400.5}',
    '{"job_name": "", "job_start_time": 1767571300.0}',
    '{"job_name": 5, "job_start_time": 1767571300.0}',
    '{"job_name": "\\u006a", "job_start_time": 1767571300.0}',
    '{"job_name": "j", "note": ' + "9" * 4400 + "}",
    '{"job_start_time": 1767571300.0}',
    '{"event_type": "save", "step": 3, "checkpoint_manager_blocking_start_time": 1767571300.0, '
    '"checkpoint_manager_blocking_duration_secs": 1.5}',
    '{"event_type": "restore", "step": true, "checkpoint_manager_start_time": 1767571300.0, '
    '"checkpoint_manager_duration_secs": 2}',
    '{"job_name": "j", "event_type": "save", "step": 2, "checkpoint_manager_start_time": 1767571300.0}',
    '{"job_name": "j", "event_type": "save", "checkpoint_manager_start_time": 1767571300.0, '
    '"checkpoint_manager_duration_secs": 1e9}',
    '{"job_name": "j", "event_type": "other", "step": "x"}',
    '{"job_name": "j", "event_type": null, "checkpoint_manager_start_time": "x"}',
    '{"job_name": "j", "job_metadata": {"chips": 8, "accelerator": "tpu-v5p", "ideal_step_s": 0.5}}',
    '{"job_name": "j", "job_metadata": {"chips": 0}}',
    '{"job_name": "j", "job_metadata": [1]}',
    '{"job_name": "j", "job_metadata": {"chips": 4}, "job_start_time": 1767571300.0}',
    '{"job_name": "k", "job_start_time": 1767571300.0, "step_count": 1, "step_start_time": 1767571301.0}',
    '{"job_name": "j", "custom_badput_event_type": "eval", "custom_badput_event_start_time": 1767571300.0}',
    '{"jsonPayload": {"job_name": "j", "job_start_time": 1767571300.0}}',
    '{"job_name": "j", "job_start_time": 1767571300.0} {"job_name": "j", "job_end_time": 1767571400.0}',
    '{"job_name": "j", "job_start_time": 1767571300.0}\r',
    '{"job_name": "j", "job_start_time": NaN}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "job_end_time": 1767571301.0}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "step_start_time": 1767571302.0}',
    '{"job_name": "j", "step_count": 3, "step_count": 4, "step_start_time": 1767571300.0}',
    '{"step_count": 3, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": -2, "step_start_time": 1767571300.0}',
    '{"job_name": "step_start_time", "step_count": 3, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "directory": "gs://b"}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "note": [1, {"a": 2}]}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "event_type": "save", "step": 3, '
    '"checkpoint_manager_blocking_start_time": 1767571300.0, "checkpoint_manager_blocking_duration_secs": 1.5}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "job_metadata": {"chips": 8}}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "jsonPayload": {}}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "elastic_wait_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "x": 1} {"job_name": "j"}',
    '{"job_name": "j", "step_count": 3, "step_start_time": 1767571300.0, "x": tru}',
    '{"job_name": "j", "job_end_time": 1767571300.0, "step_count": 9223372036854775808}',
    '{"job_name": "j", "job_start_time": 1767571200.0, "x":\n{}}\n'
    '{"job_name": "j", "step_count": 1, "step_start_time": 1767571210.0} {"job_name": "j", "job_end_time": 1767571300.0}',
    '{"job_name": "j", "step_count": 1, "step_start_time": 1767571210.0} ',
    '{"job_name": "j", "step_count": 9223372036854775808, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "step_count": -9223372036854775809, "step_start_time": 1767571300.0}',
    '{"job_name": "j", "job_end_time": 1767571300.0, "step_count": 1' + "0" * 400 + "}",
    '{"job_name": "j", "job_end_time": 1767571300.0, "x": ' + "[" * 985 + "]" * 985 + "}",
    '{"job_name": "j", "job_end_time": 1767571300.0, "x": ' + "[{" * 300 + "}]" * 300 + "}",
    '{"job_name": "j", "tpu_init_start_time": 1767571305.0, "tpu_init_end_time": 1767571302.0}',
    '{"job_name": "j", "job_start_time": 1767571305.0, "job_end_time": 1767571305.0}',
    '{"job_name": "j", "job_end_time": 1767571301.0, "job_start_time": 1767571305.0}',
    '{"job_name": "j", "custom_badput_event_start_time": 1767571305.0, "custom_badput_event_end_time": 1767571301.0}',
    "[1, 2]",
    "{}",
    "",
    "   ",
    "  {}",
]

OTHERS = [
    '{"job_name": "j", "job_metadata": {"chips": 8, "accelerator": "tpu-v5p", "ideal_step_s": 0.5}}',
    '{"job_name": "j", "event_type": "restore", "step": 1, "checkpoint_manager_start_time": 1767571300.0, '
    '"checkpoint_manager_duration_secs": 2, "directory": "gs://b"}',
    '{"job_name": "j", "directory": "gs://b"}',
]


class _CountedDecoder:
    """A decoder that notes how many lines each piece it decodes holds (`pieces`), then decodes it."""

    def __init__(self, real: Any, pieces: list[int]) -> None:
        self.real, self.pieces = real, pieces

    def decode_lines(self, piece: bytes) -> Any:
        self.pieces.append(piece.count(b"\n"))
        return self.real.decode_lines(piece)


def report(
    path: Path,
    fast: bool,
    skip_bad: bool,
    stepped: bool | None = True,
    period: str = "day",
    pieces: list[int] | None = None,
) -> tuple[Any, int]:
    """(the report or ("error", message), files the fast reader vouched for). `stepped`: each chunk of entries
    is tried the quick way first (step entries decoded with their three fields), else decoded whole; None: the
    reader's own rule. `pieces`: filled with the lines of each piece the fast reader decoded."""
    vouched: list[bool] = []
    with pytest.MonkeyPatch.context() as mp:
        if fast:
            real = mlfast.read

            def counted(data: bytes, file: str, log: Any) -> bool:
                done = real(data, file, log)
                vouched.append(done)
                return done

            mp.setattr(mlfast, "read", counted)
            mp.setattr(mlfast, "CHUNK_LINES", 7)  # entries decoded 7 at a time: chunk boundaries everywhere
            if pieces is not None:
                mp.setattr(mlfast, "_DECODER", _CountedDecoder(mlfast._DECODER, pieces))
                mp.setattr(mlfast, "_STEPS", _CountedDecoder(mlfast._STEPS, pieces))
            if stepped is not None:
                mp.setattr(mlfast, "OTHER_SHARE_LIMIT", 1.0 if stepped else -1.0)
        else:
            mp.setattr(mlfast, "_DECODER", None)
        try:
            result: Any = build([path], fmt="ml-goodput", by=["accelerator"], period=period, skip_bad=skip_bad)
        except BadInput as exc:
            result = ("error", str(exc))
    return result, sum(vouched)


def lines_of(entries: list[dict[str, Any]], rng: random.Random, defects: int, others: bool) -> list[str]:
    lines = [json.dumps(e, separators=(",", ":") if rng.random() < 0.5 else None) for e in entries]
    if others:  # metadata, a checkpoint entry naming its job, an entry of no event
        for line in OTHERS:
            lines.insert(rng.randrange(len(lines) + 1), line)
    for _ in range(defects):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(DEFECTS))
    return lines


@settings(max_examples=60, derandomize=True, deadline=None)
@given(package_logs(), st.integers(0, 2), st.booleans(), st.booleans(), st.integers(0, 10**6))
def test_fast_and_standard_readers_agree(tmp_path_factory, entries, defects, others, skip_bad, seed):
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("ml") / "log.jsonl"
    path.write_text("\n".join(lines_of(entries, rng, defects, others)) + "\n")
    fast, vouched = report(path, True, skip_bad, stepped=seed % 2 == 0)
    standard, _ = report(path, False, skip_bad)
    assert fast == standard
    if not defects and not any(k.startswith("custom_badput") for e in entries for k in e):
        assert vouched == 1  # the package's logs (with metadata, adopted entries): the fast path reads them


def test_several_jobs_are_read_fast_in_the_standard_order(tmp_path):
    rng = random.Random(7)
    lines = []
    for k in range(200):
        job = f"job-{rng.randrange(5)}"
        t = 1767571200.0 + rng.randrange(50) * 0.5  # ties: the log order is kept at equal times
        key = rng.choice(["job_start_time", "step_start_time", "tpu_init_start_time", "tpu_init_end_time"])
        entry = {"job_name": job, key: t, "step_count": k} if key == "step_start_time" else {"job_name": job, key: t}
        lines.append(json.dumps(entry))
    lines.append(OTHERS[0].replace('"j"', '"job-3"'))
    lines.append(json.dumps({"job_name": "job-1", "job_end_time": 1767571300.0}))
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    pieces: list[int] = []
    fast, vouched = report(path, True, False, pieces=pieces)
    assert vouched == 1 and fast == report(path, False, False)[0]
    assert len(pieces) >= len(lines) // 7 and max(pieces) <= 7  # read in chunks of 7 entries: 29 boundaries crossed
    assert len(fast["jobs"]) == 5 and {j["accelerator"] for j in fast["jobs"]} == {"unknown", "tpu-v5p"}


@pytest.mark.filterwarnings("error::RuntimeWarning")  # nothing on stderr but the answer (a step of 2**63 warned)
@pytest.mark.parametrize("line", DEFECTS)
def test_each_defect_alone_gives_the_standard_answer(tmp_path, line):
    base = [
        {"job_name": "j", "job_start_time": 1767571200.0},
        {"job_name": "j", "step_count": 1, "step_start_time": 1767571210.0},
        {"job_name": "j", "step_count": 2, "step_start_time": 1767571220.0},
        {"job_name": "j", "job_end_time": 1767571400.0},
    ]
    for k in range(len(base) + 1):
        lines = [json.dumps(e) for e in base]
        lines.insert(k, line)
        path = tmp_path / f"log{k}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        for skip_bad in (False, True):
            # by week: a defect dated 1970 makes 20,000 days of periods, the same in every reader, at 10 s a case
            standard = report(path, False, skip_bad, period="week")[0]
            assert report(path, True, skip_bad, period="week")[0] == standard
            assert report(path, True, skip_bad, stepped=False, period="week")[0] == standard


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=5).map(lambda d: {"job_name": "j", **d}),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_hostile_entries_give_the_standard_answer(tmp_path_factory, entries, skip_bad):
    path = tmp_path_factory.mktemp("ml") / "log.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    standard = report(path, False, skip_bad)[0]
    assert report(path, True, skip_bad)[0] == standard
    assert report(path, True, skip_bad, stepped=False)[0] == standard


def test_step_entries_are_read_the_quick_way_and_others_whole(tmp_path):
    lines = [json.dumps({"job_name": "j", "job_start_time": 1767571200.0})]
    lines += [json.dumps({"job_name": "j", "step_count": k, "step_start_time": 1767571210.0 + k}) for k in range(40)]
    lines.insert(20, OTHERS[1])
    step_and_end = {"job_name": "j", "step_count": 41, "step_start_time": 1767571300.0, "job_end_time": 1767571301.0}
    tried: list[bool] = []
    real = mlfast._add_stepped

    def spied(*args: Any) -> bool:
        tried.append(real(*args))
        return tried[-1]

    for log, quick in ((lines, True), ([*lines, json.dumps(step_and_end)], False)):
        path = tmp_path / f"log-{quick}.jsonl"
        path.write_text("\n".join(log) + "\n")
        tried.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(mlfast, "_add_stepped", spied)
            fast, vouched = report(path, True, False)
        assert vouched == 1 and fast == report(path, False, False)[0]
        # chunks of 7 entries: the one holding a step entry with another time is decoded whole, the rest quickly
        assert len(tried) == -(-len(log) // 7)
        assert tried.count(False) == (0 if quick else 1)


def test_a_chunk_of_few_steps_ends_the_quick_way_for_the_rest_of_the_file(tmp_path):
    def steps(first: int) -> list[str]:
        return [json.dumps({"job_name": "j", "step_count": k, "step_start_time": 1767571300.0 + k}) for k in
                range(first, first + 7)]  # fmt: skip

    keys = [key for key, _ in mlbatch.TIMES if key != "step_start_time"]
    others = [json.dumps({"job_name": "j", key: 1767571250.0 + k}) for k, key in enumerate(keys)]
    lines = [*steps(1), *others[:7], *steps(8)]  # chunks of 7: steps, no step, steps
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    tried: list[bool] = []
    real = mlfast._add_stepped

    def spied(*args: Any) -> bool:
        tried.append(real(*args))
        return tried[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mlfast, "_add_stepped", spied)
        fast, vouched = report(path, True, False, stepped=None)
    assert vouched == 1 and fast == report(path, False, False)[0]
    assert tried == [True, False]  # the third chunk is not tried
