"""Every rule of help, case by case, from data files (tests/data/assist/<rule>.yaml), in
the style of sqlglot's fixtures: a database, a question, the model's replies, and what
the environment must answer with the rule on. Each case also runs with the rule off, and
what it expects the help to say must then be absent: the rule, not the protocol, says it.

A case::

    - title: what it shows
      db: chinook | spider/<db_id>          # a real database (the small Spider fixture has seven)
      schema: full | withheld               # default withheld
      question: ...
      rules: {constrain: {reasoning_lines: 0}}   # other rules the case runs with (optional)
      opens_with: [text the prompt must hold]   # and, with the rule off, must not
      turns:
        - reply: '{"tool": "run_query", "args": {"sql": "..."}}'
          says: [text the observation must hold]        # and, with the rule off, must not
          never: [text it must not hold]
          next: {tools: [...], max_calls: N, kind: calls|final_sql}   # the next reply's grammar
      ends: {answer_source: ..., stop_reason: ..., final_sql: ...}    # when the episode ends
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import CHINOOK, SPIDER_DB
from sqlscout.assist import RULES, Profile
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task

FIXTURES = Path(__file__).parent / "data" / "assist"


def _cases() -> list[Any]:
    cases = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for i, case in enumerate(yaml.safe_load(path.read_text()) or []):
            cases.append(pytest.param(path.stem, case, id=f"{path.stem}-{i}-{case['title'][:40]}"))
    return cases


def _db_path(name: str) -> Path:
    if name == "chinook":
        return CHINOOK
    kind, _, db_id = name.partition("/")
    assert kind == "spider", name
    return SPIDER_DB / db_id / f"{db_id}.sqlite"


_DBS: dict[str, Database] = {}


def _database(name: str) -> Database:
    if name not in _DBS:
        _DBS[name] = Database(_db_path(name))
    return _DBS[name]


def _episode(rule: str, case: dict, with_rule: bool) -> Episode:
    rules = dict(case.get("rules") or {})
    if with_rule:
        rules[rule] = case.get("params") or True
    profile = Profile.build("fixture", rules)
    db = _database(case["db"])
    task = Task("fixture", case["question"], db.path, gold_sql=case.get("gold"))
    config = EpisodeConfig(schema=SchemaMode(case.get("schema", "withheld")), **(case.get("episode") or {}))
    return Episode(task, db, config, hooks=profile.hooks(), version=profile.episode_version("fixture"))


def _reply(turn: dict) -> str:
    reply = turn["reply"]
    return reply if isinstance(reply, str) else json.dumps(reply)


@pytest.mark.parametrize("rule, case", _cases())
def test_rule_case(rule: str, case: dict) -> None:
    ep = _episode(rule, case, with_rule=True)
    for said in case.get("opens_with", []):
        assert said in ep.transcript, f"expected {said!r} in the prompt"
    for turn in case["turns"]:
        assert not ep.done, f"the episode ended before the reply {turn['reply']!r}"
        observation = ep.step(_reply(turn))
        text = observation or ""
        for said in turn.get("says", []):
            assert said in text, f"expected {said!r} in:\n{text}"
        for never in turn.get("never", []):
            assert never not in text, f"did not expect {never!r} in:\n{text}"
        if "next" in turn:
            assert not ep.done
            grammar = ep.request().constraint
            want = turn["next"]
            assert grammar is not None
            if "kind" in want:
                assert grammar.kind.value == want["kind"]
            if "tools" in want:
                assert list(grammar.tools or ()) == want["tools"]
            if "max_calls" in want:
                assert grammar.max_calls == want["max_calls"]
            if "submittable" in want:
                assert list(grammar.submittable or ()) == want["submittable"]
        if "prompt_has" in turn:
            for said in turn["prompt_has"]:
                assert said in ep.transcript
    if "ends" in case:
        assert ep.done, "the episode should have ended"
        result = ep.result()
        for key, value in case["ends"].items():
            got = getattr(result, key)
            assert (got.value if hasattr(got, "value") else got) == value, key


@pytest.mark.parametrize("rule, case", _cases())
def test_rule_case_without_the_rule(rule: str, case: dict) -> None:
    """The same replies with the rule off: what the case expects the help to say is not said."""
    if case.get("rules", {}) and any(rule in RULES[n].needs for n in case["rules"]):
        pytest.skip(f"another rule of the case needs {rule}")
    ep = _episode(rule, case, with_rule=False)
    for said in case.get("opens_with", []):
        assert said not in ep.transcript, f"{said!r} is in the prompt without {rule}"
    for turn in case["turns"]:
        if ep.done:
            break
        observation = ep.step(_reply(turn)) or ""
        for said in turn.get("says", []):
            assert said not in observation, f"{said!r} is said without {rule}"


def test_every_rule_has_cases() -> None:
    have = {p.stem for p in FIXTURES.glob("*.yaml") if yaml.safe_load(p.read_text())}
    assert set(RULES) <= have, f"rules without a fixture file: {sorted(set(RULES) - have)}"
