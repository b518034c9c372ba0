"""Where a server listens: loopback unless a token guards it, on a socket bound up front.

Binding before serving turns a taken port into a one-line error and tells the real
port when 0 (any free port) was asked for. :class:`ServerThread` runs an app on
loopback in a background thread, for tests and benchmarks.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from typing import Any

from sqlscout.errors import ConfigError

__all__ = ["ServerThread", "bind", "check_exposure", "is_loopback", "serve_forever"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0"), is_loopback("::1")
    (True, True, False, True)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"binding to {host} opens the server to the network; pass --token (or set SQLSCOUT_TOKEN) "
            "so clients must send 'Authorization: Bearer <token>', or bind to 127.0.0.1"
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port).

    >>> bind("127.0.0.1", 99999)
    Traceback (most recent call last):
    ...
    sqlscout.errors.ConfigError: --port must be from 1 to 65535 (or 0: any free port), got 99999
    """
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be from 1 to 65535 (or 0: any free port), got {port}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle off only on sockets that name TCP, and with
    # it on, every response waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port or --host") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _server(app: Any, log_level: str) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=5, access_log=False))


def serve_forever(app: Any, sock: socket.socket, log_level: str = "warning") -> None:
    """Serve ``app`` on ``sock`` until interrupted (Ctrl-C)."""
    _server(app, log_level).run(sockets=[sock])


class ServerThread:
    """``app`` served on loopback in a background thread: ``with ServerThread(app) as url:``."""

    def __init__(self, app: Any, host: str = "127.0.0.1", log_level: str = "warning") -> None:
        self._sock = bind(host, 0)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server = _server(app, log_level)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self.url

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
