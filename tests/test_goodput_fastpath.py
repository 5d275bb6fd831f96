"""The large-input path of goodput-report (msgspec-decoded pieces, decoded and accounted in worker processes)
against the straightforward one (the standard line-by-line reader, one process): the same report and the same
table on varied logs, and the same one-line error, naming file, line and field, for a malformed line."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import GUARD_S, in_thread, read_in_blocks
from tpufleet.errors import BadInput
from tpufleet.goodput import fastread, render
from tpufleet.ops.goodput import build
from tpufleet.state import goodputpool

pytestmark = pytest.mark.skipif(not fastread.available(), reason="msgspec is not installed: no fast path to check")

B = 1767571200.0
MALFORMED = [  # (line, field named in the error)
    ('{"type":"event","job":"j0","time":1767571200.0,"event":"step_start","step":-1}', "step"),
    ('{"type":"event","job":"j1","time":1e400,"event":"job_end"}', "time"),
    ('{"type":"event","job":"j2","time":1767571200.0,"event":"lunch"}', "event"),
    ('{"type":"job","job":"j0","chips":0}', "chips"),
    ('{"type":"job","job":"j0","chips":"\u0668"}', "chips"),
    ('{"type":"event","job":"j1","time":1767571200.0,"event":"allocation"}', "chips"),
    ('{"type":"event","job":"j0","time":17675', "<line>"),
    ("[1, 2]", "<record>"),
]


def varied_log(seed: int, jobs: int, malformed: int) -> list[str]:
    """Interleaved jobs with runs of steps, data loading, checkpoints, failures and silent restarts, custom
    badput, allocations, capacity and slice counts; some times as ISO text, some lines with extra fields."""
    rng = random.Random(seed)
    out = ['{"type":"schema","version":1}'] if rng.random() < 0.5 else []
    out.append(json.dumps({"type": "capacity", "time": B, "accelerator": "tpu-v4", "chips": 4096}))
    streams = [_job_lines(rng, f"j{k}", B + 13.0 * k) for k in range(jobs)]
    while any(streams):
        pick = rng.choice([s for s in streams if s])
        out += [pick.pop(0) for _ in range(min(len(pick), rng.randint(1, 40)))]
    for _ in range(malformed):
        out.insert(rng.randrange(len(out) + 1), rng.choice(MALFORMED)[0])
    return out


def _job_lines(rng: random.Random, job: str, t: float) -> list[str]:
    meta: dict[str, Any] = {"type": "job", "job": job, "accelerator": rng.choice(["tpu-v4", "tpu-v5e"])}
    meta |= {"chips": rng.choice([8, 64]), "phase": rng.choice(["training", "training", "serving"])}
    if rng.random() < 0.5:
        meta["ideal_step_s"] = round(rng.uniform(0.5, 2), 3)
    lines = [json.dumps(meta)]

    def ev(name: str, when: float, **extra: Any) -> None:
        rec: dict[str, Any] = {"type": "event", "job": job, "time": round(when, 3), "event": name, **extra}
        if rng.random() < 0.01:
            rec["time"] = f"{when:.3f}"  # a time as text: that piece goes the standard way
        if rng.random() < 0.02:
            rec["note"] = [1, {"x": None}]
        lines.append(json.dumps(rec))

    ev("submitted", t)
    if rng.random() < 0.3:
        ev("allocation", t + 5, chips=meta["chips"])
    step = 1
    runs = rng.randint(1, 4)
    for run in range(runs):
        t += rng.uniform(10, 60)
        ev("job_start", t)
        ev("tpu_init_start", t)
        t += rng.uniform(5, 20)
        ev("tpu_init_end", t)
        for _ in range(rng.randint(0, 60)):
            ev("step_start", t, step=step)
            if rng.random() < 0.2:
                ev("data_loading_start", t + 0.1)
                ev("data_loading_end", t + 0.4)
            if rng.random() < 0.05:
                ev("custom_badput_start", t + 0.2, label="eval")
                ev("custom_badput_end", t + 0.6, label="eval")
            t += rng.uniform(0.8, 1.6) * (1.5 if rng.random() < 0.1 else 1)
            if step % 10 == 0:
                ev("checkpoint_start", t, step=step)
                t += rng.uniform(0.5, 3)
                ev("checkpoint_end", t, step=step)
            step += 1
        t += rng.uniform(5, 30)
        if rng.random() < 0.6:
            ev(rng.choice(["failure", "preemption", "eviction"]), t)
        if run < runs - 1 and (len(lines) + run) % 3 == 0:  # (no draw: the other logs stay as they were)
            lines.append(json.dumps({"type": "event", "job": job, "time": round(t, 3), "event": "job_end"}))
        step = max(1, step - rng.randint(0, 15))
    if rng.random() < 0.2:
        ev("slice_counts", t, active_slices=1, total_slices=2)
    if rng.random() < 0.8:
        ev("job_end", t + 1)
    return lines


def report(paths: list[Path], fast: bool, skip_bad: bool, chunk: int) -> Any:
    """(report, table) or ("error", message), by the fast path (pools forced on) or the straightforward one."""
    pools: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        blocks = read_in_blocks(mp, chunk)
        if fast:
            mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 0)
            mp.setattr(goodputpool, "_cpus", lambda: (CPUS, float(CPUS)))  # idle, whatever else runs here
            real = goodputpool._workers

            def counted(pool: Any) -> int:
                pools.append(1)
                return real(pool)

            mp.setattr(goodputpool, "_workers", counted)
        else:
            mp.setattr(fastread, "_DECODER", None)
        try:
            r = build(paths, by=["accelerator", "phase"], period="day", skip_bad=skip_bad)
        except BadInput as exc:
            return ("error", str(exc))
        finally:
            assert bool(pools) == (fast and MULTI_CPU)  # the worker processes were used
            assert blocks.as_asked()  # each log read `chunk` bytes at a time
    assert [len(r) for r in blocks.reads] == [-(-p.stat().st_size // chunk) for p in paths]  # each log read whole
    return r, render.to_table(r, top=50)


CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
MULTI_CPU = CPUS > 1


@settings(max_examples=12, derandomize=True, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 6),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from([256, 4096, 1 << 20]),
)
def test_fast_path_gives_the_straightforward_report(tmp_path_factory, seed, jobs, malformed, skip_bad, chunk):
    lines = varied_log(seed, jobs, malformed)
    directory = tmp_path_factory.mktemp("logs")
    half = len(lines) // 2  # two files: a job's events may span both
    paths = [directory / "a.jsonl", directory / "b.jsonl"]
    paths[0].write_text("\n".join(lines[:half]) + "\n")
    paths[1].write_text("\n".join(lines[half:]))
    fast = report(paths, True, skip_bad, chunk)
    assert fast == report(paths, False, skip_bad, chunk)
    if malformed and not skip_bad:
        assert fast[0] == "error"
        where, field = fast[1].split(": field ", 1)[0], fast[1].split(": field ", 1)[1].split(":")[0]
        file, line = where.rsplit(":", 1)
        text = Path(file).read_text().splitlines()[int(line) - 1]
        assert (text, field) in MALFORMED
    else:
        assert fast[0]["input"]["skipped"] == (malformed if skip_bad else 0)


def test_a_malformed_line_deep_in_a_large_log_exits_2_naming_file_line_and_field(cli, tmp_path, monkeypatch):
    lines = varied_log(7, 40, 0)
    assert len(lines) > 5000
    lines.insert(4321, MALFORMED[0][0])
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    blocks = read_in_blocks(monkeypatch, 8192)
    monkeypatch.setattr(goodputpool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(goodputpool, "_cpus", lambda: (CPUS, float(CPUS)))
    r = cli("goodput-report", path, state=False)
    assert r.code == 2
    assert f"{path}:4322: field step: must be a whole number from 0 to" in r.err
    assert len(blocks.reads) == 1 and blocks.fewest() > 1  # line 4,322 is pieces into the log
    ok = cli("goodput-report", path, "--skip-bad", "-o", "json", state=False)
    assert ok.code == 0 and ok.json["input"]["skipped"] == 1
    assert len(blocks.reads) == 2 and blocks.reads[1] and blocks.as_asked()


def test_idle_cpus_are_measured_now_and_within_the_cpus_this_process_may_use(monkeypatch):
    """The decoding workers start only with a CPU idle now (the 1-minute load average lags a finished run)."""
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat here: the 1-minute load average is used instead")
    monkeypatch.setattr(goodputpool, "IDLE_SAMPLE_S", 0.01)
    cpus, idle = goodputpool._cpus()
    assert cpus >= 1 and 0.0 <= idle <= cpus
    all_ticks, idle_ticks = goodputpool._cpu_ticks()
    assert 0 <= idle_ticks <= all_ticks


@pytest.mark.parametrize(
    "value",
    [
        "1",  # a key no record reads, harmless: the fast path reads the piece
        "1" + "0" * 4400,  # more digits than Python parses: the standard reader refuses the line
        "1" + "0" * 4000,
        "[" * 985 + "]" * 985,  # nesting near the recursion guard, where the decoders part ways
        '{"a":' * 300 + "1" + "}" * 300,
        "9223372036854775808",
    ],
    ids=["harmless", "4401-digits", "4001-digits", "nested-985", "objects-300", "beyond-int64"],
)
def test_a_key_no_record_reads_is_judged_as_the_standard_reader_judges_it(tmp_path, value):
    lines = ['{"type":"job","job":"j0","chips":8,"ideal_step_s":1}']
    lines += [f'{{"type":"event","job":"j0","time":{B + k},"event":"step_start","step":{k + 1}}}' for k in range(50)]
    lines.insert(20, f'{{"type":"event","job":"j0","time":{B + 19.5},"event":"data_loading_start","x":{value}}}')
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    real = fastread.decode_piece
    vouched: list[bool] = []

    def spied(piece: bytes) -> Any:
        decoded = real(piece)
        vouched.append(decoded is not None)
        return decoded

    for skip_bad in (False, True):
        vouched.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)  # decoded here, where the spy sees it
            mp.setattr(fastread, "decode_piece", spied)
            try:
                fast: Any = build([path], by=["accelerator", "phase"], period="day", skip_bad=skip_bad)
                fast = (fast, render.to_table(fast, top=50))
            except BadInput as exc:
                fast = ("error", str(exc))
        assert fast == report([path], False, skip_bad, 1 << 20)
        # the one piece: read fast when nothing in it may be judged apart (a long integer both decoders take)
        assert vouched == [len(value) < 100]


E = '{"type":"event","job":"a","time":%s,"event":"%s"%s}'
FAST_READERS_TAKE = {  # (log bytes): what a fast decoder took and the standard reader refuses or reads otherwise
    "two records on a line, a blank line": (
        (E % (B + 100, "job_start", "") + E % (B + 101, "allocation", ',"chips":8') + "\n\n").encode()
        + (E % (B + 200, "job_end", "") + "\n").encode()
    ),
    "a record over two lines, two on another": (
        ((E % (B + 100, "job_start", "")).replace(',"event"', '\n,"event"') + "\n").encode()
        + (E % (B + 101, "allocation", ',"chips":8') + E % (B + 200, "job_end", "") + "\n").encode()
    ),
    "a byte-order mark before a line": (
        b'{"type":"capacity","time":1767571300,"accelerator":"tpu-v4","chips":64}\n'
        + b"\xef\xbb\xbf"
        + (E % (B + 100, "job_start", "") + "\n").encode()
    ),
    "a per-slice key written with an escape": (
        b'{"type":"job","job":"a","chips":8,"ideal_step_s":1}\n'
        + (E % (B + 100, "allocation", ',"chips":4,"sl\\u0069ce":0') + "\n").encode()
        + (E % (B + 100, "allocation", ',"chips":4,"sl\\u0069ce":1') + "\n").encode()
        + (E % (B + 110, "step_start", ',"step":1') + "\n" + E % (B + 120, "job_end", "") + "\n").encode()
    ),
    "bytes not UTF-8 in a key no record reads": (E % (B + 100, "job_start", ',"x":"\udcff"') + "\n").encode(
        "utf-8", "surrogateescape"
    ),
    "bytes not UTF-8 in a job id": ((E % (B + 100, "job_start", "")).replace('"a"', '"a\udcff"') + "\n").encode(
        "utf-8", "surrogateescape"
    ),
}


@pytest.mark.parametrize("data", FAST_READERS_TAKE.values(), ids=FAST_READERS_TAKE.keys())
def test_what_a_fast_decoder_takes_and_the_standard_reader_refuses_is_read_the_standard_way(tmp_path, data):
    from tpufleet.goodput import columnar

    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    arrow_module = getattr(columnar, "pa")  # noqa: B009 - PyArrow as columnar imported it (None: not installed)
    modes = {"standard": (None, None), "msgspec": (fastread._DECODER, None), "arrow": (None, arrow_module)}
    for skip_bad in (False, True):
        seen: dict[str, Any] = {}
        for mode, (decoder, arrow) in modes.items():
            if mode == "arrow" and not columnar.available():
                continue
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
                mp.setattr(fastread, "_DECODER", decoder)
                mp.setattr(columnar, "pa", arrow)
                try:
                    seen[mode] = build([path], by=["accelerator"], period="day", skip_bad=skip_bad)
                except BadInput as exc:
                    seen[mode] = str(exc)
        assert all(answer == seen["standard"] for answer in seen.values()), (skip_bad, seen)


def test_a_label_key_written_with_an_escape_is_kept():
    piece = (E % (B + 100, "custom_badput_start", ',"l\\u0061bel":"eval"') + "\n").encode()
    decoded = fastread.decode_piece(piece)
    assert decoded is not None and decoded.batch.labels == {0: "eval"}


def test_decoding_workers_come_from_a_fork_server_and_are_closed_not_killed(monkeypatch):
    """The workers were forked from the reading process itself: from `serve` (or a process running a Dask client)
    a child could inherit a lock another thread held and wait for ever; and `terminate` left the pool's threads
    waiting on a queue lock a killed worker held. They now come from a fork server and are shut down."""
    if not MULTI_CPU:
        pytest.skip("one CPU: the reading process decodes alone")
    monkeypatch.setattr(goodputpool, "_cpus", lambda: (CPUS, float(CPUS)))
    with goodputpool._fork_pool(True) as pool:
        assert pool is not None
        context = pool._mp_context
        assert context is not None and context.get_start_method() == "forkserver"
        assert pool.submit(len, b"piece").result() == 5
        workers = list(pool._processes.values())
    assert workers and all(not p.is_alive() for p in workers)


_DECODE_PIECE = goodputpool.decode_piece


def _decode_but_die_in_a_worker(piece: bytes, compiled: bool = False) -> Any:
    """`decode_piece`, except that a worker process running it dies at once (as one the OOM killer picks)."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        os._exit(9)
    return _DECODE_PIECE(piece, compiled)


