"""Collective cost model: 1 GiB all-reduce on 8x8x8, twisted 4x4x8 and 16x16x16, healthy and with one OCS down,
the paper-001 reproduction, the two-island hierarchical all-reduce (Pathways), the simulator against the model, and
the model's speed on 16x16x16.

    python benchmarks/bench_collective.py          # about a minute (the 16x16x16 rerouted tables take ~10 s)

Every figure is printed beside a baseline computed in the same process, as a ratio:
* modelled times against the closed form of a bidirectional ring through every chip on healthy links
  (2(p-1)a + (p-1)/p * n/B, what a model that ignores the tables would say);
* the model's wall time on 16x16x16 (read the stored tables, estimate every algorithm and order, pick one)
  against reading the whole stored tables file;
* the link-by-link simulation against the model.
Tables are made as `tpufleet routes` makes them (within the hardware's 3 VCs) and stored and read back in the
state's .npz format, so the model reads them exactly as `tpufleet collective` does.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
GIB = 1 << 30


def stored(shape: Any, alive: Any, folder: Path, name: str) -> Path:
    """The tables `routes` would store for the live graph, written as routes/NAME.npz."""
    from tpufleet.constants import HARDWARE_VCS
    from tpufleet.routing.export import npz_bytes
    from tpufleet.routing.report import evaluate
    from tpufleet.topology import neighbors

    exp = neighbors(shape)
    report = evaluate(shape, exp, exp if alive is None else alive, traffics=(), max_vcs=HARDWARE_VCS)
    path = folder / f"{name}.npz"
    path.write_bytes(npz_bytes(report.tables, {"shape": shape.text, "twisted": shape.twisted, "algorithm": "auto"}))
    return path


def model(path: Path, profile: Any) -> Any:
    from tpufleet.collectives.algorithms import Context, best_of, estimate
    from tpufleet.state import routetables

    return best_of(estimate(Context(routetables.load(path), profile), "all-reduce", GIB, "auto", None))


def ring_closed_form(p: int, profile: Any) -> float:
    return 2 * (p - 1) * profile.hop_latency + (p - 1) / p * GIB / profile.link_bandwidth


def figures(folder: Path, profile: Any) -> list[dict[str, Any]]:
    from test_collective_faults import ocs_failure

    from tpufleet.shapes import parse_shape

    rows = []
    print("1 GiB all-reduce (auto), baseline: closed form of a bidirectional ring through every chip")
    for text, twisted in [("8x8x8", False), ("4x4x8", True), ("16x16x16", False)]:
        shape = parse_shape(text, twisted)
        healthy_s = None
        for label, alive in [("healthy", None), ("one OCS down (x/5)", ocs_failure(shape, "x", 5)[1])]:
            t = time.perf_counter()
            path = stored(shape, alive, folder, f"{text}-{twisted}-{alive is None}")
            made = time.perf_counter() - t
            best = model(path, profile)
            healthy_s = healthy_s or best.seconds
            base = ring_closed_form(shape.chips, profile)
            row = {
                "shape": str(shape), "case": label, "algorithm": best.name, "time_ms": best.seconds * 1e3,
                "bus_GBps": best.bus_bandwidth() / 1e9, "slowdown": best.seconds / healthy_s,
                "baseline_ms": base * 1e3, "path": path,
            }  # fmt: skip
            rows.append(row)
            print(
                f"  {shape!s:<16} {label:<20} {best.name:<18} {row['time_ms']:8.3f} ms  bus {row['bus_GBps']:6.1f} GB/s"
                f"  slowdown {row['slowdown']:.3f}   baseline {row['baseline_ms']:8.3f} ms, ratio {base / best.seconds:.3f}x"
                f"   (tables made in {made:.1f} s)",
                flush=True,
            )
    return rows


def speed(rows: list[dict[str, Any]], profile: Any) -> None:
    import numpy as np

    print("Model speed on 16x16x16 once the tables exist (median of 5), baseline: reading the whole tables file")
    for row in rows:
        if not row["shape"].startswith("16x16x16"):
            continue
        path = row["path"]

        def read_all(path: Path = path) -> None:
            with np.load(path) as z:
                for key in z.files:
                    z[key]

        t_model = statistics.median(_timed(lambda path=path: model(path, profile)) for _ in range(5))
        t_base = statistics.median(_timed(read_all) for _ in range(5))
        print(
            f"  {row['case']:<20} {t_model:6.3f} s (target <= 0.5 s)   baseline {t_base:6.3f} s, ratio {t_base / t_model:.2f}x",
            flush=True,
        )


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def paper_001(profile: Any) -> None:
    from tpufleet.collectives.algorithms import Context, estimate
    from tpufleet.collectives.whatif import what_if_tables

    print("Paper 001 (128x32: mesh in X, tori in Y; 4,096 chips, 1 GiB all-reduce), X links slower; baseline: Y first")
    t = what_if_tables((128, 32, 1), (False, True, False))
    for share in (1.0, 0.5, 0.25):
        pr = dataclasses.replace(profile, dimension_bandwidth={"x": profile.link_bandwidth * share})
        ctx = Context(t, pr)
        ests = {e.name: e for e in estimate(ctx, "all-reduce", GIB, "auto", None)}
        base = ests["dim-by-dim (yx)"].seconds
        cells = "  ".join(f"{n} {e.seconds * 1e3:7.2f} ms ({e.seconds / base:.2f}x)" for n, e in ests.items())
        print(f"  X at {share:4.2f} of Y: {cells}", flush=True)


def simulator(profile: Any) -> None:
    from test_collective_faults import ocs_down

    from tpufleet.collectives.algorithms import Context, estimate
    from tpufleet.collectives.simulate import simulate
    from tpufleet.shapes import parse_shape

    print("Link-by-link simulation against the model (all-reduce, one OCS down), baseline: the model")
    cases = [("4x4x8", True, "x", "dim-by-dim", 1), ("8x8x8", False, "x", "dim-by-dim", 1)]
    cases += [
        ("4x4x8", True, "x", "multi-dim", 1),
        ("4x4x8", True, "x", "multi-dim", 64),
        ("4x4x8", False, "z", "multi-dim", 64),
    ]
    for text, twisted, dim, algorithm, mib in cases:
        shape = parse_shape(text, twisted)
        t = ocs_down(shape, dim, 5)
        (est,) = estimate(Context(t, profile), "all-reduce", mib << 20, algorithm, (0, 1, 2))
        w = time.perf_counter()
        sim = simulate(t, profile, "all-reduce", algorithm, mib << 20)
        w = time.perf_counter() - w
        print(
            f"  {shape!s:<14} ({dim}/5) {algorithm:<10} {mib:3d} MiB: simulated {sim.seconds * 1e6:9.2f} us "
            f"(data exact: {sim.correct}), model {est.seconds * 1e6:9.2f} us, ratio {sim.seconds / est.seconds:.4f}"
            f"   ({sim.steps} steps, {w:.2f} s)",
            flush=True,
        )


def pathways(profile: Any) -> None:
    """The DCN all-reduce of a two-island job ("Pathways" section 5.3: 2 x 512 chips, a 64B decoder sharded in each
    island, its fp32 gradient all-reduced between islands) and the step-throughput ratio against the same chips as
    one slice, at two batch sizes (the paper gives none); wall time of the model beside one slice's all-reduce."""
    from tpufleet.collectives import dcn
    from tpufleet.collectives.cost import collective_time
    from tpufleet.shapes import Shape

    island, share = Shape((8, 8, 8)), 64e9 * 4 / 512  # bytes of the gradient each chip holds

    def dcn_phase() -> dcn.DcnPhase:
        return dcn.dcn_all_reduce(share * island.chips, 2, dcn.hosts(island), profile.dcn_link(), across_pods=True)

    phase = dcn_phase()
    print("Two islands of 8x8x8 over DCN, each chip's 500 MB share of a 64B fp32 gradient (Pathways)")
    for tokens in (2**20, 2**21):
        compute = dcn.step(6 * 64e9 * tokens, 1024, profile, 0.0).compute_s
        print(
            f"  {tokens:>9,} tokens a step: compute {compute:.3f} s, DCN {phase.seconds * 1e3:.1f} ms, "
            f"throughput {compute / (compute + phase.seconds):.1%} of one slice (paper: 97.2%)",
            flush=True,
        )
    t_model = statistics.median(_timed(dcn_phase) for _ in range(3))
    t_base = statistics.median(_timed(lambda: collective_time(island, 1 << 30)) for _ in range(3))
    print(f"  wall time {t_model * 1e6:.1f} us, baseline one slice's all-reduce {t_base * 1e6:.1f} us", flush=True)


