"""What an episode step costs through each trainer integration against sqlscout's own path.

The same scripted episodes (``run_query`` with the gold query, then ``submit_sql`` with
it) on the first N runnable Spider dev questions, rewarded with ``sqale-dense``:

- **TRL** (`sqlscout.integrations.trl.SqlscoutRollout`, what ``GRPOTrainer`` calls) against
  sqlscout's trainer path (``collect_groups`` over a :class:`~sqlscout.runner.Runner`),
  both with the scripted backend and the real Qwen3.5 tokenizer: the rollout's own work
  (token ids, ``env_mask``, log-probabilities, the reward) beside the runner's.
- **SkyRL** (``skyrl_gym.make("sqlscout")``: ``init`` then ``step`` per reply) against the
  same episodes driven on :class:`~sqlscout.env.episode.Episode` directly and rewarded as
  the environment rewards (``score_sql`` then the preset): the adapter's own cost.
- **verifiers** (0.4: ``verifiers.v1.cli.eval.runner.run_eval``, what ``vf-eval`` runs, over
  ``sqlscout.integrations.verifiers``' taskset, one attempt per question) against
  sqlscout's evaluator path (:class:`~sqlscout.runner.Runner` over the openai backend in
  chat mode, set as the taskset's harness sets it, then ``collect_groups`` with
  ``group_size=1`` for the rewards). Both sides talk to the same scripted
  OpenAI-compatible chat-completions server on loopback (written here: it answers from
  the question in the messages and the number of assistant turns so far), eight
  episodes at once, so both pay the same HTTP cost and the ratio is what verifiers and
  the adapter add: loading the taskset, the interception server's relay (a second HTTP
  hop per turn), a runner and backend per episode, traces written to disk, the reward.

Prints milliseconds per step (medians of ``--repeat`` runs) and each ratio; goal ≤ 1.5×.
An integration whose package is not installed is skipped with a line saying so.

Run: ``python benchmarks/integration_overhead.py [--questions 40] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import statistics
import sys
import tempfile
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sqlscout.backends.scripted import ScriptedBackend  # noqa: E402
from sqlscout.data import load_tasks  # noqa: E402
from sqlscout.env.config import EpisodeConfig  # noqa: E402
from sqlscout.env.prompts import SchemaMode  # noqa: E402
from sqlscout.scoring import REWARD_PRESETS  # noqa: E402

EPISODE = EpisodeConfig(max_rounds=3, token_budget=8192, schema=SchemaMode.FULL)
PRESET = REWARD_PRESETS["sqale-dense"]
STEPS_PER_EPISODE = 2
CONCURRENCY = 8  # episodes in flight at once in the verifiers pair (eval_config's default)


def _data(given: str | None) -> Path:
    for candidate in ([Path(given)] if given else []) + [ROOT.parent / "shared/data/spider", ROOT / "tests/data/spider_mini"]:
        if (candidate / "dev.json").is_file():
            return candidate
    raise SystemExit("no Spider data: pass --data DIR (a folder with dev.json and database/)")


def _call(tool: str, sql: str) -> str:
    return json.dumps({"tool": tool, "args": {"sql": sql}})


def _question(text: str) -> str:
    return text.rsplit("Question: ", 1)[1].split("<|im_end|>", 1)[0].strip()


def _oracle(tasks: list[Any]) -> Callable[[Any], str]:
    gold = {t.question: t.gold_sql for t in tasks}

    def reply(turn: Any) -> str:
        return _call("run_query" if turn.turn == 0 else "submit_sql", gold[_question(turn.prompt)])

    return reply


def _text(content: Any) -> str:
    """A chat message's text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _chat_oracle(tasks: list[Any]) -> Callable[[list[dict[str, Any]]], str]:
    """``_oracle`` for chat messages: the question from the last user/system message that
    holds one, the turn from the assistant messages so far."""
    gold = {t.question: t.gold_sql for t in tasks}

    def reply(messages: list[dict[str, Any]]) -> str:
        asked = next(_text(m.get("content")) for m in reversed(messages)
                     if m.get("role") in ("user", "system") and "Question: " in _text(m.get("content")))  # fmt: skip
        turn = sum(m.get("role") == "assistant" for m in messages)
        return _call("run_query" if turn == 0 else "submit_sql", gold[_question(asked)])

    return reply


