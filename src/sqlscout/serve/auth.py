"""Bearer tokens: the one check the HTTP API and the MCP server over HTTP share.

>>> bearer_matches("Bearer s3cret", "s3cret"), bearer_matches("Bearer nope", "s3cret"), bearer_matches(None, "s3cret")
(True, False, False)
"""

from __future__ import annotations

import hmac
from typing import Any

__all__ = ["UNAUTHORIZED_MESSAGE", "BearerGuard", "bearer_matches", "token_matches"]

UNAUTHORIZED_MESSAGE = "send the server's token as 'Authorization: Bearer <token>'"


def token_matches(given: str | None, token: str) -> bool:
    """Compare in constant time, so the answer's timing tells nothing about the token."""
    return hmac.compare_digest((given or "").encode(), token.encode())


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token`` as a bearer token."""
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and token_matches(given.strip(), token)


class BearerGuard:
    """ASGI middleware: every HTTP request must carry the token, or gets a JSON 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            if not bearer_matches(authorization, self.token):
                from starlette.responses import JSONResponse

                body = {"error": {"type": "unauthorized", "message": UNAUTHORIZED_MESSAGE}}
                await JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        await self.app(scope, receive, send)
