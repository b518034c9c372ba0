"""Load on ``sqlscout serve`` and ``sqlscout mcp --http``: ``run_query`` over HTTP against
the same tool called in process, at several numbers of concurrent clients.

The queries are Spider dev's gold queries of one database (``world_1`` by default),
cycled. For each level of concurrency N:

- in process: N threads call ``call_tool(db, "run_query", ...)`` on one shared
  :class:`~sqlscout.env.sandbox.Database` (what the server does per request);
- HTTP API: N clients (one asyncio task each, one httpx connection each) POST
  ``/v1/tools/run_query`` to ``sqlscout serve`` running as its own process;
- MCP: N MCP client sessions (the SDK's ``Client``) call ``run_query`` on
  ``sqlscout mcp --http`` running as its own process.

Each row gives requests per second (all clients together), p50 and p99 latency as the
client sees it, and the overhead ratio: in-process requests/s over the server's. The
servers run in their own processes, so the load generator does not share their GIL;
on a machine with few cores they still share the CPUs.

    PYTHONPATH=src python benchmarks/serve_load.py --data ../shared/data --requests 400
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Awaitable, Callable

from sqlscout.env.sandbox import Database
from sqlscout.env.tools import call_tool


@dataclass
class Level:
    """One measurement: ``clients`` concurrent clients, ``requests`` in all."""

    target: str
    clients: int
    requests: int
    wall_s: float
    p50_ms: float
    p99_ms: float
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _level(target: str, clients: int, latencies: list[float], wall_s: float, errors: int) -> Level:
    return Level(
        target, clients, len(latencies), wall_s,
        1000 * statistics.median(latencies), 1000 * _percentile(latencies, 0.99), errors,
    )  # fmt: skip


def in_process(db: Database, queries: list[str], clients: int, total: int) -> Level:
    def worker(start: int) -> tuple[list[float], int]:
        times, errors = [], 0
        for i in range(start, total, clients):
            began = time.perf_counter()
            outcome = call_tool(db, "run_query", {"sql": queries[i % len(queries)]})
            times.append(time.perf_counter() - began)
            errors += not outcome.ok
        return times, errors

    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        parts = list(pool.map(worker, range(clients)))
    wall = time.perf_counter() - began
    return _level("in process", clients, [t for p, _ in parts for t in p], wall, sum(e for _, e in parts))


async def _drive(clients: int, total: int, call: Callable[[int, int], Awaitable[bool]]) -> tuple[list[float], float, int]:
    """``clients`` tasks, each calling ``call(client, i)`` on its share of ``total`` requests."""
    latencies: list[float] = []
    errors = 0

    async def client(c: int) -> None:
        nonlocal errors
        for i in range(c, total, clients):
            began = time.perf_counter()
            ok = await call(c, i)
            latencies.append(time.perf_counter() - began)
            errors += not ok

    began = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(clients)))
    return latencies, time.perf_counter() - began, errors


async def http_api(url: str, db: str, queries: list[str], clients: int, total: int) -> Level:
    import httpx

    sessions = [httpx.AsyncClient(base_url=url, timeout=120) for _ in range(clients)]

    async def call(c: int, i: int) -> bool:
        body = {"db": db, "args": {"sql": queries[i % len(queries)]}}
        response = await sessions[c].post("/v1/tools/run_query", json=body)
        return response.status_code == 200 and response.json()["ok"]

    for s in sessions:  # connect first: the figures are per request, not per handshake
        await s.get("/healthz")
    try:
        latencies, wall, errors = await _drive(clients, total, call)
    finally:
        for s in sessions:
            await s.aclose()
    return _level("HTTP API", clients, latencies, wall, errors)


async def mcp_http(url: str, queries: list[str], clients: int, total: int) -> Level:
    from contextlib import AsyncExitStack

    from mcp import Client

    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(url)) for _ in range(clients)]

        async def call(c: int, i: int) -> bool:
            result = await sessions[c].call_tool("run_query", {"sql": queries[i % len(queries)]})
            return not result.is_error

        latencies, wall, errors = await _drive(clients, total, call)
    return _level("MCP (HTTP)", clients, latencies, wall, errors)


class _Server:
    """A ``sqlscout`` server command in its own process, on a free loopback port."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sqlscout.cli.main", *args, "--port", "0"], stderr=subprocess.PIPE, text=True, env=env
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if not found:
            self.process.terminate()
            raise SystemExit(f"the server did not start: {line.strip()}")
        self.url = found.group(0)

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="Folder holding spider/.")
    parser.add_argument("--db", default="world_1", help="Spider database whose dev gold queries are sent.")
    parser.add_argument("--requests", type=int, default=400, help="Requests per level and target.")
    parser.add_argument("--clients", default="1,8,32", help="Concurrency levels, comma-separated.")
    parser.add_argument("--json", type=Path, help="Also write the rows here as JSON.")
    args = parser.parse_args()

    spider = args.data / "spider"
    path = spider / "database" / args.db / f"{args.db}.sqlite"
    queries = [q["query"] for q in json.loads((spider / "dev.json").read_text()) if q["db_id"] == args.db]
    if not queries:
        raise SystemExit(f"no Spider dev questions on {args.db}")
    levels = [int(n) for n in args.clients.split(",")]
    rows: list[Level] = []
    with Database(path) as db:
        for n in levels:
            rows.append(in_process(db, queries, n, args.requests))
    with _Server("serve", str(path)) as url:
        for n in levels:
            rows.append(asyncio.run(http_api(url, args.db, queries, n, args.requests)))
    with _Server("mcp", "--http", str(path)) as url:
        for n in levels:
            rows.append(asyncio.run(mcp_http(f"{url}/mcp", queries, n, args.requests)))

    base = {r.clients: r.rps for r in rows if r.target == "in process"}
    print(f"run_query on Spider {args.db} ({len(queries)} dev gold queries, cycled), {args.requests} requests per row")
    print(f"{'target':<12} {'clients':>7} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'overhead':>9} {'errors':>6}")
    for r in rows:
        ratio = base[r.clients] / r.rps
        print(f"{r.target:<12} {r.clients:>7} {r.rps:>9.1f} {r.p50_ms:>9.2f} {r.p99_ms:>9.2f} {ratio:>8.1f}x {r.errors:>6}")
    if args.json:
        args.json.write_text(json.dumps([{**asdict(r), "rps": r.rps} for r in rows], indent=2))


if __name__ == "__main__":
    main()
