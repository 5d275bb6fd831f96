"""goodput-report at scale, each figure beside a baseline run in the same process (printed as a ratio).

    python benchmarks/bench_goodput.py                  # 10 M native events, ~1 M ml-goodput entries
    python benchmarks/bench_goodput.py --events 1000000  # a quicker run

Figures:
1. ``goodput-report`` (``pipeline.build``) over N native events in several files (timed in a child process so
   its peak RSS, measured from outside by benchmarks/peak.py, is its own; CPU includes the forked workers that
   decode large inputs), again with the
   workers off (one process), against the floor of reading the same files with the standard library's
   ``json.loads`` line by line (no accounting at all). The machine's load is printed: on a shared machine, wall
   time follows it, CPU time much less.
2. ml-goodput-measurement's own ``GoodputCalculator`` (0.2.3; an in-memory logger, as its tests use) over about
   1 M entries of one job, against ``pipeline.build(..., fmt="ml-goodput")`` on the same entries; productive
   time and every bucket are compared (data loading aside: the package counts one interval per start, see the
   README), and the figures are printed. Skipped when the package is not installed.

3. (fleet scale; ``--only columnar`` runs these but the Dask row) The columnar rows: ``goodput-report`` over N native
   events against DuckDB's read + group-by of the same files (and the decode alone by msgspec, PyArrow and Polars,
   and tpufleet's own reading without the accounting), its peak beside the decoded columns (25
   bytes an event); ml-goodput entries against a decode of the same file (orjson, else msgspec); and the many-logs
   row: the same events over ``--dask-files`` logs on a 2-worker local Dask cluster (``--workers 2``) against
   the serial run. Each is skipped, saying so, when its library is not installed.

Goals: 10 M native events in <= 20 s and <= 2 GB peak on the project machine. At fleet scale: <= 1.5x
DuckDB's read + group-by, peak <= 2x the decoded columns; ml-goodput <= 3x an orjson decode; >= 1.7x on 2
Dask workers over serial.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import peak as measure  # noqa: E402  # a child measured from outside (its own peak RSS)

START = 1767571200.0  # 2026-01-05T00:00:00Z
JOB_CHIPS = (64, 256, 512, 2048)  # a generated job's size, one of these


def native_job(out: list[str], job: str, t: float, rng: random.Random, events: int) -> float:
    """About `events` native lines for one training job: runs of steps with data loading, checkpoints, failures."""
    chips = rng.choice(JOB_CHIPS)
    out.append(
        f'{{"type":"job","job":"{job}","accelerator":"tpu-v4","chips":{chips},"phase":"training",'
        f'"framework":"jax","ideal_step_s":{rng.uniform(4, 9):.3f}}}\n'
    )

    def ev(name: str, when: float, extra: str = "") -> None:
        out.append(f'{{"type":"event","job":"{job}","time":{when:.3f},"event":"{name}"{extra}}}\n')

    ev("submitted", t)
    n, step = 1, 1
    while n < events:
        ev("job_start", t)
        ev("tpu_init_start", t)
        t += rng.uniform(20, 60)
        ev("tpu_init_end", t)
        n += 3
        for _ in range(rng.randint(200, 600)):
            ev("step_start", t, f',"step":{step}')
            n += 1
            if step % 4 == 1:
                ev("data_loading_start", t + 0.2)
                ev("data_loading_end", t + 0.9)
                n += 2
            t += rng.uniform(9, 11)
            if step % 50 == 0:
                ev("checkpoint_start", t, f',"step":{step}')
                t += rng.uniform(1, 4)
                ev("checkpoint_end", t, f',"step":{step}')
                n += 2
            step += 1
        t += rng.uniform(30, 120)
        ev("failure", t)
        t += rng.uniform(60, 600)
        step = max(1, step - 50 * (step // 50 > 0) - step % 50)
        n += 1
    ev("job_end", t)
    return t


def write_native(directory: Path, events: int, files: int, per_job: int = 20_000, rotated: bool = False) -> list[Path]:
    """About `events` native lines of jobs of `per_job` events each (at least one run of steps), in `files` files:
    each job in one of them, or with `rotated` (logs rotated by time) each job's lines cut in `files` runs, the
    file k holding the k-th run of every job. The first opens with a capacity record that holds every job at once
    (the report refuses a fleet smaller than the chips its jobs hold)."""
    rng = random.Random(0)
    jobs = max(1, events // per_job)
    capacity = f'{{"type":"capacity","time":{START:.0f},"accelerator":"tpu-v4","chips":{jobs * max(JOB_CHIPS)}}}\n'
    paths = [directory / f"events-{f}.jsonl" for f in range(files)]
    for path in paths:
        path.write_text(capacity if path == paths[0] else "")
    for f in range(files):
        for k in range(f, jobs, files):
            lines: list[str] = []
            native_job(lines, f"job-{k:05d}", START + k * 37.0, rng, per_job)
            cuts = [len(lines) * i // files for i in range(files + 1)] if rotated else [0, *[len(lines)] * files]
            for i, path in enumerate(paths if rotated else [paths[f]]):
                with path.open("a") as fh:
                    fh.write("".join(lines[cuts[i] : cuts[i + 1]]))
    return paths


def ml_entries(entries: int, seed: int = 1) -> list[dict[str, Any]]:
    """One job's ml-goodput-measurement entries: runs of steps, saves, restores, restarts redoing steps."""
    rng = random.Random(seed)
    t, step, saved = START, 1, 0
    out: list[dict[str, Any]] = []
    while len(out) < entries:
        out.append({"job_name": "big", "job_start_time": t})
        for key in ("tpu_init", "training_prep", "data_loading"):
            out.append({"job_name": "big", f"{key}_start_time": t})
            t += rng.uniform(5, 30)
            out.append({"job_name": "big", f"{key}_end_time": t})
        if saved:
            d = rng.uniform(5, 20)
            out.append(
                {
                    "event_type": "restore",
                    "step": saved,
                    "directory": "gs://b/c",
                    "checkpoint_manager_start_time": t,
                    "checkpoint_manager_duration_secs": d,
                    "checkpointer_duration_secs": d,
                }
            )
            t += d
        count = rng.randint(2000, 6000)
        for k in range(count):
            out.append({"job_name": "big", "step_count": step, "step_start_time": t})
            t += rng.uniform(0.9, 1.1) * (3 if k == 0 else 1)
            if step % 100 == 0 and k < count - 1:
                d = rng.uniform(1, 3)
                out.append(
                    {
                        "event_type": "save",
                        "step": step,
                        "directory": "gs://b/c",
                        "checkpoint_manager_blocking_start_time": t - d,
                        "checkpoint_manager_blocking_duration_secs": d,
                        "checkpointer_blocking_duration_secs": d,
                        "wait_for_prev_duration_secs": 0.0,
                        "get_old_steps_duration_secs": 0.0,
                    }
                )
                saved = step
            step += 1
        t += rng.uniform(30, 300)
        step = saved + 1
    out.append({"job_name": "big", "job_end_time": t})
    return out


