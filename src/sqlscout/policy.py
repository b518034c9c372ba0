"""The scripted policy: the test seam for everything that needs a model.

A policy maps the episode's pending turn to the model's reply. :class:`ScriptedPolicy`
answers from a list of texts, or from a function of the episode and its request.

>>> from sqlscout.env.sandbox import Database
>>> from sqlscout.env.task import Task
>>> task = Task("q", "How many genres?", "../shared/data/chinook/Chinook_Sqlite.sqlite")
>>> policy = ScriptedPolicy(['{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}'])
>>> run_episode(Episode(task, Database(task.db_path)), policy).final_sql
'SELECT COUNT(*) FROM Genre'
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

from sqlscout.env.episode import Episode, TurnRequest
from sqlscout.env.trace import EpisodeResult

__all__ = ["Policy", "ScriptedPolicy", "run_episode"]


class Policy(Protocol):
    def __call__(self, episode: Episode, request: TurnRequest) -> str: ...


class ScriptedPolicy:
    """Replies in order from ``replies``, or computed by ``replies(episode, request)``.

    A list that runs out answers with empty replies (which the episode treats as a turn
    without a tool call), so a script never raises mid-episode.
    """

    def __init__(self, replies: Sequence[str] | Callable[[Episode, TurnRequest], str]) -> None:
        self._function = replies if callable(replies) else None
        self._replies = list(replies) if not callable(replies) else []
        self._next = 0

    def __call__(self, episode: Episode, request: TurnRequest) -> str:
        if self._function is not None:
            return self._function(episode, request)
        if self._next >= len(self._replies):
            return ""
        reply = self._replies[self._next]
        self._next += 1
        return reply


def run_episode(episode: Episode, policy: Policy) -> EpisodeResult:
    """Drive ``episode`` with ``policy`` to the end and return its result."""
    while not episode.done:
        request = episode.request()
        episode.step(policy(episode, request))
    return episode.result()
