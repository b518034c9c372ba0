"""The ``repair_hints`` rule (once ``query_hints``): a failed run_query gets a repair hint
read from its own FROM clause (issue 11: most failed episodes of the 0.5B preset
resubmitted a query with a column under the wrong alias until the loop ended). Checked on
Chinook; the traces came from Spider's car_1. Also the ``draft`` rule, which runs
single-shot's query first and repairs it with the agent only where it fails."""

from __future__ import annotations

import json

import pytest

from assist_helpers import assisted, assisted_shot, profile
from conftest import CHINOOK, spider_db
from sqlscout.assist import get_profile
from sqlscout.assist.clause_repairs import AGGREGATE_HINT, WHERE_HINT
from sqlscout.assist.hints import query_hint
from sqlscout.assist.sqltext import query_sources
from sqlscout.assist.texts import REPAIR_RAN, REPAIR_RUN, REPAIR_SUBMIT_HINT, SUBMIT_HINT
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.prompts import PROMPT_VERSION
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.errors import QueryError
from sqlscout.models.presets import PRESETS

JOINED = "SELECT T1.Title FROM Artist AS T1 JOIN Album AS T2 ON T1.ArtistId = T2.ArtistId"


@pytest.fixture(scope="module")
def db() -> Database:
    with Database(CHINOOK) as database:
        yield database


def error_of(db: Database, sql: str) -> str:
    with pytest.raises(QueryError) as caught:
        db.execute(sql)
    return str(caught.value)


def compiles(db: Database):
    def check(sql: str) -> bool:
        try:
            db.compile(sql)
        except QueryError:
            return False
        return True

    return check


def hint(db: Database, sql: str) -> str | None:
    return query_hint(db.schema, sql, error_of(db, sql), compiles(db))


def repaired(text: str) -> str:
    return text.split("```sql\n", 1)[1].split("\n```", 1)[0]


def test_a_column_under_the_wrong_alias_points_to_the_alias_that_has_it(db: Database) -> None:
    text = hint(db, JOINED)
    assert text is not None and text.startswith("Hint: T1 is Artist (columns: ArtistId, Name)")
    assert "Title is a column of Album, which this query calls T2: write T2.Title" in text
    fixed = repaired(text)
    assert fixed == JOINED.replace("T1.Title", "T2.Title")
    assert db.execute(fixed).rows  # the repair runs


def test_a_misspelt_column_gets_the_closest_name_of_its_own_table(db: Database) -> None:
    text = hint(db, "SELECT a.Titel FROM Album a WHERE a.Titel LIKE 'A%'")
    assert text is not None and "did you mean a.Title?" in text
    assert repaired(text) == "SELECT a.Title FROM Album a WHERE a.Title LIKE 'A%'"


def test_a_column_of_a_table_the_query_does_not_read_comes_with_its_join(db: Database) -> None:
    text = hint(db, "SELECT Name FROM Track WHERE Title = 'Facelift'")
    assert text is not None and text.startswith(
        "Hint: Title is a column of Album, which this query does not read; join it on Track.AlbumId = Album.AlbumId."
    )
    fixed = repaired(text)  # the join made concrete
    assert fixed == "SELECT Name FROM Track JOIN Album ON Track.AlbumId = Album.AlbumId WHERE Album.Title = 'Facelift'"
    assert len(db.execute(fixed).rows) == 12
    # A name the joined table shares is qualified with the table that had it; the join
    # goes into the (sub)query that needs it, through every table of the path.
    shared = hint(db, "SELECT Title, Milliseconds FROM Track WHERE AlbumId = 1")
    assert shared is not None and repaired(shared) == (
        "SELECT Album.Title, Milliseconds FROM Track JOIN Album ON Track.AlbumId = Album.AlbumId WHERE Track.AlbumId = 1"
    )
    nested = hint(db, "SELECT Name FROM Genre WHERE GenreId IN (SELECT GenreId FROM Track WHERE Title LIKE 'Let%')")
    assert nested is not None and repaired(nested) == (
        "SELECT Name FROM Genre WHERE GenreId IN (SELECT GenreId FROM Track JOIN Album ON "
        "Track.AlbumId = Album.AlbumId WHERE Album.Title LIKE 'Let%')"
    )
    # A table named but not read is the one joined, through every table on the way.
    two_steps = hint(db, "SELECT Title FROM Album WHERE Genre.Name = 'Rock'")
    assert two_steps is not None and repaired(two_steps) == (
        "SELECT Title FROM Album JOIN Track ON Track.AlbumId = Album.AlbumId JOIN Genre ON Track.GenreId = Genre.GenreId "
        "WHERE Genre.Name = 'Rock'"
    )
    assert hint(db, "SELECT * FROM Track WHERE Title = 'Facelift'") is not None
    assert "```" not in (hint(db, "SELECT * FROM Track WHERE Title = 'Facelift'") or "")  # a join would widen *