def test_a_decoding_worker_killed_leaves_its_pieces_to_the_report_not_a_wait_for_ever(tmp_path, monkeypatch):
    """A worker killed (for memory, say) never handed its piece back, and goodput-report waited for it for good;
    now the pieces left are decoded in the reading process, and the report is the one a single process gives."""
    if not MULTI_CPU:
        pytest.skip("one CPU: the reading process decodes alone")
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(varied_log(3, 6, 0)) + "\n")
    blocks = read_in_blocks(monkeypatch, 4096)
    alone = build([path], by=["accelerator"], period="day", skip_bad=False)
    monkeypatch.setattr(goodputpool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(goodputpool, "_cpus", lambda: (CPUS, float(CPUS)))
    monkeypatch.setattr(goodputpool, "decode_piece", _decode_but_die_in_a_worker)
    _thread, done, out = in_thread(lambda: build([path], by=["accelerator"], period="day", skip_bad=False))
    assert done.wait(GUARD_S), "the report waited for a piece a dead worker held"
    assert out == [alone] and len(blocks.reads) == 2 and blocks.fewest() > 1  # pieces for the workers to take


def split_logs(directory: Path, seed: int, files: int) -> list[Path]:
    """One log's lines dealt into `files` logs in runs: most jobs span several, some one only."""
    rng = random.Random(seed)
    # three logs' jobs, each named apart (one job's records in two logs must agree: j0 -> j00, j10, j20)
    lines = [re.sub(r'"j([0-9])', rf'"j{k}\1', line) for k in range(3) for line in varied_log(seed + k, 4, 0)]
    lines = [re.sub(r'"j([0-9])', rf'"s{k % 2}-j\1', line) if k % 5 else line for k, line in enumerate(lines)]
    paths = [directory / f"part{i}.jsonl" for i in range(files)]
    chunks: list[list[str]] = [[] for _ in paths]
    i = 0
    while i < len(lines):
        run = rng.randint(1, 200)
        chunks[rng.randrange(files)].extend(lines[i : i + run])
        i += run
    for f, chunk in enumerate(chunks):  # a job of this log only
        chunk += [re.sub(r'"j([0-9])', rf'"only{f}-j\1', line) for line in varied_log(seed + 10 + f, 1, 0)[1:]]
    for path, chunk in zip(paths, chunks, strict=True):
        path.write_text("\n".join(chunk) + "\n")
    return paths
