"""``sqlscout serve``: the HTTP API through a real HTTP client (httpx) against a server
listening on loopback on a port the OS chose; the model is the scripted backend."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import httpx
import pytest

from conftest import CHINOOK, REPO
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.tools import TOOLS, call_tool
from sqlscout.runner import RunnerConfig
from sqlscout.serve import AskService, Catalog, ServeConfig, ToolService
from sqlscout.serve.http_api import create_app
from sqlscout.serve.listen import ServerThread
from test_serve_core import COUNTS, SINGER, SlowScripted, singer_script

TOKEN = "test-token-5f2c"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture(scope="module")
def served():
    """A server with two databases, ask over a scripted model, and a token."""
    config = ServeConfig(SandboxConfig(timeout_s=0.5), max_episodes=8)
    catalog = Catalog.from_args([str(SINGER), f"music={CHINOOK}"], config.sandbox)
    tools = ToolService(catalog, config)
    ask = AskService(SlowScripted(singer_script, delay=0.05), catalog, RunnerConfig(), config)
    with ServerThread(create_app(tools, ask, TOKEN)) as url:
        yield url, ask
    ask.close()
    tools.close()
    catalog.close()


@pytest.fixture
def client(served):
    with httpx.Client(base_url=served[0], headers=AUTH, timeout=30) as c:
        yield c


def test_health_and_openapi_need_no_token(served) -> None:
    url = served[0]
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    paths = httpx.get(f"{url}/openapi.json").json()["paths"]
    assert {"/v1/ask", "/v1/tools/{name}", "/v1/score", "/v1/databases", "/healthz"} <= set(paths)
    assert "swagger" in httpx.get(f"{url}/docs").text.lower()


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}])
def test_a_missing_or_wrong_token_is_refused(served, headers: dict[str, str]) -> None:
    # Refused before anything else is looked at: a bad body, a path, an unknown tool.
    for method, path, body in [
        ("GET", "/v1/databases", None),
        ("POST", "/v1/tools/list_tables", {"db": "music"}),
        ("POST", "/v1/tools/list_tables", {"db": str(SINGER)}),
        ("POST", "/v1/tools/drop_table", {"nonsense": 1}),
        ("POST", "/v1/ask", {"db": "music", "question": "How many genres?"}),
    ]:
        response = httpx.request(method, served[0] + path, json=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json() == {"error": {"type": "unauthorized", "message": "send the server's token as 'Authorization: Bearer <token>'"}}


def test_databases_are_listed_by_name_only(client: httpx.Client) -> None:
    listed = client.get("/v1/databases").json()["databases"]
    assert [d["name"] for d in listed] == ["concert_singer", "music"]
    assert "Genre" in listed[1]["tables"]
    assert str(CHINOOK.parent) not in json.dumps(listed)


ARGS = {
    "list_tables": {},
    "describe_table": {"table_name": "singer"},
    "foreign_keys": {"table_name": "singer_in_concert"},
    "join_path": {"table_a": "singer", "table_b": "stadium"},
    "sample_rows": {"table_name": "stadium", "limit": 3},
    "distinct_values": {"table_name": "singer", "column_name": "Country"},
    "run_query": {"sql": "SELECT Name FROM singer ORDER BY Age"},
    "submit_sql": {"sql": "SELECT count(*) FROM singer"},
}


def test_every_tool_answers_as_in_an_episode(client: httpx.Client) -> None:
    assert set(ARGS) == set(TOOLS)
    with Database(SINGER) as db:
        for name, args in ARGS.items():
            body = client.post(f"/v1/tools/{name}", json={"db": "concert_singer", "args": args}).json()
            assert body["ok"] is True, body
            assert body["output"] == call_tool(db, name, args).text


def test_32_concurrent_tool_requests_are_all_answered_correctly(served) -> None:
    async def run() -> list[dict]:
        async with httpx.AsyncClient(base_url=served[0], headers=AUTH, timeout=60) as c:
            requests = [
                c.post("/v1/tools/run_query", json={"db": "concert_singer", "args": {"sql": f"SELECT {i} + count(*) FROM singer"}})
                for i in range(32)
            ]
            return [r.json() for r in await asyncio.gather(*requests)]

    answers = asyncio.run(run())
    assert [a["output"].splitlines()[1] for a in answers] == [str(i + 6) for i in range(32)]


def _events(response: httpx.Response) -> list[tuple[str, dict]]:
    events, kind = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((kind, json.loads(line.removeprefix("data: "))))
    return events


def test_8_concurrent_asks_stream_their_rounds_and_answer_correctly(served) -> None:
    url, ask = served
    questions = [(k, f"How many singers are older than {k}?") for k in list(COUNTS) * 2]

    async def one(c: httpx.AsyncClient, question: str) -> list[tuple[str, dict]]:
        async with c.stream("POST", "/v1/ask", json={"db": "concert_singer", "question": question}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line async for line in response.aiter_lines()]
        return _events(httpx.Response(200, content="\n".join(lines).encode()))

    async def run() -> list[list[tuple[str, dict]]]:
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=60) as c:
            return await asyncio.gather(*(one(c, q) for _, q in questions))

    before = ask.model.stats.batches
    streams = asyncio.run(run())
    for (k, question), events in zip(questions, streams):
        assert [kind for kind, _ in events] == ["round", "round", "round", "answer"]
        assert [data["index"] for _, data in events[:3]] == [1, 2, 3]
        answer = events[-1][1]
        assert answer["question"] == question
        assert answer["sql"] == f"SELECT count(*) FROM singer WHERE Age > {k}"
        assert answer["result"]["rows"] == [[COUNTS[k]]]
        assert answer["trace"] == [data for _, data in events[:3]]
    # 24 model turns went to the one model in fewer, larger calls.
    assert ask.model.stats.batches - before < 24 and ask.model.stats.largest > 1


def test_ask_without_streaming_returns_one_json_answer(client: httpx.Client) -> None:
    body = {"db": "concert_singer", "question": "How many singers are older than 45?", "stream": False}
    answer = client.post("/v1/ask", json=body).json()
    assert answer["result"]["rows"] == [[1]] and answer["stop_reason"] == "submitted"


def test_score_gives_the_evaluators_verdict(client: httpx.Client) -> None:
    body = {"db": "music", "sql": "SELECT count(*) FROM Genre", "gold_sql": "SELECT count(GenreId) FROM Genre"}
    verdict = client.post("/v1/score", json=body).json()
    assert verdict["outcome"] == "equivalent" and verdict["official"] is True
    wrong = client.post("/v1/score", json={**body, "sql": "SELECT count(*) FROM Album"}).json()
    assert wrong["outcome"] == "executable"


@pytest.mark.parametrize("path", [str(SINGER), "../database/concert_singer.sqlite", "/etc/passwd"])
def test_a_path_in_place_of_a_database_name_is_refused(client: httpx.Client, path: str) -> None:
    for route, body in [
        ("/v1/tools/list_tables", {"db": path}),
        ("/v1/ask", {"db": path, "question": "How many singers are older than 20?"}),
        ("/v1/score", {"db": path, "sql": "SELECT 1", "gold_sql": "SELECT 1"}),
    ]:
        response = client.post(route, json=body)
        assert response.status_code == 400, route
        assert response.json()["error"] == {
            "type": "path_not_allowed",
            "message": "send a database's name, not a path; this server serves concert_singer, music",
        }


@pytest.mark.parametrize(
    ("route", "body", "status", "kind"),
    [
        ("/v1/tools/list_tables", {"db": "pets_1"}, 404, "unknown_database"),
        ("/v1/tools/drop_table", {"db": "music"}, 404, "unknown_tool"),
        ("/v1/tools/describe_table", {"db": "music", "args": {}}, 422, "bad_arguments"),
        ("/v1/tools/sample_rows", {"db": "music", "args": {"table_name": "Genre", "limit": "many"}}, 422, "bad_arguments"),
        ("/v1/tools/list_tables", {"db": "music", "path": "/tmp/x.sqlite"}, 422, "invalid_request"),
        ("/v1/tools/list_tables", {"args": {}}, 422, "invalid_request"),
        ("/v1/ask", {"db": "music", "question": "   "}, 422, "bad_request"),
        ("/v1/nothing", {}, 404, "http"),
    ],
)
def test_bad_input_gets_a_clear_json_error(client: httpx.Client, route: str, body: dict, status: int, kind: str) -> None:
    response = client.post(route, json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == kind and error["message"] and "Traceback" not in response.text


def test_a_body_over_the_limit_is_refused(client: httpx.Client) -> None:
    from sqlscout.serve.http_api import MAX_BODY_BYTES

    sql = "SELECT '" + "x" * MAX_BODY_BYTES + "'"
    response = client.post("/v1/tools/run_query", json={"db": "music", "args": {"sql": sql}})
    assert response.status_code == 413
    assert response.json()["error"] == {"type": "too_large", "message": "the body is over 1000000 bytes"}


def test_row_results_come_as_fields_too(client: httpx.Client) -> None:
    body = client.post("/v1/tools/run_query", json={"db": "music", "args": {"sql": "SELECT Name FROM Genre ORDER BY GenreId"}}).json()
    assert body["result"]["columns"] == ["Name"] and body["result"]["rows"][0] == ["Rock"]
    assert (body["result"]["truncated"], body["result"]["row_count"]) == (True, None)
    listed = client.post("/v1/tools/list_tables", json={"db": "music", "args": {}}).json()
    assert "result" not in listed and listed["ok"] is True


def test_a_chunked_body_is_counted_as_it_arrives(client: httpx.Client) -> None:
    """No Content-Length to read: the cap counts the chunks (a 200 MB chunked upload once got 200 OK)."""
    sent = 0

    def chunks():
        nonlocal sent
        yield b'{"db": "music", "args": {"sql": "SELECT \''
        for _ in range(200):  # 200 x 64 KiB = 12.5 MiB, if the server kept reading
            sent += 65536
            yield b"x" * 65536
        yield b'\'"}}'

    response = client.post("/v1/tools/run_query", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "too_large"
    small = client.post("/v1/tools/run_query", content=iter([b'{"db": "music", ', b'"args": {"sql": "SELECT 1"}}']),
                        headers={"content-type": "application/json"})  # fmt: skip
    assert small.status_code == 200 and small.json()["ok"] is True


def test_a_body_that_is_not_json_is_refused(client: httpx.Client) -> None:
    response = client.post("/v1/tools/list_tables", content=b"{db: music", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["error"]["message"] == "the body is not valid JSON; send a JSON object"


def test_writes_are_refused_and_a_runaway_query_is_stopped_by_its_deadline(client: httpx.Client) -> None:
    before = hashlib.sha256(SINGER.read_bytes()).hexdigest()
    for sql in ["DELETE FROM singer", "DROP TABLE singer", "UPDATE singer SET Age = 0", "PRAGMA query_only = 0"]:
        body = client.post("/v1/tools/run_query", json={"db": "concert_singer", "args": {"sql": sql}}).json()
        assert body["ok"] is False and body["output"].startswith("Error: Refused"), body
    body = client.post("/v1/tools/run_query", json={"db": "concert_singer", "args": {"sql": RUNAWAY}}).json()
    assert body["ok"] is False
    assert body["output"].startswith("Error: Query timed out after 0.5 s")
    assert hashlib.sha256(SINGER.read_bytes()).hexdigest() == before


def test_a_server_without_a_model_says_how_to_get_ask() -> None:
    catalog = Catalog.from_args([str(SINGER)])
    tools = ToolService(catalog, ServeConfig())
    with ServerThread(create_app(tools)) as url:
        response = httpx.post(f"{url}/v1/ask", json={"db": "concert_singer", "question": "How many?"})
        assert response.status_code == 501
        assert "start it with --model" in response.json()["error"]["message"]
        assert httpx.get(f"{url}/v1/databases").status_code == 200  # no token asked for: none was set
    tools.close()
    catalog.close()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "sqlscout.cli.main", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src")}


def test_cli_refuses_to_listen_beyond_loopback_without_a_token() -> None:
    done = subprocess.run(_cli("serve", str(SINGER), "--host", "0.0.0.0", "--port", "0"), capture_output=True, text=True, env=_env(), timeout=60)
    assert done.returncode == 2
    assert "binding to 0.0.0.0 opens the server to the network; pass --token" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_serves_on_the_port_it_reports() -> None:
    process = subprocess.Popen(
        _cli("serve", f"singers={SINGER}", "--port", "0", "--token", TOKEN), stderr=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert url, line
        listed = httpx.get(f"{url.group(0)}/v1/databases", headers=AUTH, timeout=30).json()
        assert listed == {"databases": [{"name": "singers", "tables": ["stadium", "singer", "concert", "singer_in_concert"]}]}
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_listening_socket_names_tcp_so_asyncio_turns_nagle_off() -> None:
    # With proto 0, asyncio leaves Nagle on for accepted connections and each response
    # waited ~40 ms for the client's delayed ACK (47 ms per /healthz, 2.8 ms after).
    import socket

    from sqlscout.serve.listen import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def test_a_request_past_its_deadline_gets_504() -> None:
    config = ServeConfig(SandboxConfig(timeout_s=10.0), request_timeout_s=0.3)
    catalog = Catalog.from_args([str(SINGER)], config.sandbox)
    tools = ToolService(catalog, config)
    with ServerThread(create_app(tools)) as url:
        response = httpx.post(f"{url}/v1/tools/run_query", json={"db": "concert_singer", "args": {"sql": RUNAWAY}}, timeout=30)
        assert response.status_code == 504
        assert response.json()["error"] == {
            "type": "deadline",
            "message": "the request ran past its deadline of 0.3 s; simplify it",
        }
    tools.close()
    catalog.close()


def test_a_client_that_leaves_frees_its_episode_slot() -> None:
    from sqlscout.backends.scripted import ScriptTurn

    def explores_forever(turn: ScriptTurn) -> str:
        return '{"tool": "list_tables", "args": {}}'

    config = ServeConfig(max_episodes=1)
    catalog = Catalog.from_args([str(SINGER)])
    tools = ToolService(catalog, config)
    model = SlowScripted(explores_forever, delay=0.2)
    ask = AskService(model, catalog, RunnerConfig(), config)
    body = {"db": "concert_singer", "question": "How many singers?"}
    with ServerThread(create_app(tools, ask)) as url:
        with httpx.stream("POST", f"{url}/v1/ask", json=body, timeout=30) as response:
            lines = response.iter_lines()  # kept: a dropped line iterator closes the connection
            assert next(lines) == "event: round"
            busy = httpx.post(f"{url}/v1/ask", json={**body, "stream": False}, timeout=30)
            assert busy.status_code == 429 and busy.json()["error"]["type"] == "busy"
        # The stream is closed: the episode stops at its next model turn and frees the slot.
        deadline = time.monotonic() + 10
        while httpx.post(f"{url}/v1/ask", json={**body, "stream": False}, timeout=30).status_code == 429:
            assert time.monotonic() < deadline, "the slot was never freed"
            time.sleep(0.1)
        turns = len(model.batches)
        time.sleep(0.5)
        assert len(model.batches) == turns  # nothing is generating for the client that left
    ask.close()
    tools.close()
    catalog.close()
