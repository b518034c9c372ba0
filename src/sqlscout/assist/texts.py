"""The text the help adds to what the model reads, and the notes it leaves in traces.

Versioned with the rules that use it: a profile's version covers this module's text
(:meth:`sqlscout.assist.profile.Profile.version`).
"""

from __future__ import annotations

# A worked episode on another database : the protocol shown once, end to
# end. Its queries run on no real database, so an echoed submit answers nothing right.
WORKED_EXAMPLE = """

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

# fresh_start, schema withheld: the exploration begun again with what the model had read.
READ_INTRO = (
    "The tables you described so far are given with the question, with the tables that join them or "
    "that they join to, and the names of the others; use the tools to look at other tables, check "
    "values and test queries."
)

# draft: the prompt the repair starts from when the first query, written as single-shot
# writes it, failed (or, with accept=rows, returned no rows).
DRAFT_FAILED = (
    "A first query, written from the schema alone, was run:\n```sql\n{sql}\n```\n{outcome}\n"
    "Find out why with the tools, fix the query and test it with run_query; submit it with "
    "submit_sql once it runs and answers the question."
)
DRAFT_NO_SQL = "A first reply held no SQL query; explore with the tools, then test and submit a query."
DRAFT_NOTE = "The draft did not answer; the exploration starts from a prompt that shows it and its result."
DRAFT_TAKEN = "The draft ran; taken as the answer."

# final: the forced final turn, when no query ran but a hint's corrected query compiles.
REPAIRED_FINAL = (
    "No query has run without error yet. The corrected query from the last hint compiles:\n"
    "```sql\n{sql}\n```\n"
    "If you are unsure, return that query."
)

# defer_mixed_submit: the answer to a submit_sql sent along with other calls.
DEFERRED_SUBMIT = (
    "Not submitted: this reply also made other calls. Read their results first, then call "
    "submit_sql again in a reply of its own."
)
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
