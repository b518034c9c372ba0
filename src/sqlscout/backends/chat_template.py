"""A :class:`~sqlscout.env.chat.ChatFormat` derived from a model's Jinja chat template.

The opening prompt is the template's own rendering (with ``enable_thinking`` on for
thinking models unless told otherwise). Later turns are never re-rendered: Qwen
templates drop earlier ``<think>`` blocks — and even the empty ``<think></think>`` of
no-think mode — from history, so a re-rendered transcript is not what the model saw
while generating. Instead the *glue* is cut out of one probe rendering with marker
strings::

    render([system S, user U1, assistant A, user U2], add_generation_prompt=True)
        = ... A <end_of_turn> <turn_glue> U2 <turn_open>

``end_of_turn`` is what the model emits to end its turn (``<|im_end|>`` for Qwen),
``turn_glue`` opens the user turn, and ``turn_open`` closes it and opens the next
model turn, generation prompt included (``<think>\\n`` for Qwen3.5 thinking). The
transcript then grows as ``completion (+ end_of_turn if it was cut) + turn_glue +
results + turn_open``: exactly what the template renders for the same conversation,
except that the template leaves the assistant prefix (:attr:`TemplateChat.assistant_prefix`)
and any think block out of *earlier* model turns. docs/backends.md shows the difference.

>>> from sqlscout.backends.offline_tokenizers import trl_chat_template
>>> fmt = chat_format_from_template(trl_chat_template("qwen3_5_think"), eos_token="<|im_end|>")
>>> fmt.end_of_turn, fmt.assistant_prefix
('<|im_end|>', '<think>\\n')
>>> print(fmt.end_of_turn + fmt.next_turn("ok"))
<|im_end|>
<|im_start|>user
ok<|im_end|>
<|im_start|>assistant
<think>
<BLANKLINE>
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Sequence

from sqlscout.env.chat import Message
from sqlscout.errors import ConfigError

__all__ = ["TemplateChat", "chat_format_from_template", "chat_format_from_tokenizer", "render_template"]

# Marker strings for the probe conversation: plain letters, so no template trims or
# escapes them, and unlikely in any template text.
_SYSTEM = "SQLSCOUTPROBESYSTEM"
_USER1 = "SQLSCOUTPROBEUSERONE"
_ASSISTANT = "SQLSCOUTPROBEASSISTANT"
_USER2 = "SQLSCOUTPROBEUSERTWO"


@dataclass(frozen=True)
class TemplateChat:
    """The turn format of one chat template (build it with :func:`chat_format_from_template`).

    Attributes:
        template: the Jinja chat template (renders the opening prompt).
        end_of_turn: the token text the model emits to end its turn.
        turn_glue: text after ``end_of_turn`` that opens the user turn.
        turn_open: text after the user's text: closes the user turn and opens the model's.
        assistant_prefix: the part of ``turn_open`` after the model-turn header that the
            template adds only when generating (``<think>\\n`` or an empty think block).
        stop: strings that end a model turn.
        thinking: the ``enable_thinking`` passed to the template (None: not passed).
        bos_token, eos_token: the values the template sees for those variables.
    """

    template: str = field(repr=False)
    end_of_turn: str
    turn_glue: str
    turn_open: str
    assistant_prefix: str
    stop: tuple[str, ...]
    thinking: bool | None = True
    bos_token: str = ""
    eos_token: str = ""

    def render(self, messages: Sequence[Message]) -> str:
        return render_template(
            self.template,
            messages,
            add_generation_prompt=True,
            enable_thinking=self.thinking,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
        )

    def next_turn(self, user_text: str) -> str:
        return self.turn_glue + user_text + self.turn_open


def chat_format_from_template(
    template: str,
    *,
    thinking: bool | None = True,
    bos_token: str = "",
    eos_token: str = "",
    special_tokens: Iterable[str] = (),
    end_of_turn: str | None = None,
    extra_stop: Iterable[str] = ("<|endoftext|>",),
) -> TemplateChat:
    """Derive the turn glue of ``template`` (see the module docstring).

    Args:
        template: a Jinja chat template (a tokenizer's ``chat_template``, a GGUF's
            ``tokenizer.chat_template``, or one of trl's copies).
        thinking: ``enable_thinking`` for the template; None leaves it undefined.
        bos_token, eos_token: the tokenizer's, as the template sees them.
        special_tokens: the tokenizer's special tokens; the one the turn closing starts
            with (longest match, ``eos_token`` included) is the end-of-turn marker.
        end_of_turn: give the end-of-turn marker explicitly instead.
        extra_stop: more stop strings besides ``end_of_turn`` and ``eos_token``.
    """
    probe = _probe(template, thinking, bos_token, eos_token)
    closing = probe["closing"]
    if end_of_turn is None:
        candidates = [t for t in {eos_token, *special_tokens} if t and closing.startswith(t)]
        if candidates:
            end_of_turn = max(candidates, key=len)
        elif "\n" in closing and closing.index("\n") > 0:
            end_of_turn = closing[: closing.index("\n")]
        else:
            raise ConfigError("cannot tell this chat template's end-of-turn marker; pass end_of_turn=")
    if not closing.startswith(end_of_turn):
        raise ConfigError(f"the template does not close a model turn with {end_of_turn!r} (it writes {closing[:40]!r})")
    stop = tuple(dict.fromkeys(s for s in (end_of_turn, eos_token, *extra_stop) if s))
    return TemplateChat(
        template=template,
        end_of_turn=end_of_turn,
        turn_glue=closing[len(end_of_turn) :],
        turn_open=probe["turn_open"],
        assistant_prefix=probe["assistant_prefix"],
        stop=stop,
        thinking=thinking,
        bos_token=bos_token,
        eos_token=eos_token,
    )


def chat_format_from_tokenizer(tokenizer: Any, *, thinking: bool | None = True, template: str | None = None) -> TemplateChat:
    """The format of a transformers tokenizer's chat template (or ``template`` if given)."""
    template = template or getattr(tokenizer, "chat_template", None)
    if not template:
        raise ConfigError("the tokenizer has no chat template; pass one (e.g. from trl's chat_templates)")
    if isinstance(template, dict):  # several named templates: the default one
        template = template.get("default") or next(iter(template.values()))
    special = list(getattr(tokenizer, "all_special_tokens", []) or [])
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    special += [str(t) for t in added.values()]
    return chat_format_from_template(
        template,
        thinking=thinking,
        bos_token=tokenizer.bos_token or "",
        eos_token=tokenizer.eos_token or "",
        special_tokens=special,
    )


def _probe(template: str, thinking: bool | None, bos_token: str, eos_token: str) -> dict[str, str]:
    def render(messages: list[Message], generate: bool) -> str:
        return render_template(
            template, messages, add_generation_prompt=generate, enable_thinking=thinking,
            bos_token=bos_token, eos_token=eos_token,
        )  # fmt: skip

    opening = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _USER1}]
    full = opening + [{"role": "assistant", "content": _ASSISTANT}, {"role": "user", "content": _USER2}]
    text = render(full, True)
    for marker in (_SYSTEM, _USER1, _ASSISTANT, _USER2):
        if text.count(marker) != 1:
            raise ConfigError("the chat template does not render a plain system/user/assistant conversation")
    after_user1 = text.index(_USER1) + len(_USER1)
    header = text[after_user1 : text.index(_ASSISTANT)]  # closes user 1, opens the model's turn
    closing = text[text.index(_ASSISTANT) + len(_ASSISTANT) : text.index(_USER2)]
    turn_open = text[text.index(_USER2) + len(_USER2) :]
    first = render(opening, True)
    if not first.endswith(turn_open) or not turn_open.startswith(header):
        raise ConfigError("the chat template opens model turns differently in history and when generating")
    return {"closing": closing, "turn_open": turn_open, "assistant_prefix": turn_open[len(header) :]}


def render_template(
    template: str,
    messages: Sequence[Message],
    *,
    add_generation_prompt: bool,
    enable_thinking: bool | None = None,
    **variables: Any,
) -> str:
    """Render a chat template the way transformers does (same Jinja settings and helpers)."""
    context: dict[str, Any] = {"messages": list(messages), "add_generation_prompt": add_generation_prompt, **variables}
    if enable_thinking is not None:
        context["enable_thinking"] = enable_thinking
    return _compile(template).render(**context)


@lru_cache(maxsize=32)
def _compile(template: str) -> Any:
    from jinja2.exceptions import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)
