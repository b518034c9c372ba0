"""The eight tools: output shapes (SPEC §3), name matching, bad calls, generated specs."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CHINOOK, spider_db
from sqlscout.env.sandbox import Database
from sqlscout.env.tools import TOOLS, call_tool, tool_specs

ODD_SQL = """
CREATE TABLE "my ""odd"" table" ("the id" INTEGER PRIMARY KEY, "Sale Amount" REAL);
INSERT INTO "my ""odd"" table" VALUES (1, 2.5), (2, 2.5), (3, NULL);
CREATE TABLE lonely (x INTEGER);
CREATE TABLE a (id INTEGER PRIMARY KEY);
CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a(id));
CREATE TABLE c (id INTEGER PRIMARY KEY, b_id INTEGER REFERENCES b(id), a_id INTEGER REFERENCES A);
CREATE TABLE d (id INTEGER PRIMARY KEY, c_id INTEGER REFERENCES c(id));
"""


@pytest.fixture(scope="module")
def chinook() -> Database:
    with Database(CHINOOK) as db:
        yield db


@pytest.fixture
def odd(make_db) -> Database:
    return Database(make_db(ODD_SQL))


def run(db: Database, tool: str, **args: object) -> str:
    return call_tool(db, tool, args).text


def test_list_tables(chinook: Database) -> None:
    assert run(chinook, "list_tables").split("\n") == [
        "Album", "Artist", "Customer", "Employee", "Genre", "Invoice",
        "InvoiceLine", "MediaType", "Playlist", "PlaylistTrack", "Track",
    ]


def test_describe_table_returns_the_create_statement_in_any_case(chinook: Database) -> None:
    text = run(chinook, "describe_table", table_name="album")
    assert text.startswith("CREATE TABLE [Album]\n(\n    [AlbumId] INTEGER  NOT NULL,")
    assert text == run(chinook, "describe_table", table_name="[ALBUM]")


def test_foreign_keys_both_directions(chinook: Database) -> None:
    assert run(chinook, "foreign_keys", table_name="track") == (
        "Track references:\n"
        "  Track.MediaTypeId -> MediaType.MediaTypeId\n"
        "  Track.GenreId -> Genre.GenreId\n"
        "  Track.AlbumId -> Album.AlbumId\n"
        "Track is referenced by:\n"
        "  InvoiceLine.TrackId -> Track.TrackId\n"
        "  PlaylistTrack.TrackId -> Track.TrackId"
    )


def test_join_path_is_the_shortest_chain(chinook: Database, odd: Database) -> None:
    assert run(chinook, "join_path", table_a="Artist", table_b="genre") == (
        "Shortest join path from Artist to Genre (3 joins):\n"
        "  Album.ArtistId = Artist.ArtistId\n"
        "  Track.AlbumId = Album.AlbumId\n"
        "  Track.GenreId = Genre.GenreId"
    )
    # d -> c -> a (2 joins) beats d -> c -> b -> a; a column's FK without a named column
    # resolves to the target's primary key.
    assert run(odd, "join_path", table_a="d", table_b="a") == (
        "Shortest join path from d to a (2 joins):\n  d.c_id = c.id\n  c.a_id = a.id"
    )
    assert run(odd, "join_path", table_a="lonely", table_b="a") == "No foreign-key path connects lonely and a."
    assert run(odd, "join_path", table_a="A", table_b="a") == "a and a are the same table."


def test_join_path_on_a_spider_database() -> None:
    with Database(spider_db("concert_singer")) as db:
        assert run(db, "join_path", table_a="stadium", table_b="singer") == (
            "Shortest join path from stadium to singer (3 joins):\n"
            "  concert.Stadium_ID = stadium.Stadium_ID\n"
            "  singer_in_concert.concert_ID = concert.concert_ID\n"
            "  singer_in_concert.Singer_ID = singer.Singer_ID"
        )


def test_sample_rows_default_and_cap(chinook: Database) -> None:
    assert run(chinook, "sample_rows", table_name="Genre") == (
        "GenreId | Name\n1 | Rock\n2 | Jazz\n3 | Metal\n4 | Alternative & Punk\n5 | Rock And Roll"
    )
    capped = run(chinook, "sample_rows", table_name="Track", limit=1000).split("\n")
    assert len(capped) == 1 + 20 + 1 and capped[-1] == "(limit is at most 20; used 20)"  # said, not silent
    assert run(chinook, "sample_rows", table_name="Track", limit=-3).split("\n")[2:] == ["(limit is at least 1; used 1)"]
    assert run(chinook, "sample_rows", table_name="Genre", limit="2") == "GenreId | Name\n1 | Rock\n2 | Jazz"


def test_distinct_values_most_frequent_first_with_counts(chinook: Database) -> None:
    assert run(chinook, "distinct_values", table_name="track", column_name="mediatypeid") == (
        "MediaTypeId | count\n1 | 3034\n2 | 237\n3 | 214\n5 | 11\n4 | 7"
    )
    assert run(chinook, "distinct_values", table_name="Track", column_name="Composer", limit=3) == (
        "Composer | count\nNULL | 977\nSteve Harris | 80\nU2 | 44\n... (showing first 3 rows; more rows exist)"
    )
    assert len(run(chinook, "distinct_values", table_name="Track", column_name="Name", limit=500).split("\n")) == 1 + 50 + 2


def test_run_query_shape(chinook: Database) -> None:
    assert run(chinook, "run_query", sql="SELECT Name FROM Artist ORDER BY Name") == (
        "Name\nA Cor Do Som\nAC/DC\nAaron Copland & London Symphony Orchestra\nAaron Goldberg\n"
        "Academy of St. Martin in the Fields & Sir Neville Marriner\n"
        "... (showing first 5 rows; more rows exist)"
    )
    assert run(chinook, "run_query", sql="SELECT GenreId, Name FROM Genre WHERE GenreId <= 5") == (
        "GenreId | Name\n1 | Rock\n2 | Jazz\n3 | Metal\n4 | Alternative & Punk\n5 | Rock And Roll"
    )
    assert run(chinook, "run_query", sql="SELECT Name FROM Genre WHERE 0") == "Name\n(no rows)"
    assert run(chinook, "run_query", sql="SELECT 1.0, 2, NULL, 'x'") == "1.0 | 2 | NULL | 'x'\n1.0 | 2 | NULL | x"


def test_submit_sql_accepts_any_read_even_a_wrong_one(chinook: Database) -> None:
    outcome = call_tool(chinook, "submit_sql", {"sql": "SELECT Nme FROM Artist"})
    assert outcome.ok and outcome.ends_episode and outcome.text == "Submitted."
    assert outcome.sql == "SELECT Nme FROM Artist"
    empty = call_tool(chinook, "submit_sql", {"sql": "  "})
    assert not empty.ok and not empty.ends_episode
    assert empty.text == "Error: submit_sql needs a non-empty SQL query."


def test_odd_names_are_matched_and_quoted_safely(odd: Database) -> None:
    assert run(odd, "list_tables").split("\n")[0] == 'my "odd" table'
    assert run(odd, "sample_rows", table_name='"MY "ODD" TABLE"') == (
        "the id | Sale Amount\n1 | 2.5\n2 | 2.5\n3 | NULL"
    )
    assert run(odd, "distinct_values", table_name='my "odd" table', column_name="sale amount") == (
        "Sale Amount | count\n2.5 | 2\nNULL | 1"
    )


def test_unknown_names_list_close_matches(chinook: Database, odd: Database) -> None:
    assert run(chinook, "describe_table", table_name="Albums") == "Error: Unknown table 'Albums'. Did you mean: Album?"
    assert run(chinook, "distinct_values", table_name="Track", column_name="Composr") == (
        "Error: Unknown column 'Composr' in table Track. Did you mean: Composer?"
    )
    # Nothing close: a short schema is listed instead.
    assert run(odd, "describe_table", table_name="zzz") == (
        "Error: Unknown table 'zzz'. Known tables: my \"odd\" table, lonely, a, b, c, d."
    )


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("describe_table", {}, 'Error: describe_table needs the argument \'table_name\'; call it as {"tool": "describe_table", "args": {"table_name": ...}}.'),
        ("sample_rows", {"table_name": "Genre", "limit": "many"}, "Error: sample_rows: 'limit' must be a whole number, got 'many'."),
        ("sample_rows", {"table_name": "Genre", "limit": True}, "Error: sample_rows: 'limit' must be a whole number."),
        ("run_query", {"sql": ["SELECT 1"]}, "Error: run_query: 'sql' must be a string, got ['SELECT 1']."),
        ("run_query", {"sql": None}, "Error: run_query: 'sql' must be a string, got None."),
        ("drop_table", {"table_name": "Genre"}, "Error: unknown tool 'drop_table'. Available tools: list_tables, describe_table, foreign_keys, join_path, sample_rows, distinct_values, run_query, submit_sql."),
    ],
)
def test_bad_calls_become_error_observations(chinook: Database, tool: str, args: dict, expected: str) -> None:
    outcome = call_tool(chinook, tool, args)
    assert not outcome.ok and not outcome.ends_episode
    assert outcome.text == expected


def test_argument_aliases_and_stray_arguments(chinook: Database) -> None:
    assert run(chinook, "describe_table", table="Genre") == run(chinook, "describe_table", table_name="Genre")
    assert run(chinook, "run_query", query="SELECT 7") == "7\n7"
    assert run(chinook, "join_path", from_table="Album", to_table="Artist").startswith("Shortest join path from Album to Artist")
    assert run(chinook, "list_tables", verbose=True).startswith("Album\n")


def test_specs_are_generated_from_the_definitions() -> None:
    specs = tool_specs()
    assert [s["function"]["name"] for s in specs] == [
        "list_tables", "describe_table", "foreign_keys", "join_path",
        "sample_rows", "distinct_values", "run_query", "submit_sql",
    ]
    for spec, tool in zip(specs, TOOLS.values()):
        function = spec["function"]
        signature = list(inspect.signature(tool.function).parameters.values())[1:]
        assert list(function["parameters"]["properties"]) == [p.name for p in signature]
        assert function["parameters"]["required"] == [p.name for p in signature if p.default is inspect.Parameter.empty]
        assert function["description"] and all(p["description"] for p in function["parameters"]["properties"].values())
    limit = specs[4]["function"]["parameters"]["properties"]["limit"]
    assert limit == {"type": "integer", "description": "how many rows (default 5, at most 20).", "default": 5}
    assert TOOLS["submit_sql"].ends_episode and not TOOLS["run_query"].ends_episode


def test_argument_values_that_do_not_convert(chinook: Database) -> None:
    assert run(chinook, "sample_rows", table_name="Genre", limit=float("inf")) == (
        "Error: sample_rows: 'limit' must be a whole number, got inf."
    )
    assert run(chinook, "sample_rows", table_name="Genre", limit=float("nan")).startswith("Error: sample_rows: 'limit'")
    assert run(chinook, "sample_rows", table_name="Genre", limit=10**400).count("\n") == 21
    # A lone surrogate (a JSON "\ud800" escape) cannot reach SQLite; the model reads why.
    assert run(chinook, "run_query", sql="SELECT '\ud800'") == (
        "Error: SQL error: the query holds characters that are not valid text; rewrite it."
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_ARG_NAMES = st.sampled_from(["table_name", "column_name", "table_a", "table_b", "limit", "sql", "table", "query", "n", "x"])


@settings(max_examples=150, deadline=None)
@given(
    tool=st.sampled_from([*TOOLS, "nope"]),
    args=st.dictionaries(_ARG_NAMES, st.one_of(_JSON, st.sampled_from(["Track", "genre", "Name", "SELECT 1", "\ud800"])), max_size=4),
)
def test_call_tool_never_raises(chinook: Database, tool: str, args: dict) -> None:
    outcome = call_tool(chinook, tool, args)
    assert isinstance(outcome.text, str) and outcome.text
    assert outcome.ok or outcome.text.startswith("Error: ")


def test_run_query_errors_name_the_close_table_or_column() -> None:
    with Database(spider_db("pets_1")) as db:
        assert run(db, "run_query", sql="SELECT fname FROM students") == (
            "Error: SQL error: no such table: students. Did you mean: Student?"
        )
        assert run(db, "run_query", sql="SELECT T1.agee FROM Student AS T1").endswith("Did you mean: Student.Age?")
        assert run(db, "run_query", sql="SELECT * FROM employees").endswith(
            "The tables are: Student, Has_Pet, Pets."
        )
        assert run(db, "run_query", sql="SELECT zzz FROM Student") == "Error: SQL error: no such column: zzz"


def test_a_column_several_tables_share_is_named_with_each_of_them() -> None:
    """concert_singer's stadium and singer both have Name: a join that reads it through the
    wrong alias was told only of stadium.Name, the first table holding it (issue 38, run 5)."""
    with Database(spider_db("concert_singer")) as db:
        wrong = "SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
        assert run(db, "run_query", sql=wrong).endswith("Did you mean: stadium.Name, singer.Name, singer.Song_Name?")
