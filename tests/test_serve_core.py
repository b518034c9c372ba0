"""The serving core without a web framework: the catalog, tool definitions, the shared
model's batching, and ask episodes (scripted backend, real databases)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest

from conftest import CHINOOK, spider_db
from test_package import _loaded_after, beside_the_data  # noqa: F401 - a fixture
from sqlscout.backends.base import GenerationRequest, SamplingParams
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.tools import tool_specs
from sqlscout.errors import ConfigError
from sqlscout.runner import RunnerConfig
from sqlscout.serve import AskRequest, AskService, Catalog, ServeConfig, tool_definitions
from sqlscout.serve.batching import BatchingBackend
from sqlscout.serve.errors import Busy, PathGiven, UnknownDatabase

SINGER = spider_db("concert_singer")


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


@pytest.fixture
def catalog():
    served = Catalog.from_args([str(SINGER), f"music={CHINOOK}"])
    yield served
    served.close()


def test_catalog_names_files_by_stem_or_given_name(catalog: Catalog) -> None:
    assert catalog.names == ["concert_singer", "music"]
    assert catalog.get("music").path == CHINOOK.resolve()
    assert [d["name"] for d in catalog.describe()] == ["concert_singer", "music"]
    assert "CREATE TABLE" in catalog.schema_text("concert_singer")


@pytest.mark.parametrize("name", [str(SINGER), "../concert_singer.sqlite", "/etc/passwd", "C:\\db", "x.sqlite"])
def test_catalog_refuses_a_path_in_place_of_a_name(catalog: Catalog, name: str) -> None:
    with pytest.raises(PathGiven, match="send a database's name, not a path; this server serves concert_singer, music"):
        catalog.get(name)


def test_catalog_refuses_unknown_names_and_needs_a_name_when_several(catalog: Catalog) -> None:
    with pytest.raises(UnknownDatabase, match="no database named 'pets'"):
        catalog.get("pets")
    with pytest.raises(UnknownDatabase, match="name the database to use"):
        catalog.get(None)
    one = Catalog.from_args([str(SINGER)])
    assert one.get(None) is one.get("concert_singer")
    one.close()


def test_catalog_refuses_bad_and_duplicate_names() -> None:
    with pytest.raises(ConfigError, match="two databases are named 'concert_singer'"):
        Catalog.from_args([str(SINGER), str(SINGER)])
    with pytest.raises(ConfigError, match="cannot name a database"):
        Catalog.from_args([f"a b={SINGER}"])
    with pytest.raises(ConfigError, match="no database to serve"):
        Catalog.from_args([])


def test_tool_definitions_are_the_episode_specs_plus_db_when_several() -> None:
    specs = [s["function"] for s in tool_specs()]
    alone = tool_definitions(["concert_singer"])
    assert [(d.name, d.description, d.input_schema) for d in alone] == [
        (s["name"], s["description"], s["parameters"]) for s in specs
    ]
    several = tool_definitions(["a", "b"])
    for definition, spec in zip(several, specs):
        assert definition.input_schema["properties"]["db"]["enum"] == ["a", "b"]
        assert definition.input_schema["required"] == ["db", *spec["parameters"]["required"]]
        rest = {k: v for k, v in definition.input_schema["properties"].items() if k != "db"}
        assert rest == spec["parameters"]["properties"]


class SlowScripted(ScriptedBackend):
    """A scripted model that takes ``delay`` seconds per generate call and records batch sizes."""

    def __init__(self, script, delay: float, **kwargs) -> None:
        super().__init__(script, **kwargs)
        self.delay = delay
        self.batches: list[int] = []

    def generate(self, requests):
        self.batches.append(len(requests))
        time.sleep(self.delay)
        return super().generate(requests)


def test_batching_backend_merges_concurrent_calls_and_keeps_each_answer() -> None:
    model = SlowScripted(lambda turn: turn.prompt.split("|")[0], delay=0.05)
    shared = BatchingBackend(model)
    answers: dict[int, str] = {}

    def ask(i: int) -> None:
        request = GenerationRequest(SamplingParams(), prompt=f"{i}|<|im_start|>assistant\n")
        answers[i] = shared.generate([request])[0].text

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {i: f"{i}<|im_end|>" for i in range(12)}
    assert sum(model.batches) == 12 and max(model.batches) > 1, model.batches
    assert shared.stats.calls == 12 and shared.stats.batches == len(model.batches)


def test_batching_backend_gives_a_failure_to_every_caller_of_the_batch() -> None:
    model = ScriptedBackend(["x"], raise_on=lambda turn: True)
    with pytest.raises(RuntimeError, match="scripted backend failure"):
        BatchingBackend(model).generate([GenerationRequest(SamplingParams(), prompt="p")])


COUNTS = {20: 6, 30: 4, 35: 3, 45: 1}  # singers older than k (checked against SQLite below)


def singer_script(turn: ScriptTurn) -> str:
    k = next(k for k in COUNTS if f"older than {k}?" in turn.prompt)
    sql = f"SELECT count(*) FROM singer WHERE Age > {k}"
    return [call("describe_table", table_name="singer"), call("run_query", sql=sql), call("submit_sql", sql=sql)][
        min(turn.turn, 2)
    ]


def test_counts_match_sqlite() -> None:
    with sqlite3.connect(f"file:{SINGER}?mode=ro", uri=True) as conn:
        for k, n in COUNTS.items():
            assert conn.execute("SELECT count(*) FROM singer WHERE Age > ?", (k,)).fetchone()[0] == n


def test_ask_streams_each_round_then_answers(catalog: Catalog) -> None:
    from sqlscout.backends.offline_tokenizers import qwen3_tokenizer

    service = AskService(ScriptedBackend(singer_script, tokenizer=qwen3_tokenizer()), catalog, RunnerConfig(), ServeConfig())
    rounds: list[dict] = []
    answer = service.answer(AskRequest("concert_singer", "How many singers are older than 35?"), on_round=rounds.append)
    assert [r["index"] for r in rounds] == [1, 2, 3]
    assert rounds[0]["calls"][0]["tool"] == "describe_table" and "CREATE TABLE" in rounds[0]["calls"][0]["output"]
    assert rounds[1]["calls"][0]["output"] == "count(*)\n3"
    assert answer["sql"] == "SELECT count(*) FROM singer WHERE Age > 35"
    assert answer["result"] == {"columns": ["count(*)"], "rows": [[3]], "truncated": False}
    assert answer["stop_reason"] == "submitted" and answer["trace"] == rounds
    assert str(SINGER.parent) not in json.dumps(answer)  # clients know databases by name only
    service.close()


def test_ask_stops_at_its_deadline_with_the_last_good_query(catalog: Catalog) -> None:
    def wanders(turn: ScriptTurn) -> str:
        return call("run_query", sql="SELECT count(*) FROM singer")

    model = SlowScripted(wanders, delay=0.15)
    config = ServeConfig(ask_timeout_s=0.4)
    service = AskService(model, catalog, RunnerConfig(), config)
    started = time.monotonic()
    answer = service.answer(AskRequest("concert_singer", "How many singers?"))
    assert time.monotonic() - started < 2.0
    assert answer["stop_reason"] == "backend_error"
    assert answer["error"] == "the request ran past its deadline of 0.4 s"
    assert answer["answer_source"] == "fallback" and answer["sql"] == "SELECT count(*) FROM singer"
    service.close()


def test_ask_refuses_beyond_the_episode_cap(catalog: Catalog) -> None:
    import asyncio

    release = threading.Event()

    def blocked(turn: ScriptTurn) -> str:
        release.wait(10)
        return call("submit_sql", sql="SELECT 1")

    service = AskService(ScriptedBackend(blocked), catalog, RunnerConfig(), ServeConfig(max_episodes=1))

    async def two() -> None:
        first, _ = service.submit(AskRequest("music", "one?"))
        with pytest.raises(Busy, match="1 questions are being answered already"):
            service.submit(AskRequest("music", "two?"))
        release.set()
        assert (await first)["sql"] == "SELECT 1"
        assert (await service.ask(AskRequest("music", "three?")))["sql"] == "SELECT 1"  # the slot is free again

    asyncio.run(two())
    service.close()


def test_ask_refuses_an_empty_question() -> None:
    with pytest.raises(ConfigError, match="the question is empty"):
        AskRequest("music", "  ")


SERVE_MODULES = [
    "sqlscout.serve.ask",
    "sqlscout.serve.auth",
    "sqlscout.serve.batching",
    "sqlscout.serve.catalog",
    "sqlscout.serve.listen",
    "sqlscout.serve.tools",
]


@pytest.mark.parametrize("module_name", SERVE_MODULES)
def test_serve_docstring_examples_run(module_name: str, beside_the_data: None) -> None:
    import doctest
    import importlib

    results = doctest.testmod(importlib.import_module(module_name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert results.failed == 0 and results.attempted > 0, module_name


def test_the_serving_core_and_the_cli_load_no_web_framework() -> None:
    # fastapi, uvicorn and mcp are the `serve` extra: imported only when a server starts.
    loaded = _loaded_after("import sqlscout.serve, sqlscout.cli.main")
    assert not loaded & {"fastapi", "starlette", "uvicorn", "mcp", "mcp_types", "anyio"}, sorted(loaded)