def child(
    paths: list[Path],
    fmt: str,
    one_process: bool = False,
    build: bool = True,
    loop: bool | None = None,
    threads: bool = True,
    forked: bool = True,
    tree: bool = False,
    prebuilt: bool = True,
) -> tuple[float, float, float, float | None]:
    """(wall seconds, CPU seconds, peak MiB) of pipeline.build in a fresh interpreter (imports not counted in the
    times). The peak is measured from outside (benchmarks/peak.py: this process, grown by the generated input,
    would otherwise lend the child its own peak); it is the largest of the child, the forked workers that decode
    large inputs and the children forked to account jobs (each one's includes the pages it shares with the child),
    and CPU includes theirs.
    `one_process` turns the workers off; `build=False` only imports (the baseline of the peak); `loop` True or
    False turns the compiled loop of event lines on or off whatever the size (None: from its threshold, as
    goodput-report does; its loading is timed, as the report pays for it). `threads` False: the loop and the jobs'
    accounting on the one thread, as on a machine of one CPU. `forked` False reads several large logs in the one
    process (`ops.goodputforked` off). `tree`: the fourth figure is the most memory the child and every process
    it forked held together (`peak.TreeMemory`, proportional set sizes: shared pages once); else None.
    `prebuilt` False: the kernels from Numba's JIT (TPUFLEET_PREBUILT=0), not the module built ahead of time."""
    code = (
        f"import os; os.environ['TPUFLEET_PREBUILT'] = '{int(prebuilt)}'\n"
        "import resource, sys, time; from pathlib import Path; from tpufleet.ops import goodput\n"
        "import numpy, tpufleet.goodput.fastread, tpufleet.goodput.render, tpufleet.state.goodputlogs\n"
        "import tpufleet.state.goodputpool as pool\n"
        f"if {one_process}: pool.PARALLEL_MIN_BYTES = 1 << 62\n"
        f"if {loop} is not None: pool.COMPILED_MIN_BYTES = 0 if {loop} else 1 << 62\n"
        f"if not {threads}: pool._usable_cpus = lambda: 1\n"
        f"if not {forked}: from tpufleet.ops import goodputforked; goodputforked.FORKED_MIN_BYTES = 1 << 62\n"
        "t, c = time.perf_counter(), time.process_time()\n"
        f"if {build}: goodput.build([Path(p) for p in {[str(p) for p in paths]!r}], {fmt!r},"
        " ['accelerator','size','phase','framework'], 'day')\n"
        "w = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(time.perf_counter() - t, time.process_time() - c + w.ru_utime + w.ru_stime)"
    )
    out = measure.run([sys.executable, "-c", code], cwd=ROOT, tree=tree)
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu), out.peak_mib, out.tree_peak_mib