def test_every_subquery_that_uses_the_column_gets_the_join_in_its_own_from(db: Database) -> None:
    # From a trace (Spider's car_1): "WHERE Horsepower = (SELECT MIN(Horsepower) FROM
    # car_names)" was joined in the outer query only, did not compile, and got no repair.
    text = hint(db, "SELECT Name FROM Track WHERE Title = (SELECT MIN(Title) FROM Track)")
    assert text is not None and repaired(text) == (
        "SELECT Name FROM Track JOIN Album ON Track.AlbumId = Album.AlbumId WHERE Album.Title = "
        "(SELECT MIN(Album.Title) FROM Track JOIN Album ON Track.AlbumId = Album.AlbumId)"
    )
    first = "SELECT Track.Name FROM Track JOIN Album USING (AlbumId) WHERE Album.Title = (SELECT MIN(Title) FROM Album)"
    assert db.execute(repaired(text)).rows == db.execute(first).rows != []
    # Each arm of a compound query is its own scope too.
    arms = hint(db, "SELECT Title FROM Track WHERE Composer = 'AC/DC' INTERSECT SELECT Title FROM Track WHERE Bytes > 1")
    assert arms is not None and repaired(arms).count("JOIN Album ON Track.AlbumId = Album.AlbumId") == 2
    assert db.execute(repaired(arms)).rows


def test_a_column_found_in_several_tables_is_joined_from_the_nearest(db: Database) -> None:
    # From a trace (Spider's world_1): "SELECT Name FROM countrylanguage" was sent to
    # city.Name, two joins off, for the country's Name one join away.
    text = hint(db, "SELECT Name FROM InvoiceLine WHERE UnitPrice > 1")
    assert text is not None and text.startswith("Hint: Name is a column of Track, which this query does not read")
    assert repaired(text) == "SELECT Track.Name FROM InvoiceLine JOIN Track ON InvoiceLine.TrackId = Track.TrackId WHERE InvoiceLine.UnitPrice > 1"


def test_an_unknown_table_named_like_a_real_one_is_repaired_to_it(db: Database) -> None:
    text = hint(db, "SELECT Title FROM albums WHERE albums.ArtistId = 1")
    assert text == (
        "Hint: there is no table albums; Album is the table with the closest name. Corrected, it compiles:\n"
        "```sql\nSELECT Title FROM Album WHERE Album.ArtistId = 1\n```"
    )
    assert hint(db, "SELECT 1 FROM zzzqqq") is None  # nothing close: the error's own listing stands
    with Database(spider_db("student_transcripts_tracking")) as spider:
        split = hint(spider, "SELECT student_id FROM student_ enrolment")  # a name split by a space
        assert split is not None and repaired(split) == "SELECT student_id FROM Student_Enrolment"
    with Database(spider_db("world_1")) as world:  # a look-alike of the query's own table's column
        close = hint(world, "SELECT Name FROM country WHERE IndependenceYear > 1950")
        assert close is not None and repaired(close) == "SELECT Name FROM country WHERE country.IndepYear > 1950"


def test_an_unknown_table_that_is_a_column_says_which_tables_have_it(db: Database) -> None:
    # From a trace (Spider's dog_kennels): "JOIN Abandoned_yn AS T2" for Dogs.abandoned_yn;
    # told only the real table names, the 0.5B wrote the same join again.
    text = hint(db, "SELECT t.Name FROM Track AS t JOIN composer AS c ON t.TrackId = c.TrackId")
    assert text == "Hint: there is no table composer; Composer is a column of Track, not a table."
    shared = hint(db, "SELECT Title FROM Album JOIN name ON Album.ArtistId = name.ArtistId")
    assert shared == "Hint: there is no table name; Name is a column of Artist, Genre, MediaType and 2 more, not a table."
    assert hint(db, "SELECT Title FROM Album JOIN Artists ON Album.ArtistId = Artists.ArtistId").startswith(
        "Hint: there is no table Artists; Artist is the table with the closest name"
    )  # a name close to a table's is still repaired to it


def test_a_select_list_never_hides_the_from_clause(db: Database) -> None:
    # From Spider traces: in "SELECT a, b FROM t" the comma's pattern took FROM for an
    # alias, so the query seemed to read nothing and the hint lost its join.
    assert set(query_sources(db.schema, "SELECT Name, Milliseconds FROM Track", 7)) == {"track"}
    assert set(query_sources(db.schema, "SELECT Name, Track.Milliseconds FROM Track", 7)) == {"track"}


def test_a_column_that_exists_elsewhere_beats_a_look_alike_here() -> None:
    # From a trace (Spider's student_transcripts_tracking): department_name was "repaired"
    # to department_id of the table read, where Departments has department_name itself.
    sql = "SELECT department_name, department_id FROM Degree_Programs GROUP BY department_id ORDER BY COUNT(*) DESC LIMIT 1"
    with Database(spider_db("student_transcripts_tracking")) as spider:
        text = hint(spider, sql)
        assert text is not None and "department_name is a column of Departments" in text
        fixed = repaired(text)
        assert fixed == (
            "SELECT Departments.department_name, Degree_Programs.department_id FROM Degree_Programs JOIN Departments "
            "ON Degree_Programs.department_id = Departments.department_id GROUP BY Degree_Programs.department_id "
            "ORDER BY COUNT(*) DESC LIMIT 1"
        )
        assert spider.execute(fixed).rows


def test_each_arm_of_a_compound_query_sees_only_its_own_tables(db: Database) -> None:
    # From a trace: "write T1.first_name" offered a table of another EXCEPT arm.
    text = hint(db, "SELECT T1.Name FROM Artist AS T1 UNION SELECT T2.Name FROM Album AS T2")
    assert text is not None and text.startswith("Hint: T2 is Album (columns: AlbumId, Title, ArtistId)")
    assert "T1" not in text and "```" not in text
    assert set(query_sources(db.schema, "SELECT a FROM Artist UNION SELECT b FROM Album", 32)) == {"album"}
    assert query_sources(db.schema, "SELECT a FROM (SELECT * FROM Artist UNION SELECT * FROM Album) AS x WHERE b", 75) == {}


