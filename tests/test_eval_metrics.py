"""Run metrics on hand-built traces: every expected number is worked out by hand."""

from __future__ import annotations

import pytest

from handmade_episodes import record, result, task
from sqlscout.env.trace import StopReason
from sqlscout.evaluation.metrics import compute_metrics, latest_records, majority_vote, pass_at_k, selected_answers
from sqlscout.evaluation.trace import episode_facts, gold_literals, opened_tables

GOLD = 'SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id WHERE T1.country = "France" AND T2.theme LIKE \'%Rock%\''


def test_accuracy_overall_and_by_group() -> None:
    records = [
        record(result(task("a", difficulty="easy", phrasing="casual")), "equivalent", index=0),
        record(result(task("b", difficulty="easy", phrasing="verbose")), "executable", index=1),
        record(result(task("c", difficulty="hard", phrasing="casual", condition="gold")), "equivalent", index=2, strict=False),
        record(result(task("d", difficulty="hard", condition="gold")), "invalid", index=3),
    ]
    m = compute_metrics(records)
    assert (m.n_episodes, m.n_questions, m.samples, m.scored) == (4, 4, 1, 4)
    assert m.accuracy.official == 0.5 and m.accuracy.strict == 0.25
    assert m.by_difficulty["easy"].official == 0.5 and m.by_difficulty["hard"].strict == 0.0
    assert m.by_phrasing == {
        "casual": pytest.approx(m.by_phrasing["casual"]),
        "verbose": pytest.approx(m.by_phrasing["verbose"]),
    }
    assert (m.by_phrasing["casual"].n, m.by_phrasing["casual"].official) == (2, 1.0)
    assert set(m.by_condition) == {"full", "gold"} and m.by_condition["gold"].official == 0.5
    assert m.outcomes == {"equivalent": 0.5, "executable": 0.25, "invalid": 0.25}
    assert m.executes_rate == 0.75


def test_episodes_without_gold_are_not_scored() -> None:
    m = compute_metrics([record(result(task("a", gold=None)), None), record(result(task("b")), "executable", index=1)])
    assert m.accuracy.n == 1 and m.accuracy.official == 0.0
    assert m.n_episodes == 2


def test_submit_rate_rounds_calls_and_distinct_calls() -> None:
    t = task("a")
    describe = ("describe_table", {"table_name": "singer"}, True, "CREATE TABLE singer (...)")
    same_describe_other_spelling = ("describe_table", {"table": "singer"}, True, "CREATE TABLE singer (...)")
    submitted = result(
        t,
        [[("list_tables", {}, True, "singer\nconcert"), describe], [same_describe_other_spelling, ("submit_sql", {"sql": "SELECT 1"}, True, "Submitted.")]],
    )
    forced = result(t, [[describe]] * 6, final_turn=True, stop=StopReason.ROUND_LIMIT)
    m = compute_metrics([record(submitted, sample=0), record(forced, sample=1)])
    assert m.submit_rate == 0.5
    # Model turns: 2 and 6 + the forced final one.
    assert m.rounds_mean == (2 + 7) / 2 and m.tool_rounds_mean == (2 + 6) / 2
    assert m.tool_calls_mean == (4 + 6) / 2
    assert m.calls_per_round == 10 / 8
    # {list_tables, describe singer, submit} and {describe singer}: the alias is the same call.
    assert m.distinct_calls_mean == (3 + 1) / 2
    assert m.rounds_hist == {2: 1, 7: 1} and m.calls_hist == {4: 1, 6: 1}
    assert m.stop_reasons == {"round_limit": 0.5, "submitted": 0.5}


