"""``sqlscout ask`` and ``sqlscout demo``, one episode through the runner, and failure paths:
each is a one-line message or a recorded episode outcome, never a traceback or a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sqlscout.assist import get_profile
from sqlscout.backends.scripted import ScriptedBackend
from sqlscout.cli.main import app
from sqlscout.cli.trace import fold, split_reasoning
from sqlscout.demo import DEMO_QUESTIONS, chinook_path, demo_tasks, describe_choice
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.sandbox import Database
from sqlscout.env.trace import AnswerSource, StopReason
from sqlscout.runner import Runner, RunnerConfig, Turn
from sqlscout.scoring import score_sql

runner = CliRunner()


def _one_line_error(result, pattern: str) -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and pattern in result.output, result.output


def test_embedded_chinook_and_gold_answers() -> None:
    db = Database(chinook_path())
    assert (chinook_path().parent / "LICENSE.md").is_file()
    assert 5 <= len(DEMO_QUESTIONS) <= 8
    for task in demo_tasks():
        assert score_sql(db, task.gold_sql, task.gold_sql or "").verdict.official  # every gold query runs


def test_a_model_that_never_calls_a_tool_ends_as_a_recorded_outcome() -> None:
    task = demo_tasks(1)[0]
    backend = ScriptedBackend(lambda turn: "I would rather talk about music.")
    with Runner(backend, RunnerConfig(episode=EpisodeConfig(max_rounds=3))) as run:
        (rollout,) = run.run([task])
    result = rollout.result
    assert result.stop_reason is StopReason.ROUND_LIMIT
    assert result.answer_source is AnswerSource.NONE and result.final_sql is None
    assert all("no tool call found" in (r.observation or "") for r in result.rounds[:-1])


def test_one_episode_through_the_runner_calls_back_per_turn() -> None:
    task = demo_tasks(1)[0]
    replies = ['{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Album"}}',
               '{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM Album"}}']  # fmt: skip
    seen: list[Turn] = []
    with Runner(ScriptedBackend(replies), RunnerConfig(max_batch=1)) as run:
        (rollout,) = run.run([task], on_turn=seen.append)
    assert rollout.result.final_sql == "SELECT COUNT(*) FROM Album" and len(seen) == 2
    assert seen[-1].observation is None and seen[-1].episode.done
    assert "347" in (seen[0].observation or "") and seen[0].generation.text.startswith('{"tool": "run_query"')


def test_a_backend_failure_in_ask_is_one_line(chinook_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlscout.cli.ask as ask_cli

    failing = ScriptedBackend(["SELECT 1"], raise_on=lambda turn: True)
    monkeypatch.setattr(ask_cli, "load_model", lambda *args, **kwargs: failing)
    result = runner.invoke(app, ["ask", str(chinook_path), "q?"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.splitlines()[-1] == "error: scripted backend failed: RuntimeError: scripted backend failure"


def test_ask_takes_its_help_and_settings_from_the_command_line(chinook_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The per-rule and per-setting flags are gone: --assist names a profile, --assist-set
    # changes one rule, --set one episode or sampling setting.
    import sqlscout.cli.ask as ask_cli

    seen: list = []

    def script(turn):  # noqa: ANN001, ANN202
        seen.append(turn)
        return "```sql\nSELECT COUNT(*) FROM Album\n```" if turn.final else json.dumps({"tool": "list_tables", "args": {}})

    monkeypatch.setattr(ask_cli, "load_model", lambda *args, **kwargs: ScriptedBackend(script))
    server = ["ask", str(chinook_path), "How many albums are there?", "--model", "http://127.0.0.1:9/v1"]  # no preset: no help
    result = runner.invoke(app, [*server, "--assist", "constrained", "--set", "max_rounds=1", "--set", "temperature=0"])
    assert result.exit_code == 0 and "347" in result.output, result.output
    assert [(t.final, t.constraint.kind.value if t.constraint else None) for t in seen] == [(False, "calls"), (True, "final_sql")]
    assert seen[0].params.temperature == 0 and seen[0].constraint.reasoning_lines == 0
    seen.clear()
    result = runner.invoke(app, [*server, "--assist", "constrained", "--assist-set", "constrain=off", "--set", "max_rounds=1"])
    assert result.exit_code == 0 and [t.constraint for t in seen] == [None, None], result.output
    seen.clear()
    result = runner.invoke(app, [*server, "--assist-set", "constrain.reasoning_lines=2", "--set", "max_rounds=1"])
    assert result.exit_code == 0 and seen[0].constraint.reasoning_lines == 2, result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--assist", "nope"], "unknown assist profile 'nope'"),
        (["--assist-set", "guided_start=on"], "rule guided_start needs constrain"),
        (["--assist-set", "nope=on"], "unknown assist rule 'nope'"),
        (["--set", "max_rounds=0"], "max_rounds must be >= 1, got 0"),
        (["--set", "rounds=3"], "--set takes KEY=VALUE"),
    ],
)
def test_bad_help_or_settings_in_ask_are_one_line(chinook_path: Path, args: list[str], message: str) -> None:
    _one_line_error(runner.invoke(app, ["ask", str(chinook_path), "q?", "--model", "http://127.0.0.1:9/v1", *args]), message)


def test_trace_helpers() -> None:
    assert split_reasoning('Let me look.\n{"tool": "list_tables", "args": {}}') == "Let me look."
    assert "folded" in fold("\n".join(map(str, range(20))))


def test_unknown_preset_is_one_line(chinook_path: Path) -> None:
    _one_line_error(runner.invoke(app, ["ask", str(chinook_path), "q?", "--model", "qwen9-coder"]), "unknown model preset")


def test_missing_model_file_is_one_line(chinook_path: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["ask", str(chinook_path), "q?", "--model", str(tmp_path / "gone.gguf")])
    _one_line_error(result, "model file not found")


def test_unreachable_server_is_one_line(chinook_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = runner.invoke(app, ["ask", str(chinook_path), "q?", "--model", f"http://127.0.0.1:{port}"])
    _one_line_error(result, "cannot reach the OpenAI-compatible server")


def test_missing_database_is_one_line(tmp_path: Path) -> None:
    _one_line_error(runner.invoke(app, ["ask", str(tmp_path / "none.sqlite"), "q?"]), "error:")


def test_ask_with_the_embedded_model(qwen05_gguf: Path, chinook_path: Path) -> None:
    result = runner.invoke(
        app,
        ["ask", str(chinook_path), "How many albums are there?", "--set", "max_rounds=2", "--set", "max_turn_tokens=64",
         "--threads", "1", "--set", "temperature=0", "--cache-dir", str(qwen05_gguf.parent.parent)],
    )  # fmt: skip
    assert "Traceback" not in result.output and result.exit_code in (0, 1), result.output
    assert "round 1" in result.output and "answer" in result.output and "stop:" in result.output


def test_demo_json_with_the_embedded_model(qwen05_gguf: Path) -> None:
    result = runner.invoke(app, ["demo", "--json", "--questions", "1", "--threads", "1",
                                 "--cache-dir", str(qwen05_gguf.parent.parent)])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["total"] == 1 and summary["correct"] in (0, 1)
    assert summary["model"] == "qwen2.5-coder-0.5b" and summary["backend"] == "llama-cpp"
    assert summary["choice"].startswith("configuration: qwen2.5-coder-0.5b, agent, schema full, help: draft (")
    assert "why:" in summary["choice"] and "Spider dev" in summary["choice"] and "\n" not in summary["choice"]
    assert summary["config"]["episode"]["schema"] == "full" and "submit_tested" in summary["config"]["assist"]["rules"]
    assert summary["config"]["assist"] == get_profile("draft").to_dict()  # the preset's profile
    (item,) = summary["questions"]
    assert item["question"] == DEMO_QUESTIONS[0][0] and item["correct"] == (summary["correct"] == 1)


def test_the_demos_choice_names_its_help_in_one_line() -> None:
    plain = describe_choice("my.gguf", EpisodeConfig(schema=SchemaMode.FULL))
    assert plain == "configuration: my.gguf, agent, schema full, plain protocol (no help), 1 sample"
    assert describe_choice("my.gguf", EpisodeConfig(), get_profile("none"), samples=3) == (
        "configuration: my.gguf, agent, schema withheld, plain protocol (no help), 3 samples"
    )
    guided = get_profile("guided")
    line = describe_choice("my.gguf", EpisodeConfig(schema=SchemaMode.FULL), guided)
    assert line == f"configuration: my.gguf, agent, schema full, help: guided ({', '.join(guided.rules)}), 1 sample"
    assert "constrain, guided_start" in line and "why:" not in line and "\n" not in line


@pytest.mark.parametrize("flag", [["--json"], []])
def test_demo_unknown_model_is_one_line(flag: list[str]) -> None:
    _one_line_error(runner.invoke(app, ["demo", "--model", "nope", *flag]), "unknown model preset")


def test_ask_with_samples_answers_with_the_query_most_samples_agree_on(
    chinook_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 11 item 3: N episodes run together and the answer is the largest group of
    # final queries by result — here two samples count albums two ways, one is wrong.
    import sqlscout.cli.ask as ask_cli

    answers = ["SELECT COUNT(*) FROM Album", "SELECT 1", "SELECT count(AlbumId) FROM Album"]

    def script(turn):  # noqa: ANN001, ANN202
        return json.dumps({"tool": "submit_sql", "args": {"sql": answers[turn.episode[1]]}})

    monkeypatch.setattr(ask_cli, "load_model", lambda *args, **kwargs: ScriptedBackend(script))
    result = runner.invoke(app, ["ask", str(chinook_path), "How many albums are there?", "--samples", "3", "--assist", "guided"])
    assert result.exit_code == 0, result.output
    assert "vote: 2 of 3 samples agree (2 distinct results); answering with sample 1" in result.output
    assert "347" in result.output and "sample 2: submitted · SELECT 1" in result.output
