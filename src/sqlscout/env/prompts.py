"""The prompt text (SPEC §4): the project's own, versioned, stored with every result.

Change any text here and bump :data:`PROMPT_VERSION`; results record the version so a
run can be reproduced and runs with different prompts are never silently compared.
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache

from sqlscout.env.chat import Message
from sqlscout.env.tools import TOOLS

__all__ = [
    "LIMIT_REASONS",
    "PROMPT_VERSION",
    "REPEATED_CALLS",
    "SUBMIT_AFTER_REPEAT",
    "SUBMIT_HINT",
    "SchemaMode",
    "budget_line",
    "final_turn_message",
    "initial_messages",
    "prompt_version",
    "single_shot_messages",
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

# A worked episode on another database (issue 11 item 2): the protocol shown once, end to
# end. Its queries run on no real database, so an echoed submit answers nothing right.
_WORKED_EXAMPLE = """

Example, on another database. Question: How many orders were placed by customers from Canada?
Reply 1:
{"tool": "list_tables", "args": {}}
Result: customers, orders
Reply 2:
{"tool": "describe_table", "args": {"table_name": "customers"}}
{"tool": "describe_table", "args": {"table_name": "orders"}}
Result: CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT) and \
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL)
Reply 3:
{"tool": "distinct_values", "args": {"table_name": "customers", "column_name": "country"}}
Result: USA 41, Canada 12, Mexico 7
Reply 4:
{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM orders JOIN customers ON orders.customer_id = customers.id WHERE customers.country = 'Canada'"}}
Result: COUNT(*) 23
Reply 5:
{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM orders JOIN customers ON orders.customer_id = customers.id WHERE customers.country = 'Canada'"}}"""

_WITHHELD_INTRO = "You do not see the schema: explore the database with the tools below."
# fresh_start, schema withheld: the exploration begun again with what the model had read.
_READ_INTRO = (
    "The tables you described so far are given with the question, with the tables that join them or "
    "that they join to, and the names of the others; use the tools to look at other tables, check "
    "values and test queries."
)
_FULL_INTRO = "The schema is given with the question, so you may skip steps 1 and 2; use the tools to check values and test queries."
# With ``draft_first``: the first reply is the query, as single-shot writes it.
_DRAFT_INTRO = (
    "The schema is given with the question. Your first reply is only your query, in a ```sql code "
    "block: it is run, and you see its result. Then submit it with submit_sql if it answers the "
    "question exactly, or use the tools to check values and fix it."
)

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
    worked_example: bool = False,
    draft_first: bool = False,
    unread: tuple[str, ...] | None = None,
) -> list[Message]:
    """System and user messages that open an agent episode.

    ``schema_sql`` (every ``CREATE TABLE``) is given in the ``full`` regime, None when
    withheld; ``worked_example`` adds one short example episode to the system prompt.
    With ``unread`` (``fresh_start``, schema withheld), ``schema_sql`` holds only the
    tables read so far and those that join them, and ``unread`` names the others.
    """
    intro = "full" if schema_sql else "withheld"
    if unread is not None and schema_sql:
        intro = "read"
        if unread:
            schema_sql += f"\n\n-- The other tables (describe_table shows them): {', '.join(unread)}"
    return [
        {"role": "system", "content": _system_prompt(intro, max_rounds, worked_example, draft_first and bool(schema_sql))},
        {"role": "user", "content": _question_block(question, evidence, schema_sql)},
    ]


_INTROS = {"full": _FULL_INTRO, "withheld": _WITHHELD_INTRO, "read": _READ_INTRO}


@lru_cache(maxsize=64)
def _system_prompt(intro: str, max_rounds: int, worked_example: bool = False, draft_first: bool = False) -> str:
    # The same text for every episode of a run; built once.
    tool_lines = "\n".join(f"- {t.signature()}: {t.description}" for t in TOOLS.values())
    text = _SYSTEM.format(
        schema_intro=_DRAFT_INTRO if draft_first else _INTROS[intro],
        tool_lines=tool_lines,
        max_rounds=max_rounds,
    )
    return text + _WORKED_EXAMPLE if worked_example else text


def prompt_version(
    *,
    worked_example: bool = False,
    example_values: int = 0,
    end_on_repeat: bool = False,
    submit_hint: bool = False,
    query_hints: bool = False,
    draft_first: bool = False,
    restate_question: bool = False,
    fresh_start: bool = False,
) -> str:
    """The version recorded with a result: :data:`PROMPT_VERSION`, plus a suffix for each
    prompt option in use, so that the seed's protocol keeps its own version unchanged.

    >>> prompt_version()
    'sqlscout-prompt-3'
    >>> prompt_version(worked_example=True, example_values=3, end_on_repeat=True, submit_hint=True)
    'sqlscout-prompt-3+example+values3+repeat+hint'
    >>> prompt_version(query_hints=True)
    'sqlscout-prompt-3+fix13'
    """
    suffix = ("+example" if worked_example else "") + (f"+values{example_values}" if example_values else "")
    suffix += ("+repeat" if end_on_repeat else "") + ("+hint" if submit_hint else "")
    suffix += ("+fix13" if query_hints else "") + ("+draft" if draft_first else "")
    suffix += ("+restate" if restate_question else "") + ("+fresh3" if fresh_start else "")
    return PROMPT_VERSION + suffix


def single_shot_messages(question: str, *, schema_sql: str, evidence: str | None = None) -> list[Message]:
    """The no-tools baseline: full schema, one answer."""
    return [
        {"role": "system", "content": _SINGLE_SHOT_SYSTEM},
        {"role": "user", "content": _question_block(question, evidence, schema_sql)},
    ]


def budget_line(turns_left: int) -> str:
    """The line that ends every tool-result message.

    >>> budget_line(3)
    '[3 tool turns left before you must answer]'
    """
    return f"[{turns_left} tool turns left before you must answer]"


def final_turn_message(reason: str, last_good_sql: str | None, repaired: str | None = None) -> str:
    """The forced final turn: no more tools, SQL only, quoting the last query that ran, or
    when none ran, the last repair a hint showed (``query_hints``)."""
    if last_good_sql:
        last_good = (
            "The last query that ran without error was:\n"
            f"```sql\n{last_good_sql.strip()}\n```\n"
            "If you are unsure, return that query."
        )
    elif repaired:
        last_good = (
            "No query has run without error yet. The corrected query from the last hint compiles:\n"
            f"```sql\n{repaired.strip()}\n```\n"
            "If you are unsure, return that query."
        )
    else:
        last_good = "No query has run without error yet."
    return _FINAL.format(reason=reason, last_good=last_good)


LIMIT_REASONS = {
    "rounds": "You have used all your tool turns; the exploration limit is reached.",
    "failures": "Too many queries failed in a row; the exploration limit is reached.",
    "budget": "The token budget is almost spent; the exploration limit is reached.",
    "repeat": "You repeated calls whose results you already have; the exploration is over.",
}

# With ``end_on_repeat``: the result of a reply that only repeated earlier calls.
REPEATED_CALLS = "Not run: you made these calls before; their results are in the messages above."

# With ``end_on_repeat`` and ``query_hints``: a reply repeating only calls that failed,
# with nothing tested yet, once; under ``constrain`` the next reply may only call these.
REPEATED_FAILURE = (
    "Not run: this failed before, with the error above. Before writing a query again, look at "
    "the tables it needs with describe_table or join_path."
)
# With ``fresh_start``: the trace's note on a loop with nothing tested, after which the
# transcript starts again at the prompt (the model never reads this).
FRESH_START = (
    "Not run: you made these calls before, and no query has run without error. The exploration "
    "starts again from the question, for the rounds left."
)
# With the schema withheld and two rounds left with nothing that ran: the trace's note on
# the fresh start that comes without a loop (the model never reads this).
FRESH_LATE = (
    "No query has run without error, with two tool turns left. The exploration starts again from the "
    "question, for the rounds left."
)
# With the schema withheld, what the new prompt shows (after FRESH_START, in the trace).
FRESH_SCHEMA = (
    "Its prompt shows as the schema the tables described before, those that join them and those one "
    "foreign key away:"
)
# ``query_hints``: after a hint whose corrected query compiles, that query's own result.
REPAIR_RAN = "The corrected query ran:"
# With ``submit_hint``: the line after the results of a reply whose hint's correction ran.
REPAIR_SUBMIT_HINT = (
    "If the corrected query answers the question exactly, submit it now with submit_sql; "
    "otherwise fix it and run it again."
)
# ``query_hints``: a failed query copied word for word, when its hint showed a repair.
REPAIR_RUN = "This query failed before; the corrected query from the hint ran in its place:"
# With ``rerun_submits``: the trace's note on a query that ran before, sent again.
RERUN_TAKEN = "Not run again: this query ran before without error; taken as the answer."
LOOKING_TOOLS = ("describe_table", "join_path", "foreign_keys", "distinct_values", "sample_rows")

# With ``end_on_repeat`` and ``submit_tested``: after a loop, the only move left.
SUBMIT_AFTER_REPEAT = "You are repeating calls: now submit one of the queries that ran, with submit_sql."

# With ``restate_question`` and the schema withheld: the question again, after the results.
RESTATED = "Question: "

# With ``submit_hint``: the line after the results of a reply whose run_query ran.
SUBMIT_HINT = (
    "If the query you ran answers the question exactly, submit that same query now with submit_sql "
    "(results show at most 5 rows: that is no reason to add a LIMIT); otherwise fix it and run it again."
)
