"""sqlscout's environment as a ``skyrl-gym`` environment (SkyRL's ``BaseTextEnv``).

SkyRL's generator owns the model and the chat: it asks the environment for the opening
messages (``init``), hands it each model reply as text (``step``), appends the
observations it returns as chat messages, and stops when ``done``. A sqlscout
:class:`~sqlscout.env.episode.Episode` is already that machine — text in, text out — so
:class:`SqlscoutSkyRLEnv` only translates: ``init`` returns the episode's own opening
messages (sqlscout's prompt), ``step`` is :meth:`Episode.step`, its observation goes back
as a user message (where sqlscout's chat format puts tool results), and the episode's own
limits (rounds, failed queries, budget, the forced final turn) decide when it is over.
The tools, the protocol and the prompt are sqlscout's, unchanged.

The reward is sqlscout's reward preset over sqlscout's scoring (:func:`score_sql` of the
episode's answer against the gold query's result, then :func:`~sqlscout.scoring.reward`),
paid on the step that ends the episode, 0 before it. SkyRL builds one environment per
trajectory and never shows it the trajectory's siblings, so the one group-level term of
the ``sqale-dense`` preset — the plurality bonus, +0.1 for agreeing with the most common
result of a GRPO group — cannot be computed here: each answer is rewarded as sqlscout
rewards a group of one. Everything else is the same number sqlscout's trainer gives.

``skyrl_gym`` is imported only when the class is first used (``SqlscoutSkyRLEnv`` is
built on first access, since it must subclass ``BaseTextEnv``) or :func:`register` is
called; importing this module needs nothing beyond sqlscout.

A dataset row (:func:`dataset_rows`) carries the task in its ``task`` column, which
SkyRL passes to the environment in ``extras``; ``extras`` may instead hold the task's
fields flat (``question``, ``db_path``, ``gold_sql`` or ``reward_spec.ground_truth``).
"""

from __future__ import annotations

import threading
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.task import Task
from sqlscout.env.trace import AnswerSource
from sqlscout.scoring import REWARD_PRESETS, RewardConfig, reward, score_sql
from sqlscout.scoring.gold import GoldResults

__all__ = ["ENV_ID", "SqlscoutSkyRLEnv", "close_databases", "dataset_rows", "register", "task_from_extras"]

ENV_ID = "sqlscout"
_ENTRY_POINT = f"{__name__}:SqlscoutSkyRLEnv"
_TASK_FIELDS = frozenset(f.name for f in fields(Task))
_EPISODE_FIELDS = frozenset(f.name for f in fields(EpisodeConfig))

# SkyRL makes one environment per trajectory; the databases and gold results are the
# process's, as the runner's are its own: each file opened once, each gold query run once.
_lock = threading.Lock()  # the open databases
_gold_lock = threading.Lock()  # the gold results (a gold query may take a while: apart)
_databases: dict[Any, Any] = {}
_gold = GoldResults()


def _database(path: Path | str) -> Any:
    """The database a task names, opened once per process and shared (it is thread-safe)."""
    from sqlscout.engines import database_key, open_database

    key = database_key(path)
    with _lock:
        if key not in _databases:
            _databases[key] = open_database(key if isinstance(key, Path) else path)
        return _databases[key]


def close_databases() -> None:
    """Close the databases the environments opened (the next one opens them again)."""
    with _lock:
        for db in _databases.values():
            db.close()
        _databases.clear()


def task_from_extras(extras: Mapping[str, Any]) -> Task:
    """The task of a SkyRL dataset row's ``extras``: a :class:`Task` or its dict under
    ``task``, else the task's fields flat (the gold query may be SkyRL's
    ``reward_spec.ground_truth``)."""
    given = extras.get("task")
    if isinstance(given, Task):
        return given
    data = dict(given) if given is not None else dict(extras)
    if not data.get("gold_sql"):
        spec = extras.get("reward_spec") or {}
        data["gold_sql"] = spec.get("ground_truth") if hasattr(spec, "get") else None
    missing = [k for k in ("question", "db_path", "gold_sql") if not data.get(k)]
    if missing:
        raise ValueError(f"a sqlscout environment needs the task's {', '.join(missing)} in extras (or a Task under 'task')")
    data.setdefault("question_id", data.get("db_id") or "0")
    known = {k: v for k, v in data.items() if k in _TASK_FIELDS and v is not None}
    return Task(**{**known, "meta": dict(known.get("meta") or {})})


def _episode_config(env_config: Any) -> EpisodeConfig:
    """The episode's limits from SkyRL's env config: an :class:`EpisodeConfig` (or its
    fields) under ``episode``, any of its fields flat beside it overriding."""
    if env_config is None:
        return EpisodeConfig()
    given = env_config.get("episode")
    base = given.to_dict() if isinstance(given, EpisodeConfig) else {k: given[k] for k in given} if given else {}
    flat = {k: env_config[k] for k in env_config if k in _EPISODE_FIELDS}
    return EpisodeConfig.from_dict({**base, **flat})


def _reward_config(env_config: Any) -> RewardConfig:
    name = env_config.get("reward", "sqale-dense") if env_config is not None else "sqale-dense"
    if name not in REWARD_PRESETS:
        raise ValueError(f"unknown reward preset {name!r}; one of {', '.join(REWARD_PRESETS)}")
    return REWARD_PRESETS[name]