def stdlib_floor(paths: list[Path]) -> tuple[float, float]:
    """(wall, CPU) seconds to read the same files line by line with json.loads and nothing else."""
    t, c = time.perf_counter(), time.process_time()
    for path in paths:
        with path.open() as f:
            for line in f:
                json.loads(line)
    return time.perf_counter() - t, time.process_time() - c


def best(runs: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The fastest of repeated runs, field by field (a shared machine only ever adds time)."""
    return tuple(min(r[i] for r in runs) for i in range(len(runs[0])))


def bench_native(events: int, files: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        paths = write_native(Path(tmp), events, files)
        lines = sum(p.read_bytes().count(b"\n") for p in paths)
        size = sum(p.stat().st_size for p in paths) / 2**20
        print(f"generated {lines:,} native lines, {size:,.0f} MiB in {files} files ({time.perf_counter() - t:.1f} s)")
        ours, alone, floor = [], [], []
        for _ in range(repeat):  # alternated, so all see the same load
            ours.append(child(paths, "native")[:3])
            alone.append(child(paths, "native", one_process=True)[:3])
            floor.append(stdlib_floor(paths))
    wall, cpu, peak, _ = best(ours)
    a_wall, a_cpu, a_peak, _ = best(alone)
    f_wall, f_cpu = best(floor)
    bare = child(paths, "native", build=False)[2]
    load = os.getloadavg()[0]
    print(
        f"goodput-report native {lines:>12,} events: {wall:7.2f} s wall, {cpu:7.2f} s CPU, peak {peak:5.0f} MiB "
        f"(the largest of the process and its workers)  (goal <= 20 s, <= 2048 MiB)\n"
        f"  one process (workers off):            {a_wall:7.2f} s wall, {a_cpu:7.2f} s CPU, peak {a_peak:5.0f} MiB\n"
        f"  baseline, json.loads per line:        {f_wall:7.2f} s wall, {f_cpu:7.2f} s CPU\n"
        f"  ratio (report / baseline):            {wall / f_wall:7.2f}x wall, {cpu / f_cpu:6.2f}x CPU "
        f"(one process {a_wall / f_wall:.2f}x, {a_cpu / f_cpu:.2f}x)   "
        f"(best of {repeat}; {os.cpu_count()} CPUs, load {load:.1f} at the end)\n"
        f"  peak beside the same process importing only ({bare:.0f} MiB): {peak / bare:.1f}x "
        f"(one process {a_peak / bare:.1f}x); beside the input ({size:,.0f} MiB): {peak / size:.2f}x "
        f"(one process {a_peak / size:.2f}x)"
    )


def bench_package(entries: int) -> None:
    import importlib

    try:
        package = importlib.import_module("ml_goodput_measurement.src.goodput")
    except ImportError:
        print("ml-goodput-measurement not installed: package comparison skipped (pip install ml-goodput-measurement)")
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from test_goodput_mlimport import package_figures

    log = ml_entries(entries)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ml.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in log))
        seconds, _, peak, _ = child([path], "ml-goodput")
        bare = child([path], "ml-goodput", build=False)[2]
        input_mib = path.stat().st_size / 2**20
        from tpufleet.ops.goodput import build

        (ours,) = build([path], fmt="ml-goodput")["jobs"]
    t = time.perf_counter()
    productive, theirs = package_figures(log)
    theirs_s = time.perf_counter() - t
    print(
        f"goodput-report ml-goodput {len(log):>10,} entries  {seconds:7.2f} s  peak {peak:6.0f} MiB   "
        f"GoodputCalculator {theirs_s:7.2f} s   ratio {seconds / theirs_s:5.2f}x   (package {package.__name__})\n"
        f"    peak measured from outside; beside the same process importing only ({bare:.0f} MiB): "
        f"{peak / bare:.1f}x; beside the input ({input_mib:,.0f} MiB): {peak / input_mib:.2f}x"
    )
    rows = [("productive", ours["productive_s"], productive)]
    rows += [(b, ours["badput_s"][b], theirs.get(b, 0.0)) for b in ours["badput_s"]]
    rows.append(
        (
            "productive + program_startup",
            ours["productive_s"] + ours["badput_s"]["program_startup"],
            productive + theirs.get("program_startup", 0.0),
        )
    )
    notes = {
        "data_loading_sync": "  (the package: one interval per start, a restart's counted twice; README)",
        "program_startup": "  (tpufleet nets saves out of steps first; the sum below agrees)",
        "productive": "  (the same: start-up split)",
    }
    for name, a, b in rows:
        note = notes.get(name, "")
        flag = "agree" if abs(a - b) <= 1e-3 * max(1.0, abs(b)) else "DIFFER"
        print(f"    {name:<42} tpufleet {a:14,.3f}  package {b:14,.3f}  {flag}{note}")


def timed(code: str) -> tuple[float, float, float]:
    """(wall, CPU, peak MiB) of `code` (which prints wall and CPU) in a fresh interpreter, measured from outside."""
    out = measure.run([sys.executable, "-c", code], cwd=ROOT)
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu), out.peak_mib


_CLOCK = "import time; t, c = time.perf_counter(), time.process_time()\n"
_DONE = "\nprint(time.perf_counter() - t, time.process_time() - c)"
_DECODERS = {  # (imports, untimed; the timed code)
    "tpufleet": (
        "from pathlib import Path; from tpufleet.state import goodputlogs as g, goodputpool\n"
        "goodputpool.PARALLEL_MIN_BYTES = 1 << 62",
        "g.load([Path(p) for p in PATHS], 'native', False)",
    ),
    "duckdb": (
        "import duckdb",
        'for p in PATHS: duckdb.sql(f"SELECT job, count(*), min(time), max(time) FROM read_json('
        "'{p}', format='newline_delimited', columns={{type:'VARCHAR', job:'VARCHAR', time:'DOUBLE', event:'VARCHAR', "
        "step:'BIGINT', chips:'BIGINT'}}) GROUP BY job\").fetchall()",
    ),
    "msgspec": (
        "from tpufleet.goodput import fastread",
        "for p in PATHS: fastread._DECODER.decode_lines(open(p, 'rb').read())",
    ),
    "pyarrow": ("import pyarrow.json as pj", "for p in PATHS: pj.read_json(p)"),
    "polars": ("import polars as pl", "for p in PATHS: pl.read_ndjson(p)"),
}


def bench_columnar(events: int, files: int) -> None:
    """goodput-report against DuckDB's read + group-by and the decoders alone, on the same files."""
    import importlib.util

    with tempfile.TemporaryDirectory() as tmp:
        paths = write_native(Path(tmp), events, files)
        (Path(tmp) / "rotated").mkdir()
        rotated = write_native(Path(tmp) / "rotated", events, files, rotated=True)
        os.sync()  # (the files written back first: a run meanwhile shares the disk and a CPU with the writeback)
        lines = sum(p.read_bytes().count(b"\n") for p in paths)
        mine, theirs, turned_on, turned_off, jit = [], [], [], [], []
        for _ in range(2):  # alternated, so that each sees the same machine state; the best of two
            mine.append(child(paths, "native", one_process=True)[:3])
            jit.append(child(paths, "native", one_process=True, prebuilt=False)[:3])
            theirs.append(child(paths, "native", one_process=True, forked=False)[:3])
            turned_on.append(child(rotated, "native", one_process=True)[:3])
            turned_off.append(child(rotated, "native", one_process=True, forked=False)[:3])
        # memory in runs of their own: sampling every process's page tables takes a CPU from the run it samples
        held_ours = child(paths, "native", one_process=True, tree=True)[3] or 0.0
        held_alone = child(paths, "native", one_process=True, forked=False, tree=True)[3] or 0.0
        ours, alone = (*best(mine), held_ours), (*best(theirs), held_alone)
        turned, turned_alone = best(turned_on), best(turned_off)
        bare = child(paths, "native", build=False, tree=True)[3] or 0.0
        loop = importlib.util.find_spec("numba") is not None
        without = child(paths, "native", one_process=True, loop=False) if loop else None
        forced = child(paths, "native", one_process=True, loop=True) if loop else None
        single = child(paths, "native", one_process=True, threads=False)
        rows = {}
        for name, (setup, code) in _DECODERS.items():
            if importlib.util.find_spec(name) is not None:
                rows[name] = timed(f"PATHS = {[str(p) for p in paths]!r}\n{setup}\n" + _CLOCK + code + _DONE)
    columns = lines * 25 / 2**20
    held = ours[3] - bare
    print(
        f"goodput-report native {lines:,} events in {files} logs (each log read in a forked process; no decoding "
        f"workers): {ours[0]:.2f} s wall, {ours[1]:.2f} s CPU, memory of its processes together {ours[3]:.0f} MiB "
        f"({held:.0f} MiB over the bare import; decoded columns {columns:.0f} MiB: {held / columns:.1f}x, goal <= 2x; "
        f"largest process {ours[2]:.0f} MiB)"
    )
    a_held = alone[3] - bare
    print(
        f"  the logs read in one process (the loop's threads, the accounting forked): {alone[0]:.2f} s wall, "
        f"{alone[1]:.2f} s CPU, {a_held:.0f} MiB over the bare import ({a_held / columns:.1f}x)   report / this: "
        f"{ours[0] / alone[0]:.2f}x wall, {ours[1] / alone[1]:.2f}x CPU\n"
        f"  the same events in logs rotated by time (every job in every log: read in one process): {turned[0]:.2f} s "
        f"wall; with the forked reading off {turned_alone[0]:.2f} s   this / off: {turned[0] / turned_alone[0]:.2f}x"
    )
    print(
        f"  report on one CPU (the loop and the accounting on one thread): {single[0]:.2f} s wall, {single[1]:.2f} s CPU, "
        f"peak {single[2]:.0f} MiB   report / this: {ours[0] / single[0]:.2f}x wall, {ours[1] / single[1]:.2f}x CPU"
    )
    jitted = best(jit)
    print(
        f"  report with the kernels from Numba's JIT (TPUFLEET_PREBUILT=0: Numba imported and its cache loaded in the "
        f"time), not built ahead: {jitted[0]:.2f} s wall, {jitted[1]:.2f} s CPU   report / this: "
        f"{ours[0] / jitted[0]:.2f}x wall, {ours[1] / jitted[1]:.2f}x CPU"
    )
    if without is not None and forced is not None:
        print(
            f"  report without the compiled loop (msgspec's reader): {without[0]:.2f} s wall, {without[1]:.2f} s CPU,"
            f" peak {without[2]:.0f} MiB   report / this: {ours[0] / without[0]:.2f}x wall, {ours[1] / without[1]:.2f}x"
            f" CPU\n  report with the loop forced on (its loading in the time): {forced[0]:.2f} s wall, "
            f"{forced[1]:.2f} s CPU   / without: {forced[0] / without[0]:.2f}x wall, {forced[1] / without[1]:.2f}x CPU"
        )
    for name, (wall, cpu, peak) in rows.items():
        what = {"duckdb": "read + group-by", "tpufleet": "read only (the report's decode)"}.get(name, "read only")
        print(
            f"  {name:<8} {what}: {wall:6.2f} s wall, {cpu:6.2f} s CPU, "
            f"peak {peak:5.0f} MiB   report / this: {ours[0] / wall:.2f}x wall, {ours[1] / cpu:.2f}x CPU"
            + ("   (goal <= 1.5x)" if name == "duckdb" else "")
        )


def bench_ml_decode(entries: int) -> None:
    """goodput-report --format ml-goodput against a decode of the same file (orjson, else msgspec)."""
    import importlib.util

    name = "orjson" if importlib.util.find_spec("orjson") else "msgspec"
    decode = "orjson.loads" if name == "orjson" else "msgspec.json.decode"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ml.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in ml_entries(entries)))
        ours = child([path], "ml-goodput")
        bare = child([path], "ml-goodput", build=False)[2]
        base = timed(f"import {name}\n" + _CLOCK + f"[{decode}(x) for x in open({str(path)!r}, 'rb')]" + _DONE)
    print(
        f"goodput-report ml-goodput {entries:,} entries: {ours[0]:.2f} s wall, {ours[1]:.2f} s CPU, peak {ours[2]:.0f} "
        f"MiB ({ours[2] - bare:.0f} MiB over the bare import); {name} decode {base[0]:.2f} s wall, {base[1]:.2f} s CPU, "
        f"peak {base[2]:.0f} MiB   ratio {ours[0] / base[0]:.2f}x wall, {ours[1] / base[1]:.2f}x CPU (goal <= 3x)"
    )


