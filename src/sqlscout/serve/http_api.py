"""The HTTP JSON API of ``sqlscout serve`` (FastAPI; its OpenAPI page is at ``/docs``).

- ``POST /v1/tools/{name}`` with ``{"db": name, "args": {...}}``: one exploration tool;
  the output is the observation a model sees in an episode.
- ``POST /v1/ask`` with ``{"db", "question"}``: the agent answers; streamed as
  server-sent events (``round`` after each round, then ``answer``, or ``error``), or one
  JSON answer with ``"stream": false``.
- ``POST /v1/score`` with ``{"db", "sql", "gold_sql"}``: the evaluator's verdict.
- ``GET /v1/databases``, ``GET /v1/tools``, ``GET /healthz``.

Databases are named, never given by path: a name the server was not started with is
refused. With a token, every ``/v1`` route wants ``Authorization: Bearer <token>``.
Errors are JSON, ``{"error": {"type": ..., "message": ...}}``, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict
from typing import Any, AsyncIterator, Optional

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from sqlscout import __version__
from sqlscout.errors import ConfigError, SqlscoutError, ToolArgumentError
from sqlscout.scoring import Semantics
from sqlscout.serve.ask import AskRequest, AskService
from sqlscout.serve.auth import UNAUTHORIZED_MESSAGE, token_matches
from sqlscout.serve.errors import Busy, DeadlinePassed, NoModel, PathGiven, UnknownDatabase, UnknownTool
from sqlscout.serve.tools import ToolService, tool_definitions

__all__ = ["MAX_BODY_BYTES", "create_app"]

log = logging.getLogger("sqlscout.serve")
MAX_BODY_BYTES = 1_000_000


class Unauthorized(SqlscoutError):
    """No bearer token, or the wrong one."""


# Checked in order: a subclass before its base.
_STATUS: list[tuple[type[SqlscoutError], int, str]] = [
    (Unauthorized, 401, "unauthorized"),
    (PathGiven, 400, "path_not_allowed"),
    (UnknownDatabase, 404, "unknown_database"),
    (UnknownTool, 404, "unknown_tool"),
    (ToolArgumentError, 422, "bad_arguments"),
    (ConfigError, 422, "bad_request"),
    (Busy, 429, "busy"),
    (NoModel, 501, "no_model"),
    (DeadlinePassed, 504, "deadline"),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolBody(_Strict):
    db: str = Field(description="A served database's name (see GET /v1/databases); never a path.")
    args: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments (see GET /v1/tools).")


class AskBody(_Strict):
    db: str = Field(description="A served database's name.")
    question: str = Field(description="The question, in plain words.")
    evidence: Optional[str] = Field(None, description="A note the model sees with the question (BIRD-style).")
    seed: Optional[int] = Field(None, description="Sampling seed (default: the server's).")
    stream: bool = Field(True, description="Server-sent events round by round (true) or one JSON answer (false).")


class ScoreBody(_Strict):
    db: str = Field(description="A served database's name.")
    sql: Optional[str] = Field(description="The predicted query (null: no answer).")
    gold_sql: str = Field(description="The reference query.")
    semantics: Semantics = Field(Semantics.OFFICIAL, description="official (BIRD), strict, or spider.")


def error_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of an error (500 with no detail for the unexpected)."""
    for kind, status, name in _STATUS:
        if isinstance(exc, kind):
            return status, {"error": {"type": name, "message": str(exc)}}
    return 500, {"error": {"type": "internal", "message": "internal error; the server log has the details"}}


