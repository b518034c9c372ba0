"""``sqlscout serve``: the tools and the agent as an HTTP JSON API.

The options every server takes (databases, limits, the model) are declared here once;
``sqlscout mcp`` (cli/mcp.py) uses them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from sqlscout.cli.common import err_console, fail
from sqlscout.errors import SqlscoutError

DATABASES = typer.Argument(..., help="Databases to serve, each as PATH (a SQLite file, named after its stem), URL (postgresql://..., duckdb:///...) or NAME=PATH / NAME=URL.")
MODEL = typer.Option(None, help="Model for ask: preset, .gguf file, model directory, hub id or server URL (default: no ask).")
BACKEND = typer.Option(None, help="llama-cpp, openai, hf or vllm (default: from the model).")
HOST = typer.Option("127.0.0.1", help="Address to listen on; anything but loopback needs --token.")
PORT = typer.Option(8000, help="Port to listen on (0: any free port).")
TOKEN = typer.Option(None, envvar="SQLSCOUT_TOKEN", help="Bearer token clients must send (needed off loopback).")
QUERY_TIMEOUT = typer.Option(5.0, help="Seconds one SQL statement may run (its worker process is killed past it).")
QUERY_MEMORY = typer.Option(1024, help="MB of memory a query's worker process may use (0: run queries in the server's own process, without the hard deadline).")
MAX_ROWS = typer.Option(10_000, help="Most rows one statement may fetch.")
IMMUTABLE = typer.Option(False, "--immutable", help="The databases do not change while served (read-only media, WAL-mode copies): open them with SQLite's immutable=1.")
REQUEST_TIMEOUT = typer.Option(30.0, help="Seconds one tool or score request may take.")
ASK_TIMEOUT = typer.Option(300.0, help="Seconds one ask episode may take.")
MAX_EPISODES = typer.Option(8, help="Most ask episodes at once (more are refused as busy).")
MAX_ROUNDS = typer.Option(None, help="Tool rounds before the agent must answer (default: the model's).")
ASSIST = typer.Option(None, "--assist", help="Help for a model not trained on the protocol: a profile or a YAML file (default: the model's).")
SEED = typer.Option(0, help="Sampling seed of ask (a request may give its own).")
THREADS = typer.Option(None, help="CPU threads for llama-cpp (default: the cores idle at start).")
CACHE_DIR = typer.Option(None, envvar="SQLSCOUT_CACHE_DIR", help="Model cache (default: $XDG_CACHE_HOME/sqlscout).")
API_KEY = typer.Option(None, envvar="OPENAI_API_KEY", help="API key for an openai server.")


def require_serve_extra(*modules: str) -> None:
    """A one-line error when the ``serve`` extra is not installed."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            fail(f"this command needs {module}: pip install 'sqlscout[serve]'")


def build_services(
    databases: List[str],
    *,
    model: Optional[str],
    backend: Optional[str],
    query_timeout: float,
    max_rows: int,
    immutable: bool = False,
    query_memory: int = 1024,
    request_timeout: float,
    ask_timeout: float,
    max_episodes: int,
    max_rounds: Optional[int],
    seed: int,
    threads: Optional[int],
    cache_dir: Optional[Path],
    api_key: Optional[str],
    assist: Optional[str] = None,
) -> tuple[Any, Any]:
    """The tool service, and the ask service when a model is given (loaded once, here)."""
    from sqlscout.env.sandbox import SandboxConfig
    from sqlscout.serve import AskService, Catalog, ServeConfig, ToolService

    try:
        sandbox = SandboxConfig(timeout_s=query_timeout, max_rows=max_rows, immutable=immutable, query_memory_mb=query_memory)
        config = ServeConfig(
            sandbox=sandbox, request_timeout_s=request_timeout, ask_timeout_s=ask_timeout, max_episodes=max_episodes
        )
        catalog = Catalog.from_args(databases, sandbox, query_memory_mb=query_memory)
    except SqlscoutError as exc:
        fail(str(exc))
    tools = ToolService(catalog, config)
    if model is None:
        return tools, None
    from sqlscout.cli.ask import load_model
    from sqlscout.cli.settings import resolve_settings
    from sqlscout.runner import RunnerConfig

    try:
        settings = resolve_settings(model, assist=assist, sets=[f"max_rounds={max_rounds}"] if max_rounds else None)
        runner = RunnerConfig(
            episode=settings.episode, assist=settings.assist, sampling=settings.sampling, seed=seed,
            max_batch=max_episodes, sandbox=sandbox,
        )
    except SqlscoutError as exc:
        fail(str(exc))
    loaded = load_model(model, backend, cache_dir, threads=threads, episodes=max_episodes, api_key=api_key)
    return tools, AskService(loaded, catalog, runner, config)


def close_services(tools: Any, ask: Any) -> None:
    if ask is not None:
        ask.close()
    tools.close()
    tools.catalog.close()


def listen_or_fail(host: str, port: int, token: Optional[str]) -> Any:
    """The bound socket, after refusing to open the server to the network without a token."""
    from sqlscout.serve.listen import bind, check_exposure, is_loopback

    try:
        check_exposure(host, token)
        sock = bind(host, port)
    except SqlscoutError as exc:
        fail(str(exc))
    if not is_loopback(host):
        err_console.print(
            f"[yellow]listening on {host}, reachable from the network[/]: clients must send 'Authorization: Bearer <token>'"
        )
    return sock


def serve(
    databases: List[str] = DATABASES,
    model: Optional[str] = MODEL,
    backend: Optional[str] = BACKEND,
    host: str = HOST,
    port: int = PORT,
    token: Optional[str] = TOKEN,
    query_timeout: float = QUERY_TIMEOUT,
    max_rows: int = MAX_ROWS,
    query_memory: int = QUERY_MEMORY,
    immutable: bool = IMMUTABLE,
    request_timeout: float = REQUEST_TIMEOUT,
    ask_timeout: float = ASK_TIMEOUT,
    max_episodes: int = MAX_EPISODES,
    max_rounds: Optional[int] = MAX_ROUNDS,
    assist: Optional[str] = ASSIST,
    seed: int = SEED,
    threads: Optional[int] = THREADS,
    cache_dir: Optional[Path] = CACHE_DIR,
    api_key: Optional[str] = API_KEY,
) -> None:
    """Serve the eight tools (and, with --model, the agent) as an HTTP JSON API; docs at /docs."""
    require_serve_extra("fastapi", "uvicorn")
    from sqlscout.serve.http_api import create_app
    from sqlscout.serve.listen import serve_forever

    sock = listen_or_fail(host, port, token)
    tools, ask = build_services(
        databases, model=model, backend=backend, query_timeout=query_timeout, max_rows=max_rows, immutable=immutable,
        query_memory=query_memory, request_timeout=request_timeout, ask_timeout=ask_timeout, max_episodes=max_episodes,
        max_rounds=max_rounds, seed=seed, threads=threads, cache_dir=cache_dir, api_key=api_key, assist=assist,
    )  # fmt: skip
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    err_console.print(
        f"sqlscout serve: {', '.join(tools.catalog.names)}{' with ask' if ask else ''} "
        f"on http://{shown}:{bound_port} (API docs at /docs)"
    )
    try:
        serve_forever(create_app(tools, ask, token), sock)
    finally:
        close_services(tools, ask)


def register(app: typer.Typer) -> None:
    app.command()(serve)