def bench_dask(events: int, files: int) -> None:
    """The same events over `files` logs: serial against a 2-worker local Dask cluster (--workers 2)."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        print("Dask not installed: the many-logs row skipped (make sweep-deps)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_native(Path(tmp), events, files)
        lines = sum(p.read_bytes().count(b"\n") for p in paths)
        head = (
            "from pathlib import Path; from tpufleet.ops import goodput; import tpufleet.state.goodputpool as pool\n"
            f"pool.PARALLEL_MIN_BYTES = 1 << 62; paths = [Path(p) for p in {[str(p) for p in paths]!r}]\n"
        )
        serial = timed(head + _CLOCK + "goodput.build(paths, period='day')" + _DONE)
        dask = timed(head + _CLOCK + "goodput.build(paths, period='day', workers=2)" + _DONE)
    print(
        f"goodput-report {lines:,} native events in {files} logs: serial {serial[0]:.2f} s, 2 Dask workers "
        f"{dask[0]:.2f} s (cluster start included)   speed-up {serial[0] / dask[0]:.2f}x (goal >= 1.7x); "
        f"peak of the client {dask[2]:.0f} MiB against serial {serial[2]:.0f} MiB"
    )


_WORKER_PEAKS = (
    "from tpufleet.sweep import backends\n"
    "peaks = []\n"
    "closing = backends.Dask.close\n"
    "def close(self):\n"
    "    import resource\n"
    "    peaks.extend(self.client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())\n"
    "    closing(self)\n"
    "backends.Dask.close = close\n"
)


def bench_dask_beyond(events: int, files: int) -> None:
    """More events than one process reads (the serial reading's limit of all logs together) on a 2-worker local
    cluster: the run completes, and each worker's peak against one process reading the largest log alone."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_native(Path(tmp), events, files)
        lines = sum(1 for p in paths for _ in p.open("rb"))
        total = sum(p.stat().st_size for p in paths)
        largest = max(paths, key=lambda p: p.stat().st_size)
        largest_mib = largest.stat().st_size / 2**20
        head = (
            "from pathlib import Path; from tpufleet.ops import goodput; import tpufleet.state.goodputlogs as logs\n"
            f"paths = [Path(p) for p in {[str(p) for p in paths]!r}]\n"
        )
        code = head + _WORKER_PEAKS + _CLOCK + "goodput.build(paths, period='day', workers=2)\n"
        code += "print(max(peaks) / 1024, time.perf_counter() - t, time.process_time() - c)"
        out = measure.run([sys.executable, "-c", code], cwd=ROOT)
        worker_peak, wall, _ = (float(x) for x in out.stdout.split()[-3:])
        alone = timed(
            head + "from tpufleet.ops import goodputparts as gp\n" + _CLOCK
            + f"gp.summarize_part({str(largest)!r}, 'native', False, None, None, [], False)" + _DONE
        )  # fmt: skip
    print(
        f"goodput-report {lines:,} native events in {files} logs ({total / 2**30:.1f} GiB; one process reads at most "
        f"{logs_limit_gib():.0f} GiB together): 2 Dask workers {wall:.1f} s, worker peak {worker_peak:.0f} MiB; "
        f"the largest log ({largest_mib:.0f} MiB) read and accounted alone in one process: peak "
        f"{alone[2]:.0f} MiB ({worker_peak / alone[2]:.2f}x)"
    )


def logs_limit_gib() -> float:
    from tpufleet.state.goodputlogs import MAX_TOTAL_LOG_BYTES

    return MAX_TOTAL_LOG_BYTES / 2**30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dask-events", type=int, default=20_000_000)  # the most one process reads
    parser.add_argument("--dask-files", type=int, default=20)
    parser.add_argument("--beyond-events", type=int, default=100_000_000)
    parser.add_argument("--beyond-files", type=int, default=100)
    parser.add_argument(
        "--only", choices=("reports", "fleet-scale", "columnar"), default=None, help="run only these rows"
    )  # columnar: the fleet-scale rows without the many-logs (Dask) one
    args = parser.parse_args()
    if args.only != "reports":
        bench_columnar(args.events, args.files)
        bench_ml_decode(args.entries)
        if args.only != "columnar":
            bench_dask(args.dask_events, args.dask_files)
            bench_dask_beyond(args.beyond_events, args.beyond_files)
    if args.only == "columnar":
        return
    if args.only == "fleet-scale":
        return
    print(f"peak RSS of this process before: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    bench_native(args.events, args.files, args.repeat)
    bench_package(args.entries)


if __name__ == "__main__":
    main()
