"""The compiled loop that reads large native logs' event lines (`tpufleet.goodput.linescan`) against msgspec's
reader and the standard line-by-line reader: the same columns bit for bit where it takes a piece, and the same
report, table and first error (file, line, field, value) on generated logs with random defects."""

from __future__ import annotations

import functools
import importlib.util
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_goodput_columnar import DEFECTS, with_defects
from test_goodput_prebuilt import kernels_in_use

from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread, linescan, prebuilt, render
from tpufleet.goodput.events import EVENT_NAMES, MAX_TEXT
from tpufleet.goodput.times import MAX_TIME, SMALLEST_TIME
from tpufleet.ops.goodput import build
from tpufleet.state import goodputpieces, goodputpool, goodputstreams, prebuiltcache

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="Numba is not installed (make sweep-deps): no compiled loop"
)

B = 1767571200.0
# Times and counts in forms the loop must leave to msgspec, or take with msgspec's value.
NUMBER_DEFECTS = [
    '{"type":"event","job":"j0","time":1767571300.1234567,"event":"job_start"}',  # 17 significant digits
    '{"type":"event","job":"j0","time":1767571300.123456,"event":"job_start"}',  # 16
    '{"type":"event","job":"j0","time":1767571300.12345,"event":"job_start"}',  # 15: taken
    '{"type":"event","job":"j0","time":1.7675713e9,"event":"job_start"}',
    '{"type":"event","job":"j0","time":01767571300,"event":"job_start"}',
    '{"type":"event","job":"j0","time":1767571300.,"event":"job_start"}',
    '{"type":"event","job":"j0","time":7258118400.0000001,"event":"job_start"}',
    '{"type":"event","job":"j0","time":7258118400.1,"event":"job_start"}',
    '{"type":"event","job":"j0","time":0.000001,"event":"job_start"}',
    '{"type":"event","job":"j0","time":0.0000009,"event":"job_start"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":01}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":1000000000000001}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","step":1000000000000000}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start","chips":8,"step":3}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"allocation","chips":8,"chips":9}',
    '{"type":"event","job":"j[0]","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j{0}","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j\\u0030","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j\u00e9","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j\x7f","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"' + "x" * (MAX_TEXT + 1) + '","time":1767571300.0,"event":"job_start"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"slice_counts"}',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"job_start" }',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"job_start"}\x0c',
    '{"type":"event","job":"j0","time":1767571300.0,"event":"step_start"}',
]


def _compact(line: str, rng: random.Random) -> str:
    """Most lines in tpufleet's own compact form (what the loop takes), some as json.dumps writes them."""
    try:
        record = json.loads(line)
    except ValueError:
        return line
    if not isinstance(record, dict) or rng.random() < 0.1:
        return line
    return json.dumps(record, separators=(",", ":"))


def report(paths: list[Path], compiled: bool, skip_bad: bool, chunk: int) -> tuple[Any, int]:
    """((report, table) or ("error", message), pieces the loop took): every large-input reader off but the loop,
    or all off (every line read the standard way)."""
    taken: list[bool] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputstreams, "CHUNK_BYTES", chunk)
        mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
        mp.setattr(columnar, "pa", None)
        if compiled:
            real = linescan.decode_piece

            def counted(piece: bytes) -> Any:
                decoded = real(piece)
                taken.append(decoded is not None)
                return decoded

            mp.setattr(goodputpool, "COMPILED_MIN_BYTES", 0)
            mp.setattr(linescan, "decode_piece", counted)
        else:
            mp.setattr(fastread, "_DECODER", None)
            mp.setattr(goodputpool, "COMPILED_MIN_BYTES", 1 << 62)
        try:
            r = build(paths, by=["accelerator", "phase"], period="day", skip_bad=skip_bad)
        except BadInput as exc:
            return ("error", str(exc)), sum(taken)
    return (r, render.to_table(r, top=50)), sum(taken)


@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 5),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from([512, 8192, 1 << 20]),
)
def test_the_loop_and_the_line_reader_give_the_same_report_and_first_error(
    tmp_path_factory, seed, jobs, defects, skip_bad, chunk
):
    rng = random.Random(seed)
    lines = [_compact(line, rng) for line in with_defects(seed, jobs, defects)]
    for _ in range(rng.randint(0, 2)):
        lines.insert(rng.randrange(1, len(lines) + 1), rng.choice(NUMBER_DEFECTS))
    directory = tmp_path_factory.mktemp("logs")
    half = len(lines) // 2  # two files: a job's events may span both
    paths = [directory / "a.jsonl", directory / "b.jsonl"]
    paths[0].write_text("\n".join(lines[:half]) + "\n")
    paths[1].write_text("\n".join(lines[half:]))
    compiled, _ = report(paths, True, skip_bad, chunk)
    assert compiled == report(paths, False, skip_bad, chunk)[0]


