"""``sqlscout tool`` and ``sqlscout play``: what a person sees is what a model sees."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import CHINOOK, REPO
from sqlscout.cli.main import app
from sqlscout.env.sandbox import Database
from sqlscout.env.tools import call_tool

runner = CliRunner()


def invoke(*args: str, input: str | None = None):  # noqa: A002
    return runner.invoke(app, [str(a) for a in args], input=input)


# -- sqlscout tool ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("list_tables", {}),
        ("describe_table", {"table_name": "album"}),
        ("join_path", {"table_a": "Artist", "table_b": "Genre"}),
        ("distinct_values", {"table_name": "Track", "column_name": "MediaTypeId", "limit": "3"}),
        ("run_query", {"sql": "SELECT Name FROM Artist ORDER BY Name"}),
    ],
)
def test_tool_prints_exactly_the_observation(tool: str, args: dict) -> None:
    result = invoke("tool", CHINOOK, tool, *[f"--arg={k}={v}" for k, v in args.items()])
    assert result.exit_code == 0, result.output
    assert result.stdout == call_tool(Database(CHINOOK), tool, args).text + "\n"


def test_tool_arg_value_may_hold_equals_signs() -> None:
    result = invoke("tool", CHINOOK, "run_query", "-a", "sql=SELECT COUNT(*) FROM Genre WHERE GenreId = 1")
    assert result.exit_code == 0 and result.stdout == "COUNT(*)\n1\n"


def test_tool_error_observation_exits_1() -> None:
    result = invoke("tool", CHINOOK, "describe_table", "--arg", "table_name=Albums")
    assert result.exit_code == 1
    assert result.stdout == "Error: Unknown table 'Albums'. Did you mean: Album?\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "error: unknown tool 'nope'; choose one of: list_tables, describe_table, foreign_keys, join_path, "
                   "sample_rows, distinct_values, run_query, submit_sql"),
        (["list_tables", "--arg", "oops"], "error: --arg takes name=value, got 'oops' (e.g. --arg table_name=singer)"),
        (["list_tables", "--arg", "=x"], "error: --arg takes name=value, got '=x' (e.g. --arg table_name=singer)"),
    ],
)
def test_tool_bad_input_is_a_one_line_error(args: list[str], message: str) -> None:
    result = invoke("tool", CHINOOK, *args)
    assert result.exit_code == 2
    assert result.stderr == message + "\n"
    assert result.stdout == ""


def test_tool_on_a_missing_database_is_a_one_line_error(tmp_path: Path) -> None:
    result = invoke("tool", tmp_path / "missing.sqlite", "list_tables")
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path / 'missing.sqlite'}: no such file; pass the path of a SQLite database.\n"


# -- sqlscout play, piped ----------------------------------------------------------


def test_play_with_piped_turns_scores_the_answer() -> None:
    turns = '{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}\n\n' \
            '{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}\n\n'
    result = invoke("play", CHINOOK, "How many genres?", "--schema", "full", "--evidence", "a genre is a style",
                    "--gold", "SELECT count(GenreId) FROM Genre", input=turns)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "CREATE TABLE [Genre]" in out  # the full schema is shown, as the model sees it
    assert "Evidence (external knowledge that helps answer): a genre is a style" in out
    assert "Result 1 of run_query(sql='SELECT COUNT(*) FROM Genre'):\nCOUNT(*)\n25\n\n[5 tool turns left before you must answer]" in out
    assert "stop reason: submitted   answer from: submit_sql" in out
    assert "outcome: equivalent   official: True   strict: True   spider: True   reward: 3.000" in out


def test_play_under_a_profile_of_help_shows_what_a_model_under_it_sees() -> None:
    # --assist draft-guided: the first turn is single-shot's; a draft that fails begins the
    # agent again from its own prompt, which shows the draft and its error; play shows it anew.
    turns = "```sql\nSELECT COUNT(*) FROM Genres\n```\n\n" \
            '{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}\n\n' \
            '{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}\n\n'
    result = invoke("play", CHINOOK, "How many genres?", "--schema", "full", "--assist", "draft-guided",
                    "--gold", "SELECT count(GenreId) FROM Genre", input=turns)
    assert result.exit_code == 0, result.output
    out = result.stdout
    single, agent = out.split("The draft did not answer", 1)
    assert "Reply with the query in a ```sql code block" in single and "These eight tools" not in single
    assert "These eight tools" in agent and "A first query, written from the schema alone, was run:" in agent
    assert "Error: SQL error: no such table: Genres" in agent
    assert "Result 1 of run_query(sql='SELECT COUNT(*) FROM Genre'):\nCOUNT(*)\n25" in agent
    assert "If the query you ran answers the question exactly, submit that same query now" in agent  # submit_hint
    assert "stop reason: submitted   answer from: submit_sql" in out
    assert "outcome: equivalent   official: True   strict: True   spider: True   reward: 3.000" in out
    # A draft that runs is the answer; and an unknown profile is a one-line error.
    ran = invoke("play", CHINOOK, "How many genres?", "--schema", "full", "--assist", "draft",
                 input="```sql\nSELECT COUNT(*) FROM Genre\n```\n\n")
    assert ran.exit_code == 0 and "stop reason: answered   answer from: draft" in ran.stdout, ran.output
    unknown = invoke("play", CHINOOK, "How many genres?", "--assist", "nope", input="")
    assert unknown.exit_code == 2 and unknown.stderr.startswith("error: unknown assist profile 'nope'")


def test_play_input_ending_early_is_an_error() -> None:
    result = invoke("play", CHINOOK, "How many genres?", input='{"tool": "list_tables", "args": {}}\n\n')
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: input ended before the episode did"


# -- sqlscout play, typed at a real terminal (tmux) ---------------------------------


def _command() -> list[str]:
    script = Path(sys.executable).parent / "sqlscout"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from sqlscout.cli.main import app; app()"]


class Tmux:
    """A private tmux server (its own socket) holding one session."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.socket = f"sqlscout-test-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        shell = f"env {exports} {shlex.join(command)}; echo EXIT=$?; sleep 30"
        self.tmux("new-session", "-d", "-s", "play", "-x", "200", "-y", "60", shell)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True, timeout=10).stdout

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", "play", "-l", line)  # literally, no key-name lookup
        self.tmux("send-keys", "-t", "play", "Enter")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "play")

    def wait_for(self, text: str, count: int = 1, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} (x{count}) never appeared; the screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_play_under_tmux_through_to_the_score() -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]), "TERM": "xterm-256color"}
    gold = "SELECT COUNT(*) FROM Album"
    session = Tmux([*_command(), "play", str(CHINOOK), "How many albums are there?", "--gold", gold, "--max-rounds", "2"], env)
    try:
        session.wait_for("model turn> (finish with an empty line)")
        screen = session.screen()
        assert "You have 2 tool turns" in screen and "Question: How many albums are there?" in screen
        # Round 1: two calls in one turn, typed over two lines.
        session.type('{"tool": "list_tables", "args": {}}')
        session.type('{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Album"}}')
        session.type("")
        screen = session.wait_for("[1 tool turns left before you must answer]")
        assert "Result 2 of run_query(sql='SELECT COUNT(*) FROM Album'):\nCOUNT(*)\n347" in screen
        # Round 2: a failing query; the limit forces the final turn, quoting the last good query.
        session.type('{"tool": "run_query", "args": {"sql": "SELECT nope FROM Album"}}')
        session.type("")
        screen = session.wait_for("final SQL> (finish with an empty line)")
        assert "Error: SQL error: no such column: nope" in screen
        assert "The last query that ran without error was:\n```sql\nSELECT COUNT(*) FROM Album\n```" in screen
        # The final turn: a bare SQL answer.
        session.type("SELECT count(AlbumId) FROM Album")
        session.type("")
        screen = session.wait_for("EXIT=")
        assert "stop reason: round_limit   answer from: final_turn" in screen
        assert "final SQL: SELECT count(AlbumId) FROM Album" in screen
        assert "outcome: equivalent   official: True   strict: True   spider: True   reward: 3.000" in screen
        assert "EXIT=0" in screen
    finally:
        session.close()