def test_an_unknown_qualifier_lists_what_the_query_reads(db: Database) -> None:
    text = hint(db, "SELECT X.Title FROM Album AS a")
    assert text is not None and "this query has no table or alias X; it reads Album AS a" in text


def test_a_table_read_only_in_a_subquery_is_named_as_out_of_scope(db: Database) -> None:
    text = hint(db, "SELECT Name FROM Artist WHERE ArtistId IN (SELECT ArtistId FROM Album) AND Title = 'x'")
    assert text is not None and "Title is a column of Album, which is not in the FROM of the query that uses it" in text
    assert "```" not in text  # no substitution repairs a scope error


def test_a_misused_aggregate_gets_the_group_by_having_hint(db: Database) -> None:
    sql = "SELECT Title FROM Album WHERE COUNT(*) > 2 AND Title = 'x' OR 1 = 1"
    assert hint(db, sql) == AGGREGATE_HINT  # an OR that moving a condition to HAVING would change: no repair


def test_a_count_in_where_moves_to_having(db: Database) -> None:
    text = hint(db, "SELECT ArtistId FROM Album WHERE COUNT(*) > 2 AND AlbumId > 10 GROUP BY ArtistId")
    assert text is not None and text.startswith(AGGREGATE_HINT)
    assert repaired(text) == "SELECT ArtistId FROM Album WHERE AlbumId > 10 GROUP BY ArtistId HAVING COUNT(*) > 2"


def ask_hint(db: Database, sql: str, question: str) -> str | None:
    return query_hint(db.schema, sql, error_of(db, sql), compiles(db), question)


def test_a_count_of_the_rows_of_a_table_the_question_names_joins_it(db: Database) -> None:
    # "the most albums" from Artist alone: COUNT(*) has no Album rows to count until Album is joined.
    sql = "SELECT Name FROM Artist ORDER BY COUNT(*) DESC LIMIT 1"
    text = ask_hint(db, sql, "Which artist has the most albums?")
    assert text is not None
    fixed = repaired(text)
    assert fixed == (
        "SELECT Name FROM Artist JOIN Album ON Album.ArtistId = Artist.ArtistId "
        "GROUP BY Artist.ArtistId ORDER BY COUNT(*) DESC LIMIT 1"
    )
    gold = "SELECT T1.Name FROM Artist AS T1 JOIN Album AS T2 ON T1.ArtistId = T2.ArtistId GROUP BY T1.ArtistId ORDER BY COUNT(*) DESC LIMIT 1"
    assert db.execute(fixed).rows == db.execute(gold).rows


def test_a_join_without_group_by_groups_by_the_key_of_the_table_it_selects_from(db: Database) -> None:
    # HAVING with no GROUP BY: each artist (T1.ArtistId), not each artist name.
    sql = "SELECT T1.Name FROM Artist AS T1 JOIN Album AS T2 ON T1.ArtistId = T2.ArtistId HAVING COUNT(*) > 10"
    assert "non-aggregate" in error_of(db, sql)
    fixed = repaired(hint(db, sql) or "")
    assert fixed == sql.replace(" HAVING", " GROUP BY T1.ArtistId HAVING")
    assert sorted(r[0] for r in db.execute(fixed).rows) == ["Deep Purple", "Iron Maiden", "Led Zeppelin"]


def test_of_several_keys_to_the_counted_table_the_owners_is_joined() -> None:
    # Friend(student_id, friend_id): "the most friends" counts a student's own rows.
    with Database(spider_db("network_1")) as network:
        sql = "SELECT name FROM Highschooler WHERE grade > 5 AND COUNT(*) >= 2"
        fixed = repaired(ask_hint(network, sql, "Which high schoolers in a grade over 5 have 2 or more friends?") or "")
        assert "JOIN Friend ON Friend.student_id = Highschooler.ID WHERE grade > 5" in fixed
        assert fixed.endswith("GROUP BY Highschooler.ID HAVING COUNT(*) >= 2")
        gold = (
            "SELECT T2.name FROM Friend AS T1 JOIN Highschooler AS T2 ON T1.student_id = T2.id "
            "WHERE T2.grade > 5 GROUP BY T1.student_id HAVING count(*) >= 2"
        )
        assert sorted(network.execute(fixed).rows) == sorted(network.execute(gold).rows)


def test_a_count_the_question_puts_in_no_linked_table_is_never_guessed() -> None:
    with Database(spider_db("flight_2")) as flights:
        # flights.Airline has no foreign key to airlines: no key says how to count an airline's flights.
        sql = "SELECT Airline FROM airlines WHERE COUNT(*) < 200"
        assert ask_hint(flights, sql, "Which airlines have less than 200 flights?") == AGGREGATE_HINT
    with Database(spider_db("tvshow")) as tv:
        # No other table named: the selected column is the group.
        sql = "SELECT Country FROM TV_Channel ORDER BY COUNT(*) DESC LIMIT 1"
        fixed = repaired(ask_hint(tv, sql, "Which country has the most TV Channels?") or "")
        assert fixed == "SELECT Country FROM TV_Channel GROUP BY Country ORDER BY COUNT(*) DESC LIMIT 1"
        # ... but never a key, whose groups hold one row each.
        assert ask_hint(tv, "SELECT id FROM TV_Channel ORDER BY COUNT(*) DESC LIMIT 1", "Which channel is first?") == AGGREGATE_HINT


