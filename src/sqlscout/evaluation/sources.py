"""Where a run's episodes come from: an :data:`EpisodeSource` runs a list of jobs and
yields each job with its finished episode, in any order.

:func:`runner_source` drives a model backend through the runner (``sqlscout eval``);
:func:`policy_source` plays each episode with a scripted policy, one after another (the
test seam, no backend needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.trace import EpisodeResult
from sqlscout.evaluation.config import EvalMode
from sqlscout.policy import Policy, run_episode
from sqlscout.runner import Runner
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task

__all__ = ["EpisodeSource", "Job", "policy_source", "runner_source"]


@dataclass(frozen=True)
class Job:
    """One episode to run: sample ``sample`` of the question at ``index`` in the run."""

    index: int
    sample: int
    task: Task
    key: str


# Runs the given jobs and yields each with its finished episode, in any order.
EpisodeSource = Callable[[Sequence[Job]], Iterable[tuple[Job, EpisodeResult]]]


# Runs the given jobs and yields each with its finished episode, in any order.
EpisodeSource = Callable[[Sequence[Job]], Iterable[tuple[Job, EpisodeResult]]]


def policy_source(
    policy_for: Callable[[Job], Policy],
    episode: EpisodeConfig | None = None,
    *,
    mode: EvalMode = EvalMode.AGENT,
) -> EpisodeSource:
    """Episodes driven one after another by a policy per job (a scripted model).

    The lightest source: no backend, no threads. ``policy_for(job)`` returns the
    policy that plays that job's episode.
    """

    def run(jobs: Sequence[Job]) -> Iterator[tuple[Job, EpisodeResult]]:
        dbs: dict[Path, Database] = {}
        for job in jobs:
            db = dbs.get(job.task.db_path) or dbs.setdefault(job.task.db_path, Database(job.task.db_path))
            if mode is EvalMode.SINGLE_SHOT:
                from sqlscout.env.single_shot import SingleShotEpisode

                shot = SingleShotEpisode(job.task, db, episode)
                policy = policy_for(job)
                while not shot.done:
                    shot.step(policy(shot, shot.request()))  # type: ignore[arg-type]
                yield job, shot.result()
            else:
                yield job, run_episode(Episode(job.task, db, episode), policy_for(job))

    return run


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