def test_every_defect_gives_the_line_readers_report_or_error(tmp_path):
    """Each defect alone in a clean log, read by the loop and by the standard reader: the same outcome, and the
    clean lines around it are taken by the loop (the comparison is not of two standard readings)."""
    base = [_compact(line, random.Random(0)) for line in with_defects(7, 2, 0)]
    taken_somewhere = 0
    for k, defect in enumerate(NUMBER_DEFECTS + DEFECTS):
        path = tmp_path / f"d{k}.jsonl"
        path.write_text("\n".join([*base[:5], defect, *base[5:]]) + "\n")
        for skip_bad in (False, True):
            compiled, taken = report([path], True, skip_bad, 1 << 10)
            assert compiled == report([path], False, skip_bad, 1 << 10)[0], defect
            taken_somewhere += taken
    assert taken_somewhere > 0


def _event(job: str, time: str, rng: random.Random) -> str:
    extra = rng.choice(["", ',"step":7', ',"chips":8', ',"step":0,"chips":64', ',"chips":1,"step":2'])
    name = rng.choice([n for n in EVENT_NAMES if n != "slice_counts"])
    needed = {"step_start": "step", "allocation": "chips"}.get(name)
    if needed and needed not in extra:
        extra += f',"{needed}":3'  # an event without the field it needs is the standard reader's to name
    return f'{{"type":"event","job":"{job}","time":{time},"event":"{name}"{extra}}}'


def _same(got: Any, expected: Any) -> None:
    assert expected is not None
    assert (got.lines, got.others, got.batch.jobs, got.batch.labels) == (
        expected.lines,
        expected.others,
        expected.batch.jobs,
        expected.batch.labels,
    )
    for field in ("bounds", "t", "code", "step", "chips"):
        a, b = getattr(got.batch, field), getattr(expected.batch, field)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), field


def _decimal(mantissa: int, decimals: int) -> str:
    digits = str(mantissa).rjust(decimals + 1, "0")
    return f"{digits[: len(digits) - decimals]}.{digits[len(digits) - decimals :]}" if decimals else digits


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.one_of(st.integers(0, 10**8), st.integers(0, 10**17)), st.integers(0, 24), st.randoms())
def test_the_loop_reads_a_time_as_msgspec_and_python_do(mantissa, decimals, rng):
    """A time of 1 to 18 digits with 0 to 24 after the point: taken exactly when it has at most 15 significant
    digits and 22 decimals and lies in the reader's range; then the columns are msgspec's bit for bit and the
    time is Python's float() of the text (a correctly rounded parse)."""
    text = _decimal(mantissa, decimals)
    piece = (_event("job-1", text, rng) + "\n").encode()
    got = linescan.decode_piece(piece)
    significant = len(str(mantissa)) if mantissa else 0
    takeable = significant <= 15 and decimals <= 22 and SMALLEST_TIME <= float(text) <= MAX_TIME
    assert (got is not None) == takeable
    if got is not None:
        _same(got, fastread.decode_piece(piece))
        assert got.batch.t.tolist() == [float(text)]


@settings(max_examples=40, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**10), st.integers(0, 6), st.integers(0, 3)), min_size=1, max_size=60))
def test_a_piece_of_many_jobs_is_grouped_as_msgspecs_reader_groups_it(events):
    """Jobs interleaved in runs: the same jobs in first-seen order, bounds and columns as msgspec's reader."""
    rng = random.Random(len(events))
    lines = [_event(f"job-{job}", _decimal(m, d), rng) for m, d, job in events if m >= 10**d]
    if not lines:
        return
    piece = "\n".join(lines).encode()
    got = linescan.decode_piece(piece)
    assert got is not None
    _same(got, fastread.decode_piece(piece))