def test_a_where_written_before_the_joins_moves_after_them(db: Database) -> None:
    sql = "SELECT Title FROM Album WHERE Name = 'AC/DC' JOIN Artist ON Artist.ArtistId = Album.ArtistId"
    text = hint(db, sql)
    assert text is not None and text.startswith(WHERE_HINT)
    fixed = repaired(text)
    assert fixed == "SELECT Title FROM Album JOIN Artist ON Artist.ArtistId = Album.ArtistId WHERE Name = 'AC/DC'"
    assert [r[0] for r in db.execute(fixed).rows] == ["For Those About To Rock We Salute You", "Let There Be Rock"]
    # Written before the joins and again after them: kept once, beside the other conditions.
    twice = (
        "SELECT COUNT(AlbumId) FROM Album WHERE Name = 'AC/DC' JOIN Artist ON Artist.ArtistId = Album.ArtistId "
        "WHERE Name = 'AC/DC' AND Title LIKE '%Rock%' LIMIT 5"
    )
    assert repaired(hint(db, twice) or "").endswith(
        "ON Artist.ArtistId = Album.ArtistId WHERE Name = 'AC/DC' AND Title LIKE '%Rock%' LIMIT 5"
    )
    # "JOIN" inside a string is no join, and a repair that does not compile is not shown.
    assert hint(db, "SELECT Title FROM Album WHERE Title = 'JOIN' JOIN Artist ON x.y = Album.ArtistId") == WHERE_HINT


def test_an_ambiguous_column_is_qualified_with_the_table_its_join_equates(db: Database) -> None:
    sql = "SELECT Title, ArtistId FROM Album JOIN Artist ON Album.ArtistId = Artist.ArtistId WHERE Name = 'AC/DC'"
    text = hint(db, sql)
    assert text is not None and "ArtistId is a column of Album and Artist" in text and "the join makes them equal" in text
    assert repaired(text) == sql.replace("Title, ArtistId", "Title, Album.ArtistId")
    # Not equated by a join: the table the question names.
    sql = "SELECT Name FROM Track JOIN Genre ON Track.GenreId = Genre.GenreId WHERE Genre.Name = 'Jazz'"
    fixed = repaired(ask_hint(db, sql, "Which tracks are jazz?") or "")
    assert fixed.startswith("SELECT Track.Name FROM Track") and len(db.execute(fixed).rows) == 130
    # Unqualified in a join condition, which relates two tables: named, not rewritten.
    on = "SELECT Track.Name FROM Track JOIN Genre ON GenreId = Genre.GenreId"
    text = hint(db, on)
    assert text is not None and "GenreId is a column of Track and Genre" in text and "```" not in text
    # One table read twice: no qualifier tells the two apart, so no repair is offered.
    twice = "SELECT COUNT(*) FROM Album JOIN Album ON Album.AlbumId = Album.AlbumId"
    assert hint(db, twice) is None


def test_a_query_with_two_mistakes_gets_both_repairs_in_a_row(db: Database) -> None:
    # Ambiguous ArtistId, and a count with no GROUP BY: qualifying the column alone still
    # fails (misuse of aggregate), so version 8 showed no query; the 1.5B model then
    # repeated it and the episode ended with no answer (Spider dev 515).
    sql = "SELECT Name, ArtistId FROM Artist JOIN Album ON Artist.ArtistId = Album.ArtistId ORDER BY COUNT(*) DESC LIMIT 1"
    task = Task("q", "Which artist has the most albums? Give the name and id.", CHINOOK)
    ep = assisted(task, db, repair_hints=True)
    shown = ep.step(json.dumps({"tool": "run_query", "args": {"sql": sql}}))
    assert "ArtistId is a column of Artist and Album" in shown and AGGREGATE_HINT in shown
    fixed = repaired(shown)
    assert "Artist.ArtistId" in fixed and "GROUP BY Artist.ArtistId" in fixed
    assert db.execute(fixed).rows == [("Iron Maiden", 90)]


def test_a_query_that_groups_by_a_name_some_rows_share_is_shown_grouped_by_the_key() -> None:
    # Spider's Highschooler has 16 students and 14 names: GROUP BY name counts two
    # students as one (the 1.5B model's answer to Spider dev 886 and 884).
    question = "What is the name of the high schooler who has the greatest number of friends?"
    by_name = (
        "SELECT T1.name FROM Highschooler AS T1 JOIN Friend AS T2 ON T1.ID = T2.student_id "
        "GROUP BY T1.name ORDER BY count(*) DESC LIMIT 1"
    )
    gold = (
        "SELECT T2.name FROM Friend AS T1 JOIN Highschooler AS T2 ON T1.student_id = T2.id "
        "GROUP BY T1.student_id ORDER BY count(*) DESC LIMIT 1"
    )
    with Database(spider_db("network_1")) as network:
        ep = assisted(Task("886", question, network.path), network, repair_hints=True)
        shown = ep.step(json.dumps({"tool": "run_query", "args": {"sql": by_name}}))
        assert "Highschooler.name is not unique (16 rows, 14 distinct values)" in shown
        fixed = repaired(shown)
        assert "GROUP BY T1.ID" in fixed and network.execute(fixed).rows == network.execute(gold).rows
        assert network.execute(by_name).rows != network.execute(gold).rows
    # A kind most rows share is a category, grouped by on purpose; unique names need no note.
    category = (
        "SELECT T1.degree_summary_name FROM Degree_Programs AS T1 JOIN Student_Enrolment AS T2 "
        "ON T1.degree_program_id = T2.degree_program_id GROUP BY T1.degree_summary_name ORDER BY count(*) DESC LIMIT 1"
    )
    with Database(spider_db("student_transcripts_tracking")) as tracking:
        ep = assisted(Task("q", "Which kind of program has the most students?", tracking.path), tracking, repair_hints=True)
        assert "Note:" not in ep.step(json.dumps({"tool": "run_query", "args": {"sql": category}}))
    with Database(CHINOOK) as chinook:
        unique = "SELECT Name FROM Artist JOIN Album ON Artist.ArtistId = Album.ArtistId GROUP BY Name"
        ep = assisted(Task("q", "How many albums has each artist?", CHINOOK), chinook, repair_hints=True)
        assert "Note:" not in ep.step(json.dumps({"tool": "run_query", "args": {"sql": unique}}))


