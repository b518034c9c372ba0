"""The embedded default: the Chinook database and a handful of questions with gold SQL.

``sqlscout demo`` runs these with the smallest offline preset; tests and docs use the
same questions. Chinook (a digital music store, 11 tables) is MIT-licensed by Luis
Rocha; its licence ships beside the file.

>>> len(DEMO_QUESTIONS) >= 5, chinook_path().name
(True, 'Chinook_Sqlite.sqlite')
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

from sqlscout.assist.profile import Profile, get_profile
from sqlscout.backends.base import Backend, SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.trace import EpisodeResult
from sqlscout.runner import Runner, RunnerConfig
from sqlscout.scoring import Outcome, Verdict, score_sql
from sqlscout.env.task import Task

__all__ = [
    "DEMO_MODEL",
    "DEMO_QUESTIONS",
    "DemoItem",
    "DemoReport",
    "chinook_path",
    "demo_tasks",
    "describe_choice",
    "describe_help",
    "run_demo",
]

DEMO_MODEL = "qwen2.5-coder-0.5b"

# Why the demo runs what it runs: measured on Spider dev, never on the demo's own
# questions (docs/evaluation.md has the table and the commands).
DEMO_WHY = (
    "the 0.5B preset answers within a minute on 2 cores; with its help (single-shot's query first, "
    "the agent with query repair hints only where that query fails to run) it answered 54.0 % of 200 "
    "Spider dev questions on databases never used to choose the help, against 41.5 % single-shot, "
    "and 42.0 % of 200 Spider-DK questions against 31.5 %"
)

# (question, gold SQL), easiest first; each gold query was run on the shipped file.
DEMO_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("How many albums are there?", "SELECT COUNT(*) FROM Album"),
    ("How many customers are from Brazil?", "SELECT COUNT(*) FROM Customer WHERE Country = 'Brazil'"),
    ("List the names of all media types.", "SELECT Name FROM MediaType"),
    ("How many tracks are longer than 300000 milliseconds?", "SELECT COUNT(*) FROM Track WHERE Milliseconds > 300000"),
    (
        "What are the first and last names of the employees who live in Calgary?",
        "SELECT FirstName, LastName FROM Employee WHERE City = 'Calgary'",
    ),
    (
        "Which genre has the most tracks?",
        "SELECT g.Name FROM Track t JOIN Genre g ON t.GenreId = g.GenreId GROUP BY g.GenreId ORDER BY COUNT(*) DESC LIMIT 1",
    ),
)


def chinook_path() -> Path:
    """The Chinook SQLite file inside the installed package."""
    return Path(str(resources.files("sqlscout") / "data" / "chinook" / "Chinook_Sqlite.sqlite"))


def describe_choice(model: str, episode: EpisodeConfig, assist: Profile | None = None, samples: int = 1) -> str:
    """One line: the configuration the demo runs, and why (for its default model).

    >>> from sqlscout.env.prompts import SchemaMode
    >>> describe_choice("my.gguf", EpisodeConfig(schema=SchemaMode.FULL))
    'configuration: my.gguf, agent, schema full, plain protocol (no help), 1 sample'
    """
    helps = describe_help(assist, rules=True)
    line = f"configuration: {model}, agent, schema {episode.schema.value}, {helps}, {samples} sample{'s' * (samples > 1)}"
    return line + (f" — why: {DEMO_WHY}" if model == DEMO_MODEL else "")


def describe_help(assist: Profile | None, *, rules: bool = False) -> str:
    """The help a run gives, in a few words: ``plain protocol (no help)`` or ``help: NAME``
    (with its rules in parentheses when asked)."""
    if assist is None or not assist.rules:
        return "plain protocol (no help)"
    return f"help: {assist.name} ({assist.describe()})" if rules else f"help: {assist.name}"


def demo_tasks(limit: int | None = None) -> list[Task]:
    db = chinook_path()
    chosen = DEMO_QUESTIONS[:limit] if limit else DEMO_QUESTIONS
    return [
        Task(f"chinook-{i + 1}", q, db, gold_sql=gold, db_id="chinook", benchmark="demo")
        for i, (q, gold) in enumerate(chosen)
    ]


@dataclass
class DemoItem:
    task: Task
    result: EpisodeResult
    verdict: Verdict

    @property
    def correct(self) -> bool:
        return self.verdict.outcome is Outcome.EQUIVALENT

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "id": self.task.question_id,
            "question": self.task.question,
            "gold_sql": self.task.gold_sql,
            "final_sql": r.final_sql,
            "correct": self.correct,
            "outcome": self.verdict.outcome.value,
            "stop_reason": r.stop_reason.value,
            "answer_source": r.answer_source.value,
            "rounds": r.tool_rounds,
            "tool_calls": r.tool_calls,
            "generated_tokens": r.generated_tokens,
            "total_tokens": r.total_tokens,
            "wall_time_s": round(r.wall_time_s, 2),
        }


@dataclass
class DemoReport:
    model: str
    backend: str
    items: list[DemoItem] = field(default_factory=list)
    wall_time_s: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> int:
        return sum(item.correct for item in self.items)

    @property
    def total(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "backend": self.backend,
            "correct": self.correct,
            "total": self.total,
            "accuracy": round(self.correct / self.total, 4) if self.total else 0.0,
            "wall_time_s": round(self.wall_time_s, 2),
            "config": self.config,
            "questions": [item.to_dict() for item in self.items],
        }


def run_demo(
    backend: Backend,
    *,
    model: str,
    episode: EpisodeConfig,
    sampling: SamplingParams,
    assist: Profile | None = None,
    tasks: Sequence[Task] | None = None,
    seed: int = 0,
    max_batch: int = 8,
    on_item: Callable[[DemoItem], None] | None = None,
) -> DemoReport:
    """Run the demo questions through the runner and score each answer as it finishes."""
    tasks = list(tasks) if tasks is not None else demo_tasks()
    config = RunnerConfig(
        episode=episode, assist=assist or get_profile("none"), sampling=sampling, max_batch=max_batch, tool_workers=2, seed=seed
    )
    report = DemoReport(model=model, backend=backend.name, config=config.to_dict())
    started = time.perf_counter()
    by_index: dict[int, DemoItem] = {}
    with Runner(backend, config) as runner:
        for rollout in runner.run(tasks):
            task = tasks[rollout.index]
            verdict = score_sql(runner.database(task.db_path), rollout.result.final_sql, task.gold_sql or "").verdict
            item = DemoItem(task, rollout.result, verdict)
            by_index[rollout.index] = item
            if on_item is not None:
                on_item(item)
    report.items = [by_index[i] for i in sorted(by_index)]
    report.wall_time_s = time.perf_counter() - started
    return report