def test_a_piece_in_tpufleets_form_is_taken_whole():
    """The form the loop is for is read by it (not handed back), jobs in first-seen order, records beside it."""
    lines = [
        '{"type":"job","job":"b","accelerator":"tpu-v4","chips":8}',
        '{"type":"event","job":"b","time":1767571200.5,"event":"job_start"}',
        '{"type":"event","job":"a","time":1767571201,"event":"allocation","chips":8}',
        '{"type":"event","job":"b","time":1767571202.25,"event":"step_start","step":1}',
    ]
    decoded = linescan.decode_piece("\n".join(lines).encode())
    assert decoded is not None and decoded.lines == 4
    assert decoded.batch.jobs == ["b", "a"] and decoded.batch.bounds.tolist() == [0, 2, 3]
    assert decoded.batch.t.tolist() == [1767571200.5, 1767571202.25, 1767571201.0]
    assert decoded.batch.step.tolist() == [-1, 1, -1] and decoded.batch.chips.tolist() == [-1, -1, 8]
    assert decoded.others == [(0, "job", {"job": "b", "accelerator": "tpu-v4", "chips": 8})]
    assert np.asarray(decoded.batch.code).tolist() == [2, 10, 1]


def test_a_log_over_the_threshold_is_read_by_the_loop(tmp_path, monkeypatch):
    """`goodput-report`'s reading uses the loop from COMPILED_MIN_BYTES of native logs on, and not below."""
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(_compact(line, random.Random(1)) for line in with_defects(3, 2, 0)) + "\n")
    calls: list[int] = []
    real = linescan.decode_piece

    def counted(piece: bytes) -> Any:
        calls.append(1)
        return real(piece)

    monkeypatch.setattr(linescan, "decode_piece", counted)
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", path.stat().st_size + 1)
    below = build([path], by=[], period=None, skip_bad=False)
    assert calls == []
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", path.stat().st_size)
    assert build([path], by=[], period=None, skip_bad=False) == below
    assert calls


@pytest.mark.parametrize(
    ("time", "taken"),
    [("1000000000.12345", True), ("1000000000.123456", False), ("9007199254.7409930", False), ("1e9", False)],
)
def test_a_time_past_15_significant_digits_is_left_to_msgspec(time, taken):
    piece = f'{{"type":"event","job":"a","time":{time},"event":"drain"}}\n'.encode()
    assert (linescan.decode_piece(piece) is not None) == taken


def test_a_loop_that_cannot_be_loaded_leaves_the_other_readers(tmp_path, monkeypatch):
    """Numba present but the loop failing to compile or load (a broken install, say), prebuilt or not: the report is
    read by the other readers, with the same answers, and says nothing of it."""
    import sys

    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(_compact(line, random.Random(2)) for line in with_defects(4, 2, 0)) + "\n")
    expected = build([path], by=[], period=None, skip_bad=False)
    monkeypatch.setitem(sys.modules, "tpufleet.goodput.linekernel", None)  # its import fails
    monkeypatch.setattr(prebuilt, "_installed", None)  # and no prebuilt module is, or can be, installed
    monkeypatch.setattr(prebuiltcache, "install", lambda: False)
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", 0)
    linescan._kernel.cache_clear()
    try:
        assert not linescan.available()
        assert linescan.decode_piece(path.read_bytes()) is None
        assert build([path], by=[], period=None, skip_bad=False) == expected
    finally:
        linescan._kernel.cache_clear()


def test_a_loop_that_misreads_its_check_line_is_not_used(monkeypatch):
    """The loaded loop must read a known line as its time and step (Numba's NUMBA_DISABLE_JIT debug switch runs it
    as Python on numpy bytes, which wrap: 1767571300 read as 100); one that does not is never used."""
    monkeypatch.setattr(linescan, "_CHECK_LINE", linescan._CHECK_LINE.replace(b"1767571300.5", b"1767571300.25"))
    linescan._kernel.cache_clear()
    try:
        assert not linescan.available()
    finally:
        linescan._kernel.cache_clear()


