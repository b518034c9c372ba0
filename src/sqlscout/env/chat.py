"""The text form of a conversation: how the first prompt is rendered and how each
later turn is appended as raw text in the model's own format (SPEC §4 "Context").

The history is never re-rendered from messages: Qwen templates drop earlier
``<think>`` blocks when they re-render, and the model must see what it wrote. A
:class:`ChatFormat` therefore renders the opening messages once and afterwards only
supplies the *glue* that closes the model's turn, holds the tool results as a user
turn, and opens the next model turn. Backends derive a format from a tokenizer's
chat template (``sqlscout.backends.chat_template``); :class:`ChatML` is the built-in
Qwen-style default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

__all__ = ["ChatFormat", "ChatML", "Message"]

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": ...}


@runtime_checkable
class ChatFormat(Protocol):
    """How turns look as text.

    After the opening prompt, the transcript grows as: model text, ``end_of_turn``
    (emitted by the model itself when it stops on its own), then ``next_turn(results)``.
    """

    end_of_turn: str
    stop: tuple[str, ...]

    def render(self, messages: Sequence[Message]) -> str:
        """The opening prompt, ending where the model starts its first turn."""
        ...

    def next_turn(self, user_text: str) -> str:
        """Text after ``end_of_turn``: the user turn holding ``user_text``, then the
        opening of the next model turn."""
        ...


@dataclass(frozen=True)
class ChatML:
    """Qwen's ChatML turns.

    ``assistant_prefix`` is text the template puts at the start of every model turn
    (e.g. an empty ``<think>\\n\\n</think>\\n\\n`` block when thinking is off).

    >>> fmt = ChatML()
    >>> print(fmt.end_of_turn + fmt.next_turn("ok"))
    <|im_end|>
    <|im_start|>user
    ok<|im_end|>
    <|im_start|>assistant
    <BLANKLINE>
    """

    assistant_prefix: str = ""
    end_of_turn: str = "<|im_end|>"
    stop: tuple[str, ...] = ("<|im_end|>", "<|endoftext|>")

    def render(self, messages: Sequence[Message]) -> str:
        parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
        return "".join(parts) + "<|im_start|>assistant\n" + self.assistant_prefix

    def next_turn(self, user_text: str) -> str:
        return f"\n<|im_start|>user\n{user_text}<|im_end|>\n<|im_start|>assistant\n" + self.assistant_prefix