def test_string_literals_and_function_calls_are_never_rewritten(db: Database) -> None:
    sql = JOINED + " WHERE T1.Name <> 'T1.Title'"
    assert repaired(hint(db, sql) or "").endswith("WHERE T1.Name <> 'T1.Title'")
    assert query_sources(db.schema, "SELECT 1 FROM Album WHERE 1")["album"][1] == "Album"  # WHERE is no alias


def test_errors_without_a_hint_stay_as_they_are(db: Database) -> None:
    assert hint(db, "SELECT FROM Album") is None  # a syntax error
    assert hint(db, "SELECT nothing_like_this FROM Album") is None


def test_the_episode_adds_the_hint_only_when_asked(db: Database) -> None:
    task = Task("q", "List album titles with their artists.", CHINOOK, gold_sql=JOINED)
    step = json.dumps({"tool": "run_query", "args": {"sql": JOINED}})
    plain = Episode(task, db).step(step)
    assert "Hint:" not in plain
    ep = assisted(task, db, repair_hints=True)
    shown = ep.step(step)
    assert "write T2.Title" in shown and "Corrected, it compiles" in shown
    assert ep.prompt_version == profile(repair_hints=True).episode_version(PROMPT_VERSION) != PROMPT_VERSION
    # The record holds what the model saw: the hint, then the corrected query's result.
    assert ep.rounds[0].calls[0].output.split(REPAIR_RAN)[0].endswith("```\n")
    assert "repair_hints" not in get_profile(PRESETS["sqale-2b"].assist).rules  # the seed's protocol, as trained


def test_a_table_of_a_subquery_is_never_offered_to_the_outer_query(db: Database) -> None:
    # From a trace: "T1.Weight" where only a subquery read the table holding Weight.
    text = hint(db, "SELECT a.Name FROM Artist AS a WHERE a.Title IN (SELECT Title FROM Album)")
    assert text is not None and text.startswith("Hint: a is Artist (columns: ArtistId, Name)")
    assert "Title is a column of Album, which is not in the FROM of the query that uses it" in text
    assert "write" not in text and "```" not in text
    # Inside a subquery the outer query's tables are visible too; the nearest FROM comes first.
    inner = hint(db, "SELECT Name FROM Artist AS a WHERE ArtistId IN (SELECT x.ArtistId FROM Album AS b)")
    assert inner is not None and "no table or alias x; it reads Album AS b, Artist AS a" in inner
    assert repaired(inner) == "SELECT Name FROM Artist AS a WHERE ArtistId IN (SELECT b.ArtistId FROM Album AS b)"


def test_a_repeated_failed_query_is_sent_once_to_look_at_the_tables(db: Database) -> None:
    task = Task("q", "List album titles with their artists.", CHINOOK, gold_sql=JOINED)
    rules = {"repair_hints": True, "end_on_repeat": True, "constrain": True, "guided_start": True, "submit_tested": True}
    ep = assisted(task, db, **rules)
    failing = json.dumps({"tool": "run_query", "args": {"sql": "SELECT Nothing FROM Album"}})  # no repair
    ep.step(failing)
    redirected = ep.step(failing)  # copied word for word
    assert redirected.startswith("Not run: this failed before") and not ep.in_final_turn
    grammar = ep.request().constraint
    assert grammar is not None and set(grammar.tools or ()) == {"describe_table", "join_path", "foreign_keys", "distinct_values", "sample_rows"}
    ep.step(json.dumps({"tool": "describe_table", "args": {"table_name": "Album"}}))
    assert ep.request().constraint.tools is None  # free again  # type: ignore[union-attr]
    ep.step(failing)  # a second copy ends the exploration, as end_on_repeat does
    assert ep.in_final_turn
    # Without repair_hints, or once a query ran, the first copy ends it as before.
    plain = assisted(task, db, **{**rules, "repair_hints": False})
    plain.step(failing)
    plain.step(failing)
    assert plain.in_final_turn
    tested = assisted(task, db, **rules)
    tested.step(json.dumps({"tool": "run_query", "args": {"sql": "SELECT Title FROM Album"}}))
    tested.step(failing)
    tested.step(failing)
    assert tested.request().constraint.tools == ("submit_sql",)  # type: ignore[union-attr]


GENRES = "SELECT COUNT(*) FROM Genre"
# The rules the old draft_first option came with, and the draft rule.
DRAFT_RULES = {"constrain": {"reasoning_lines": 0}, "guided_start": True, "submit_tested": True, "draft": True}


def _draft_task() -> Task:
    return Task("q", "How many genres are there?", CHINOOK, gold_sql=GENRES)


