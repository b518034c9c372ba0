"""Episodes under rules of help (``sqlscout.assist``), built the way the runner builds them:
a profile of the rules named, its hooks, and the version it records.

``assisted(task, db, config, constrain={"reasoning_lines": 0}, repair_hints=True)`` is an
:class:`Episode` under a profile of those rules (``True``: the rule's defaults; a mapping:
its parameters; ``False``: off); ``assisted_shot`` is the single-shot episode under the
same profile (only the rules that act on single-shot episodes).
"""

from __future__ import annotations

from typing import Any

from sqlscout.assist import Profile
from sqlscout.env.chat import ChatFormat
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.sandbox import Database
from sqlscout.env.single_shot import SingleShotEpisode
from sqlscout.env.task import Task
from sqlscout.env.tokens import TokenCounter

__all__ = ["assisted", "assisted_shot", "profile"]


def profile(name: str = "test", /, **rules: Any) -> Profile:
    """A profile called ``name`` of ``rules`` (rule name -> True, False or its parameters)."""
    return Profile.build(name, rules)


def assisted(
    task: Task,
    db: Database,
    config: EpisodeConfig | None = None,
    *,
    chat: ChatFormat | None = None,
    counter: TokenCounter | None = None,
    **rules: Any,
) -> Episode:
    """An agent episode of ``task`` under a profile of ``rules``, with the profile's hooks
    and the version the runner would record."""
    config = config or EpisodeConfig()
    built = profile(**rules)
    return Episode(
        task,
        db,
        config,
        chat=chat,
        counter=counter,
        hooks=built.hooks(),
        version=built.episode_version(config.prompt_version()),
    )


def assisted_shot(
    task: Task,
    db: Database,
    config: EpisodeConfig | None = None,
    *,
    chat: ChatFormat | None = None,
    counter: TokenCounter | None = None,
    **rules: Any,
) -> SingleShotEpisode:
    """The single-shot episode of ``task`` under a profile of ``rules`` (the rules that act
    on single-shot episodes), as the runner's single-shot mode builds it."""
    config = config or EpisodeConfig()
    built = profile(**rules)
    return SingleShotEpisode(
        task,
        db,
        config,
        chat=chat,
        counter=counter,
        hooks=built.hooks(single_shot=True),
        version=built.episode_version(config.prompt_version(single_shot=True), single_shot=True),
    )