def test_numbas_debug_switch_leaves_the_other_readers():
    import subprocess
    import sys

    code = "from tpufleet.goodput import linescan; print(linescan.available())"
    env = {**__import__("os").environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_piece_of_very_short_lines_is_left_to_msgspec():
    """Columns cost 80 bytes a line: a piece of empty or tiny lines (ten times its size in columns) is not scanned."""
    assert linescan.decode_piece(b"\n" * 100_000) is None
    assert linescan.decode_piece(b"{}\n" * 100_000) is None
    line = b'{"type":"event","job":"j","time":1767571300.5,"event":"drain"}\n'
    assert linescan.decode_piece(line * 1000) is not None
    # records msgspec takes, 30 bytes a line: the loop's columns fill before the piece ends, and it is left whole
    schema = b'{"type":"schema","version":1}\n'
    assert linescan.decode_piece(line * 20 + schema * 1000) is None
    assert fastread.decode_piece(line * 20 + schema * 1000) is not None
    taken = linescan.decode_piece(line * 1000 + schema * 1000)  # (55 bytes a line on average)
    assert taken is not None and taken.lines == 2000


@settings(max_examples=50, derandomize=True, deadline=None)
@given(st.binary(max_size=300).map(lambda b: b.replace(b"a", b"\n").replace(b"b", b"\r")))
def test_the_loops_count_of_line_feeds_is_bytes_count(data):
    """Once the loop is loaded from Numba's JIT, the pieces' lines are counted by it (`goodputpieces._line_ends`);
    the loop built ahead of time leaves them to bytes.count (faster than its count): the same count either way."""
    for kind in ("jit", "prebuilt"):
        with kernels_in_use(kind):
            assert linescan.available()
            assert linescan.line_feeds(data) == (data.count(b"\n") if kind == "jit" else None)
            assert goodputpieces._line_ends(data) == data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def test_line_feeds_are_counted_by_the_loop_only_once_it_is_loaded(monkeypatch):
    """Counting a piece's lines never loads Numba: before the loop is loaded, bytes.count counts them."""
    monkeypatch.setattr(linescan, "_kernel", functools.cache(lambda: pytest.fail("the loop was loaded to count")))
    assert linescan.line_feeds(b"a\nb\n") is None
    assert goodputpieces._line_ends(b"a\nb\nc") == 2


_LOADED_WITHOUT_SCIPY_BLAS = """
import sys
from tpufleet.goodput import compiledaccount, linescan
loaded = linescan.available() and compiledaccount._kernel() is not None
blas_while_loading = [m for m in sys.modules if m.startswith("scipy.linalg")]
import scipy.linalg.cython_blas, scipy.linalg.cython_lapack  # importable afterwards: nothing left hidden
print(loaded, blas_while_loading, sys.modules["scipy.linalg.cython_blas"] is not None)
"""


def test_the_loops_load_without_scipys_blas_and_leave_it_importable():
    """Numba imports SciPy's BLAS bindings (and scipy.linalg) as it first types array code, for np.linalg, which no
    loop here uses: hidden while the loops load (0.15 s of a large report's start), importable after."""
    import subprocess
    import sys

    pytest.importorskip("scipy.linalg", reason="SciPy is not installed: nothing to hide")
    out = subprocess.run([sys.executable, "-c", _LOADED_WITHOUT_SCIPY_BLAS], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "True [] True", out.stderr


_BREAKS = ["\n", "\n", "\n", "\r\n", "\r"]


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(0, 4),
    st.lists(st.sampled_from(_BREAKS), min_size=1),
    st.booleans(),
    st.sampled_from(["", " ", "\t "]),
)
@example(seed=0, defects=0, breaks=["\n"], last=True, spaces=" ")  # spaces after the last line feed
@example(seed=0, defects=0, breaks=["\n"], last=False, spaces="\t ")  # after the last record
def test_a_pieces_line_ends_are_its_line_breaks_whichever_reader_decodes_it(seed, defects, breaks, last, spaces):
    """The line ends `framed` gives the reading thread (which numbers the next piece's lines from them) are the
    piece's line breaks (a CR LF one) whether a decoder took the piece (its lines, not counted again) or not: the
    loop, msgspec's reader and Arrow's each read a line a line feed."""
    rng = random.Random(seed)
    if defects:  # a varied log, some of it in forms each reader leaves to the next
        lines = [_compact(line, rng) for line in with_defects(seed, 2, defects - 1)]
        lines += rng.sample(NUMBER_DEFECTS, defects)
    else:  # events in tpufleet's form, and a job record: every reader takes them
        lines = [_event(f"job-{k % 3}", f"{B + k + 0.5}", rng) for k in range(rng.randint(1, 50))]
        lines.insert(rng.randint(0, len(lines)), '{"type":"job","job":"job-1","chips":8}')
    text = "".join(line + breaks[k % len(breaks)] for k, line in enumerate(lines))
    piece = ((text if last else text.rstrip("\r\n")) + spaces).encode()  # (spaces after the last line: no line)
    for compiled in (True, False):
        decoded, _, ends = goodputpool.framed(piece, 1, compiled)
        assert ends == piece.count(b"\n") + piece.count(b"\r") - piece.count(b"\r\n"), (compiled, decoded is None)
        assert decoded is not None or defects or set(breaks) != {"\n"}  # (the decoders' own count is reached)