class _ChatServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible server whose chat completion is ``reply(messages)``; every
    other POST (a tokenize probe) is a 404, as on a server without one."""

    protocol_version = "HTTP/1.1"  # keep-alive, as a real server
    reply: Callable[[list[dict[str, Any]]], str]

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.rstrip("/").endswith("/v1/models"):
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "sqlscout"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        request = json.loads(body)
        text = type(self).reply(request["messages"])
        self._send(200, {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })  # fmt: skip


def _serve(reply: Callable[[list[dict[str, Any]]], str]) -> tuple[ThreadingHTTPServer, str]:
    """The scripted server on a free loopback port, and its ``/v1`` URL."""
    handler = type("Handler", (_ChatServer,), {"reply": staticmethod(reply)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="scripted-server").start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def _median(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def trl_pair(tasks: list[Any], repeat: int) -> tuple[float, float] | None:
    try:
        from sqlscout.integrations.trl import SqlscoutRollout
    except ImportError as exc:
        print(f"TRL: skipped ({exc})")
        return None
    from sqlscout.backends.offline_tokenizers import qwen3_5_tokenizer

    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    tokenizer = qwen3_5_tokenizer()
    reply = _oracle(tasks)

    def ours() -> None:
        with Runner(ScriptedBackend(reply, tokenizer=tokenizer), RunnerConfig(episode=EPISODE, max_batch=64)) as runner:
            collect_groups(runner, tasks, list(range(len(tasks))), group_size=1, seed=0, reward=PRESET,
                           scale_by_std=False, gold=GoldResults())  # fmt: skip

    def theirs() -> None:
        rollout = SqlscoutRollout(tasks, episode=EPISODE, max_batch=64, backend=lambda _t: ScriptedBackend(reply, tokenizer=tokenizer))
        rollout([row["prompt"] for row in rollout.dataset()], types.SimpleNamespace())

    ours(), theirs()  # warm: gold results, tokenizer, databases
    return _median(ours, repeat), _median(theirs, repeat)


def skyrl_pair(tasks: list[Any], repeat: int) -> tuple[float, float] | None:
    try:
        import skyrl_gym  # type: ignore[import-not-found]

        from sqlscout.integrations.skyrl import dataset_rows, register
    except ImportError as exc:
        print(f"SkyRL: skipped ({exc}); pip install 'sqlscout[skyrl]'")
        return None
    from sqlscout.engines import open_database
    from sqlscout.env.episode import Episode
    from sqlscout.scoring import reward, score_sql
    from sqlscout.scoring.gold import GoldResults

    register()
    rows = dataset_rows(tasks, EPISODE)
    databases = {t.db_path: open_database(t.db_path) for t in tasks}
    gold = GoldResults()

    def ours() -> None:
        for task in tasks:
            db = databases[task.db_path]
            episode = Episode(task, db, EPISODE)
            episode.request()
            for tool in ("run_query", "submit_sql"):
                episode.step(_call(tool, task.gold_sql))
            final = episode.result().final_sql
            scored = score_sql(db, final, task.gold_sql, gold=gold.get(db, task.gold_sql)[0], semantics=PRESET.semantics)
            reward(scored, PRESET, pred_sql=final, gold_sql=task.gold_sql)

    def theirs() -> None:
        for task, row in zip(tasks, rows):
            env = skyrl_gym.make(row["env_class"], env_config={"episode": EPISODE, "reward": "sqale-dense"}, extras=row)
            env.init(row["prompt"])
            for tool in ("run_query", "submit_sql"):
                env.step(_call(tool, task.gold_sql))

    ours(), theirs()
    return _median(ours, repeat), _median(theirs, repeat)


def verifiers_pair(tasks: list[Any], repeat: int, data: Path) -> tuple[float, float] | None:
    try:
        from verifiers.v1.cli.eval.runner import run_eval  # type: ignore[import-not-found]

        from sqlscout.integrations.verifiers import eval_config
    except ImportError as exc:
        print(f"verifiers: skipped ({exc}); pip install 'sqlscout[verifiers]'")
        return None
    from sqlscout.backends.base import SamplingParams
    from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig
    from sqlscout.runner import Runner, RunnerConfig
    from sqlscout.scoring.gold import GoldResults
    from sqlscout.train.rollout import collect_groups

    logging.getLogger("verifiers").setLevel(logging.WARNING)
    server, url = _serve(_chat_oracle(tasks))
    gold = GoldResults()  # kept across runs, as the taskset's scoring keeps its gold results
    runs = iter(range(1_000_000))

    def ours() -> dict[str, tuple[float, int]]:
        # The backend and runner settings of SqlscoutHarness._play; one runner for all
        # episodes, CONCURRENCY at once, as the verifiers runner keeps CONCURRENCY harnesses.
        backend = OpenAIBackend(OpenAIConfig(base_url=url, model="scripted", api_key="scripted", mode="chat",
                                             concurrency=1, timeout_s=600.0, sampling_extras=True))  # fmt: skip
        config = RunnerConfig(episode=EPISODE, sampling=SamplingParams(logprobs=False), max_batch=CONCURRENCY)
        try:
            with Runner(backend, config) as runner:
                groups = collect_groups(runner, tasks, list(range(len(tasks))), group_size=1, seed=0, reward=PRESET,
                                        scale_by_std=False, gold=gold)  # fmt: skip
        finally:
            backend.close()
        return {g.task.question_id: (v, len(r.result.rounds)) for g in groups for r, v in zip(g.rollouts, g.rewards)}

    def theirs(out: Path) -> dict[str, tuple[float, int]]:
        config = eval_config(path=data, model="scripted", base_url=url, limit=len(tasks), episode=EPISODE.to_dict(),
                             reward="sqale-dense", output_dir=out / f"run{next(runs)}", max_concurrent=CONCURRENCY)  # fmt: skip
        episodes = asyncio.run(run_eval(config))
        if not all(ep.ok for ep in episodes):
            raise SystemExit("verifiers: an episode failed")
        return {t.task.data.question_id: (t.reward, t.info["sqlscout"]["rounds"]) for ep in episodes for t in ep.traces}

    try:
        with tempfile.TemporaryDirectory(prefix="sqlscout-vf-bench-") as out:
            played = ours(), theirs(Path(out))  # warm: gold results, databases, verifiers' imports
            expected = {t.question_id: (played[0][t.question_id][0], STEPS_PER_EPISODE) for t in tasks}
            if played[0] != expected or played[1] != expected:
                raise SystemExit("verifiers: the two paths played different episodes or gave different rewards")
            return _median(ours, repeat), _median(lambda: theirs(Path(out)), repeat)
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="Spider folder (default: ../shared/data/spider, else the repo's fixture)")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = _data(args.data)
    tasks = load_tasks("spider", data, missing_db="skip")[: args.questions]
    steps = len(tasks) * STEPS_PER_EPISODE
    print(f"{len(tasks)} questions x {STEPS_PER_EPISODE} steps, medians of {args.repeat} runs")
    print(f"{'integration':<10} {'sqlscout ms/step':>17} {'through it ms/step':>19} {'ratio':>6}")
    pairs = (("TRL", trl_pair), ("SkyRL", skyrl_pair), ("verifiers", functools.partial(verifiers_pair, data=data)))
    for name, pair in pairs:
        measured = pair(tasks, args.repeat)
        if measured is None:
            continue
        ours, theirs = measured
        print(f"{name:<10} {1000 * ours / steps:>17.3f} {1000 * theirs / steps:>19.3f} {theirs / ours:>5.2f}x")


if __name__ == "__main__":
    main()
