#!/usr/bin/env python3
"""The client benchmark's Python SDK client (mcp 2.3, 2026-07-28 era).

Usage (with the 2.3 venv's python): client_bench.py <server command...>

Measures what `examples/clientbench` measures for its built-in clients and
prints the same JSON object on one line: 1,000 warm-up calls, 5,000
sequential calls (p50, p99 in µs), 20,000 calls from 1, 8 and 64 concurrent
tasks sharing the one client (calls/s), the process's CPU time over those
per call (µs), and its peak RSS (VmHWM, KiB). CLIENTBENCH_QUICK=1: tiny
counts. Every reply's text is checked.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

import anyio
from mcp import Client, StdioServerParameters

QUICK = bool(os.environ.get("CLIENTBENCH_QUICK"))
WARMUP, SEQUENTIAL, THROUGHPUT = (10, 50, 640) if QUICK else (1_000, 5_000, 20_000)


def text(n: int) -> str:
    return f"{n:>10}-abcdefghijklmnopqrstu"


def cpu_us() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1e6


def vm_hwm_kib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    return 0.0


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


async def main(server: list[str]) -> None:
    client = Client(StdioServerParameters(command=server[0], args=server[1:]), read_timeout_seconds=60)
    async with client:
        async def call(n: int) -> None:
            result = await client.call_tool("echo", {"text": text(n)})
            got = result.content[0].text
            if got != text(n):
                raise SystemExit(f"wrong reply to call {n}: {got!r}")

        latencies = []
        for i in range(WARMUP + SEQUENTIAL):
            started = time.perf_counter()
            await call(i)
            if i >= WARMUP:
                latencies.append((time.perf_counter() - started) * 1e6)
        cpu_before = cpu_us()
        tput = []
        for threads in (1, 8, 64):
            per_task = THROUGHPUT // threads

            async def worker(t: int) -> None:
                for i in range(per_task):
                    await call(t * per_task + i)

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for t in range(threads):
                    group.start_soon(worker, t)
            tput.append(per_task * threads / (time.perf_counter() - started))
        cpu = cpu_us() - cpu_before
    print(json.dumps({
        "seq_p50_us": percentile(latencies, 0.5),
        "seq_p99_us": percentile(latencies, 0.99),
        "tput_1": tput[0],
        "tput_8": tput[1],
        "tput_64": tput[2],
        "cpu_us_per_call": cpu / (3 * THROUGHPUT),
        "rss_kib": vm_hwm_kib(),
    }))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1:])
