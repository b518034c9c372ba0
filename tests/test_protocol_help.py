"""Protocol help for untrained models (issue 11 items 1-2): the constraint each turn asks
for, a submit sent with other calls, the worked example, example values in the schema —
each a rule of help (``sqlscout.assist``) beside the protocol, off unless a profile names
it, and none of them for the seed model."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from assist_helpers import assisted, assisted_shot, profile
from conftest import CHINOOK
from sqlscout.assist import PROFILES, Profile, get_profile
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.chat import ChatML
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.grammar import ThinkMode, TurnKind
from sqlscout.env.prompts import PROMPT_VERSION, SchemaMode
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.trace import AnswerSource, EpisodeResult, StopReason
from sqlscout.errors import ConfigError
from sqlscout.models.presets import PRESETS
from sqlscout.runner import Runner, RunnerConfig, RunMode

COUNT = "SELECT COUNT(*) FROM Genre"
PROTOCOL_FIELDS = {
    "max_rounds", "max_failed_queries", "token_budget", "max_turn_tokens", "final_turn_reserve", "schema", "turn_time_limit_s",
}  # fmt: skip


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


@pytest.fixture(scope="module")
def db() -> Database:
    with Database(CHINOOK) as database:
        yield database


@pytest.fixture
def task() -> Task:
    return Task("q", "How many genres are there?", CHINOOK, gold_sql=COUNT)


def test_every_option_is_off_by_default_and_recorded(db: Database, task: Task) -> None:
    # The episode config is the protocol alone; help is a profile of rules, none by default.
    assert {f.name for f in fields(EpisodeConfig)} == PROTOCOL_FIELDS
    assert PROFILES["none"].rules == {} and PROFILES["none"].hooks() is None
    assert RunnerConfig().assist == PROFILES["none"]
    plain = Episode(task, db)
    assert plain.hooks.name == "plain" and plain.request().constraint is None
    helped = profile(defer_mixed_submit=True, example_values={"count": 2})
    assert helped.to_dict() == {"name": "test", "rules": {"example_values": {"count": 2}, "defer_mixed_submit": {}}}
    assert Profile.from_dict(json.loads(json.dumps(helped.to_dict()))) == helped
    ep = assisted(task, db, defer_mixed_submit=True, example_values={"count": 2})
    ep.step(call("submit_sql", sql=COUNT))
    data = ep.result().to_dict()
    assert data["prompt_version"] == helped.episode_version(PROMPT_VERSION) != PROMPT_VERSION  # recorded
    back = EpisodeResult.from_dict(json.loads(json.dumps(data)))
    assert back.config == ep.config and back.prompt_version == ep.prompt_version
    # A config stored while the help was part of it still loads, without the help.
    assert EpisodeConfig.from_dict({**data["config"], "defer_mixed_submit": True, "example_values": 2}) == ep.config
    with pytest.raises(ConfigError, match="example_values"):
        profile(example_values={"count": 11})


def test_the_seed_model_keeps_its_protocol_and_untrained_presets_are_constrained() -> None:
    seed = PRESETS["sqale-2b"]
    assert seed.episode == EpisodeConfig(max_rounds=6, token_budget=24_576)  # the protocol, as trained
    assert seed.assist == "none" and get_profile(seed.assist).rules == {}  # no help at all
    assert seed.episode.schema is SchemaMode.WITHHELD
    assert (PRESETS["qwen2.5-coder-0.5b"].assist, PRESETS["qwen2.5-coder-1.5b"].assist) == ("draft", "draft")
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        small = PRESETS[name]
        assert small.episode == EpisodeConfig(max_rounds=6, token_budget=12_288, max_turn_tokens=512, schema=SchemaMode.FULL)
        rules = get_profile(small.assist).rules
        assert {"constrain", "submit_tested", "end_on_repeat", "repair_hints"} <= set(rules) and "rerun_submits" not in rules
        assert rules["constrain"].reasoning_lines == 0
    # The named profiles (chosen on the tuning split, docs/evaluation.md): draft is single-shot's
    # query first and a lean repair agent; guided is the help of the last round; each with
    # the other's rules is there to be measured against.
    draft, guided = get_profile("draft").rules, get_profile("guided").rules
    assert set(draft) == {"constrain", "submit_tested", "end_on_repeat", "repair_hints", "draft"}
    assert {"guided_start", "fresh_start", "submit_hint", "query_after_survey", "restate_question"} <= set(guided)
    assert "draft" not in guided and "worked_example" not in draft
    assert set(get_profile("guided-example").rules) == set(guided) | {"worked_example"}
    assert set(get_profile("draft-guided").rules) == set(guided) | {"draft"}
    assert set(get_profile("constrained").rules) == {"constrain"}


# -- the constraint each turn asks for ----------------------------------------------------


def test_each_turn_asks_for_its_grammar_only_when_constrained(db: Database, task: Task) -> None:
    assert Episode(task, db).request().constraint is None
    ep = assisted(task, db, EpisodeConfig(max_rounds=1), constrain=True)
    first = ep.request().constraint
    assert first is not None and first.kind is TurnKind.CALLS and first.think is ThinkMode.OPTIONAL
    ep.step(call("list_tables"))
    final = ep.request()
    assert final.final and final.constraint is not None and final.constraint.kind is TurnKind.FINAL_SQL
    no_think = assisted(task, db, chat=ChatML(assistant_prefix="<think>\n\n</think>\n\n"), constrain=True)
    assert no_think.request().constraint.think is ThinkMode.NONE  # type: ignore[union-attr]
    shot = assisted_shot(task, db, constrain=True)
    assert shot.request().constraint.kind is TurnKind.FINAL_SQL  # type: ignore[union-attr]


def test_the_runner_hands_each_turn_its_grammar(task: Task) -> None:
    seen: list[tuple[int, str | None]] = []

    def script(turn: ScriptTurn) -> str:
        seen.append((turn.turn, turn.constraint.kind.value if turn.constraint else None))
        return [call("list_tables"), "```sql\n" + COUNT + "\n```"][turn.turn]

    config = RunnerConfig(episode=EpisodeConfig(max_rounds=1), assist=profile(constrain=True))
    with Runner(ScriptedBackend(script), config) as runner:
        [rollout] = list(runner.run([task]))
    assert seen == [(0, "calls"), (1, "final_sql")]
    assert rollout.result.final_sql == COUNT and rollout.result.answer_source is AnswerSource.FINAL_TURN
    seen.clear()
    with Runner(ScriptedBackend(script), RunnerConfig(episode=EpisodeConfig(max_rounds=1))) as runner:
        list(runner.run([task]))
    assert seen == [(0, None), (1, None)]


# -- a submit sent along with other calls -------------------------------------------------


def test_a_mixed_submit_waits_for_the_results_of_its_reply(db: Database, task: Task) -> None:
    mixed = call("run_query", sql=COUNT) + "\n" + call("submit_sql", sql="SELECT 1")
    plain = Episode(task, db)
    assert plain.step(mixed) is None and plain.result().final_sql == "SELECT 1"  # submitted blind

    ep = assisted(task, db, defer_mixed_submit=True)
    observation = ep.step(mixed)
    assert observation is not None
    assert "25" in observation  # the query ran: Chinook has 25 genres
    assert "Not submitted" in observation and "reply of its own" in observation
    [query, submit] = ep.rounds[0].calls
    assert query.ok and (submit.tool, submit.ok) == ("submit_sql", False)
    assert ep.step(call("submit_sql", sql=COUNT)) is None
    result = ep.result()
    assert (result.final_sql, result.stop_reason) == (COUNT, StopReason.SUBMITTED)


def test_a_lone_submit_or_a_repeated_one_is_not_deferred(db: Database, task: Task) -> None:
    ep = assisted(task, db, defer_mixed_submit=True)
    assert ep.step(call("submit_sql", sql=COUNT) + "\n" + call("submit_sql", sql=COUNT)) is None
    assert ep.result().stop_reason is StopReason.SUBMITTED


# -- the worked example and example values ------------------------------------------------


def test_the_worked_example_is_in_the_system_prompt_and_the_version(db: Database, task: Task) -> None:
    plain = Episode(task, db)
    ep = assisted(task, db, worked_example=True)
    system = ep.messages[0]["content"]
    assert "Example, on another database" in system and "Example, on another database" not in plain.messages[0]["content"]
    assert system.startswith(plain.messages[0]["content"])
    ep.step(call("submit_sql", sql=COUNT))
    example = profile(worked_example=True)
    assert ep.result().prompt_version == PROMPT_VERSION + "+assist:" + example.version()
    assert example.version().startswith("test@") and example.version() != profile(submit_hint=True).version()
    plain.step(call("submit_sql", sql=COUNT))
    assert plain.result().prompt_version == PROMPT_VERSION


def test_the_example_calls_are_valid_calls(db: Database, task: Task) -> None:
    from sqlscout.env.parser import parse_turn
    from sqlscout.env.tools import TOOLS

    system = assisted(task, db, worked_example=True).messages[0]["content"]
    example = system.split("Example, on another database", 1)[1]
    calls = parse_turn(example).calls
    assert [c.tool for c in calls] == [
        "list_tables", "describe_table", "describe_table", "distinct_values", "run_query", "submit_sql",
    ]  # fmt: skip
    for c in calls:
        TOOLS[c.tool].bind(c.args)


def test_example_values_reach_agent_and_single_shot_alike(db: Database, task: Task) -> None:
    config = EpisodeConfig(schema=SchemaMode.FULL)
    values = {"count": 3}
    agent = assisted(task, db, config, example_values=values)
    shot = assisted_shot(task, db, replace(config, schema=SchemaMode.WITHHELD), example_values=values)
    for episode in (agent, shot):
        user = episode.messages[1]["content"]
        assert "-- Example values:" in user
        assert "--   Name: 'Rock', 'Jazz', 'Metal'" in user  # Chinook's first three genres
        assert 'CREATE TABLE [Genre]' in user or 'CREATE TABLE "Genre"' in user or "CREATE TABLE Genre" in user
    agent.step(call("submit_sql", sql=COUNT))
    shot.step("```sql\n" + COUNT + "\n```")
    # The same rules with the same parameters: the same digest; single-shot names the rules acting.
    rules = profile(example_values=values)
    agent_version, shot_version = agent.result().prompt_version, shot.result().prompt_version
    assert agent_version == rules.episode_version(PROMPT_VERSION) == PROMPT_VERSION + "+assist:" + rules.version()
    assert shot_version == rules.episode_version(PROMPT_VERSION, single_shot=True)
    assert shot_version.startswith(PROMPT_VERSION + "+assist:example_values@")
    assert agent_version.rsplit("@", 1)[1] == shot_version.rsplit("@", 1)[1]
    assert profile(example_values={"count": 2}).version() != rules.version()
    withheld = assisted(task, db, example_values=values)
    assert "Example values" not in withheld.messages[1]["content"]
    assert withheld.messages == Episode(task, db).messages  # no schema shown, nothing changed


def test_example_values_skip_blobs_cut_long_text_and_survive_odd_names(make_db) -> None:  # type: ignore[no-untyped-def]
    path = make_db(
        'CREATE TABLE "odd table" ("a b" TEXT, data BLOB, n INT);'
        "INSERT INTO \"odd table\" VALUES ('" + "x" * 100 + "', x'00ff', NULL), ('it''s', x'01', 3);"
    )
    from sqlscout.env.schema_text import schema_text

    with Database(path) as odd:
        text = schema_text(odd, 2)
    assert "--   a b: '" + "x" * 37 + "...', \"it's\"" in text
    assert "data:" not in text and "--   n: 3" in text


def test_single_shot_runs_with_every_option(task: Task) -> None:
    every = profile(constrain=True, example_values={"count": 2}, worked_example=True, defer_mixed_submit=True)
    config = RunnerConfig(assist=every, mode=RunMode.SINGLE_SHOT)
    seen: list[ScriptTurn] = []

    def answer(turn: ScriptTurn) -> str:
        seen.append(turn)
        return "```sql\n" + COUNT + "\n```"

    with Runner(ScriptedBackend(answer), config) as runner:
        [rollout] = list(runner.run([task]))
    # Only the rules that act on a single-shot episode: the grammar and the values.
    assert rollout.result.final_sql == COUNT
    assert rollout.result.prompt_version == every.episode_version(PROMPT_VERSION, single_shot=True)
    assert rollout.result.prompt_version.startswith(PROMPT_VERSION + "+assist:example_values+constrain@")
    [turn] = seen
    assert turn.constraint is not None and turn.constraint.kind is TurnKind.FINAL_SQL
    assert "-- Example values:" in turn.prompt and "Example, on another database" not in turn.prompt


def test_a_reply_that_only_repeats_earlier_calls_forces_the_final_turn(db: Database, task: Task) -> None:
    ep = assisted(task, db, end_on_repeat=True)
    assert ep.prompt_version == profile(end_on_repeat=True).episode_version(PROMPT_VERSION)
    first = ep.step(call("list_tables") + "\n" + call("describe_table", table_name="Genre"))
    assert "Genre" in first and not ep.in_final_turn
    # a new call alongside an old one is not a loop
    ep.step(call("describe_table", table_name="Genre") + "\n" + call("run_query", sql=COUNT))
    assert not ep.in_final_turn
    again = ep.step(call("run_query", sql=COUNT) + "\n" + call("list_tables"))
    assert again.startswith("Not run: you made these calls before")
    assert "You repeated calls" in again and COUNT in again and ep.in_final_turn
    assert ep.rounds[-1].calls == []  # nothing ran again
    ep.step(f"```sql\n{COUNT}\n```")
    result = ep.result()
    assert result.stop_reason is StopReason.REPEATED_CALLS and result.final_sql == COUNT
    assert result.answer_source is AnswerSource.FINAL_TURN


def test_a_reply_cut_off_before_its_call_closed_is_no_repeat(db: Database, task: Task) -> None:
    # From the 0.5B's Spider traces: a call cut off by the turn's token limit parsed to no
    # call at all, which counted as "only repeats"; the model was told its query "failed
    # before, with the error above" (in round 1) or the exploration ended on it.
    config = EpisodeConfig(max_turn_tokens=64)
    rules = {"end_on_repeat": True, "repair_hints": True}
    for earlier in ([], [call("list_tables")]):
        ep = assisted(task, db, config, **rules)
        for reply in earlier:
            ep.step(reply)
        cut = ep.step('{"tool": "run_query", "args": {"sql": "SELECT Name FROM Genre WHERE GenreId IN (SELECT GenreId FROM')
        assert "it is cut off" in cut and not cut.startswith("Not run") and not ep.in_final_turn
        assert ep.rounds[-1].calls == []
    # The same cut-off reply sent again is a loop (the 0.5B sent it in every round left):
    # with repair_hints and nothing tested it is sent once to look, then the exploration ends.
    ep = assisted(task, db, config, **rules)
    cut_call = '{"tool": "run_query", "args": {"sql": "SELECT Name FROM Genre WHERE GenreId IN (SELECT GenreId FROM'
    ep.step(cut_call)
    assert ep.step(cut_call).startswith("Not run: this failed before") and not ep.in_final_turn
    ep.step(call("describe_table", table_name="Genre"))
    assert ep.step(cut_call).startswith("Not run: you made these calls before") and ep.in_final_turn


def test_a_loop_with_nothing_tested_starts_the_exploration_again_once(db: Database, task: Task) -> None:
    config = EpisodeConfig(schema=SchemaMode.FULL)
    rules = {"end_on_repeat": True, "fresh_start": True, "constrain": True, "guided_start": True}
    ep = assisted(task, db, config, **rules)
    assert ep.prompt_version == profile(**rules).episode_version(PROMPT_VERSION)
    prompt = ep.transcript
    ep.step(call("run_query", sql="SELECT Nothing FROM Genre"))
    ep.step(call("list_tables"))
    note = ep.step(call("list_tables"))  # a loop, and no query has run without error
    assert note.startswith("Not run: you made these calls before, and no query has run") and not ep.in_final_turn
    assert ep.transcript == prompt and ep.starts == 2  # what the model reads begins again
    assert ep.rounds[-1].observation == note and ep.rounds[-1].calls == []  # the trace keeps every round
    first = ep.request().constraint
    assert first is not None and (first.tools, first.max_calls) == (("run_query",), 1)  # the guided start again
    shown = ep.step(call("run_query", sql=COUNT))
    assert "25" in shown and "[2 tool turns left before you must answer]" in shown  # the rounds before count
    assert ep.step(call("submit_sql", sql=COUNT)) is None
    result = ep.result()
    assert result.stop_reason is StopReason.SUBMITTED and len(result.rounds) == 5
    assert result.generated_tokens == sum(r.completion_tokens for r in result.rounds)
    # Once only, and never once a query ran: those loops end the exploration as before.
    again = assisted(task, db, config, **rules)
    for reply in [call("list_tables"), call("list_tables"), call("list_tables"), call("list_tables")]:
        again.step(reply)
    assert again.in_final_turn and again.starts == 2
    tested = assisted(task, db, config, end_on_repeat=True, fresh_start=True)  # not constrained
    tested.step(call("run_query", sql=COUNT))
    tested.step(call("run_query", sql=COUNT))
    assert tested.in_final_turn and tested.starts == 1
    # It acts on loops: an exploration that never loops never begins again (schema shown).
    calm = assisted(task, db, config, **rules)
    for reply in [call("run_query", sql="SELECT Nothing FROM Genre"), call("list_tables"), call("describe_table", table_name="Genre"),
                  call("run_query", sql="SELECT nope FROM Genre"), call("sample_rows", table_name="Genre")]:  # fmt: skip
        calm.step(reply)
    assert calm.starts == 1 and len(calm.rounds) == 5


def test_with_the_schema_withheld_a_loop_starts_again_showing_the_tables_it_read(db: Database, task: Task) -> None:
    # The 0.5B preset, schema withheld (100 Spider questions, hints v13): the redirect to
    # look after a copied failed query never led to a query that ran (0 of 18), and the
    # fresh start after it came in round 4 or 5 of 6 and spent its rounds on list_tables.
    config = EpisodeConfig()
    rules = {"end_on_repeat": True, "fresh_start": True, "repair_hints": True, "constrain": True, "guided_start": True}
    ep = assisted(task, db, config, **rules)
    assert ep.prompt_version == profile(**rules).episode_version(PROMPT_VERSION)
    ep.step(call("list_tables"))
    ep.step(call("describe_table", table_name="playlist") + "\n" + call("describe_table", table_name="Track"))
    failed = call("run_query", sql="SELECT Nothing FROM Playlist JOIN Track ON Playlist.PlaylistId = Track.TrackId")
    assert "Error" in ep.step(failed)
    note = ep.step(failed)  # copied: no redirect to look; the exploration starts again at once
    assert note.startswith("Not run: you made these calls before, and no query has run") and ep.starts == 2
    # What it read, what joins it, and the tables one foreign key away (Track's Genre).
    assert note.rstrip().endswith("Album, Genre, InvoiceLine, MediaType, Playlist, PlaylistTrack, Track.")
    prompt = ep.transcript
    for shown in ("CREATE TABLE [Playlist]", "CREATE TABLE [PlaylistTrack]", "CREATE TABLE [Track]", "CREATE TABLE [Genre]"):
        assert shown in prompt
    assert "CREATE TABLE [Artist]" not in prompt and "Artist, Customer, Employee, Invoice" in prompt  # the rest by name
    assert "The tables you described so far are given with the question" in prompt
    first = ep.request().constraint
    assert first is not None and (first.tools, first.max_calls) == (("run_query",), 1)  # as with the schema shown
    assert first.tables is not None and "Genre" in first.tables
    shown = ep.step(call("run_query", sql="SELECT COUNT(*) FROM PlaylistTrack"))
    assert "[1 tool turns left before you must answer]" in shown  # the rounds before count
    assert ep.step(call("submit_sql", sql="SELECT COUNT(*) FROM PlaylistTrack")) is None
    assert ep.result().stop_reason is StopReason.SUBMITTED
    # Nothing described: the prompt alone, as before; the schema shown: the plain restart.
    bare = assisted(task, db, config, **rules)
    bare.step(call("run_query", sql="SELECT Nothing FROM Genre"))
    bare.step(call("run_query", sql="SELECT Nothing FROM Genre"))
    assert bare.starts == 2 and bare.transcript == assisted(task, db, config, **rules).transcript
    full = assisted(task, db, replace(config, schema=SchemaMode.FULL), **rules)
    for reply in [failed, failed]:
        full.step(reply)
    assert full.starts == 1 and full.rounds[-1].observation.startswith("Not run: this failed before")


def test_with_the_schema_withheld_two_rounds_left_and_nothing_run_start_again_showing_the_tables(
    db: Database, task: Task
) -> None:
    # The 0.5B preset, schema withheld (60 Spider dev questions drawn with seed 1): of the 8
    # episodes with no query that ran, 3 had described a table next to the one the question
    # needed, and in one of them the model never looped, so the fresh start never came.
    config = EpisodeConfig()
    rules = {"end_on_repeat": True, "fresh_start": True, "repair_hints": True, "constrain": True, "guided_start": True}
    ep = assisted(task, db, config, **rules)
    ep.step(call("list_tables"))
    ep.step(call("describe_table", table_name="Track"))
    assert "Error" in ep.step(call("run_query", sql="SELECT COUNT(*) FROM Track WHERE"))
    assert ep.starts == 1
    note = ep.step(call("run_query", sql="SELECT COUNT(*) FROM Track GROUP"))  # two rounds left, nothing ran
    assert ep.starts == 2 and "Error" in note and "with two tool turns left" in note
    assert note.rstrip().endswith("Album, Genre, InvoiceLine, MediaType, PlaylistTrack, Track.")
    prompt = ep.transcript
    assert prompt == ep.segments[0].text and "CREATE TABLE [Genre]" in prompt and "CREATE TABLE [Artist]" not in prompt
    first = ep.request().constraint
    assert first is not None and (first.tools, first.max_calls) == (("run_query",), 1)
    assert "[1 tool turns left before you must answer]" in ep.step(call("run_query", sql=COUNT))
    assert ep.step(call("submit_sql", sql=COUNT)) is None and ep.result().stop_reason is StopReason.SUBMITTED
    # Not when a query ran, nothing was described, or the schema is shown.
    for replies, settings in [
        ([call("list_tables"), call("describe_table", table_name="Track"), call("run_query", sql=COUNT)], config),
        ([call("list_tables"), call("sample_rows", table_name="Track"), call("run_query", sql="SELECT x FROM")], config),
        ([call("list_tables"), call("describe_table", table_name="Track"), call("run_query", sql="SELECT x FROM")],
         replace(config, schema=SchemaMode.FULL)),
    ]:
        other = assisted(task, db, settings, **rules)
        for reply in replies + [call("run_query", sql="SELECT y FROM")]:
            other.step(reply)
        assert other.starts == 1 and not other.in_final_turn


def test_repeats_run_as_before_without_the_option(db: Database, task: Task) -> None:
    ep = Episode(task, db, EpisodeConfig())
    for _ in range(3):
        assert "Genre" in ep.step(call("list_tables"))
    assert not ep.in_final_turn and len(ep.rounds) == 3


def test_the_submit_hint_follows_a_query_that_ran_and_only_then(db: Database, task: Task) -> None:
    ep = assisted(task, db, submit_hint=True)
    assert ep.prompt_version == profile(submit_hint=True).episode_version(PROMPT_VERSION) != PROMPT_VERSION
    assert "submit that same query" not in ep.step(call("list_tables"))
    assert "submit that same query" not in ep.step(call("run_query", sql="SELECT nope FROM Genre"))
    shown = ep.step(call("run_query", sql=COUNT))
    assert "If the query you ran answers the question exactly, submit that same query now with submit_sql" in shown
    assert shown.rstrip().endswith("tool turns left before you must answer]")
    assert "submit that same query" not in ep.step(call("describe_table", table_name="Genre"))
    assert "submit that same query" not in Episode(task, db).step(call("run_query", sql=COUNT))


def test_reasoning_lines_reach_the_grammar(db: Database, task: Task) -> None:
    ep = assisted(task, db, constrain={"reasoning_lines": 0})
    grammar = ep.request().constraint
    assert grammar is not None and grammar.reasoning_lines == 0
    assert "line" not in grammar.gbnf().split("\n")[0]  # the root starts with the calls
    with pytest.raises(ConfigError, match="reasoning_lines"):
        profile(constrain={"reasoning_lines": -1})


def test_a_guided_start_lists_then_describes_real_tables_when_the_schema_is_withheld(db: Database, task: Task) -> None:
    ep = assisted(task, db, constrain=True, guided_start=True)
    first = ep.request().constraint
    assert first is not None and (first.tools, first.max_calls, first.tables) == (("list_tables",), 1, None)
    assert "describe_table" not in first.gbnf() and "submit_sql" not in first.gbnf()
    ep.step(call("list_tables"))
    second = ep.request().constraint
    assert second is not None and second.tools == ("describe_table",) and second.max_calls == 4
    assert second.tables == tuple(db.schema.table_names) and '"\\"Genre\\""' in second.gbnf()
    ep.step(call("describe_table", table_name="Genre"))
    third = ep.request().constraint
    assert third is not None and third.tools is None and third.tables == second.tables and "submit_sql" in third.gbnf()


def test_a_guided_start_tests_a_query_first_when_the_schema_is_shown(db: Database, task: Task) -> None:
    ep = assisted(task, db, EpisodeConfig(schema=SchemaMode.FULL), constrain=True, guided_start=True)
    first = ep.request().constraint
    assert first is not None and (first.tools, first.max_calls) == (("run_query",), 1)
    ep.step(call("run_query", sql=COUNT))
    later = ep.request().constraint
    assert later is not None and later.tools is None and later.tables == tuple(db.schema.table_names)
    # Without the grammar there is nothing to guide: a profile naming it alone is refused.
    with pytest.raises(ConfigError, match="guided_start needs constrain"):
        profile(guided_start=True)


def test_submit_tested_lets_only_queries_that_ran_be_submitted(db: Database, task: Task) -> None:
    ep = assisted(task, db, constrain=True, submit_tested=True)
    first = ep.request().constraint
    assert first is not None and first.submittable == () and "submit_sql" not in first.gbnf()
    ep.step(call("run_query", sql="SELECT nope FROM Genre"))  # failed: not submittable
    ep.step(call("run_query", sql=COUNT) + "\n" + call("run_query", sql="SELECT Name FROM Genre WHERE Name = 'Café'"))
    later = ep.request().constraint
    assert later is not None and later.submittable == (COUNT, "SELECT Name FROM Genre WHERE Name = 'Café'")
    text = later.gbnf()
    assert json.dumps(json.dumps(COUNT)) in text and "Café" in text and "nope" not in text
    assert assisted(task, db, constrain=True).request().constraint.submittable is None  # type: ignore[union-attr]


def test_a_loop_held_to_tested_queries_must_submit_one_of_them(db: Database, task: Task) -> None:
    rules = {"constrain": True, "end_on_repeat": True, "submit_tested": True}
    ep = assisted(task, db, **rules)
    ep.step(call("run_query", sql=COUNT))
    shown = ep.step(call("run_query", sql=COUNT))
    assert "You are repeating calls: now submit one of the queries that ran" in shown and not ep.in_final_turn
    only = ep.request().constraint
    assert only is not None and (only.tools, only.max_calls, only.submittable) == (("submit_sql",), 1, (COUNT,))
    assert ep.step(call("submit_sql", sql=COUNT)) is None
    assert ep.result().stop_reason is StopReason.SUBMITTED and ep.result().final_sql == COUNT
    # nothing ran yet: a loop still ends in the final turn
    looping = assisted(task, db, **rules)
    looping.step(call("list_tables"))
    looping.step(call("list_tables"))
    assert looping.in_final_turn and looping.request().constraint.kind is TurnKind.FINAL_SQL  # type: ignore[union-attr]


def test_after_a_query_returned_rows_the_next_reply_may_only_run_or_submit(db: Database, task: Task) -> None:
    rules = {"constrain": True, "submit_tested": True, "focus_after_rows": True}
    ep = assisted(task, db, **rules)
    assert ep.request().constraint.tools is None  # type: ignore[union-attr]
    ep.step(call("run_query", sql=COUNT))  # ran, one row
    focused = ep.request().constraint
    assert focused is not None and focused.tools == ("run_query", "submit_sql") and focused.submittable == (COUNT,)
    assert "list_tables" not in focused.gbnf() and "describe_table" not in focused.gbnf()
    ep.step(call("run_query", sql="SELECT Name FROM Genre WHERE Name = 'nothing'"))  # ran, no rows: look again
    assert ep.request().constraint.tools is None  # type: ignore[union-attr]
    ep.step(call("run_query", sql=COUNT) + "\n" + call("run_query", sql="SELECT nope FROM Genre"))
    assert ep.request().constraint.tools == ("run_query", "submit_sql")  # type: ignore[union-attr]  # one query of the reply returned rows
    ep.step(call("run_query", sql="SELECT nope FROM Genre"))  # failed: every tool again
    assert ep.request().constraint.tools is None  # type: ignore[union-attr]
    unfocused = assisted(task, db, **{**rules, "focus_after_rows": False})
    unfocused.step(call("run_query", sql=COUNT))
    assert unfocused.request().constraint.tools is None  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="focus_after_rows needs constrain"):  # without the grammar: refused
        profile(focus_after_rows=True)
    # recorded with every result: the profile's rules and the version they make
    assert profile(**rules).to_dict()["rules"]["focus_after_rows"] == {}
    assert ep.prompt_version != unfocused.prompt_version


def test_a_tested_query_sent_to_run_query_again_is_taken_as_the_answer(db: Database, task: Task) -> None:
    ep = assisted(task, db, rerun_submits=True)
    ep.step(call("run_query", sql=COUNT))
    # the model looks around and runs the same query again: it chose it twice
    assert ep.step(call("list_tables") + "\n" + call("run_query", sql=COUNT)) is None
    result = ep.result()
    assert (result.final_sql, result.stop_reason, result.answer_source) == (COUNT, StopReason.RERUN, AnswerSource.RERUN)
    assert [c.tool for c in ep.rounds[-1].calls] == ["run_query"]  # list_tables did not run
    assert ep.rounds[-1].calls[0].output.startswith("Not run again")
    assert EpisodeResult.from_dict(json.loads(json.dumps(result.to_dict()))).stop_reason is StopReason.RERUN


@pytest.mark.parametrize(
    "first, second",
    [
        (call("run_query", sql="SELECT Nme FROM Genre"), call("run_query", sql="SELECT Nme FROM Genre")),
        (call("run_query", sql=COUNT), call("run_query", sql=COUNT + " ")),
        (call("run_query", sql=COUNT) + "\n" + call("run_query", sql=COUNT), call("list_tables")),
    ],
    ids=["failed-query", "not-verbatim", "same-reply"],
)
def test_only_a_verbatim_rerun_of_a_query_that_ran_in_an_earlier_reply_is_an_answer(
    db: Database, task: Task, first: str, second: str
) -> None:
    ep = assisted(replace(task, question="List the genre names."), db, rerun_submits=True, repair_hints=True)
    ep.step(first)
    assert ep.step(second) is not None and not ep.done


def test_a_rerun_with_a_limit_the_question_does_not_ask_for_is_taken_without_it(db: Database, task: Task) -> None:
    # Under repair_hints such a query runs without its LIMIT (hints version 10), so that is
    # the query that ran, and the one a verbatim rerun takes.
    ep = assisted(replace(task, question="List the genre names."), db, rerun_submits=True, repair_hints=True)
    ep.step(call("run_query", sql="SELECT Name FROM Genre LIMIT 5"))
    assert ep.step(call("run_query", sql="SELECT Name FROM Genre LIMIT 5")) is None
    assert ep.result().final_sql == "SELECT Name FROM Genre" and ep.result().stop_reason is StopReason.RERUN


def test_a_rerun_beside_a_submission_leaves_the_submission_its_own(db: Database, task: Task) -> None:
    ep = assisted(task, db, rerun_submits=True)
    ep.step(call("run_query", sql=COUNT))
    ep.step(call("run_query", sql=COUNT) + "\n" + call("submit_sql", sql=COUNT))
    assert ep.result().stop_reason is StopReason.SUBMITTED


def test_without_rerun_submits_a_tested_query_runs_again(db: Database, task: Task) -> None:
    ep = Episode(task, db, EpisodeConfig())
    ep.step(call("run_query", sql=COUNT))
    assert "Result 1 of run_query" in ep.step(call("run_query", sql=COUNT)) and not ep.done


def test_with_the_schema_withheld_the_reply_after_a_description_tests_a_query(db: Database, task: Task) -> None:
    rules = {"constrain": True, "guided_start": True, "query_after_survey": True}
    ep = assisted(task, db, **rules)
    assert ep.request().constraint.tools == ("list_tables",)  # type: ignore[union-attr]
    ep.step(call("list_tables"))
    assert ep.request().constraint.tools == ("describe_table",)  # type: ignore[union-attr]
    ep.step(call("describe_table", table_name="Genre") + "\n" + call("describe_table", table_name="Nope"))
    tests = ep.request().constraint
    assert (tests.tools, tests.max_calls) == (("run_query",), 1) and "join_path" not in tests.gbnf()  # type: ignore[union-attr]
    ep.step(call("run_query", sql="SELECT nope FROM Genre"))  # tried (and failed): every tool again
    assert ep.request().constraint.tools is None  # type: ignore[union-attr]
    # a description that failed surveys nothing; the schema shown, or the rule off, changes nothing
    failed = assisted(task, db, **rules)
    failed.step(call("list_tables"))
    failed.step(call("describe_table", table_name="Nope"))
    assert failed.request().constraint.tools is None  # type: ignore[union-attr]
    for config, other in (
        (EpisodeConfig(), {**rules, "query_after_survey": False}),
        (EpisodeConfig(schema=SchemaMode.FULL), {**rules, "guided_start": False}),
    ):
        other_ep = assisted(task, db, config, **other)
        other_ep.step(call("describe_table", table_name="Genre"))
        assert other_ep.request().constraint.tools is None  # type: ignore[union-attr]
    # recorded with every result: the profile's rules and the version they make
    assert profile(**rules).to_dict()["rules"]["query_after_survey"] == {}
    assert ep.prompt_version == profile(**rules).episode_version(PROMPT_VERSION)
    assert ep.prompt_version != profile(**{**rules, "query_after_survey": False}).episode_version(PROMPT_VERSION)


def test_with_the_schema_withheld_each_result_ends_with_the_question_again(db: Database, task: Task) -> None:
    config = EpisodeConfig(schema=SchemaMode.WITHHELD)
    ep = assisted(task, db, config, restate_question=True)
    ep.step(call("describe_table", table_name="Genre"))
    ep.step(call("run_query", sql=COUNT))
    for left, record in zip((config.max_rounds - 1, config.max_rounds - 2), ep.rounds):
        assert record.observation.endswith(f"Question: {task.question}\n\n[{left} tool turns left before you must answer]")
    assert ep.prompt_version == profile(restate_question=True).episode_version(PROMPT_VERSION)
    # Off, or with the schema shown (the question already follows it): as before.
    off = Episode(task, db, config)
    shown = assisted(task, db, replace(config, schema=SchemaMode.FULL), restate_question=True)
    for plain in (off, shown):
        plain.step(call("describe_table", table_name="Genre"))
        assert "Question:" not in plain.rounds[-1].observation
    assert off.prompt_version == PROMPT_VERSION
    # recorded with every result: the rule is the profile's, whether it acted or not
    assert shown.prompt_version == ep.prompt_version