def test_gold_table_coverage_counts_only_calls_that_opened_a_table() -> None:
    t = task("a", GOLD)
    both_described = result(task("x", GOLD), [[("describe_table", {"table_name": "Singer"}, True, "..."), ("sample_rows", {"table": "concert"}, True, "...")]])
    one_queried = result(
        task("y", GOLD), [[("describe_table", {"table_name": "singer"}, True, "..."), ("run_query", {"sql": "SELECT * FROM concert LIMIT 2"}, True, "...")]]
    )
    failed_query = result(
        t, [[("describe_table", {"table_name": "singer"}, True, "..."), ("run_query", {"sql": "SELECT nope FROM concert"}, False, "Error")]]
    )
    only_listed = result(task("z", GOLD), [[("list_tables", {}, True, "singer\nconcert"), ("join_path", {"table_a": "singer", "table_b": "concert"}, True, "...")]])
    no_tables_in_gold = result(task("b", "SELECT 1"), [])
    assert opened_tables(one_queried) == {"singer", "concert"}
    assert opened_tables(failed_query) == {"singer"}
    m = compute_metrics([record(e, index=i) for i, e in enumerate([both_described, one_queried, failed_query, only_listed, no_tables_in_gold])])
    assert m.gold_table_coverage == 2 / 4


def test_literal_recall_over_tool_outputs_before_the_answer() -> None:
    assert gold_literals(GOLD) == {"France", "Rock"}
    assert gold_literals("SELECT count(*) FROM singer WHERE name IN ('A', \"B\") AND age > 3") == {"A", "B"}
    assert gold_literals("SELECT a FROM t WHERE x = T2.y") == frozenset()
    t = task("a", GOLD)
    saw_one = result(t, [[("distinct_values", {"table_name": "singer", "column_name": "country"}, True, "country | count\nfrance | 3")]])
    # Values that appear only in submit_sql's arguments or output were never seen before answering.
    saw_none = result(task("x", GOLD), [[("run_query", {"sql": "x"}, False, "Error: no such column"), ("submit_sql", {"sql": "... 'Rock' 'France'"}, True, "Submitted. Rock France")]])
    saw_both = result(task("y", GOLD), [[("sample_rows", {"table_name": "concert"}, True, "theme\nHard Rock\n"), ("run_query", {"sql": "..."}, True, "France")]])
    no_literals = result(task("b", "SELECT name FROM singer"), [])
    facts = episode_facts(saw_one)
    assert facts.literals_seen == {"France"} and facts.literal_recall == 0.5
    m = compute_metrics([record(e, index=i) for i, e in enumerate([saw_one, saw_none, saw_both, no_literals])])
    assert m.literal_recall == pytest.approx((0.5 + 0 + 1) / 3)


def test_tokens_compute_and_wall_time() -> None:
    t1, t2 = task("a"), task("b")
    records = [
        record(result(t1, prompt_tokens=100, generated_tokens=50, total_tokens=300, wall_time_s=2.0), sample=0, session=1, finished_s=5.0),
        record(result(t1, prompt_tokens=100, generated_tokens=30, total_tokens=200, wall_time_s=4.0), sample=1, session=1, finished_s=9.0),
        record(result(t2, prompt_tokens=80, generated_tokens=10, total_tokens=100, wall_time_s=3.0), index=1, session=2, finished_s=3.0),
        record(result(t2, prompt_tokens=80, generated_tokens=10, total_tokens=100, wall_time_s=3.0), index=1, sample=1, session=2, finished_s=2.0),
    ]
    m = compute_metrics(records, parameters=1000)
    assert m.prompt_tokens_mean == 90 and m.generated_tokens_mean == 25 and m.total_tokens_mean == 175
    # Per question: 2 × 1000 × (300 + 200) and 2 × 1000 × (100 + 100).
    assert m.compute_per_question == (1_000_000 + 400_000) / 2
    assert m.episode_wall_s_mean == 3.0
    assert m.run_wall_s == 9.0 + 3.0 and m.wall_s_per_question == 6.0
    assert compute_metrics(records).compute_per_question is None