class _SqlscoutEnv:
    """What :class:`SqlscoutSkyRLEnv` does, apart from the ``BaseTextEnv`` it subclasses
    (kept apart so that this module imports without ``skyrl_gym``).

    Args:
        env_config: SkyRL's config of this environment (a mapping; omegaconf's
            ``DictConfig`` in a SkyRL run): ``reward`` (a preset of
            :data:`~sqlscout.scoring.REWARD_PRESETS`, ``sqale-dense`` by default),
            ``episode`` (an :class:`EpisodeConfig` or its fields) and any episode field
            flat (``max_rounds``, ``schema``, ``token_budget``...).
        extras: the dataset row's other columns: the task (:func:`task_from_extras`).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.task = task_from_extras(extras or {})
        self.reward_config = _reward_config(env_config)
        self.db = _database(self.task.db_path)
        # The plain protocol, what a trained model sees (no help layer), as the runner
        # starts it; tokens are counted approximately, as SkyRL keeps the tokenizer.
        self.episode = Episode(self.task, self.db, _episode_config(env_config))
        self.max_turns = self.episode.config.max_rounds + 1  # the tool rounds and the final answer
        self.reward_value: float | None = None
        self.scored: Any = None

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """sqlscout's opening messages for the task (the dataset's prompt is replaced: the
        episode's prompt is the one its protocol and budget count)."""
        return [dict(m) for m in self.episode.messages], {"prompt_version": self.episode.prompt_version}

    def step(self, action: str) -> dict[str, Any]:
        """One model reply into the episode; its observation as a user message, or the
        reward once the episode is over."""
        observation = None if self.episode.done else self.episode.step(action)
        if observation is not None:
            metadata = {"round": len(self.episode.rounds), "final_turn_next": self.episode.in_final_turn}
            return {"observations": [{"role": "user", "content": observation}], "reward": 0.0, "done": False, "metadata": metadata}
        result = self.episode.result()
        value = self._score(
            result.final_sql, submitted=result.answer_source is AnswerSource.SUBMIT_SQL, tested=result.answer_tested
        )
        metadata = {
            "final_sql": result.final_sql,
            "stop_reason": result.stop_reason.value,
            "answer_source": result.answer_source.value,
            "outcome": self.scored.verdict.outcome.value,
            "rounds": len(result.rounds),
        }
        return {"observations": [], "reward": value, "done": True, "metadata": metadata}

    def _score(self, final_sql: str | None, *, submitted: bool = True, tested: bool = False) -> float:
        """sqlscout's reward of the answer, as its trainer computes it (collect_groups):
        the gold result from the shared cache, score_sql under the preset's semantics."""
        gold_sql = self.task.gold_sql or ""
        with _gold_lock:
            expected = _gold.get(self.db, gold_sql)[0]
        self.scored = score_sql(self.db, final_sql, gold_sql, gold=expected, semantics=self.reward_config.semantics)
        self.reward_value = reward(
            self.scored, self.reward_config, pred_sql=final_sql, gold_sql=gold_sql, submitted=submitted, tested=tested
        )
        return self.reward_value

    def result(self) -> Any:
        """The episode's :class:`~sqlscout.env.trace.EpisodeResult` (once it is over)."""
        return self.episode.result()

    def get_metrics(self) -> dict[str, Any]:
        done = self.episode.done
        return {
            "rounds": len(self.episode.rounds),
            "correct": float(done and self.reward_value == self.reward_config.equivalent),
            "reward": self.reward_value or 0.0,
        }


_class: type | None = None


def _env_class() -> type:
    """``SqlscoutSkyRLEnv``, built the first time it is asked for (importing skyrl_gym)."""
    global _class
    if _class is None:
        from skyrl_gym.envs.base_text_env import BaseTextEnv

        cls = type("SqlscoutSkyRLEnv", (_SqlscoutEnv, BaseTextEnv), {"__doc__": _DOC, "__module__": __name__})
        _class = cls
    return _class


_DOC = """sqlscout's episode as a SkyRL ``BaseTextEnv``: ``skyrl_gym.make("sqlscout",
env_config=..., extras=...)`` after :func:`register`. See :class:`_SqlscoutEnv` for the
arguments and the module docstring for what it does."""


def __getattr__(name: str) -> Any:
    if name == "SqlscoutSkyRLEnv":
        return _env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(env_id: str = ENV_ID) -> None:
    """Register the environment with skyrl_gym's registry under ``env_id``, as skyrl_gym
    registers its own (an import-path entry point, so the spec stays serialisable); a
    second call is a no-op. Call it in the process that runs SkyRL's generator."""
    import skyrl_gym
    from skyrl_gym.envs.registration import registry

    if env_id in registry:
        if registry[env_id].entry_point != _ENTRY_POINT:
            raise ValueError(f"skyrl_gym already has an environment {env_id!r} that is not sqlscout's")
        return
    skyrl_gym.register(id=env_id, entry_point=_ENTRY_POINT)


def dataset_rows(tasks: Sequence[Task], episode: EpisodeConfig | None = None, env_id: str = ENV_ID) -> list[dict[str, Any]]:
    """SkyRL dataset rows for ``tasks`` (e.g. ``datasets.Dataset.from_list(rows).to_parquet(...)``):
    sqlscout's opening messages as the prompt (what ``init`` returns, so SkyRL's length
    filter measures the real prompt), the environment's id, the gold query as SkyRL's
    ``reward_spec`` and the task itself, which reaches the environment in ``extras``."""
    config = episode or EpisodeConfig()
    rows = []
    for task in tasks:
        messages = Episode(task, _database(task.db_path), config).messages
        data = {k: v for k, v in task.to_dict().items() if k != "meta"}  # parquet keeps no empty struct
        rows.append({
            "data_source": f"sqlscout/{task.benchmark}",
            "prompt": [dict(m) for m in messages],
            "env_class": env_id,
            "reward_spec": {"method": "rule", "ground_truth": task.gold_sql},
            "task": data,
        })  # fmt: skip
    return rows
