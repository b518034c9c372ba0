"""The tolerant parser: model text → tool calls, model text → final SQL.

Data-driven: tests/data/parser_cases.jsonl holds model outputs with the calls and
errors ``parse_turn`` must find, and/or the SQL ``extract_final_sql`` must return.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlscout.env.parser import ToolCall, extract_final_sql, parse_turn, strip_reasoning

CASES = [json.loads(line) for line in (Path(__file__).parent / "data" / "parser_cases.jsonl").read_text().splitlines()]
TURN_CASES = [c for c in CASES if "calls" in c]
FINAL_CASES = [c for c in CASES if "final_sql" in c]


def test_the_data_file_covers_what_the_issue_lists() -> None:
    ids = {c["id"] for c in CASES}
    assert len(TURN_CASES) >= 30 and len(FINAL_CASES) >= 10
    for needed in ("json_fence", "trailing_prose", "arguments_key", "several_objects_lines",
                   "broken_json_unquoted_values", "unknown_tool_is_still_a_call", "cut_off_reply",
                   "think_block_hides_calls", "openai_function_object", "single_quoted_python_dict"):
        assert needed in ids
    assert len(ids) == len(CASES)


@pytest.mark.parametrize("case", TURN_CASES, ids=[c["id"] for c in TURN_CASES])
def test_parse_turn_cases(case: dict) -> None:
    parsed = parse_turn(case["text"])
    assert [[c.tool, c.args] for c in parsed.calls] == case["calls"]
    assert len(parsed.errors) == len(case["errors"]), parsed.errors
    for error, expected in zip(parsed.errors, case["errors"]):
        assert expected in error
        assert "\n" not in error and len(error) < 200  # one readable line for the model


@pytest.mark.parametrize("case", FINAL_CASES, ids=[c["id"] for c in FINAL_CASES])
def test_extract_final_sql_cases(case: dict) -> None:
    assert extract_final_sql(case["text"]) == case["final_sql"]


def test_call_identity_ignores_argument_order() -> None:
    a = ToolCall("join_path", {"table_a": "x", "table_b": "y"})
    b = ToolCall("join_path", {"table_b": "y", "table_a": "x"})
    assert a.key() == b.key() and a.key() != ToolCall("join_path", {"table_a": "y", "table_b": "x"}).key()
    assert str(a) == "join_path(table_a='x', table_b='y')"


def test_strip_reasoning() -> None:
    assert strip_reasoning("<think>a</think>b<think>c</think>d") == "d"
    assert strip_reasoning("x<think>never closed") == "x"
    assert strip_reasoning("no reasoning") == "no reasoning"


# -- never raises, stays fast -----------------------------------------------------

# Text built from the pieces that steer the parser, so hypothesis explores its branches.
_PIECES = st.sampled_from([
    "{", "}", "[", "]", '"', "'", ":", ",", "\\", "\n", " ", "```", "```sql\n", "<think>", "</think>",
    '{"tool": ', '"args": ', '"arguments": ', "'tool': ", '"name": ', '"function": ', "null", "true",
    '"run_query"', '"submit_sql"', '"sql": ', "SELECT ", "WITH ", "FROM t", ";", "\n\n", "> ", "1", "x",
])
MODEL_LIKE = st.lists(_PIECES, max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=400), MODEL_LIKE))
def test_parser_never_raises(text: str) -> None:
    parsed = parse_turn(text)
    assert all(isinstance(c.tool, str) and c.tool and isinstance(c.args, dict) for c in parsed.calls)
    assert all(isinstance(e, str) for e in parsed.errors)
    sql = extract_final_sql(text)
    assert sql is None or (sql == sql.strip() and sql and not sql.endswith(";"))


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        '{"tool":' * 20_000,
        '{"a": ' + "[" * 100_000,
        '{"tool": "x", "args": ' + '{"a": ' * 50_000,
        "```" * 30_000,
        "<think>" * 20_000 + "</think>" * 20_000,
        ('{"tool": "run_query", "args": {"sql": "SELECT 1"}}\n' * 2_000),
        "SELECT " * 30_000,
    ],
    ids=["braces", "call_prefixes", "deep_list", "deep_objects", "fences", "think_tags", "many_calls", "selects"],
)
def test_degenerate_replies_are_handled_fast(text: str) -> None:
    # Small models loop; a reply can be a whole turn budget of repetition.
    start = time.perf_counter()
    parse_turn(text)
    extract_final_sql(text)
    assert time.perf_counter() - start < 1.0


def test_a_cut_off_call_is_named_without_its_text() -> None:
    # From the 0.5B's Spider traces (dev 909, 333): the error quoted the cut-off call's
    # start, "...{"sql": "SELECT name FROM likes WHERE student_id I': it is cut off.",
    # and the model's next query was that quote, our closing words included, four rounds
    # in a row. A cut-off call is now named by its tool and length, with no text to copy.
    partial = '{"tool": "run_query", "args": {"sql": "SELECT name FROM likes WHERE student_id IN (SELECT'
    (error,) = parse_turn(partial).errors
    assert "run_query call" in error and "it is cut off" in error
    assert "SELECT" not in error and "likes" not in error and "'" not in error
    # A reply that ran on repeating one clause until the limit is told so.
    runaway = partial + " student_id FROM likes WHERE liked_id IN (SELECT" * 12
    (error,) = parse_turn(runaway).errors
    assert "repeating the same words" in error and "SELECT" not in error
    # A call that closed but is no JSON still quotes its start: the model needs to see it.
    (error,) = parse_turn('{"tool": "run_query", "args": {"sql": SELECT 1}}').errors
    assert "it is not valid JSON" in error and "SELECT 1" in error
