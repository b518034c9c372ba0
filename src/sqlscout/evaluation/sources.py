"""Where a run's episodes come from: an :data:`EpisodeSource` runs a list of jobs and
yields each job with its finished episode, in any order.

Both sources drive episodes through the runner, the one episode driver:
:func:`runner_source` over a model backend (``sqlscout eval``), :func:`scripted_source`
over the scripted backend with a reply function per job (tests and dry runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.task import Task
from sqlscout.env.trace import EpisodeResult
from sqlscout.runner import Runner, RunnerConfig

__all__ = ["EpisodeSource", "Job", "ScriptReply", "runner_source", "scripted_source"]


@dataclass(frozen=True)
class Job:
    """One episode to run: sample ``sample`` of the question at ``index`` in the run."""

    index: int
    sample: int
    task: Task
    key: str


# Runs the given jobs and yields each with its finished episode, in any order.
EpisodeSource = Callable[[Sequence[Job]], Iterable[tuple[Job, EpisodeResult]]]

# The scripted model's reply to one turn of one job's episode.
ScriptReply = Callable[[Job, ScriptTurn], str]


def runner_source(runner: Runner, tasks: Sequence[Task], samples: int) -> EpisodeSource:
    """Episodes from the runner over a model backend, batched, yielded as they finish.

    The runner gets the whole task list and skips the (index, sample) pairs that are not
    asked for, so every episode keeps its seed — a resumed run samples exactly what an
    uninterrupted one would have.
    """

    def run(jobs: Sequence[Job]) -> Iterator[tuple[Job, EpisodeResult]]:
        wanted = {(j.index, j.sample): j for j in jobs}
        skip = [(i, s) for i in range(len(tasks)) for s in range(samples) if (i, s) not in wanted]
        for rollout in runner.run(tasks, samples, skip=skip):
            yield wanted[(rollout.index, rollout.sample)], rollout.result

    return run


def scripted_source(reply: ScriptReply, config: RunnerConfig | None = None, *, tokenizer: Any = None) -> EpisodeSource:
    """Episodes played by a scripted model through the runner: ``reply(job, turn)`` is
    the model's text for that turn of that job's episode.

    >>> from sqlscout.env.task import Task
    >>> task = Task("q", "How many genres?", "src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
    >>> source = scripted_source(lambda job, turn: '{"tool": "submit_sql", "args": {"sql": "SELECT 1"}}')
    >>> [(job.key, result.final_sql) for job, result in source([Job(0, 0, task, "q")])]
    [('q', 'SELECT 1')]
    """

    def run(jobs: Sequence[Job]) -> Iterator[tuple[Job, EpisodeResult]]:
        if not jobs:
            return
        by_episode = {(j.index, j.sample): j for j in jobs}
        by_index = {j.index: j.task for j in jobs}
        # Indices not asked for are skipped by runner_source; any task fills their place.
        tasks = [by_index.get(i, jobs[0].task) for i in range(max(by_index) + 1)]
        samples = max(j.sample for j in jobs) + 1

        def script(turn: ScriptTurn) -> str:
            assert turn.episode is not None, "the runner names every turn's episode"
            return reply(by_episode[turn.episode], turn)

        backend = ScriptedBackend(script, tokenizer=tokenizer)
        with Runner(backend, config) as runner:
            yield from runner_source(runner, tasks, samples)(jobs)

    return run
