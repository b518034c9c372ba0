"""The MCP server of ``sqlscout mcp`` (the official ``mcp`` SDK, low-level server).

Tools: the eight exploration tools, listed with the descriptions and argument schemas
the episode's prompt is built from (plus ``db`` when several databases are served);
each call returns the observation a model sees in an episode, as an error result when
the tool failed. With a model, one more tool, ``ask``, runs the agent and returns the
final SQL, its result and the trace. Resources: each database's schema, as text.
Transports: stdio (:func:`run_stdio`) or streamable HTTP (:func:`http_app`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import mcp_types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.jsonrpc import INVALID_PARAMS

from sqlscout import __version__
from sqlscout.env.tools import TOOLS
from sqlscout.errors import SqlscoutError
from sqlscout.serve.ask import AskRequest, AskService, answer_text
from sqlscout.serve.auth import BearerGuard
from sqlscout.serve.tools import DB_ARGUMENT, ToolService, db_property, tool_definitions

__all__ = ["ASK_TOOL", "RESOURCE_PREFIX", "build_server", "http_app", "run_stdio"]

ASK_TOOL = "ask"
RESOURCE_PREFIX = "sqlscout://databases/"
INSTRUCTIONS = (
    "Read-only databases (SQLite, DuckDB or PostgreSQL). Explore before you query: list_tables, "
    "describe_table, foreign_keys, join_path, sample_rows, distinct_values; then run_query (one SELECT, "
    "first 5 rows shown). Writes are refused by each engine itself; every query runs under a deadline."
)
# What hosts read before calling a tool: none of them writes, and each reads only the
# databases the server was started with (nothing outside them).
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ASK_ANNOTATIONS = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def ask_tool(databases: list[str]) -> types.Tool:
    """The ``ask`` tool: a question in plain words, answered by the agent."""
    properties: dict[str, Any] = {
        "question": {"type": "string", "description": "the question, in plain words."},
        "evidence": {"type": "string", "description": "an optional note shown with the question."},
    }
    required = ["question"]
    if len(databases) > 1:
        properties = {DB_ARGUMENT: db_property(databases), **properties}
        required = [DB_ARGUMENT, *required]
    return types.Tool(
        name=ASK_TOOL,
        description=(
            "Ask the sqlscout agent a question about the database: it explores with the tools, "
            "then answers with one read-only SQL query, its result, and the trace of its rounds."
        ),
        input_schema={"type": "object", "properties": properties, "required": required},
        annotations=ASK_ANNOTATIONS,
    )


def build_server(tools: ToolService, ask: AskService | None = None) -> Server[Any]:
    """The server over ``tools`` (and ``ask`` when a model is loaded)."""
    catalog = tools.catalog
    listed = [
        types.Tool(
            name=d.name, description=d.description, input_schema=d.input_schema, output_schema=d.output_schema, annotations=READ_ONLY
        )
        for d in tool_definitions(catalog.names)
    ]
    if ask is not None:
        listed.append(ask_tool(catalog.names))

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        db = args.pop(DB_ARGUMENT, None)
        try:
            if params.name == ASK_TOOL and ask is not None:
                evidence = args.get("evidence")
                request = AskRequest(db, str(args.get("question", "")), None if evidence is None else str(evidence))
                payload = await ask.ask(request, _progress(ctx, ask.runner.episode.max_rounds + 1))
                return types.CallToolResult(content=[_text(answer_text(payload))], structured_content=payload)
            if params.name not in TOOLS:
                raise MCPError(INVALID_PARAMS, f"no tool named {params.name!r}; list the tools with tools/list")
            outcome = await tools.call(params.name, args, db)
        except SqlscoutError as exc:  # unknown database, deadline, busy: the caller can act on it
            return types.CallToolResult(content=[_text(f"Error: {exc}")], is_error=True)
        return types.CallToolResult(content=[_text(outcome.text)], structured_content=outcome.data, is_error=not outcome.ok)

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=name,
                    uri=f"{RESOURCE_PREFIX}{name}/schema",
                    mime_type="text/plain",
                    description=f"The CREATE statements of {name}.",
                )
                for name in catalog.names
            ]
        )

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        name = uri.removeprefix(RESOURCE_PREFIX).removesuffix("/schema")
        if not (uri.startswith(RESOURCE_PREFIX) and uri.endswith("/schema")) or name not in catalog.names:
            raise MCPError(INVALID_PARAMS, f"no resource {uri!r}; list them with resources/list")
        text = catalog.schema_text(name)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])

    return Server(
        "sqlscout",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


_PROGRESS_WAIT_S = 5.0


def _progress(ctx: Any, total: int) -> Callable[[dict[str, Any]], None]:
    """Each round of an ``ask`` episode as a progress notification (when the client asked
    for progress: the SDK drops them otherwise). Rounds end on a pool thread; the
    notification is sent from the server's event loop, and the round waits until it is
    sent, so that every round's notification reaches the client before the answer."""
    loop = asyncio.get_running_loop()

    def on_round(event: dict[str, Any]) -> None:
        calls = ", ".join(f"{c['tool']} {'ok' if c['ok'] else 'failed'}" for c in event["calls"]) or "no tool call"
        message = f"round {event['index']}: {'final answer' if event['final'] else calls}"
        sent = asyncio.run_coroutine_threadsafe(ctx.session.report_progress(event["index"], total, message), loop)
        try:
            sent.result(timeout=_PROGRESS_WAIT_S)
        except Exception:  # noqa: BLE001 - a lost notification must not fail the answer
            pass

    return on_round


def _text(text: str) -> types.TextContent:
    return types.TextContent(text=text)


async def run_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until it disconnects."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Server[Any], host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The streamable-HTTP app (endpoint ``/mcp``), behind the bearer token when given."""
    app = server.streamable_http_app(host=host)
    return BearerGuard(app, token) if token else app
