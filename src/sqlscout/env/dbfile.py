"""What a database file is: its identity (a hash of its bytes) and whether the sandbox
may open it (a SQLite file, not empty, not a WAL-mode file that reading would write beside)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sqlscout.errors import DatabaseError

__all__ = ["check_sqlite_file", "file_sha256"]

_SQLITE_HEADER = b"SQLite format 3\x00"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, read a megabyte at a time (a database's identity in
    the result cache and the schema-condition builds)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sqlite_file(path: Path, *, immutable: bool = False, live_wal: bool = False) -> None:
    """Raise :class:`DatabaseError`, with what to do, unless ``path`` is a SQLite file that
    can be read without writing beside it (a WAL-mode file only as ``immutable`` or
    ``live_wal``)."""
    if not path.exists():
        raise DatabaseError(f"{path}: no such file; pass the path of a SQLite database.")
    if not path.is_file():
        raise DatabaseError(f"{path}: not a file; pass the path of a SQLite database.")
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError as exc:
        raise DatabaseError(f"{path}: cannot read ({exc.strerror}).") from None
    if not header:
        raise DatabaseError(f"{path}: empty (0 bytes), not a SQLite database; check the path.")
    if header[: len(_SQLITE_HEADER)] != _SQLITE_HEADER:  # /proc files report size 0 and hold text
        raise DatabaseError(f"{path}: not a SQLite database (bad header).")
    # Bytes 18 and 19 are the file format's write and read versions; 2 means WAL mode.
    if 2 not in header[18:20] or live_wal:
        return
    wal = Path(f"{path}-wal")
    if not immutable:
        raise DatabaseError(
            f"{path}: a WAL-mode database; reading it would create or update {wal.name} and "
            f"{path.name}-shm beside it. If the file does not change while sqlscout reads it, "
            "open it as immutable (--immutable); if another program writes it, use "
            "SandboxConfig(live_wal=True); or convert it once with "
            f"sqlite3 {path.name} 'PRAGMA journal_mode=DELETE'."
        )
    if wal.exists() and wal.stat().st_size > 0:
        raise DatabaseError(
            f"{path}: {wal.name} holds changes not yet in the database, which immutable mode "
            f"would not see; checkpoint it first: sqlite3 {path.name} 'PRAGMA wal_checkpoint(TRUNCATE)'."
        )
