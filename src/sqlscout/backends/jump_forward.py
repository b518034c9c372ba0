"""Jump-forward decoding of call replies (``LlamaServerConfig.jump_forward``).

Under a reply grammar that allows only call lines, much of a reply is forced: every call
starts ``{"tool": "``, and once the name is chosen ``", "args": {"sql": "`` follows. The
forced text goes into the prompt, evaluated at once, and the model samples only where
the grammar leaves a choice: the tool's name a token at a time until it is decided, then
the arguments and any further call under a grammar for the rest
(:func:`sqlscout.env.grammar.after_name`), stopping at a newline so the next call is
jumped the same way. Tokens of forced text that could merge with what follows are left
to the model (:meth:`JumpForward.forced`), so that it writes the tokens it would have.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable, Sequence

from sqlscout.backends.base import common_prefix
from sqlscout.env.grammar import CALL_HEAD, ReplyGrammar, after_name, jump_names, name_gbnf
from sqlscout.env.tools import TOOLS
from sqlscout.errors import BackendError

__all__ = ["JumpForward", "Sample"]

# What may follow forced text in a reply of calls: a newline and the next call, the end, a
# value's first characters. Forced tokens are those every one of these leaves unchanged.
_PROBES = ("", "\n", '\n{"', " ", '"', "}", "S", "s", "A", "a", "1", "_", "(", "*", ",", ".", "<|im_end|>")

# (GBNF, most tokens, an extra stop string, the reply's tokens so far) -> the server's
# /completion response for the prompt followed by those tokens.
Sample = Callable[[str, int, "str | None", list[int]], dict[str, Any]]


class JumpForward:
    """Decodes replies of call lines jump-forward with a tokenizer's ``tokenize`` and
    ``detokenize`` (the server's), caching the few forced strings, which recur."""

    def __init__(self, tokenize: Callable[[str], list[int]], detokenize: Callable[[Sequence[int]], str]) -> None:
        self._tokenize, self._detokenize = tokenize, detokenize
        self._cache: dict[tuple[str, bool], tuple[list[int], str]] = {}

    def reply(
        self, grammar: ReplyGrammar, max_tokens: int, sample: Sample
    ) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
        """One reply under ``grammar`` (which :func:`jump_names` accepts): the last response
        with ``tokens`` holding the whole reply, the timings of every request, and how many
        of the reply's tokens were forced rather than sampled."""
        reply: list[int] = []
        written = ""  # the reply's text so far
        timings: list[dict[str, Any]] = []
        forced_count = 0

        def ask(rules: str, budget: int, stop: str | None = None) -> dict[str, Any]:
            nonlocal written
            data = sample(rules, budget, stop, reply)
            timings.append(data.get("timings") or {})
            new = [int(t) for t in data.get("tokens") or []]
            reply.extend(new)
            written += self._detokenize(new)
            return data

        def force(target: str, whole: bool = False) -> str:
            """Write ``target``'s part after the reply so far (the tokens that stay the same
            whatever follows, or all of them when ``whole``); the rest, for the model."""
            nonlocal written, forced_count
            tokens, kept = self.forced(target[len(written) :], whole)
            reply.extend(tokens)
            forced_count += len(tokens)
            written += kept
            return target[len(written) :]

        def done(data: dict[str, Any], stop_type: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
            return {**data, "tokens": reply, **({"stop_type": stop_type} if stop_type else {})}, timings, forced_count

        data: dict[str, Any] = {}
        line = ""  # where the call line starts: the reply so far, up to its last newline
        while True:  # one call line at a time
            candidates = jump_names(grammar) or ()
            head = line + CALL_HEAD
            if len(candidates) > 1:
                left = force(head)
                stage = len(written)  # the model writes `left`, the name and its closing quote
                while len(candidates) > 1:  # a token at a time, until the name is decided
                    if len(reply) >= max_tokens:
                        return done(data, "limit")
                    before = len(written)
                    data = ask(name_gbnf(tuple((left + n + '"')[before - stage :] for n in candidates)), 1)
                    candidates = tuple(n for n in candidates if (head + n + '"').startswith(written))
                    if len(written) == before or not candidates:
                        raise BackendError(f"llama.cpp left the call grammar: wrote {written!r} for a call")
            forced, rest = after_name(grammar, candidates[0])
            target = head + candidates[0] + forced
            if rest is None:  # nothing is left to choose: the call, and the reply, are complete
                force(target, whole=True)
                return done(data, "eos")
            left = force(target)
            if len(reply) >= max_tokens:
                return done(data, "limit")
            if left:
                root, _, rules = rest.partition("\n")
                rest = root.replace("root ::= ", f"root ::= {json.dumps(left)} ", 1) + "\n" + rules
            more = grammar.max_calls > 1 and not TOOLS[candidates[0]].ends_episode
            data = ask(rest, max_tokens - len(reply), "\n" if more else None)
            line = written[: written.rfind("\n") + 1]
            if not (more and data.get("stop_type") == "word" and line and CALL_HEAD.startswith(written[len(line) :])):
                return done(data)
            # The model opened another call: the next one is jumped too, from the tools that
            # may follow a first call (the exploring ones), one call fewer.
            explore = tuple(t for t in (grammar.tools or TOOLS) if not TOOLS[t].ends_episode)
            grammar = replace(grammar, tools=explore, max_calls=grammar.max_calls - 1)

    def forced(self, text: str, whole: bool) -> tuple[list[int], str]:
        """Token ids of forced text and the text they spell: all of it when ``whole``, else
        only the tokens that stay the same whatever follows (``... {}}`` is `` {``, ``}}``
        alone but `` {}``, ``}\\n`` before a newline: the model must be free to write the
        tokens it would), which leaves at least the last token to the model."""
        if not text:
            return [], ""
        key = (text, whole)
        found = self._cache.get(key)
        if found is None:
            alone = self._tokenize(text)
            tokens = alone
            if not whole:
                for probe in _PROBES:
                    tokens = tokens[: common_prefix(tokens, self._tokenize(text + probe))]
                tokens = tokens[: len(alone) - 1]
            spelled = self._detokenize(tokens) if tokens else ""
            found = (tokens, spelled) if text.startswith(spelled) else ([], "")  # exact, or nothing forced
            self._cache[key] = found
        return list(found[0]), found[1]
