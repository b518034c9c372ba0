"""verifiers (0.4) on sqlscout's environment: the real verifiers package evaluates sqlscout's
taskset through its own runner (what ``vf-eval`` runs), against a scripted OpenAI-compatible
server on loopback, and the episodes it plays and the rewards it gives are sqlscout's."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conftest import REPO, SPIDER
from sqlscout.data import load_tasks
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.prompts import SchemaMode

pytest.importorskip("verifiers.v1", reason="verifiers 0.4 is the [verifiers] extra and is not installed (docs/integrations.md)")

EPISODE = {"max_rounds": 2, "token_budget": 8192, "schema": "full"}


def _question(text: str) -> str:
    return text.rsplit("Question: ", 1)[1].split("<|im_end|>", 1)[0].strip()


class _Scripted(BaseHTTPRequestHandler):
    """A chat-completions server whose reply is ``reply(messages)``: the model the
    verifiers runner evaluates, without a model."""

    reply: Callable[[list[dict[str, Any]]], str]

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = type(self).reply(body["messages"])
        data = json.dumps({
            "id": "scripted", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def scripted_server() -> Iterator[Callable[[Callable[[list[dict[str, Any]]], str]], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(reply: Callable[[list[dict[str, Any]]], str]) -> str:
        handler = type("Handler", (_Scripted,), {"reply": staticmethod(reply)})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _evaluate(config: Any) -> list[Any]:
    from verifiers.v1.cli.eval.runner import run_eval

    return asyncio.run(run_eval(config))


def test_the_same_scripted_episodes_earn_the_same_rewards_as_in_sqlscouts_trainer(scripted_server, tmp_path) -> None:
    """Parity: 20 questions, the same scripted replies (right, wrong, near, and the wrong one
    again: the group's plurality, whose bonus only a group pays), the same prompts and the
    same 80 rewards through sqlscout's trainer (collect_groups) and through the verifiers
    runner with groups of 4."""
    from sqlscout.backends.openai_compat import split_chatml
    from sqlscout.backends.scripted import ScriptedBackend
    from sqlscout.integrations.verifiers import eval_config
    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring import REWARD_PRESETS
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    tasks = load_tasks("spider", SPIDER, missing_db="skip")[:20]
    answers = {t.question: [t.gold_sql, "SELECT 1", "SELECT count(*) FROM singer", "SELECT 1"] for t in tasks}
    theirs_prompts: dict[str, list[dict[str, str]]] = {}
    ours_prompts: dict[str, list[dict[str, str]]] = {}

    def trainer_reply(turn):  # noqa: ANN001, ANN202 - sample k of a group answers kind k
        question = _question(turn.prompt)
        theirs_prompts[question] = split_chatml(turn.prompt)
        return json.dumps({"tool": "submit_sql", "args": {"sql": answers[question][turn.episode[1]]}})

    episode = EpisodeConfig(max_rounds=2, token_budget=8192, schema=SchemaMode.FULL)
    with Runner(ScriptedBackend(trainer_reply), RunnerConfig(episode=episode, max_batch=64)) as runner:
        groups = collect_groups(runner, tasks, list(range(20)), group_size=4, seed=0, reward=REWARD_PRESETS["sqale-dense"],
                                scale_by_std=False, gold=GoldResults())  # fmt: skip
    theirs = sorted((g.task.question_id, r.result.final_sql, v) for g in groups for r, v in zip(g.rollouts, g.rewards))

    asked: Counter[str] = Counter()
    lock = threading.Lock()

    def server_reply(messages: list[dict[str, Any]]) -> str:  # the k-th attempt at a question answers kind k
        question = _question(messages[-1]["content"])
        with lock:
            kind = asked[question] % 4
            asked[question] += 1
        ours_prompts[question] = [{"role": m["role"], "content": m["content"]} for m in messages]
        return json.dumps({"tool": "submit_sql", "args": {"sql": answers[question][kind]}})

    config = eval_config(path=SPIDER, model="scripted", base_url=scripted_server(server_reply), limit=20, group_size=4,
                         episode=EPISODE, output_dir=tmp_path)  # fmt: skip
    episodes = _evaluate(config)
    traces = [t for ep in episodes for t in ep.traces]
    assert len(episodes) == 20 and len(traces) == 80 and all(ep.ok for ep in episodes)
    assert all(t.info["sqlscout"]["prompt_version"] == "sqlscout-prompt-3" for t in traces)  # the plain protocol
    ours = sorted((t.task.data.question_id, t.info["sqlscout"]["final_sql"], t.reward) for t in traces)
    assert ours == theirs and len(theirs) == 80
    assert len({v for _, _, v in theirs}) >= 3  # right, wrong and near answers are told apart
    lone_wrong = REWARD_PRESETS["sqale-dense"].executable
    assert any(sql == "SELECT 1" and v > lone_wrong for _, sql, v in ours)  # the plurality bonus was paid
    assert ours_prompts == theirs_prompts and len(ours_prompts) == 20  # the model saw sqlscout's own prompt
    assert (tmp_path / config.run.dir / "traces.jsonl").is_file()


def test_a_lone_episode_is_rewarded_as_sqlscout_rewards_one_answer(scripted_server, tmp_path) -> None:
    """Without a group (verifiers' default), each episode earns sqlscout's reward of a lone
    answer, and its transcript holds every turn: a query, then the answer."""
    from sqlscout.integrations.verifiers import eval_config
    from sqlscout.scoring import REWARD_PRESETS, group_rewards, score_sql
    from sqlscout.env.sandbox import Database

    tasks = load_tasks("spider", SPIDER, missing_db="skip")[:3]

    def reply(messages: list[dict[str, Any]]) -> str:
        if len(messages) == 2:  # the opening prompt: look first
            return json.dumps({"tool": "run_query", "args": {"sql": "SELECT count(*) FROM singer"}})
        return json.dumps({"tool": "submit_sql", "args": {"sql": "SELECT name FROM singer"}})

    config = eval_config(path=SPIDER, model="scripted", base_url=scripted_server(reply), limit=3, episode=EPISODE,
                         output_dir=tmp_path, reward="tiered")  # fmt: skip
    traces = [t for ep in _evaluate(config) for t in ep.traces]
    preset = REWARD_PRESETS["tiered"]
    for task, trace in zip(tasks, traces):
        assert trace.task.data.question_id == task.question_id and trace.num_turns == 2
        assert trace.info["sqlscout"]["rounds"] == 2 and trace.info["sqlscout"]["stop_reason"] == "submitted"
        scored = score_sql(Database(task.db_path), "SELECT name FROM singer", task.gold_sql or "", semantics=preset.semantics)
        assert trace.reward == group_rewards([(scored, "SELECT name FROM singer")], task.gold_sql or "", preset)[0]
        assert trace.metrics["correct"] == float(trace.reward == preset.equivalent)
        assert "Result 1 of run_query" in trace.messages[-2].content  # the tool's answer, as sqlscout wrote it


def test_importing_the_adapter_needs_no_verifiers_and_verifiers_finds_it_by_id() -> None:
    code = (
        "import sys\n"
        "import sqlscout.integrations.verifiers as m\n"
        "assert 'verifiers' not in sys.modules, 'imported verifiers eagerly'\n"
        "from verifiers.v1.utils import loaders\n"
        "assert loaders.taskset_class(m.TASKSET_ID) is m.SqlscoutTaskset\n"
        "assert loaders.harness_class(m.TASKSET_ID) is m.SqlscoutHarness\n"
        "assert loaders.environment_class(m.TASKSET_ID) is m.SqlscoutEnv\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


@pytest.mark.slow
def test_the_example_evaluates_episodes_against_llama_cpps_server(qwen05_gguf: Path) -> None:
    """``python examples/verifiers_env.py`` with no arguments: llama.cpp's server on loopback,
    three episodes through the verifiers runner."""
    pytest.importorskip("xllamacpp", reason="the example's llama.cpp server is the [gguf] extra (xllamacpp), not installed")
    out = subprocess.run([sys.executable, str(REPO / "examples" / "verifiers_env.py")], capture_output=True, text=True,
                         timeout=600, cwd=REPO)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "llama.cpp's server on http://127.0.0.1:" in out.stdout
    assert "3 episodes, mean reward" in out.stdout and out.stdout.count(": reward ") == 3
    assert ", error " not in out.stdout