def test_pass_at_k_matches_the_unbiased_estimator() -> None:
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_k(5, 4, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_majority_vote_goes_to_the_most_common_result_first_reached_on_ties() -> None:
    t = task("a")
    wrong_a = record(result(t), "executable", sample=0, fingerprint="A")
    right_b = record(result(t), "equivalent", sample=1, fingerprint="B")
    right_b2 = record(result(t), "equivalent", sample=2, fingerprint="B")
    invalid = record(result(t), "invalid", sample=3, fingerprint=None)
    assert majority_vote([wrong_a, right_b, right_b2, invalid]) is right_b
    assert majority_vote([right_b, wrong_a]) is wrong_a  # a tie: the lower sample's result wins
    assert majority_vote([invalid]) is invalid  # a query that failed is still an answer, ranked below any that ran
    assert majority_vote([record(result(t, final_sql=None), None, fingerprint=None)]) is None


def test_majority_vote_breaks_ties_as_execution_guided_selection_does() -> None:
    t = task("a")
    failed_twice = [record(result(t, final_sql="SELECT x FROM t"), "invalid", sample=s, fingerprint=None) for s in (0, 1)]
    ran_long = record(result(t, final_sql="SELECT a, b FROM t"), "executable", sample=2, fingerprint="A")
    ran_short = record(result(t, final_sql="SELECT a FROM t"), "equivalent", sample=3, fingerprint="A")
    other = record(result(t, final_sql="SELECT b FROM t"), "executable", sample=4, fingerprint="B")
    other2 = record(result(t, final_sql="SELECT  b  FROM t  "), "executable", sample=5, fingerprint="B")
    # Two groups of two that ran and one of two that failed: a group that ran wins, and
    # of those the one holding the shortest query; the group answers with that query.
    assert majority_vote([*failed_twice, ran_long, ran_short, other, other2]) is ran_short
    assert majority_vote([*failed_twice, ran_long]) is failed_twice[0]  # the largest group wins first


def test_selected_answers_are_the_vote_winners_in_question_order() -> None:
    a, b, c = task("a"), task("b"), task("c")
    records = [
        record(result(b, final_sql="SELECT 2"), "equivalent", index=1, sample=0, fingerprint="B"),
        record(result(a, final_sql="SELECT a FROM t"), "executable", sample=0, fingerprint="X"),
        record(result(a, final_sql="SELECT  a  FROM t WHERE 1"), "equivalent", sample=1, fingerprint="Y"),
        record(result(a, final_sql="SELECT a FROM t WHERE 1"), "equivalent", sample=2, fingerprint="Y"),
        record(result(b, final_sql="SELECT 3"), "executable", index=1, sample=1, fingerprint="C"),
        record(result(c, final_sql=None), None, index=2, sample=0, fingerprint=None),
        record(result(c, final_sql=None), None, index=2, sample=1, fingerprint=None),
    ]
    answers = selected_answers(records)
    assert [x["question_id"] for x in answers] == ["a", "b", "c"]
    assert (answers[0]["sql"], answers[0]["votes"], answers[0]["samples"]) == ("SELECT a FROM t WHERE 1", 2, 3)
    assert answers[1]["sql"] == "SELECT 2" and answers[1]["votes"] == 1  # a tie: the earlier sample
    assert answers[2]["sql"] is None and answers[2]["votes"] == 0
    for answer, question in zip(answers, ([r for r in records if r.index == i] for i in range(3))):
        winner = majority_vote(question)
        assert answer["sql"] == (winner.result.final_sql if winner else None)


def test_sampling_metrics() -> None:
    q1 = [record(result(task("a")), o, sample=s, fingerprint=f) for s, (o, f) in enumerate([("executable", "A"), ("executable", "A"), ("equivalent", "B"), ("invalid", None)])]
    q2 = [record(result(task("b")), "equivalent", index=1, sample=s, fingerprint="C") for s in range(4)]
    m = compute_metrics(q1 + q2)
    assert m.samples == 4
    assert m.accuracy.official == 5 / 8
    assert m.pass_at[1] == pytest.approx((1 / 4 + 1) / 2)
    assert m.pass_at[2] == pytest.approx((pass_at_k(4, 1, 2) + 1) / 2)
    assert m.pass_at[4] == 1.0
    # q1's majority is the wrong result A (two votes), q2's is right.
    assert m.majority_official == 0.5
    assert compute_metrics(q2[:1]).pass_at == {}


def test_a_later_record_of_the_same_episode_supersedes_the_earlier() -> None:
    t = task("a")
    broken = record(result(t, stop=StopReason.ROUND_LIMIT), "invalid", session=1)
    retried = record(result(t), "equivalent", session=2)
    assert latest_records([broken, retried]) == [retried]
    assert compute_metrics([broken, retried]).accuracy.official == 1.0