@pytest.mark.parametrize("extra", [{}, {"example_values": {"count": 3}}], ids=["schema", "schema-with-values"])
def test_the_draft_is_the_single_shot_turn_exactly(db: Database, extra: dict) -> None:
    # With the schema shown, the first turn is single-shot's: its prompt and its grammar
    # (and so, in the runner, its query), whatever else the profile adds to the agent.
    from sqlscout.env.grammar import TurnKind
    from sqlscout.env.prompts import SchemaMode
    from sqlscout.env.single_shot import SingleShotEpisode

    task, config, rules = _draft_task(), EpisodeConfig(schema=SchemaMode.FULL), {**DRAFT_RULES, **extra}
    ep = assisted(task, db, config, **rules)
    shot = assisted_shot(task, db, config, **rules)
    first, single = ep.request(), shot.request()
    assert first.prompt == single.prompt and ep.messages == shot.messages
    if not extra:  # nothing else changes single-shot's prompt: the plain baseline's, exactly
        assert first.prompt == SingleShotEpisode(task, db, config).request().prompt
    assert first.constraint is not None and first.constraint.kind is TurnKind.FINAL_SQL  # a ```sql block
    assert first.constraint == single.constraint and not first.final
    assert ep.prompt_version == profile(**rules).episode_version(PROMPT_VERSION)


def test_a_draft_that_runs_is_the_answer(db: Database) -> None:
    from sqlscout.env.prompts import SchemaMode
    from sqlscout.env.trace import AnswerSource, StopReason

    task, config = _draft_task(), EpisodeConfig(schema=SchemaMode.FULL)
    ep = assisted(task, db, config, **DRAFT_RULES)
    assert ep.step(f"```sql\n{GENRES}\n```") is None
    result = ep.result()
    assert (result.final_sql, result.answer_source, result.stop_reason) == (GENRES, AnswerSource.DRAFT, StopReason.ANSWERED)
    [ran] = ep.rounds[0].calls  # the draft ran as a query, and its result is in the trace
    assert (ran.tool, ran.args, ran.ok) == ("run_query", {"sql": GENRES}, True) and "25" in ran.output
    assert ep.starts == 1 and len(result.rounds) == 1
    # accept=rows: a draft that runs and returns no rows is not the answer.
    empty = "SELECT Name FROM Genre WHERE Name = 'nothing'"
    rows = assisted(task, db, config, **{**DRAFT_RULES, "draft": {"accept": "rows"}})
    assert rows.step(f"```sql\n{empty}\n```") is not None and not rows.done and rows.starts == 2
    assert f"```sql\n{empty}\n```\nIt ran and returned no rows." in rows.messages[1]["content"]
    runs = assisted(task, db, config, **DRAFT_RULES)  # accept=runs, the default: it is the answer
    assert runs.step(f"```sql\n{empty}\n```") is None and runs.result().answer_source is AnswerSource.DRAFT


def test_a_draft_that_fails_begins_the_agent_from_a_prompt_that_shows_it(db: Database) -> None:
    from sqlscout.env.grammar import TurnKind
    from sqlscout.env.prompts import SchemaMode
    from sqlscout.env.trace import AnswerSource, StopReason

    task, config = _draft_task(), EpisodeConfig(schema=SchemaMode.FULL)
    agent = Episode(task, db, config)  # the agent's own prompt, the schema shown
    ep = assisted(task, db, config, **DRAFT_RULES)
    draft = "SELECT COUNT(*) FROM Genres"
    note = ep.step(f"```sql\n{draft}\n```")
    assert note is not None and not ep.done and not ep.in_final_turn and ep.starts == 2
    system, user = ep.messages
    assert system == agent.messages[0]  # the agent's system prompt, not single-shot's
    assert user["content"].startswith(agent.messages[1]["content"] + "\n\n")  # the question, then the draft
    assert f"```sql\n{draft}\n```\nError: SQL error: no such table: Genres" in user["content"]
    assert ep.transcript == ep.segments[0].text == ep.chat.render(ep.messages)  # begun again at that prompt
    [failed] = ep.rounds[0].calls
    assert (failed.tool, failed.ok, ep.rounds[0].observation) == ("run_query", False, note)  # kept in the trace
    # The agent goes on, guided as ever, for the rounds left, and submits a query that ran.
    first = ep.request().constraint
    assert first is not None and first.kind is TurnKind.CALLS and (first.tools, first.max_calls) == (("run_query",), 1)
    shown = ep.step(json.dumps({"tool": "run_query", "args": {"sql": GENRES}}))
    assert "25" in shown and "[4 tool turns left before you must answer]" in shown  # the draft's round counts
    assert ep.request().constraint.submittable == (GENRES,)  # type: ignore[union-attr]
    assert ep.step(json.dumps({"tool": "submit_sql", "args": {"sql": GENRES}})) is None
    result = ep.result()
    assert (result.final_sql, result.answer_source, result.stop_reason) == (GENRES, AnswerSource.SUBMIT_SQL, StopReason.SUBMITTED)
    assert len(result.rounds) == 3 and result.messages == ep.messages
    # A first reply with no query at all begins the agent too, saying so.
    silent = assisted(task, db, config, **DRAFT_RULES)
    assert silent.step("I would look at the tables first.") is not None and silent.starts == 2
    assert silent.messages[1]["content"].startswith(agent.messages[1]["content"] + "\n\nA first reply held no SQL query")


