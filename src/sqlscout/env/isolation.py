"""Statements run in supervised worker processes: a deadline and a memory cap that hold
whatever a statement does.

The in-process sandbox stops a statement between SQLite's VM instructions (the progress
handler, an interrupt at the deadline) and bounds the few built-in functions whose one
call can outrun it (:mod:`sqlscout.env.bounded_functions`). Both are patches over one
statement at a time; a function call nobody has thought of yet runs on past them. Here
the guarantee comes from the operating system instead:

- each statement runs in a worker process (a few per database, started once, reused) that
  holds its own read-only :class:`~sqlscout.env.sandbox.Database`, so every in-process
  check still applies and still gives its clear message first;
- the parent waits for the answer until the statement's deadline plus ``grace_s``; past
  it, the worker is killed (SIGKILL: no function call survives it) and a fresh one takes
  its place, and the caller gets the sandbox's own timeout error;
- each worker runs under an address-space cap (``RLIMIT_AS``), so a statement that would
  take gigabytes fails in its worker (a MemoryError, or the worker's death) and the
  caller gets a one-line error while the parent's memory is untouched.

Results cross back pickled; a cost of about 0.1 ms a statement
(``benchmarks/env_overhead.py`` measures it).

>>> with IsolatedDatabase("src/sqlscout/data/chinook/Chinook_Sqlite.sqlite") as db:
...     db.execute("SELECT count(*) FROM Genre").rows
[(25,)]
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Iterator

from sqlscout.env.sandbox import Database, QueryResult, SandboxConfig
from sqlscout.errors import ConfigError, DatabaseError, QueryError, QueryRefused, QueryTimeout, QueryTooLarge

__all__ = ["DEFAULT_MEMORY_MB", "IsolatedDatabase", "OUT_OF_MEMORY"]

# Address space of one worker: Python, SQLite's page cache, one result of up to
# SandboxConfig.max_result_bytes (100 MB by default) twice over while it is pickled.
DEFAULT_MEMORY_MB = 1_024
OUT_OF_MEMORY = "SQL error: the query needed more memory than the sandbox allows ({mb:,} MB); select fewer rows or smaller values."
_ERRORS: dict[str, type[Exception]] = {
    "QueryError": QueryError, "QueryTimeout": QueryTimeout, "QueryRefused": QueryRefused, "QueryTooLarge": QueryTooLarge,
    "DatabaseError": DatabaseError,
}  # fmt: skip


def _serve(conn: Connection) -> None:
    """A worker's loop: its settings (path, config, memory cap) first, then one request
    (sql, params, timeout, cap) in and one reply out at a time."""
    path, config, memory_mb = conn.recv()
    try:
        import resource

        cap = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # no RLIMIT_AS here: the deadline still holds
        pass
    try:
        db = Database(path, config)
    except DatabaseError as exc:
        conn.send(("DatabaseError", str(exc)))
        return
    conn.send(("ready", None))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        sql, params, timeout, cap_rows = request
        try:
            reply: tuple[str, Any] = ("ok", db._execute_checked(sql, params, timeout, cap_rows))
        except QueryError as exc:
            reply = (type(exc).__name__ if type(exc).__name__ in _ERRORS else "QueryError", str(exc))
        except MemoryError:
            reply = ("QueryTooLarge", OUT_OF_MEMORY.format(mb=memory_mb))
        try:
            conn.send(reply)
        except MemoryError:  # the result fit in memory but its pickle did not
            conn.send(("QueryTooLarge", OUT_OF_MEMORY.format(mb=memory_mb)))


class _Worker:
    """One worker: ``python -m sqlscout.env.isolation`` over a socket pair. A plain
    subprocess rather than multiprocessing's spawn or forkserver, which import the
    caller's ``__main__`` again (a script without a main guard would start itself)."""

    def __init__(self, path: str, config: SandboxConfig, memory_mb: int) -> None:
        ours, theirs = socket.socketpair()
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sqlscout.env.isolation", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL, close_fds=True,
        )  # fmt: skip
        theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send((path, config, memory_mb))
        try:
            kind, message = self.conn.recv()
        except (EOFError, OSError):
            self.kill()
            raise DatabaseError(f"{path}: the query worker did not start (exit code {self.process.poll()})") from None
        if kind != "ready":
            self.kill()
            raise _ERRORS.get(kind, DatabaseError)(message)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
            self.process.wait(1)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(1)
        self.conn.close()


