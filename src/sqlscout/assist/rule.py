"""What a rule of help is, and the registry of them.

A rule is a class with a name, a one-line summary, what was measured of it, and typed
parameters; it acts through the hook points of :class:`sqlscout.env.hooks.Hooks` it
overrides, and nowhere else. One instance serves one episode (it may keep state across
turns); :class:`~sqlscout.assist.layer.AssistHooks` calls the rules of a profile in the
registry's order, so that a profile's meaning does not depend on how it lists them.

A rule's parameters are a frozen dataclass (``Params``) whose fields carry defaults and
a ``help`` in their metadata; a profile checks its values against it with pydantic.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from sqlscout.env.chat import Message
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.env.hooks import EpisodeView, Decision, Finish, Restart
from sqlscout.env.parser import ParsedTurn, ToolCall
from sqlscout.env.tools import ToolOutcome



class Siblings(Protocol):
    """What a rule may ask of the other rules of its episode's profile."""

    def has(self, name: str) -> bool: ...

    def rule(self, name: str) -> Rule | None: ...

__all__ = ["RULES", "NoParams", "Rule", "register"]


@dataclass(frozen=True)
class NoParams:
    """A rule without parameters."""


class Rule:
    """One rule of help. Subclasses set the class attributes and override hooks.

    Attributes:
        name: what a profile calls it.
        summary: one line: what it does.
        measured: one line: what it did where it was not chosen (docs/evaluation.md).
        Params: its parameters (a frozen dataclass; :class:`NoParams` when none).
        needs: rules it only works with (a profile naming it without them is refused).
        single_shot: it acts on single-shot episodes too (the prompt, the grammar).
        rewrites_transcript: it may begin the transcript again (a :class:`Restart`), so a
            rollout's tokens are not one transcript: a trainer refuses it.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    measured: ClassVar[str] = "not measured apart"
    Params: ClassVar[type] = NoParams
    needs: ClassVar[tuple[str, ...]] = ()
    single_shot: ClassVar[bool] = False
    rewrites_transcript: ClassVar[bool] = False

    def __init__(self, params: Any, layer: Siblings) -> None:
        self.params = params
        self.layer = layer

    # The hook points, as in sqlscout.env.hooks.Hooks; constraint narrows what the rules
    # before it asked for.

    def prompt(self, episode: EpisodeView, messages: list[Message]) -> list[Message]:
        return messages

    def constraint(self, episode: EpisodeView, final: bool, grammar: ReplyGrammar | None) -> ReplyGrammar | None:
        return grammar

    def reply(self, episode: EpisodeView, text: str, parsed: ParsedTurn) -> ParsedTurn | Decision:
        return parsed

    def loop(self, episode: EpisodeView, parsed: ParsedTurn) -> Decision | None:
        return None

    def result(self, episode: EpisodeView, call: ToolCall, outcome: ToolOutcome) -> ToolOutcome | Finish | Restart:
        return outcome

    def observation(self, episode: EpisodeView, results: str) -> str | Restart:
        return results

    def final(self, episode: EpisodeView, message: str) -> str:
        return message

    def restarted(self, episode: EpisodeView) -> None:
        """The transcript began again: forget what belonged to the replies now gone."""

    @classmethod
    def source(cls) -> str:
        """The text of the module that defines the rule (part of a profile's version)."""
        return inspect.getsource(inspect.getmodule(cls) or cls)


RULES: dict[str, type[Rule]] = {}


def register(rule: type[Rule]) -> type[Rule]:
    """Add a rule class to :data:`RULES` (a class decorator); the order of registration
    is the order the rules act in."""
    if rule.name in RULES:
        raise ValueError(f"two rules are called {rule.name!r}")
    RULES[rule.name] = rule
    return rule
