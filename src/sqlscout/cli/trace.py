"""How an episode looks in the terminal: rounds with folded reasoning, calls, results, budget."""

from __future__ import annotations

import re

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sqlscout.env.trace import EpisodeResult, RoundRecord
from sqlscout.errors import QueryError
from sqlscout.env.sandbox import Database

__all__ = ["fold", "print_answer", "print_round", "split_reasoning"]

_CALL_START = re.compile(r'(```(?:json)?\s*)?\{\s*"tool"\s*:')


def split_reasoning(text: str) -> str:
    """The model's prose before its first tool call (all of it when there is no call)."""
    match = _CALL_START.search(text)
    return (text[: match.start()] if match else text).strip()


def fold(text: str, head: int = 3, tail: int = 2) -> str:
    """Keep the first ``head`` and last ``tail`` lines, and say how many were folded.

    >>> print(fold("a\\nb\\nc\\nd\\ne\\nf\\ng", head=2, tail=1))
    a
    b
    … 4 lines folded …
    g
    """
    lines = text.splitlines()
    if len(lines) <= head + tail + 1:
        return text
    return "\n".join([*lines[:head], f"… {len(lines) - head - tail} lines folded …", *lines[-tail:]])


def print_round(console: Console, record: RoundRecord, *, tokens_used: int, budget: int, turns_left: int | None) -> None:
    """One model turn and the environment's answer, compactly."""
    label = "final answer" if record.final else f"round {record.index}"
    console.rule(f"[bold]{label}[/]  [dim]{record.completion_tokens} tokens, {record.model_time_s:.1f}s[/]", align="left")
    reasoning = split_reasoning(record.model_text)
    if reasoning and not record.final:
        console.print(Text(fold(reasoning), style="dim italic"))
    elif record.final:
        console.print(Text(fold(record.model_text.strip(), head=6, tail=2)))
    for call in record.calls:
        args = ", ".join(f"{k}={v!r}" for k, v in call.args.items())
        mark = "[green]→[/]" if call.ok else "[red]✗[/]"
        console.print(f"{mark} [bold cyan]{call.tool}[/]({Text(args).markup})")
        console.print(Text(fold(call.output, head=6, tail=1), style="dim"), soft_wrap=True)
    for error in record.parse_errors:
        console.print(Text(f"parse error: {error}", style="yellow"))
    if not record.calls and not record.final and record.observation:
        console.print(Text(fold(record.observation, head=2, tail=0), style="yellow"))
    if turns_left is not None:
        console.print(f"[dim]budget: {tokens_used:,}/{budget:,} tokens · {turns_left} tool turns left[/]")


def print_answer(console: Console, result: EpisodeResult, db: Database, *, max_rows: int = 20) -> bool:
    """The final SQL and its result as a table; False when there is no answer or it fails."""
    console.rule("[bold]answer[/]", align="left")
    console.print(
        f"[dim]stop: {result.stop_reason.value} · answer from: {result.answer_source.value} · "
        f"{result.tool_rounds} rounds, {result.tool_calls} calls, {result.total_tokens:,} tokens, "
        f"{result.wall_time_s:.1f}s[/]"
    )
    if not result.final_sql:
        console.print("[red]no SQL answer[/]")
        return False
    console.print(Text(result.final_sql, style="bold"))
    try:
        rows = db.execute(result.final_sql, max_rows=max_rows)
    except QueryError as exc:
        console.print(f"[red]the answer does not run:[/] {Text(str(exc)).markup}")
        return False
    table = Table(*rows.columns, show_lines=False)
    for row in rows.rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(table)
    if rows.truncated:
        console.print(f"[dim]… first {max_rows} rows shown[/]")
    return True