class IsolatedDatabase(Database):
    """A :class:`Database` whose statements run in worker processes under a hard deadline
    and a memory cap (the module's docstring says how).

    Args:
        path, config: as for :class:`Database` (its checks and limits apply in each worker).
        workers: statements that may run at once; more wait for a free worker.
        memory_mb: address-space cap of each worker.
        grace_s: how long past a statement's deadline the parent waits before it kills
            the worker (the in-process checks usually stop it first, with their message).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: SandboxConfig | None = None,
        *,
        workers: int = 2,
        memory_mb: int = DEFAULT_MEMORY_MB,
        grace_s: float = 0.25,
    ) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}")
        if memory_mb < 128:
            raise ConfigError(f"memory_mb must be >= 128 (Python itself needs about 60), got {memory_mb}")
        super().__init__(path, config)
        self.config = replace(self.config, query_memory_mb=0)  # what each worker runs in process
        self.memory_mb = memory_mb
        self.grace_s = grace_s
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(workers)
        self._live: set[_Worker] = set()
        self._closed = False
        self._release(self._start())  # the first worker now: a file it cannot open fails here

    def __repr__(self) -> str:
        return f"IsolatedDatabase({str(self.path)!r})"

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Statements run in whichever worker is free, so there is no shared transaction:
        each sees the file as it is (a served file does not change under the server)."""
        yield

    def _execute_checked(self, sql: str, params: tuple[Any, ...], timeout: float, cap: int) -> QueryResult:
        with self._slots:
            worker = self._take()
            try:
                worker.conn.send((sql, params, timeout, cap))
                ready = worker.conn.poll(timeout + self.grace_s)
                reply = worker.conn.recv() if ready else None
            except (EOFError, OSError):  # the worker died: killed by the memory cap, or worse
                self._discard(worker)
                raise QueryTooLarge(OUT_OF_MEMORY.format(mb=self.memory_mb)) from None
            if reply is None:
                self._discard(worker)  # still inside one call: SIGKILL is the only way out
                raise QueryTimeout(
                    f"Query timed out after {timeout:g} s and was stopped; simplify it (add LIMIT, avoid cross joins)."
                )
            self._release(worker)
        kind, value = reply
        if kind == "ok":
            return value  # type: ignore[no-any-return]
        raise _ERRORS.get(kind, QueryError)(value)

    def _start(self) -> _Worker:
        worker = _Worker(str(self.path), self.config, self.memory_mb)
        self._live.add(worker)
        return worker

    def _take(self) -> _Worker:
        if self._closed:
            raise DatabaseError(f"{self.path}: the database was closed")
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return self._start()

    def _release(self, worker: _Worker) -> None:
        if self._closed:
            self._live.discard(worker)
            worker.stop()
        else:
            self._idle.put(worker)

    def _discard(self, worker: _Worker) -> None:
        """Kill ``worker`` and start its replacement in the background, so the next
        statement does not wait for a new interpreter."""
        self._live.discard(worker)
        worker.kill()
        threading.Thread(target=self._replace, name="sqlscout-query-start", daemon=True).start()

    def _replace(self) -> None:
        try:
            self._release(self._start())
        except Exception:  # the next statement starts one itself and reports what fails
            pass

    def close(self) -> None:
        """Stop every worker, then close the parent's own connections."""
        self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                break
            self._live.discard(worker)
            worker.stop()
        super().close()


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
