"""``sqlscout mcp``: the tools (and the agent) as an MCP server, on stdio or streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sqlscout.cli import serve as shared
from sqlscout.cli.common import err_console


def mcp(
    databases: List[str] = shared.DATABASES,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at /mcp instead of stdio."),
    model: Optional[str] = shared.MODEL,
    backend: Optional[str] = shared.BACKEND,
    host: str = shared.HOST,
    port: int = shared.PORT,
    token: Optional[str] = shared.TOKEN,
    query_timeout: float = shared.QUERY_TIMEOUT,
    max_rows: int = shared.MAX_ROWS,
    query_memory: int = shared.QUERY_MEMORY,
    immutable: bool = shared.IMMUTABLE,
    request_timeout: float = shared.REQUEST_TIMEOUT,
    ask_timeout: float = shared.ASK_TIMEOUT,
    max_episodes: int = shared.MAX_EPISODES,
    max_rounds: Optional[int] = shared.MAX_ROUNDS,
    assist: Optional[str] = shared.ASSIST,
    seed: int = shared.SEED,
    threads: Optional[int] = shared.THREADS,
    cache_dir: Optional[Path] = shared.CACHE_DIR,
    api_key: Optional[str] = shared.API_KEY,
) -> None:
    """Serve the eight tools (and, with --model, ask) to an MCP host; stdio unless --http."""
    shared.require_serve_extra("mcp", *(("uvicorn",) if http else ()))
    from sqlscout.serve.mcp_server import build_server, http_app, run_stdio

    sock = shared.listen_or_fail(host, port, token) if http else None
    tools, ask = shared.build_services(
        databases, model=model, backend=backend, query_timeout=query_timeout, max_rows=max_rows, immutable=immutable,
        query_memory=query_memory, request_timeout=request_timeout, ask_timeout=ask_timeout, max_episodes=max_episodes,
        max_rounds=max_rounds, seed=seed, threads=threads, cache_dir=cache_dir, api_key=api_key, assist=assist,
    )  # fmt: skip
    server = build_server(tools, ask)
    try:
        if sock is None:
            import anyio

            anyio.run(run_stdio, server)
            return
        from sqlscout.serve.listen import serve_forever

        bound_host, bound_port = sock.getsockname()[:2]
        err_console.print(f"sqlscout mcp: {', '.join(tools.catalog.names)} on http://{bound_host}:{bound_port}/mcp")
        serve_forever(http_app(server, host, token), sock)
    finally:
        shared.close_services(tools, ask)


def register(app: typer.Typer) -> None:
    app.command()(mcp)
