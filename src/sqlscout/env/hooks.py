"""The points where a layer beside the protocol may act on an episode (SPEC §4, "Plain and
assisted").

The plain episode is the protocol alone: what a trained model sees and what training
uses. Help for untrained models lives outside ``sqlscout.env`` (``sqlscout.assist``)
and reaches the episode only through the methods of :class:`Hooks`, each called at one
point of the turn, the way verifiers varies an environment through ``env_response`` and
``is_completed``:

========================  ==============================================================
``prompt``                the opening messages, before the first turn
``constraint``            the grammar the next reply must follow (None: free text)
``reply``                 a parsed exploration reply, before its calls run
``loop``                  a reply that only repeats calls made before (or an unreadable
                          reply sent again), before its calls run
``result``                one tool call's outcome, before it is recorded
``observation``           the results message, before its budget line
``final``                 the forced final turn's message
``restarted``             the transcript has begun again at a prompt
========================  ==============================================================

A hook returns what it was given (changed or not) or, where the table allows it, a
:data:`Decision`: the episode does what the decision says and knows nothing of why. The
base class changes nothing, so ``Hooks()`` is the plain protocol.

>>> Hooks().name
'plain'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union

from sqlscout.env.chat import ChatFormat, Message
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.env.parser import ParsedTurn, ToolCall
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tools import ToolOutcome
from sqlscout.env.trace import AnswerSource, RoundRecord, StopReason

__all__ = ["Answer", "Decision", "EndExploration", "EpisodeView", "Finish", "Hooks", "Restart"]


class EpisodeView(Protocol):
    """What a hook may read of an episode, and do with it."""

    task: Task
    db: Database
    config: EpisodeConfig
    chat: ChatFormat
    messages: list[Message]
    rounds: list[RoundRecord]
    tested: list[str]  # queries that ran without error, as written, latest last
    last_good_sql: str | None
    schema_shown: bool  # whether the prompt shows CREATE TABLE statements
    starts: int
    turn_ends: float | None  # when the running turn's time for tool calls is up

    @property
    def live_rounds(self) -> list[RoundRecord]: ...

    @property
    def tool_rounds(self) -> int: ...

    @property
    def rounds_left(self) -> int: ...

    @property
    def transcript(self) -> str: ...

    def run(self, call: ToolCall, turn_ends: float | None = None) -> ToolOutcome: ...

    def track(self, call: ToolCall, outcome: ToolOutcome) -> None: ...

    def compile_error(self, sql: str) -> str | None: ...

    def compiles(self, sql: str) -> bool: ...

    def opening_messages(self, *, schema_sql: str | None = None, intro: str | None = None) -> list[Message]: ...

    def fits(self, messages: list[Message]) -> bool: ...


@dataclass(frozen=True)
class Finish:
    """End the episode now with ``sql`` as the answer (``note``, when given, is recorded
    as the result of the call that decided it)."""

    sql: str
    source: AnswerSource
    reason: StopReason
    note: str | None = None


@dataclass(frozen=True)
class Answer:
    """Run none of the reply's calls; answer it with ``text`` (the exploration goes on)."""

    text: str


@dataclass(frozen=True)
class EndExploration:
    """Run none of the reply's calls; answer with ``text`` and go to the final turn."""

    text: str
    reason: StopReason


@dataclass(frozen=True)
class Restart:
    """Begin the transcript again at a prompt: ``messages``, or the current start's prompt
    when None. Every round stays in the trace and counts against the round limit; ``note``
    is the trace's record of why (the model does not read it)."""

    note: str
    messages: list[Message] | None = None


Decision = Union[Finish, Answer, EndExploration, Restart]


class Hooks:
    """The plain protocol: every hook returns what it was given. One instance serves one
    episode, so a subclass may keep state across its turns."""

    name = "plain"

    def prompt(self, episode: EpisodeView, messages: list[Message]) -> list[Message]:
        """The opening messages (system and user) the episode starts from."""
        return messages

    def constraint(self, episode: EpisodeView, final: bool) -> ReplyGrammar | None:
        """The grammar of the next reply (``final``: the forced final turn); None: free."""
        return None

    def reply(self, episode: EpisodeView, text: str, parsed: ParsedTurn) -> ParsedTurn | Decision:
        """An exploration reply as parsed, before its calls run: the calls to run (the
        same, or others in their place), or a decision."""
        return parsed

    def loop(self, episode: EpisodeView, parsed: ParsedTurn) -> Decision | None:
        """A reply whose calls were all made before since the transcript began (or a reply
        that parsed to no call, sent before word for word): a decision, or None to run it
        as the protocol does."""
        return None

    def result(self, episode: EpisodeView, call: ToolCall, outcome: ToolOutcome) -> ToolOutcome | Finish | Restart:
        """What one call produced, before the episode records it: the outcome to record,
        or a decision to end the episode or begin again (the reply's later calls do not run)."""
        return outcome

    def observation(self, episode: EpisodeView, results: str) -> str | Restart:
        """The message answering an exploration reply, before its budget line, or a
        decision to begin again (``results`` is then the trace's record of the reply)."""
        return results

    def final(self, episode: EpisodeView, message: str) -> str:
        """The message that asks for the final answer."""
        return message

    def restarted(self, episode: EpisodeView) -> None:
        """The transcript has begun again at a prompt (a :class:`Restart` was carried out)."""
