"""``sqlscout mcp``: the server through the official SDK's own client, over stdio (the
real command in a subprocess) and over streamable HTTP (on loopback, with a token)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import httpx
import pytest

pytest.importorskip("mcp")
import httpx2  # noqa: E402 - the SDK's HTTP client
from mcp import Client, MCPError, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from conftest import CHINOOK, REPO  # noqa: E402
from sqlscout.backends.scripted import ScriptedBackend  # noqa: E402
from sqlscout.env.episode import Episode  # noqa: E402
from sqlscout.env.sandbox import Database, SandboxConfig  # noqa: E402
from sqlscout.env.task import Task  # noqa: E402
from sqlscout.env.tools import TOOLS, call_tool, tool_specs  # noqa: E402
from sqlscout.runner import RunnerConfig  # noqa: E402
from sqlscout.serve import AskService, Catalog, ServeConfig, ToolService, parse_database_spec  # noqa: E402
from sqlscout.serve.listen import ServerThread  # noqa: E402
from sqlscout.serve.mcp_server import build_server, http_app  # noqa: E402
from test_sandbox_hostile import CASES  # noqa: E402
from test_serve_core import COUNTS, SINGER, singer_script  # noqa: E402
from test_serve_http import ARGS, RUNAWAY  # noqa: E402

TOKEN = "mcp-token-81d0"


@pytest.fixture
def copies(tmp_path: Path) -> dict[str, Path]:
    """Copies of the databases, so the hostile corpus runs against files we can hash."""
    folder = tmp_path / "db"
    folder.mkdir()
    return {
        "singers": Path(shutil.copy(SINGER, folder / "concert_singer.sqlite")),
        "music": Path(shutil.copy(CHINOOK, folder / "chinook.sqlite")),
    }


def stdio_server(copies: dict[str, Path]) -> StdioServerParameters:
    args = ["-m", "sqlscout.cli.main", "mcp", *(f"{n}={p}" for n, p in copies.items()), "--query-timeout", "0.5"]
    return StdioServerParameters(command=sys.executable, args=args, env={"PYTHONPATH": str(REPO / "src")})


def session(target: Any, check: Callable[[Client], Awaitable[None]]) -> None:
    async def run() -> None:
        async with Client(target) as client:
            await check(client)

    anyio.run(run)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_stdio_lists_the_episode_tools_and_answers_each_as_in_an_episode(copies: dict[str, Path]) -> None:
    specs = {s["function"]["name"]: s["function"] for s in tool_specs()}

    async def check(client: Client) -> None:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == list(TOOLS)  # no ask: no model was given
        for tool in listed:
            spec = specs[tool.name]
            assert tool.description == spec["description"]
            assert tool.input_schema["required"] == ["db", *spec["parameters"]["required"]]
            assert tool.input_schema["properties"]["db"]["enum"] == ["singers", "music"]
            # hosts that refuse tools without annotations see that none writes or reaches out
            hints = tool.annotations
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
                True, False, True, False,
            )
            # the tools that show rows also return them as structured content
            assert (tool.output_schema is not None) == (tool.name in ("sample_rows", "distinct_values", "run_query"))
        with Database(copies["singers"]) as db:
            for name, args in ARGS.items():
                result = await client.call_tool(name, {"db": "singers", **args})
                assert result.is_error is False
                assert result.content[0].text == call_tool(db, name, args).text
            # The same text a model reads in its episode's observation.
            episode = Episode(Task("q", "?", db.path), db)
            observation = episode.step(json.dumps({"tool": "run_query", "args": ARGS["run_query"]}))
            shown = (await client.call_tool("run_query", {"db": "singers", **ARGS["run_query"]})).content[0].text
            assert f"run_query(sql={ARGS['run_query']['sql']!r}):\n{shown}\n\n" in observation
        many = await client.call_tool("run_query", {"db": "singers", "sql": "SELECT Name, Age FROM singer ORDER BY Age"})
        assert many.structured_content["columns"] == ["Name", "Age"] and len(many.structured_content["rows"]) == 5
        assert (many.structured_content["truncated"], many.structured_content["row_count"]) == (True, None)
        one = await client.call_tool("run_query", {"db": "singers", "sql": "SELECT count(*) FROM singer"})
        assert one.structured_content == {"columns": ["count(*)"], "rows": [[6]], "truncated": False, "row_count": 1}
        capped = await client.call_tool("sample_rows", {"db": "singers", "table_name": "singer", "limit": 50})
        assert capped.content[0].text.endswith("(limit is at most 20; used 20)")  # not a silent 20
        resources = (await client.list_resources()).resources
        db = Database(copies["singers"])
        assert [r.name for r in resources] == ["singers", "music"]
        schema = (await client.read_resource(str(resources[0].uri))).contents[0].text
        assert schema == db.schema.create_statements()
        db.close()
        with pytest.raises(MCPError, match="no resource"):
            await client.read_resource("sqlscout://databases/../etc/schema")
        with pytest.raises(MCPError, match="no tool named 'drop_table'"):
            await client.call_tool("drop_table", {"db": "singers"})

    session(stdio_server(copies), check)


def hostile_session(target: Any, copies: dict[str, Path]) -> None:
    """The hostile corpus through run_query, an unknown database, a path, a runaway query;
    afterwards the files' bytes are unchanged and nothing appeared beside them."""
    before = {name: _sha(path) for name, path in copies.items()}
    files = sorted(p.name for p in copies["singers"].parent.iterdir())

    async def check(client: Client) -> None:
        problems = []
        for case in CASES:
            sql = case["sql"].replace("{t}", "singer").replace("{c}", "Name").replace("{dir}", str(copies["singers"].parent))
            result = await client.call_tool("run_query", {"db": "singers", "sql": sql})
            text = result.content[0].text
            if case["expect"] == "refused" and not (result.is_error and text.startswith("Error: Refused")):
                problems.append(f"not refused: {sql!r} -> {text[:100]!r}")
            if case["expect"] == "ok" and result.is_error:
                problems.append(f"harmless read failed: {sql!r} -> {text[:100]!r}")
        assert not problems, "\n".join(problems)

        unknown = await client.call_tool("list_tables", {"db": "pets_1"})
        assert unknown.is_error
        assert unknown.content[0].text == "Error: no database named 'pets_1'; this server serves singers, music"
        path = await client.call_tool("list_tables", {"db": str(copies["singers"])})
        assert path.is_error and "send a database's name, not a path" in path.content[0].text

        started = anyio.current_time()
        runaway = await client.call_tool("run_query", {"db": "music", "sql": RUNAWAY})
        assert runaway.is_error
        assert runaway.content[0].text.startswith("Error: Query timed out after 0.5 s and was stopped")
        assert anyio.current_time() - started < 5
        # The server still answers after the runaway query.
        genres = await client.call_tool("run_query", {"db": "music", "sql": "SELECT count(*) FROM Genre"})
        assert genres.content[0].text == "count(*)\n25"

    session(target, check)
    assert {name: _sha(path) for name, path in copies.items()} == before
    assert sorted(p.name for p in copies["singers"].parent.iterdir()) == files


