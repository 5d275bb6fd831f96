"""`tpufleet serve` under load while the state changes every second, beside the same documents asked of the CLI.

    python benchmarks/bench_serve.py [--seconds 60] [--clients 50]

1. A fleet with slices (one degraded by an OCS fault) is served by `tpufleet serve` (a subprocess).
2. `--clients` threads, each on its own keep-alive connection, ask for /metrics and /api/v1/status in turn for
   `--seconds`; meanwhile another process commits a change every second (inject-fault, then clear-fault, of a
   host: a new serial each time). Every answer must be a 200 whose status document is whole JSON.
3. Baseline in the same run: `tpufleet status -o json` in a loop (a process per request, as a cron job or a script
   polling the CLI would) for the same number of seconds, or at least 20 requests.
Printed: errors, requests per second and p50/p99 latency of each, their ratios, the serials seen, and the server's
resident memory after warm-up and at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tpufleet(state: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tpufleet", "--state", str(state), *args], cwd=ROOT, capture_output=True, check=False
    )


def make_fleet(state: Path) -> None:
    for args in (
        ("init",),
        ("allocate", "a", "--shape", "4x4x8"),
        ("plan-xconnect", "a", "--apply"),
        ("routes", "a"),
        ("allocate", "b", "--shape", "8x8x8"),
        ("plan-xconnect", "b", "--apply"),
        ("inject-fault", "ocs:pod0/x/3"),
    ):
        done = tpufleet(state, *args)
        assert done.returncode == 0, done.stderr.decode()


def churn(
    state: str, stop: multiprocessing.synchronize.Event, commits: multiprocessing.sharedctypes.Synchronized
) -> None:
    """A change a second: a host fails, then is repaired (each a committed serial), through the CLI's own entry."""
    import os

    from tpufleet.cli import main

    sys.stdout = open(os.devnull, "w")  # noqa: SIM115  # the commands' own output is not the benchmark's
    step = 0
    while not stop.is_set():
        args = ["inject-fault", "host:c40/1"] if step % 2 == 0 else ["clear-fault", "host:c40/1"]
        try:
            main(["--state", state, "-o", "json", *args])
        except SystemExit as exc:
            if exc.code == 0:
                with commits.get_lock():
                    commits.value += 1
        step += 1
        stop.wait(1.0)


def rss_mib(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", text)[1]) / 1024  # type: ignore[index]


def client(port: int, until: float, latencies: list[float], errors: list[str], serials: set[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    paths = ("/metrics", "/api/v1/status")
    i = 0
    while time.monotonic() < until:
        path = paths[i % 2]
        i += 1
        start = time.perf_counter()
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            body = answer.read()
            if answer.status != 200:
                errors.append(f"{path}: {answer.status}")
            elif path.endswith("status"):
                serials.add(json.loads(body)["serial"])
        except (OSError, http.client.HTTPException, ValueError) as exc:
            errors.append(f"{path}: {type(exc).__name__}: {exc}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        latencies.append(time.perf_counter() - start)
    conn.close()


def figures(latencies: list[float], seconds: float) -> tuple[float, float, float]:
    """(requests per second, p50 ms, p99 ms)."""
    cut = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [latencies[0]] * 99
    return len(latencies) / seconds, cut[49] * 1000, cut[98] * 1000


def load(port: int, clients: int, seconds: float) -> tuple[list[float], list[str], set[int], float]:
    latencies: list[float] = []
    errors: list[str] = []
    serials: set[int] = set()
    start = time.monotonic()
    until = start + seconds
    threads = [threading.Thread(target=client, args=(port, until, latencies, errors, serials)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors, serials, time.monotonic() - start


def baseline(state: Path, seconds: float) -> tuple[list[float], float]:
    latencies: list[float] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds or len(latencies) < 20:
        t = time.perf_counter()
        done = tpufleet(state, "status", "-o", "json")
        assert done.returncode == 0 and json.loads(done.stdout)["serial"] > 0
        latencies.append(time.perf_counter() - t)
    return latencies, time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=50)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        make_fleet(state)
        server = subprocess.Popen(
            [sys.executable, "-m", "tpufleet", "--state", str(state), "serve", "--listen", "127.0.0.1:0"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert server.stderr is not None
        port = int(re.search(r":(\d+)/", server.stderr.readline())[1])  # type: ignore[index]
        load(port, 4, 2.0)  # warm-up: imports, first documents
        rss_start = rss_mib(server.pid)
        stop, commits = multiprocessing.Event(), multiprocessing.Value("i", 0)
        changer = multiprocessing.Process(target=churn, args=(str(state), stop, commits))
        changer.start()
        latencies, errors, serials, took = load(port, opts.clients, opts.seconds)
        stop.set()
        changer.join()
        rss_end = rss_mib(server.pid)
        server.terminate()
        code = server.wait(timeout=30)
        cli_latencies, cli_took = baseline(state, min(opts.seconds, 20.0))
    report(opts, latencies, errors, serials, took, cli_latencies, cli_took, commits.value, (rss_start, rss_end), code)


def report(opts, latencies, errors, serials, took, cli_latencies, cli_took, commits, rss, code) -> None:
    rps, p50, p99 = figures(latencies, took)
    cli_rps, cli_p50, cli_p99 = figures(cli_latencies, cli_took)
    print(f"tpufleet serve, {opts.clients} clients for {took:.1f} s on /metrics and /api/v1/status, a commit a second:")
    print(f"  requests {len(latencies)}, errors {len(errors)}{': ' + errors[0] if errors else ''}")
    print(f"  throughput {rps:.0f} req/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(
        f"  serials seen {len(serials)} ({min(serials, default=0)}..{max(serials, default=0)}), commits made {commits}"
    )
    print(f"  server memory (RSS) after warm-up {rss[0]:.1f} MiB, at the end {rss[1]:.1f} MiB; exit on SIGTERM {code}")
    print(f"baseline: `tpufleet status -o json` in a loop, {len(cli_latencies)} requests in {cli_took:.1f} s:")
    print(f"  throughput {cli_rps:.1f} req/s, p50 {cli_p50:.1f} ms, p99 {cli_p99:.1f} ms")
    print(f"ratio: serve/CLI throughput {rps / cli_rps:.0f}x, CLI/serve p99 latency {cli_p99 / p99:.1f}x")


if __name__ == "__main__":
    main()
