"""sqlscout's environment in verifiers (0.4, its ``verifiers.v1`` API), so ``vf-eval`` and
prime-rl play the episode sqlscout's evaluator and trainer play.

verifiers 0.4 has no ``MultiTurnEnv``/``ToolEnv`` any more; an environment is a taskset
(the tasks and their rewards), a harness (the program that plays a task against the
model) and an env (how one task becomes one episode). This module gives one of each,
all thin over sqlscout:

- :class:`SqlscoutTaskset` loads sqlscout's tasks (``sqlscout.data.load_tasks``: Spider,
  BIRD, SQaLe, JSONL...), one :class:`SqlscoutTask` per question with a gold query.
- :class:`SqlscoutHarness` plays each task as one sqlscout episode: it runs
  :class:`sqlscout.runner.Runner` — the evaluator's and the trainer's driver — over the
  openai backend in chat mode, pointed at the model endpoint verifiers hands a harness
  (its interception server, which records every turn in the trace and relays it to the
  model under evaluation or training). So the prompt, the eight tools, the protocol,
  the budgets and the transcript are sqlscout's own, in one place; the verifiers trace
  holds the chat messages, the episode's answer and why it ended (``trace.info``).
- The task's reward (``@vf.reward sqlscout``) is sqlscout's reward preset over
  sqlscout's scoring (``score_sql``, the gold-result cache, ``group_rewards``) — what
  the evaluator scores and the trainer rewards.
- :class:`SqlscoutEnv` plays ``group_size`` attempts per episode (1 by default). With
  one, the reward is that of a lone answer; with several, ``finalize`` scores the
  attempts as one GRPO group, as sqlscout's trainer does (the plurality bonus needs a
  group: verifiers has no hook across separate episodes).

verifiers finds plugins by importable module name, and this module is not a top-level
one: importing it registers it as ``sqlscout_verifiers`` (:func:`register`), so the
taskset id is :data:`TASKSET_ID` in this process (:func:`eval_config`, the example, the
tests), and ``python -m sqlscout.integrations.verifiers [vf-eval's flags]`` is ``vf-eval``
with it. verifiers is imported only when a class is first used.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import sys
import threading
import typing
from pathlib import Path
from typing import Any

from sqlscout.env.task import Task

__all__ = [
    "TASKSET_ID",
    "SqlscoutEnv",
    "SqlscoutHarness",
    "SqlscoutTask",
    "SqlscoutTaskset",
    "eval_config",
    "register",
    "sqlscout_task",
    "task_data",
]

# The taskset id verifiers resolves (its plugins are modules named like their id).
TASKSET_ID = "sqlscout-verifiers"
_MODULE_ALIAS = "sqlscout_verifiers"
_CLASSES = ("SqlscoutEnv", "SqlscoutHarness", "SqlscoutTask", "SqlscoutTaskset")


def register() -> None:
    """Make :data:`TASKSET_ID` resolve to this module in this process (verifiers imports a
    taskset, its harness and its env by the id's module name)."""
    if __name__ != "__main__":  # run with -m, the block at the end registers the module proper
        sys.modules.setdefault(_MODULE_ALIAS, sys.modules[__name__])


register()


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def task_data(task: Task) -> Any:
    """The verifiers task data of a sqlscout task: what a trace records of the task and
    all the harness needs to play it again elsewhere (an engine URL's password is not
    kept; give it to the engine's driver by its own means)."""
    fields = task.to_dict()
    fields.pop("meta")
    question = f"{task.question}\n\n{task.evidence}" if task.evidence else task.question
    data_type = _classes()["SqlscoutTaskData"]
    return data_type(id=_key(task), name=task.db_id, prompt=question, **fields)


def sqlscout_task(data: Any) -> Task:
    """The sqlscout task back from its verifiers task data."""
    return Task(
        data.question_id, data.question, data.db_path, gold_sql=data.gold_sql, evidence=data.evidence,
        difficulty=data.difficulty, db_id=data.db_id, phrasing=data.phrasing, benchmark=data.benchmark,
        condition=data.condition,
    )  # fmt: skip


def _key(task: Task) -> str:
    from sqlscout.evaluation.record import task_key

    return f"{task.benchmark}/{task.db_id}/{task_key(task)}"


def eval_config(
    *,
    path: str | Path,
    model: str,
    base_url: str,
    benchmark: str = "spider",
    split: str | None = None,
    limit: int | None = None,
    episode: dict[str, Any] | None = None,
    reward: str = "sqale-dense",
    group_size: int = 1,
    output_dir: str | Path = "outputs",
    max_concurrent: int | None = 8,
    sampling: dict[str, Any] | None = None,
) -> Any:
    """A verifiers ``EvalConfig`` over sqlscout's taskset, what ``vf-eval`` would build from
    its flags: the model at ``base_url`` (OpenAI-compatible, ``/v1``; its API key, if it
    wants one, in ``$SQLSCOUT_VERIFIERS_API_KEY``), nothing pushed, no dashboard.
    ``episode`` holds :class:`~sqlscout.env.config.EpisodeConfig` fields, ``sampling``
    verifiers' sampling overrides. Run it with ``verifiers.v1.cli.eval.runner.run_eval``."""
    from verifiers.v1.configs.cli.eval import EvalConfig

    taskset: dict[str, Any] = {"id": TASKSET_ID, "benchmark": benchmark, "path": str(path), "split": split, "limit": limit,
                               "task": {"reward": reward}}  # fmt: skip
    env = {"taskset": taskset, "group_size": group_size, "agent": {"harness": {"episode": episode or {}}}}
    return EvalConfig(
        env=env, model=model, client={"type": "eval", "base_url": base_url, "api_key_var": "SQLSCOUT_VERIFIERS_API_KEY"},
        sampling=sampling or {}, output_dir=Path(output_dir), push=False, rich=None, max_concurrent=max_concurrent,
    )  # fmt: skip


class _Scoring:
    """sqlscout's scoring for the rewards: each database opened once, each gold query run
    once (the project's gold-result cache), under one lock (rewards are computed on worker
    threads, several rollouts at a time)."""

    def __init__(self) -> None:
        from sqlscout.scoring.gold import GoldResults

        self.gold = GoldResults()
        self._databases: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def database(self, target: Path | str) -> Any:
        """The database ``target`` names, opened once per process and shared: the episodes
        read through it too (a database is safe across threads), so a new episode does not
        open the file and read its schema again."""
        from sqlscout.engines import database_key, open_database

        with self._lock:
            key = database_key(target)
            if key not in self._databases:
                self._databases[key] = open_database(key if isinstance(key, Path) else target)
            return self._databases[key]

    def score(self, task: Task, final_sql: str | None, semantics: Any) -> Any:
        from sqlscout.scoring import score_sql

        db = self.database(task.db_path)
        with self._lock:
            expected = self.gold.get(db, task.gold_sql or "")[0]
            return score_sql(db, final_sql, task.gold_sql or "", gold=expected, semantics=semantics)

    def rewards(self, task: Task, answers: list[str | None], preset: str) -> list[float]:
        """The rewards of one question's answers, scored as one group (a lone answer gets
        no plurality bonus: that needs two answers agreeing)."""
        from sqlscout.scoring import REWARD_PRESETS, group_rewards

        config = REWARD_PRESETS[preset]
        scored = [self.score(task, sql, config.semantics) for sql in answers]
        return group_rewards(list(zip(scored, answers)), task.gold_sql or "", config)


@functools.cache
def _scoring() -> _Scoring:
    return _Scoring()


def _outcome(trace: Any) -> dict[str, Any] | None:
    """What the harness recorded of its episode (None: it never finished one)."""
    return trace.info.get("sqlscout")


@functools.cache
def _classes() -> dict[str, Any]:
    """The verifiers classes, built on first use so that importing this module needs no
    verifiers."""
    import verifiers.v1 as vf
    from pydantic import Field, create_model, field_validator

    from sqlscout.scoring import REWARD_PRESETS

    # A sqlscout Task's fields, read from the dataclass (one source of truth); ``prompt`` is
    # the question, for displays: the harness builds sqlscout's own prompt.
    hints = typing.get_type_hints(Task)
    SqlscoutTaskData = create_model(  # noqa: N806 - a class
        "SqlscoutTaskData",
        __base__=vf.TaskData,
        __doc__="A sqlscout :class:`~sqlscout.env.task.Task`'s fields, as verifiers stores a task.",
        **{
            f.name: (str if f.name == "db_path" else hints[f.name], ... if f.default is dataclasses.MISSING else f.default)
            for f in dataclasses.fields(Task)
            if f.name != "meta"
        },
    )

    class SqlscoutTaskConfig(vf.TaskConfig):
        """``--env.taskset.task.*``: the reward preset of :data:`sqlscout.scoring.REWARD_PRESETS`."""

        reward: str = "sqale-dense"

        @field_validator("reward")
        @classmethod
        def _known(cls, value: str) -> str:
            if value not in REWARD_PRESETS:
                raise ValueError(f"unknown reward preset {value!r}; choose one of {', '.join(REWARD_PRESETS)}")
            return value

    class SqlscoutTask(vf.Task[SqlscoutTaskData, vf.State, SqlscoutTaskConfig]):
        """One question; its reward is sqlscout's."""

        @property
        def key(self) -> str:
            return self.data.id or self.hash

        @vf.reward
        async def sqlscout(self, trace: Any) -> float:
            """sqlscout's reward of the episode's answer (its preset's invalid when the
            episode gave none). :class:`SqlscoutEnv` rescores a group of attempts together."""
            outcome = _outcome(trace)
            preset = self.config.reward
            if outcome is None:
                return REWARD_PRESETS[preset].invalid
            task = sqlscout_task(self.data)
            (value,) = await asyncio.to_thread(_scoring().rewards, task, [outcome["final_sql"]], preset)
            trace.record_metric("correct", float(value >= REWARD_PRESETS[preset].equivalent))
            return value

    class SqlscoutTasksetConfig(vf.TasksetConfig):
        """``--env.taskset.*``: which questions (the arguments of ``sqlscout.data.load_tasks``)."""

        benchmark: str = "spider"
        path: str | None = None
        split: str | None = None
        limit: int | None = Field(None, ge=1)
        db_root: str | None = None
        cache_dir: str | None = None
        missing_db: str = "skip"
        task: SqlscoutTaskConfig = SqlscoutTaskConfig()

    class SqlscoutTaskset(vf.Taskset[SqlscoutTask, SqlscoutTasksetConfig]):
        """sqlscout's questions with a gold query, in the benchmark's order."""

        def load(self) -> Any:
            from sqlscout.data import load_tasks
            from sqlscout.models.fetch import default_cache_dir

            c = self.config
            # sqlscout's cache by default, as `sqlscout eval`: the benchmark's files are
            # parsed once, not at every run (Spider dev: 0.16 s a load here).
            cache_dir = c.cache_dir if c.cache_dir is not None else str(default_cache_dir(os.environ))
            tasks = load_tasks(c.benchmark, c.path, split=c.split, limit=c.limit, db_root=c.db_root,
                               cache_dir=cache_dir, missing_db=c.missing_db)  # fmt: skip
            for task in tasks:
                if task.gold_sql:
                    yield SqlscoutTask(task_data(task), c.task)

    class SqlscoutHarnessConfig(vf.HarnessConfig):
        """``--env.agent.harness.*``: the episode's limits and schema regime (the fields of
        :class:`sqlscout.env.config.EpisodeConfig`; empty: sqlscout's defaults), and how
        the openai backend talks to the model endpoint."""

        id: str = TASKSET_ID
        episode: dict[str, Any] = Field(default_factory=dict)
        sampling_extras: bool = True
        request_timeout_s: float = Field(600.0, gt=0)

        @field_validator("episode")
        @classmethod
        def _valid_episode(cls, value: dict[str, Any]) -> dict[str, Any]:
            from sqlscout.env.config import EpisodeConfig

            EpisodeConfig(**value)  # unknown fields and bad limits fail here, not mid-run
            return value

    class SqlscoutHarness(vf.Harness[SqlscoutHarnessConfig]):
        """Plays a task as one sqlscout episode (sqlscout's runner and openai backend) over
        the endpoint verifiers gives the harness; in process, nothing to install."""

        EXECUTES_CODE = False  # queries run in sqlscout's read-only sandbox, not the runtime
        NEEDS_CONTAINER = False

        async def launch(
            self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str, mcp_urls: dict[str, str], data: Any
        ) -> Any:
            from sqlscout.train.rollout import model_ended

            result = await asyncio.to_thread(self._play, sqlscout_task(data), ctx.model, endpoint, secret)
            trace.info["sqlscout"] = {
                "final_sql": result.final_sql, "stop_reason": result.stop_reason.value,
                "answer_source": result.answer_source.value, "rounds": len(result.rounds),
                "model_ended": model_ended(result), "prompt_version": result.prompt_version, "error": result.error,
            }  # fmt: skip
            if result.error is not None and trace.stop_condition is None:
                raise vf.HarnessError(f"the sqlscout episode failed: {result.error}")
            return vf.ProgramResult(exit_code=0, stdout="", stderr="")

        def _play(self, task: Task, model: str, endpoint: str, secret: str) -> Any:
            from sqlscout.backends.base import SamplingParams
            from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig
            from sqlscout.env.config import EpisodeConfig
            from sqlscout.runner import Runner, RunnerConfig

            backend = OpenAIBackend(OpenAIConfig(
                base_url=endpoint, model=model, api_key=secret, mode="chat", concurrency=1,
                timeout_s=self.config.request_timeout_s, sampling_extras=self.config.sampling_extras,
                probe_tokenizer=False,  # the interception relay serves chat completions only: token counts are estimated
            ))  # fmt: skip
            config = RunnerConfig(episode=EpisodeConfig(**self.config.episode), sampling=SamplingParams(logprobs=False), max_batch=1)
            try:
                with Runner(backend, config) as runner:
                    runner.adopt(_scoring().database(task.db_path))
                    (rollout,) = list(runner.run([task]))
            finally:
                backend.close()
            return rollout.result

    # The seat's default names sqlscout's harness, so ``--env.agent.harness.episode.*`` needs
    # no ``--env.agent.harness.id`` (copied in, not validated: that would look the harness up
    # by id, in this module, while it is being built).
    seat = vf.AgentConfig(runtime=vf.SubprocessConfig()).model_copy(update={"harness": SqlscoutHarnessConfig()})

    class SqlscoutEnvConfig(vf.EnvConfig):
        """The one ``agent`` seat (sqlscout's harness, in process: the subprocess runtime,
        not a remote box), and ``group_size`` attempts per episode."""

        agent: vf.AgentConfig = seat
        group_size: int = Field(1, ge=1)

    class SqlscoutEnv(vf.Env[SqlscoutEnvConfig]):
        """``group_size`` attempts at the task; with more than one, they are rewarded as one
        sqlscout GRPO group (only those the model ended, as sqlscout's trainer does)."""

        async def run(self, task: Any, agents: Any) -> None:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.config.group_size):
                    group.create_task(agents.agent.run(task))

        async def finalize(self, task: Any, episode: Any) -> None:
            if self.config.group_size < 2:
                return
            members = [t for t in episode.traces if t.ok and (_outcome(t) or {}).get("model_ended")]
            answers = [_outcome(t)["final_sql"] for t in members]  # type: ignore[index]
            values = await asyncio.to_thread(_scoring().rewards, sqlscout_task(task.data), answers, task.config.reward)
            for trace, value in zip(members, values):
                trace.record_reward("sqlscout", value)

    classes: dict[str, Any] = {
        "SqlscoutEnv": SqlscoutEnv, "SqlscoutEnvConfig": SqlscoutEnvConfig, "SqlscoutHarness": SqlscoutHarness,
        "SqlscoutHarnessConfig": SqlscoutHarnessConfig, "SqlscoutTask": SqlscoutTask, "SqlscoutTaskConfig": SqlscoutTaskConfig,
        "SqlscoutTaskData": SqlscoutTaskData, "SqlscoutTaskset": SqlscoutTaskset, "SqlscoutTasksetConfig": SqlscoutTasksetConfig,
    }  # fmt: skip
    for name, cls in classes.items():
        cls.__qualname__ = name  # as if defined at the module's top level (reprs, records)
    return classes


if __name__ == "__main__":  # python -m sqlscout.integrations.verifiers [ARGS]: vf-eval on this taskset
    import sqlscout.integrations.verifiers  # noqa: F401 - registers the taskset under its id
    from verifiers.v1.cli.eval.main import main as vf_eval

    args = sys.argv[1:]
    if "--env.taskset.id" not in args and (not args or args[0].startswith("-")):
        args = [TASKSET_ID, *args]
    vf_eval(args)
