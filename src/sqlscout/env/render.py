"""How query results look to a model: ``col | col`` lines with capped cells.

>>> print(render_table(("a", "b"), [(1, None), (2.5, "x" * 3)]))
a | b
1 | NULL
2.5 | xxx
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["MORE_ROWS_NOTE", "Table", "json_cell", "render_cell", "render_table"]

NO_ROWS = "(no rows)"  # the line a result without rows shows under its header
MORE_ROWS_NOTE = "... (showing first {n} rows; more rows exist)"
DEFAULT_CELL_CHARS = 100


def render_cell(value: Any, max_chars: int = DEFAULT_CELL_CHARS) -> str:
    """One value as text: ``NULL`` for None, blobs by size, long text cut with an ellipsis."""
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob {len(bytes(value))} bytes>"
    text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
    text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("|", "\\|")
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def json_cell(value: Any, max_chars: int = DEFAULT_CELL_CHARS) -> Any:
    """One value for a JSON client: numbers and NULL as themselves, text cut as the model
    sees it, blobs by size, a float JSON cannot carry (NaN, infinity) as its text."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<blob {len(bytes(value))} bytes>"
    text = str(value)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


class Table(str):
    """A rendered result (the text a model reads) that also keeps what it shows, for
    clients that take structured results (MCP ``structuredContent``, the HTTP API)."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool

    def as_dict(self) -> dict[str, Any]:
        """``columns``, ``rows`` (as shown), ``truncated`` and ``row_count`` (None where
        more rows exist than were fetched)."""
        return {
            "columns": self.columns,
            "rows": self.rows,
            "truncated": self.truncated,
            "row_count": None if self.truncated else len(self.rows),
        }


def render_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    more_rows: bool = False,
    max_cell_chars: int = DEFAULT_CELL_CHARS,
    note: str = "",
) -> Table:
    """A header line, one line per row, then the more-rows note when ``more_rows`` and
    ``note`` on a line of its own when given."""
    lines = [" | ".join(str(c) for c in columns)]
    lines += [" | ".join(render_cell(v, max_cell_chars) for v in row) for row in rows]
    if not rows:
        lines.append(NO_ROWS)
    if more_rows:
        lines.append(MORE_ROWS_NOTE.format(n=len(rows)))
    if note:
        lines.append(note)
    table = Table("\n".join(lines))
    table.columns = [str(c) for c in columns]
    table.rows = [[json_cell(v, max_cell_chars) for v in row] for row in rows]
    table.truncated = more_rows
    return table
