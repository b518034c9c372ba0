"""The layer: a profile's rules joined to one episode through its hook points.

:class:`AssistHooks` is a :class:`sqlscout.env.hooks.Hooks`: the episode calls it at each
point and it asks the profile's rules, in the registry's order. Transformations chain
(each rule gets what the rules before it returned); the first decision a rule returns is
the one the episode carries out.
"""

from __future__ import annotations

from typing import Any

from sqlscout.assist.rule import RULES, Rule
from sqlscout.env.chat import Message
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.env.hooks import EpisodeView, Decision, Finish, Hooks, Restart
from sqlscout.env.parser import ParsedTurn, ToolCall
from sqlscout.env.tools import ToolOutcome


__all__ = ["AssistHooks"]


class AssistHooks(Hooks):
    """The hooks of one episode under a profile: ``rules`` maps rule names to their checked
    parameters (see :class:`~sqlscout.assist.profile.Profile`); ``single_shot`` keeps only
    the rules that act on single-shot episodes."""

    def __init__(self, name: str, rules: dict[str, Any], *, single_shot: bool = False) -> None:
        self.name = name
        ordered = [n for n in RULES if n in rules]
        self.rules: list[Rule] = [
            RULES[n](rules[n], self) for n in ordered if RULES[n].single_shot or not single_shot
        ]
        self._by_name = {type(r).name: r for r in self.rules}

    def has(self, name: str) -> bool:
        """Whether the rule called ``name`` is on for this episode."""
        return name in self._by_name

    def rule(self, name: str) -> Rule | None:
        return self._by_name.get(name)

    def prompt(self, episode: EpisodeView, messages: list[Message]) -> list[Message]:
        for rule in self.rules:
            messages = rule.prompt(episode, messages)
        return messages

    def constraint(self, episode: EpisodeView, final: bool) -> ReplyGrammar | None:
        grammar: ReplyGrammar | None = None
        for rule in self.rules:
            grammar = rule.constraint(episode, final, grammar)
        return grammar

    def reply(self, episode: EpisodeView, text: str, parsed: ParsedTurn) -> ParsedTurn | Decision:
        for rule in self.rules:
            decided = rule.reply(episode, text, parsed)
            if not isinstance(decided, ParsedTurn):
                return decided
            parsed = decided
        return parsed

    def loop(self, episode: EpisodeView, parsed: ParsedTurn) -> Decision | None:
        for rule in self.rules:
            decided = rule.loop(episode, parsed)
            if decided is not None:
                return decided
        return None

    def result(self, episode: EpisodeView, call: ToolCall, outcome: ToolOutcome) -> ToolOutcome | Finish | Restart:
        for rule in self.rules:
            decided = rule.result(episode, call, outcome)
            if not isinstance(decided, ToolOutcome):
                return decided
            outcome = decided
        return outcome

    def observation(self, episode: EpisodeView, results: str) -> str | Restart:
        for rule in self.rules:
            observed = rule.observation(episode, results)
            if isinstance(observed, Restart):
                return observed
            results = observed
        return results

    def final(self, episode: EpisodeView, message: str) -> str:
        for rule in self.rules:
            message = rule.final(episode, message)
        return message

    def restarted(self, episode: EpisodeView) -> None:
        for rule in self.rules:
            rule.restarted(episode)