def test_with_the_schema_withheld_the_draft_rule_does_nothing(db: Database) -> None:
    from sqlscout.env.grammar import TurnKind

    task = _draft_task()
    without = {n: v for n, v in DRAFT_RULES.items() if n != "draft"}
    withheld = assisted(task, db, **DRAFT_RULES)
    assert withheld.messages == assisted(task, db, **without).messages  # the agent's prompt
    first = withheld.request().constraint
    assert first is not None and first.kind is TurnKind.CALLS and first.tools == ("list_tables",)
    assert first == assisted(task, db, **without).request().constraint
    shown = withheld.step(json.dumps({"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Genres"}}))
    assert shown.startswith("Result 1 of run_query") and withheld.starts == 1 and not withheld.done


def test_a_failed_query_copied_word_for_word_runs_its_repair_instead(db: Database) -> None:
    # From traces: both small models copied a failed query back even when its hint showed
    # the corrected query; the copy now runs the correction, and can be submitted.
    task = Task("q", "List album titles with their artists.", CHINOOK, gold_sql=JOINED)
    rules = {"repair_hints": True, "end_on_repeat": True, "constrain": True, "guided_start": True, "submit_tested": True}
    ep = assisted(task, db, **rules)
    failing = json.dumps({"tool": "run_query", "args": {"sql": JOINED}})
    fixed = JOINED.replace("T1.Title", "T2.Title")
    first = ep.step(failing)
    assert "Corrected, it compiles" in first
    again = ep.step(failing)
    assert again.startswith(REPAIR_RUN + f"\nResult 1 of run_query(sql={fixed!r})") and "For Those About To Rock" in again
    assert ep.rounds[1].calls[0].args == {"sql": fixed} and ep.rounds[1].calls[0].ok
    assert ep.request().constraint.submittable == (fixed,)  # type: ignore[union-attr]
    ep.step(json.dumps({"tool": "submit_sql", "args": {"sql": fixed}}))
    assert ep.result().final_sql == fixed
    # Beside other calls, only the copy is swapped and marked.
    mixed = assisted(task, db, **rules)
    mixed.step(failing)
    shown = mixed.step(failing + "\n" + json.dumps({"tool": "describe_table", "args": {"table_name": "Album"}}))
    assert shown.count(REPAIR_RUN) == 1 and shown.startswith(REPAIR_RUN)
    # Without repair_hints nothing is swapped.
    plain = assisted(task, db, **{**rules, "repair_hints": False})
    plain.step(failing)
    plain.step(failing)
    assert plain.in_final_turn


def test_the_final_turn_offers_the_last_repair_when_no_query_ran(db: Database) -> None:
    # From the 0.5B traces: four different failing queries in a row (each with a repair
    # shown) end the exploration, and the forced answer copied the last failing one. A
    # repair that runs is now run with its hint (a query that ran, quoted as such); one that
    # compiles and fails as it runs (malformed JSON here) is still what the final turn offers.
    task = Task("q", "List album titles with their artists.", CHINOOK, gold_sql=JOINED)
    config = EpisodeConfig(max_failed_queries=2)
    broken = JOINED.replace("SELECT T1.Title", "SELECT json_extract(T1.Title, '$')")
    ep = assisted(task, db, config, repair_hints=True)
    assert REPAIR_RAN not in ep.step(json.dumps({"tool": "run_query", "args": {"sql": broken}}))
    final = ep.step(json.dumps({"tool": "run_query", "args": {"sql": broken + " WHERE T1.Title <> ''"}}))
    assert ep.in_final_turn
    fixed = broken.replace("T1.Title", "T2.Title") + " WHERE T2.Title <> ''"
    assert final.endswith(f"The corrected query from the last hint compiles:\n```sql\n{fixed}\n```\nIf you are unsure, return that query.")
    # A query that ran is still what the final turn quotes; without repair_hints, nothing.
    plain = Episode(task, db, config)
    plain.step(json.dumps({"tool": "run_query", "args": {"sql": JOINED}}))
    assert "corrected" not in plain.step(json.dumps({"tool": "run_query", "args": {"sql": JOINED + " WHERE 1"}}))


def test_a_repair_that_runs_is_run_with_its_hint_and_can_be_submitted(db: Database) -> None:
    # From the 0.5B traces (100 Spider dev questions, hints version 12): a hint showed a
    # corrected query that compiles in 35 episodes; 29 copied it into the next reply, a round
    # spent on running it, and in 2 (dev 891, 926) it was still unrun when the exploration
    # ended with nothing that ran, so nothing could be submitted. It now runs at once.
    task = Task("q", "List album titles with their artists.", CHINOOK, gold_sql=JOINED)
    config = EpisodeConfig(max_failed_queries=2)
    rules = {"repair_hints": True, "constrain": True, "submit_tested": True, "submit_hint": True, "end_on_repeat": True}
    fixed = JOINED.replace("T1.Title", "T2.Title")
    ep = assisted(task, db, config, **rules)
    shown = ep.step(json.dumps({"tool": "run_query", "args": {"sql": JOINED}}))
    hint_text, _, result = shown.partition(f"\n{REPAIR_RAN}\n")
    assert hint_text.endswith(f"```sql\n{fixed}\n```") and "For Those About To Rock" in result
    assert REPAIR_SUBMIT_HINT in result and SUBMIT_HINT not in shown
    assert ep.last_good_sql == fixed and ep.failed_streak == 0
    assert ep.request().constraint.submittable == (fixed,)  # type: ignore[union-attr]
    # A second failing query does not end the exploration: the correction reset the streak.
    ep.step(json.dumps({"tool": "run_query", "args": {"sql": "SELECT Nme FROM Genre"}}))
    assert not ep.in_final_turn
    ep.step(json.dumps({"tool": "submit_sql", "args": {"sql": fixed}}))
    assert ep.result().final_sql == fixed and ep.result().stop_reason.value == "submitted"
    # One call, as the model made it: the correction's run is in its output, not a call of its own.
    assert [c.args["sql"] for c in ep.rounds[0].calls] == [JOINED]
    # Without repair_hints nothing runs in its place.
    plain = assisted(task, db, config, **{**rules, "repair_hints": False})
    assert REPAIR_RAN not in plain.step(json.dumps({"tool": "run_query", "args": {"sql": JOINED}}))
    assert plain.last_good_sql is None


