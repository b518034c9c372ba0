"""The reply grammar under llguidance: token masks for in-process decoding.

llguidance (``pip install llguidance``: abi3 wheels, no dependencies) reads the GBNF text
of :class:`~sqlscout.env.grammar.ReplyGrammar` and, given the model's tokenizer, says
which tokens may come next. The transformers backend masks its logits with it, and the
tests use it to check what the grammar accepts, token by token, as a model would emit it.

One thing differs from llama.cpp: where the tokenizer has ``<think>`` / ``</think>`` as
special tokens (Qwen3, Qwen3.5), a model emits them as one special token each, which no
string literal matches; those literals are rewritten to llguidance's special-token form.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Sequence

from sqlscout.env.grammar import ReplyGrammar
from sqlscout.errors import BackendError

__all__ = ["GrammarTokenizer", "ReplyMatcher"]

_THINK_TAGS = ("<think>", "</think>")


class GrammarTokenizer:
    """A tokenizer as llguidance needs it, built once per model (it takes about a second).

    Args:
        hf_tokenizer: a fast transformers tokenizer.
        eos_ids: the token ids that end a turn (they are allowed once the grammar is complete).
    """

    def __init__(self, hf_tokenizer: Any, eos_ids: Sequence[int] = ()) -> None:
        try:
            import llguidance
            import llguidance.hf
        except ImportError:
            raise BackendError("constrained decoding with transformers needs llguidance: pip install llguidance") from None
        self._llguidance = llguidance
        eos = sorted(set(eos_ids)) or None
        self.tokenizer = llguidance.hf.from_tokenizer(hf_tokenizer, eos_token=eos)
        self._special_think = all(self._is_special(tag) for tag in _THINK_TAGS)

    def _is_special(self, text: str) -> bool:
        ids = self.tokenizer.tokenize_str(text)
        return len(ids) == 1 and self.tokenizer.is_special_token(ids[0])

    def tokenize(self, text: str) -> list[int]:
        """Ids of ``text`` with special-token text (``<|im_end|>``) as its single id."""
        return list(self.tokenizer.tokenize_str(text, parse_special=True))

    @lru_cache(maxsize=16)
    def compiled(self, grammar: ReplyGrammar) -> str:
        """The llguidance grammar of ``grammar`` for this tokenizer."""
        from llguidance.gbnf_to_lark import any_to_lark

        lark = any_to_lark(grammar.gbnf())
        if self._special_think:
            for tag in _THINK_TAGS:
                lark = lark.replace(f'"{tag}"', tag)
            # A special token can only stand in a rule (lower case), not in a terminal.
            lark = re.sub(r"\bTHINK\b", "think", lark)
        return str(self._llguidance.LLMatcher.grammar_from_lark(lark))

    def matcher(self, grammar: ReplyGrammar) -> ReplyMatcher:
        return ReplyMatcher(self, grammar)


class ReplyMatcher:
    """Where one reply stands in its grammar: the allowed next tokens, and whether it is complete."""

    def __init__(self, tokenizer: GrammarTokenizer, grammar: ReplyGrammar) -> None:
        llguidance = tokenizer._llguidance
        self._matcher = llguidance.LLMatcher(tokenizer.tokenizer, tokenizer.compiled(grammar), log_level=0)
        if self._matcher.is_error():
            raise BackendError(f"llguidance rejected the reply grammar: {self._matcher.get_error()}")
        self.vocab_size = tokenizer.tokenizer.vocab_size

    def allowed(self) -> bytes:
        """The bitmask of allowed next tokens (bit ``i`` of 32-bit little-endian word ``i // 32``)."""
        return bytes(self._matcher.compute_bitmask())

    def consume(self, token: int) -> bool:
        """Advance by one sampled token; False when the grammar does not allow it."""
        return bool(self._matcher.consume_token(token))

    def accepts(self, tokens: Sequence[int]) -> bool:
        """Whether ``tokens`` are a complete reply (consumes them)."""
        return bool(self._matcher.consume_tokens(list(tokens))) and self._matcher.is_accepting()

    @property
    def done(self) -> bool:
        """The grammar allows nothing more (after the end-of-turn token)."""
        return bool(self._matcher.is_stopped())