def _json_error(exc: BaseException) -> JSONResponse:
    status, body = error_body(exc)
    if status == 500:
        log.error("unexpected error", exc_info=exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {"Retry-After": "1"} if status == 429 else None
    return JSONResponse(body, status_code=status, headers=headers)


def create_app(tools: ToolService, ask: AskService | None = None, token: str | None = None) -> FastAPI:
    """The API over ``tools`` (and ``ask`` when a model is loaded); ``token`` guards ``/v1``."""
    app = FastAPI(
        title="sqlscout",
        version=__version__,
        description="Explore SQLite databases with the agent's eight read-only tools, and ask questions.",
    )
    bearer = HTTPBearer(auto_error=False, description="Needed when the server was started with --token.")

    def authorize(credentials: Optional[HTTPAuthorizationCredentials] = Depends(bearer)) -> None:
        if token is None:
            return
        if not token_matches(credentials.credentials if credentials is not None else None, token):
            raise Unauthorized(UNAUTHORIZED_MESSAGE)

    api = APIRouter(prefix="/v1", dependencies=[Depends(authorize)])

    @api.get("/databases", summary="The databases a client may name")
    async def databases() -> dict[str, Any]:
        return {"databases": tools.catalog.describe()}

    @api.get("/tools", summary="The eight tools: descriptions and argument schemas")
    async def list_tools() -> dict[str, Any]:
        return {"tools": [asdict(d) for d in tool_definitions(["db"])]}

    @api.post("/tools/{name}", summary="Call one tool on one database")
    async def call(name: str, body: ToolBody) -> dict[str, Any]:
        tool = tools.tool(name)
        tools.catalog.get(body.db)
        tool.bind(body.args)  # bad arguments are the caller's error: 422
        outcome = await tools.call(name, body.args, body.db)
        answer = {"db": body.db, "tool": name, "ok": outcome.ok, "output": outcome.text, "elapsed_s": outcome.elapsed_s}
        if outcome.data is not None:
            answer["result"] = outcome.data
        return answer

    @api.post("/score", summary="Score a query against a reference query")
    async def score(body: ScoreBody) -> dict[str, Any]:
        return (await tools.score(body.db, body.sql, body.gold_sql, body.semantics)).to_dict()

    @api.post("/ask", summary="Answer a question (server-sent events, or JSON)")
    async def answer(body: AskBody) -> Any:
        if ask is None:
            raise NoModel("this server has no model; start it with --model to answer questions")
        request = AskRequest(body.db, body.question, body.evidence, body.seed)
        if not body.stream:
            return await ask.ask(request)
        return _stream(ask, request)

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    app.include_router(api)

    @app.exception_handler(SqlscoutError)
    async def known(_: Request, exc: SqlscoutError) -> JSONResponse:
        return _json_error(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        message = f"{where}: {first.get('msg', 'invalid request')}"
        if first.get("type") == "json_invalid":
            message = "the body is not valid JSON; send a JSON object"
        return JSONResponse({"error": {"type": "invalid_request", "message": message}}, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": {"type": "http", "message": str(exc.detail)}}, status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        return _json_error(exc)

    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    return app


class BodyLimit:
    """ASGI middleware: a body larger than ``limit`` bytes gets a JSON 413.

    The bytes are counted as they arrive, so a chunked upload (no Content-Length) is held
    to the same cap as a declared one; a body within it is read whole (at most ``limit``
    bytes) and handed on. Plain ASGI rather than ``@app.middleware`` (Starlette's
    BaseHTTPMiddleware), which runs every response, the event streams too, through one
    more task and buffer.
    """

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def _too_large(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = {"error": {"type": "too_large", "message": f"the body is over {self.limit} bytes"}}
        await JSONResponse(body, status_code=413, headers={"Connection": "close"})(scope, receive, send)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before it finished
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        whole: list[dict[str, Any]] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> dict[str, Any]:
            return whole.pop() if whole else await receive()

        await self.app(scope, replay, send)


def _stream(service: AskService, request: AskRequest) -> StreamingResponse:
    """Start the episode now (so a busy server answers 429) and stream its rounds."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    future, cancelled = service.submit(request, lambda event: loop.call_soon_threadsafe(queue.put_nowait, ("round", event)))
    future.add_done_callback(lambda _: queue.put_nowait(("done", None)))

    async def events() -> AsyncIterator[str]:
        try:
            while True:
                kind, data = await queue.get()
                if kind == "round":
                    yield _sse("round", data)
                    continue
                error = future.exception()
                if error is not None:
                    status, body = error_body(error)
                    if status == 500:
                        log.error("unexpected error in an ask episode", exc_info=error)
                    yield _sse("error", body)
                else:
                    yield _sse("answer", future.result())
                return
        finally:
            cancelled.set()  # the client left early: stop the episode at its next turn

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"
