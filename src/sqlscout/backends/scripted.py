"""The scripted backend: model replies from a script, for tests and dry runs.

It answers each request from a list of replies (the k-th model turn of a conversation
gets ``replies[k]``) or from a function of a :class:`ScriptTurn`. Given a real
tokenizer it returns real token ids, so the runner's token bookkeeping, the episode
budget and the trainer's mask are exercised exactly as with a model; without one it
returns text only and counts tokens approximately.

>>> backend = ScriptedBackend(['{"tool": "list_tables", "args": {}}', "SELECT 1"])
>>> params = SamplingParams()
>>> opening = backend.chat.render([{"role": "user", "content": "hi"}])
>>> backend.generate([GenerationRequest(params, prompt=opening)])[0].text
'{"tool": "list_tables", "args": {}}<|im_end|>'
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams
from sqlscout.env.chat import ChatFormat, ChatML
from sqlscout.env.grammar import ReplyGrammar
from sqlscout.errors import ConfigError
from sqlscout.env.tokens import ApproxTokenCounter, TokenCounter, TokenizerCounter

__all__ = ["ScriptTurn", "ScriptedBackend"]


@dataclass(frozen=True)
class ScriptTurn:
    """What a script function sees: the prompt text, which model turn this is (0 for
    the first), the request's sampling settings, the (task index, sample) of the
    episode when the runner sent it, whether this is the forced final turn, and the
    request's reply grammar, if any."""

    prompt: str
    turn: int
    params: SamplingParams
    episode: tuple[int, int] | None = None
    final: bool = False
    constraint: ReplyGrammar | None = None  # the grammar the request asks the reply to follow


class ScriptedBackend(Backend):
    """Replies from ``script``: a list (indexed by model turn) or ``script(turn) -> str``.

    A reply that does not end with a stop string gets the chat format's end-of-turn
    marker appended, as a model stopping on its own would emit it. Replies longer than
    the request's ``max_tokens`` are cut there (``finish_reason == "length"``), counted
    in the tokenizer's tokens when one is given.

    Args:
        script: the replies, or a function computing one.
        tokenizer: anything with ``encode(text, add_special_tokens=False)`` and
            ``decode(ids)`` (a transformers tokenizer); None for text only.
        chat: the turn format; :class:`ChatML` by default.
        raise_on: a function of the turn that, when true, makes ``generate`` raise
            (to test the runner's failure path); None never raises.
        concurrent: declare :attr:`concurrent_requests`, as a server with continuous
            batching does, so that the runner sends every episode's turn in a call of its
            own (a script function may sleep to stand for the time a reply takes).
    """

    name = "scripted"

    def __init__(
        self,
        script: Sequence[str] | Callable[[ScriptTurn], str],
        *,
        tokenizer: Any | None = None,
        chat: ChatFormat | None = None,
        raise_on: Callable[[ScriptTurn], bool] | None = None,
        concurrent: bool = False,
    ) -> None:
        if isinstance(script, str):
            raise ConfigError("script must be a list of replies or a function, not one string")
        self._script = script
        self.tokenizer = tokenizer
        self.chat = chat or ChatML()
        self.counter: TokenCounter = TokenizerCounter(tokenizer) if tokenizer is not None else ApproxTokenCounter()
        self._raise_on = raise_on
        self.concurrent_requests = concurrent
        # The text that opens every model turn; counting it in a prompt tells which turn it is.
        self._turn_opening = self.chat.next_turn("\x00").split("\x00")[-1]

    def tokenize(self, text: str) -> list[int] | None:
        if self.tokenizer is None:
            return None
        encoded = self.tokenizer.encode(text, add_special_tokens=False)
        return list(getattr(encoded, "ids", encoded))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        turns = []
        for request in requests:
            prompt = self._prompt_text(request)
            turns.append(
                ScriptTurn(
                    prompt, self._turn_index(prompt), request.params, request.episode, request.final, request.constraint
                )
            )
        if self._raise_on is not None and any(self._raise_on(t) for t in turns):
            raise RuntimeError("scripted backend failure")
        return [self._reply(t) for t in turns]

    # -- internals ---------------------------------------------------------------

    def _prompt_text(self, request: GenerationRequest) -> str:
        if request.prompt is not None:
            return request.prompt
        if self.tokenizer is None:
            raise ConfigError("the scripted backend needs prompt text when it has no tokenizer")
        return self.tokenizer.decode(list(request.prompt_ids or []))

    def _turn_index(self, prompt: str) -> int:
        # The opening prompt ends with the turn opening too, so the first turn counts 1.
        return max(0, prompt.count(self._turn_opening) - 1) if self._turn_opening else 0

    def _reply(self, turn: ScriptTurn) -> Generation:
        start = time.perf_counter()
        if callable(self._script):
            text = self._script(turn)
        else:
            text = self._script[turn.turn] if turn.turn < len(self._script) else ""
        stops = tuple(self.chat.stop) + tuple(turn.params.stop)
        finish = "stop"
        if not any(text.endswith(s) for s in stops if s):
            text += self.chat.end_of_turn
        limit = turn.params.max_tokens
        if self.tokenizer is None:
            return Generation(text, [], None, finish, elapsed_s=time.perf_counter() - start)
        ids = self.tokenize(text) or []
        if len(ids) > limit:
            ids, finish = ids[:limit], "length"
            text = self.tokenizer.decode(ids)
        n = len(ids)
        prompt_tokens = len(self.tokenize(turn.prompt) or [])
        # A script is certain of its reply: every token has probability 1.
        return Generation(text, ids, [0.0] * n, finish, prompt_tokens, time.perf_counter() - start)