def test_stdio_hostile_sql_unknown_database_and_runaway_query(copies: dict[str, Path]) -> None:
    hostile_session(stdio_server(copies), copies)


def test_http_hostile_sql_unknown_database_and_runaway_query(copies: dict[str, Path]) -> None:
    config = ServeConfig(SandboxConfig(timeout_s=0.5))
    catalog = Catalog([parse_database_spec(f"{n}={p}") for n, p in copies.items()], config.sandbox)
    tools = ToolService(catalog, config)
    with ServerThread(http_app(build_server(tools))) as url:
        hostile_session(f"{url}/mcp", copies)
    tools.close()
    catalog.close()


@pytest.fixture(scope="module")
def http_server():
    """The MCP server over streamable HTTP, with ask over a scripted model and a token."""
    config = ServeConfig(SandboxConfig(timeout_s=0.5))
    catalog = Catalog.from_args([str(SINGER)], config.sandbox)
    tools = ToolService(catalog, config)
    ask = AskService(ScriptedBackend(singer_script), catalog, RunnerConfig(), config)
    with ServerThread(http_app(build_server(tools, ask), token=TOKEN)) as url:
        yield f"{url}/mcp"
    ask.close()
    tools.close()
    catalog.close()


def with_token(url: str) -> Any:
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}))


def test_http_serves_one_database_without_a_db_argument_and_answers_ask(http_server: str) -> None:
    async def check(client: Client) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert list(listed) == [*TOOLS, "ask"]
        assert "db" not in listed["run_query"].input_schema["properties"]
        assert listed["ask"].input_schema["required"] == ["question"]
        assert listed["ask"].annotations.read_only_hint and not listed["ask"].annotations.destructive_hint
        with Database(SINGER) as db:
            for name, args in ARGS.items():
                result = await client.call_tool(name, args)
                assert (result.is_error, result.content[0].text) == (False, call_tool(db, name, args).text)
        runaway = await client.call_tool("run_query", {"sql": RUNAWAY})
        assert runaway.is_error and "timed out after 0.5 s" in runaway.content[0].text
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        answer = await client.call_tool(
            "ask", {"question": "How many singers are older than 30?"}, progress_callback=on_progress
        )
        assert answer.is_error is False
        assert answer.content[0].text.startswith("SQL: SELECT count(*) FROM singer WHERE Age > 30\n\ncount(*)\n4\n")
        assert answer.structured_content["result"]["rows"] == [[COUNTS[30]]]
        assert [r["index"] for r in answer.structured_content["trace"]] == [1, 2, 3]
        assert progress == [
            (1, 7, "round 1: describe_table ok"),
            (2, 7, "round 2: run_query ok"),
            (3, 7, "round 3: submit_sql ok"),
        ]
        wrong = await client.call_tool("ask", {"db": "music", "question": "How many genres?"})
        assert wrong.is_error and "no database named 'music'" in wrong.content[0].text

    session(with_token(http_server), check)


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}])
def test_http_refuses_a_missing_or_wrong_token(http_server: str, headers: dict[str, str]) -> None:
    response = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "unauthorized"


def test_cli_serves_streamable_http_behind_its_token(copies: dict[str, Path]) -> None:
    command = [sys.executable, "-m", "sqlscout.cli.main", "mcp", "--http", "--port", "0", "--token", TOKEN, str(copies["music"])]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert found, line

        async def check(client: Client) -> None:
            assert [t.name for t in (await client.list_tools()).tools] == list(TOOLS)
            assert (await client.call_tool("run_query", {"sql": "SELECT count(*) FROM Genre"})).content[0].text == "count(*)\n25"

        session(with_token(found.group(0)), check)
        assert httpx.post(found.group(0), json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
