"""Schema names that are not UTF-8, made addressable: an in-memory copy of the database
whose schema carries them backslash-escaped (``caf\\xe9``), so that a table the tools list
is a table a query can name (:class:`sqlscout.env.sandbox.Database` opens the copy).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["ESCAPED_COPY_MAX_BYTES", "escaped_image"]


# Names that are not UTF-8 are escaped in an in-memory copy of databases up to this size;
# in larger ones they stay listed with replacement characters.
ESCAPED_COPY_MAX_BYTES = 512 * 1024 * 1024


def escaped_image(conn: sqlite3.Connection, path: Path) -> bytes | None:
    """None when every name in the schema is UTF-8 (the usual case: one read of
    ``sqlite_master``); else the database's bytes with each schema entry's name and SQL
    decoded with backslash escapes (``caf\\xe9`` for the byte 0xE9), so that a table the
    tools list is a table a query can name. The copy lives in memory; the file is never
    written."""
    conn.text_factory = bytes
    try:
        rows = conn.execute("SELECT rowid, name, tbl_name, sql FROM sqlite_master").fetchall()
    finally:
        conn.text_factory = str

    def utf8(value: bytes | None) -> bool:
        if value is None:
            return True
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    if all(utf8(v) for row in rows for v in row[1:]) or path.stat().st_size > ESCAPED_COPY_MAX_BYTES:
        return None

    def escaped(value: bytes | None) -> str | None:
        return None if value is None else value.decode("utf-8", "backslashreplace")

    copy = sqlite3.connect(":memory:", isolation_level=None)
    try:
        copy.deserialize(conn.serialize())
        copy.execute("PRAGMA writable_schema = ON")
        for rowid, name, table, sql in rows:
            copy.execute("UPDATE sqlite_master SET name = ?, tbl_name = ?, sql = ? WHERE rowid = ?",
                         (escaped(name), escaped(table), escaped(sql), rowid))  # fmt: skip
        copy.execute("PRAGMA writable_schema = OFF")
        return copy.serialize()
    finally:
        copy.close()