def long_rings(profile: Any) -> None:
    """A line's dimension-by-dimension all-to-all phase, all pairs of one long ring: swept level by level over the
    tables (what `collective` does past the tables' N^2 entries) against walking each message hop by hop (what it
    did), in the same process: time and traced peak memory. The loads are the same (a test proves it)."""
    import tracemalloc

    import numpy as np

    from tpufleet.collectives.algorithms import Context, _swept_pattern
    from tpufleet.collectives.model import _all_pairs_pattern
    from tpufleet.collectives.whatif import what_if_tables

    for chips in (256, 512):
        t = what_if_tables((chips, 1, 1), (False, False, False))
        (phase,) = Context(t, profile).dim_phases((0,))
        senders = np.ones((chips, chips), dtype=bool)
        runs = {}
        for name, fn, args in (
            ("swept", _swept_pattern, (t, profile, senders)),
            ("walked", _all_pairs_pattern, (t, profile, phase.rings)),
        ):
            tracemalloc.start()
            start = time.perf_counter()
            runs[name] = (fn(*args), time.perf_counter() - start, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        (a, ta, ma), (b, tb, mb) = runs["swept"], runs["walked"]
        assert a == b, (a, b)
        print(
            f"{chips}-chip line, all pairs of its ring: swept {ta:.2f} s, {ma / 2**20:.0f} MiB; walked {tb:.2f} s, "
            f"{mb / 2**20:.0f} MiB: {ta / tb:.2f}x the time, {ma / mb:.3f}x the memory"
        )


def main() -> None:
    from tpufleet.collectives.profile import default_profile

    profile = default_profile()
    with tempfile.TemporaryDirectory() as tmp:
        rows = figures(Path(tmp), profile)
        speed(rows, profile)
    paper_001(profile)
    pathways(profile)
    simulator(profile)
    long_rings(profile)


if __name__ == "__main__":
    main()
