"""The prompt text of the plain protocol (SPEC §4): the project's own, versioned, stored
with every result.

Change any text here and bump :data:`PROMPT_VERSION`; results record the version so a
run can be reproduced and runs with different prompts are never silently compared. The
text a layer of help adds (``sqlscout.assist``) is that layer's own, versioned with it.
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache

from sqlscout.env.chat import Message
from sqlscout.env.tools import TOOLS

__all__ = [
    "LIMIT_REASONS",
    "NO_QUERY_RAN",
    "PROMPT_VERSION",
    "SchemaMode",
    "budget_line",
    "final_turn_message",
    "engine_label",
    "initial_messages",
    "single_shot_messages",
    "system_prompt",
]

PROMPT_VERSION = "sqlscout-prompt-3"


class SchemaMode(str, Enum):
    """Whether the prompt shows the ``CREATE TABLE`` statements."""

    WITHHELD = "withheld"
    FULL = "full"


_SYSTEM = """\
You are an expert data analyst. You answer a question about a SQLite database by writing one SQLite query.

{schema_intro}

Tools:
{tool_lines}

To call tools, write one or more JSON objects, each on its own line, after any reasoning:
{{"tool": "describe_table", "args": {{"table_name": "orders"}}}}
{{"tool": "run_query", "args": {{"sql": "SELECT COUNT(*) FROM orders"}}}}
These eight tools are the only ones. All calls in one reply run in order, and you see their \
results only in the next message, so make the calls you need now and then stop. \
You have {max_rounds} tool turns; after that you must give the final query.

How to work:
1. Call list_tables to see the real table names.
2. Call describe_table on the tables that matter, and join_path or foreign_keys to see how they join.
3. Call distinct_values or sample_rows to check the exact spelling of values you filter on.
4. Write the query and call run_query to test it.
5. Read the result: does it answer exactly what was asked (columns, duplicates, order, NULLs)? If not, fix it and run it again.
6. Call submit_sql with the final query, in a reply of its own, only after run_query showed the right result.

Never guess a table or column name: use only names you have seen in tool results. \
Return only the columns the question asks for. Use SQLite syntax."""

_WITHHELD_INTRO = "You do not see the schema: explore the database with the tools below."
_FULL_INTRO = "The schema is given with the question, so you may skip steps 1 and 2; use the tools to check values and test queries."
_FINAL = """\
{reason} Reply now with the final SQL query only, no tool calls.
{last_good}"""

_SINGLE_SHOT_SYSTEM = """\
You are an expert data analyst. You answer a question about a SQLite database by writing one SQLite query.
Reply with the query in a ```sql code block. Return only the columns the question asks for. Use SQLite syntax."""


def _question_block(question: str, evidence: str | None, schema_sql: str | None) -> str:
    parts = []
    if schema_sql:
        parts.append(f"Schema:\n{schema_sql}\n")
    parts.append(f"Question: {question.strip()}")
    if evidence and evidence.strip():
        parts.append(f"Evidence (external knowledge that helps answer): {evidence.strip()}")
    return "\n".join(parts)


def initial_messages(
    question: str,
    *,
    evidence: str | None = None,
    schema_sql: str | None = None,
    max_rounds: int = 6,
    intro: str | None = None,
    engine: str = "SQLite",
) -> list[Message]:
    """System and user messages that open an agent episode.

    ``schema_sql`` (every ``CREATE TABLE``) is given in the ``full`` regime, None when
    withheld; ``intro`` replaces the paragraph that says which (a layer that shows part
    of the schema says so there); ``engine`` names the SQL to write (``PostgreSQL``...).
    """
    if intro is None:
        intro = _FULL_INTRO if schema_sql else _WITHHELD_INTRO
    return [
        {"role": "system", "content": system_prompt(intro, max_rounds, engine)},
        {"role": "user", "content": _question_block(question, evidence, schema_sql)},
    ]


@lru_cache(maxsize=64)
def system_prompt(intro: str, max_rounds: int, engine: str = "SQLite") -> str:
    """The agent's system prompt with ``intro`` as its schema paragraph, for a database of
    ``engine`` (the same text for every episode of a run: built once)."""
    tool_lines = "\n".join(f"- {t.signature()}: {t.description}" for t in TOOLS.values())
    text = _SYSTEM.format(schema_intro=intro, tool_lines=tool_lines, max_rounds=max_rounds)
    return text.replace("SQLite", engine) if engine != "SQLite" else text


def single_shot_messages(
    question: str, *, schema_sql: str, evidence: str | None = None, engine: str = "SQLite"
) -> list[Message]:
    """The no-tools baseline: full schema, one answer, in ``engine``'s SQL."""
    return [
        {"role": "system", "content": _SINGLE_SHOT_SYSTEM.replace("SQLite", engine)},
        {"role": "user", "content": _question_block(question, evidence, schema_sql)},
    ]


def budget_line(turns_left: int) -> str:
    """The line that ends every tool-result message.

    >>> budget_line(3)
    '[3 tool turns left before you must answer]'
    """
    return f"[{turns_left} tool turns left before you must answer]"


NO_QUERY_RAN = "No query has run without error yet."


def engine_label(db: object) -> str:
    """The name of ``db``'s SQL as the prompts say it: ``SQLite`` for the sandbox, the
    engine's own (``PostgreSQL``, ``DuckDB``) for a database served by one."""
    return str(getattr(db, "label", "SQLite"))


def final_turn_message(reason: str, last_good_sql: str | None) -> str:
    """The forced final turn: no more tools, SQL only, quoting the last query that ran."""
    if last_good_sql:
        last_good = (
            "The last query that ran without error was:\n"
            f"```sql\n{last_good_sql.strip()}\n```\n"
            "If you are unsure, return that query."
        )
    else:
        last_good = NO_QUERY_RAN
    return _FINAL.format(reason=reason, last_good=last_good)


LIMIT_REASONS = {
    "rounds": "You have used all your tool turns; the exploration limit is reached.",
    "failures": "Too many queries failed in a row; the exploration limit is reached.",
    "budget": "The token budget is almost spent; the exploration limit is reached.",
    "repeat": "You repeated calls whose results you already have; the exploration is over.",
}
