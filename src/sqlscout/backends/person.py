"""A person as the model: each turn's text is read from them (``sqlscout play``).

The runner drives a person's episode the way it drives a model's, so what they see and
what their replies do is exactly what a model would see and do.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest
from sqlscout.env.chat import ChatML
from sqlscout.env.tokens import ApproxTokenCounter

__all__ = ["PersonBackend"]


class PersonBackend(Backend):
    """Replies come from ``read_turn(final)`` (``final``: the forced final turn, SQL
    only); a None reply (the input ended) fails the turn, which ends the episode."""

    name = "person"

    def __init__(self, read_turn: Callable[[bool], str | None]) -> None:
        self.read_turn = read_turn
        self.chat = ChatML()
        self.counter = ApproxTokenCounter()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        replies = []
        for request in requests:
            started = time.perf_counter()
            text = self.read_turn(request.final)
            if text is None:
                raise EOFError("input ended before the episode did")
            replies.append(Generation(text, [], None, "stop", elapsed_s=time.perf_counter() - started))
        return replies