def test_a_repair_never_compares_a_column_with_itself(db: Database) -> None:
    # From the demo's trace: "T2.ArtistId" in a join condition, repaired to the alias that
    # has the column, gave "ON T1.ArtistId = T1.ArtistId": it compiles, and joins nothing.
    sql = "SELECT T1.Name FROM Artist AS T1 JOIN Track AS T2 ON T1.ArtistId = T2.ArtistId GROUP BY T1.Name"
    text = query_hint(db.schema, sql, error_of(db, sql), compiles(db), "Which artist has the most tracks?")
    assert text is not None and text.startswith("Hint: T2 is Track") and "```" not in text
    assert "T1.ArtistId" not in text and "join it on Track.AlbumId = Album.AlbumId" in text
    # A comparison the query already made is not the repair's doing.
    kept = hint(db, "SELECT a.Titel FROM Album a WHERE a.AlbumId = a.AlbumId")
    assert kept is not None and repaired(kept) == "SELECT a.Title FROM Album a WHERE a.AlbumId = a.AlbumId"


@pytest.mark.parametrize(
    "sql, question, expected",
    [
        # From the demo's trace: the model joined PlaylistTrack for Track.
        (
            "SELECT Genre.Name FROM Genre JOIN PlaylistTrack ON Genre.GenreId = PlaylistTrack.GenreId GROUP BY Genre.Name",
            "Which genre has the most tracks?",
            "SELECT Genre.Name FROM Genre JOIN Track ON Genre.GenreId = Track.GenreId GROUP BY Genre.Name",
        ),
        (
            "SELECT T1.Name FROM Artist AS T1 JOIN Track AS T2 ON T1.ArtistId = T2.ArtistId GROUP BY T1.Name",
            "Which artist has the most albums?",
            "SELECT T1.Name FROM Artist AS T1 JOIN Album AS T2 ON T1.ArtistId = T2.ArtistId GROUP BY T1.Name",
        ),
        # every column read through the wrong table must be in the one read instead
        (
            "SELECT g.Name FROM Genre g JOIN PlaylistTrack p ON g.GenreId = p.GenreId WHERE p.PlaylistId = 1",
            "Which genres does playlist 1 hold?",
            None,
        ),
    ],
)
def test_a_joined_table_without_the_join_column_is_replaced_by_the_one_that_has_it(
    db: Database, sql: str, question: str, expected: str | None
) -> None:
    text = query_hint(db.schema, sql, error_of(db, sql), compiles(db), question)
    assert text is not None
    if expected is None:
        assert text.startswith("Hint: p is PlaylistTrack") and "in place of" not in text and "g.GenreId" not in text
    else:
        assert "in place of" in text and repaired(text) == expected
        db.execute(expected)


def test_a_loop_after_a_repair_that_ran_is_asked_to_submit_it(db: Database) -> None:
    # From traces (Spider's car_1, 0.5B preset): the first query failed and its hint showed
    # a repair; the next reply copied half of it, failed on the same column with no repair,
    # and was then sent again word for word. The exploration ended with nothing that ran,
    # so nothing could be submitted. The repair now runs with its hint (version 13; before,
    # the loop ran it in place of the repeat), so the loop is held to submitting it.
    task = Task("q", "Which tracks are on the album with the first title?", CHINOOK)
    rules = {"repair_hints": True, "end_on_repeat": True, "submit_hint": True, "constrain": True, "submit_tested": True}
    first = "SELECT Name FROM Track WHERE Title = (SELECT MIN(Title) FROM Track)"
    half = "SELECT Name FROM Track WHERE Title = (SELECT MIN(Title) FROM Track JOIN Album ON Track.AlbumId = Album.AlbumId)"
    ep = assisted(task, db, **rules)
    shown = ep.step(json.dumps({"tool": "run_query", "args": {"sql": first}}))
    repair = repaired(shown)
    assert f"\n{REPAIR_RAN}\n" in shown and ep.last_good_sql == repair
    looped = [{"tool": "list_tables", "args": {}}, {"tool": "run_query", "args": {"sql": half}}]
    again = "\n".join(json.dumps(c) for c in looped)
    assert "```" not in ep.step(again)  # the half copy fails with no repair of its own
    ep.step(again)
    assert not ep.in_final_turn and ep.request().constraint.tools == ("submit_sql",)  # type: ignore[union-attr]
    assert ep.request().constraint.submittable == (repair,)  # type: ignore[union-attr]
    ep.step(json.dumps({"tool": "submit_sql", "args": {"sql": repair}}))
    assert ep.result().stop_reason.value == "submitted"
    assert db.execute(repair).rows == db.execute(
        "SELECT Track.Name FROM Track JOIN Album USING (AlbumId) WHERE Album.Title = (SELECT MIN(Title) FROM Album)"
    ).rows != []
