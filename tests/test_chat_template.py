"""Turn glue derived from real Qwen chat templates, checked against transformers' rendering."""

from __future__ import annotations

import pytest

from sqlscout.backends.chat_template import TemplateChat, chat_format_from_template, chat_format_from_tokenizer
from sqlscout.backends.offline_tokenizers import qwen3_tokenizer, trl_chat_template
from sqlscout.env.chat import ChatFormat
from sqlscout.env.prompts import initial_messages

NO_THINK = "<think>\n\n</think>\n\n"
# (trl template, enable_thinking, expected assistant prefix)
CASES = [
    ("qwen2_5", True, ""),
    ("qwen2_5", False, ""),
    ("qwen3", True, ""),
    ("qwen3", False, NO_THINK),
    ("qwen3_5_think", True, "<think>\n"),
    ("qwen3_5_think", False, NO_THINK),
    ("qwen3_5_nothink", True, "<think>\n"),
    ("qwen3_5_nothink", False, NO_THINK),
]
REPLIES = [
    '{"tool": "list_tables", "args": {}}',
    'The Genre table.\n{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}',
]
RESULTS = ["Result 1 of list_tables():\nAlbum\nGenre\n\n[5 tool turns left before you must answer]", "25"]


@pytest.fixture(scope="module")
def tokenizer():
    return qwen3_tokenizer()


def reference(tokenizer, template: str, messages: list[dict], thinking: bool) -> str:
    """What transformers renders for a whole conversation."""
    return tokenizer.apply_chat_template(
        messages, chat_template=template, tokenize=False, add_generation_prompt=True, enable_thinking=thinking
    )


def conversation(replies: list[str]) -> tuple[list[dict], list[dict]]:
    opening = initial_messages("How many genres are there?")
    full = list(opening)
    for reply, result in zip(replies, RESULTS):
        full += [{"role": "assistant", "content": reply}, {"role": "user", "content": result}]
    return opening, full


def transcript(fmt: TemplateChat, opening: list[dict], replies: list[str]) -> str:
    """The transcript as the runner grows it: model text + end of turn + glue, never re-rendered."""
    text = fmt.render(opening)
    for reply, result in zip(replies, RESULTS):
        text += reply + fmt.end_of_turn + fmt.next_turn(result)
    return text


@pytest.mark.parametrize(("name", "thinking", "prefix"), CASES)
def test_glue_reproduces_the_template_for_a_whole_conversation(tokenizer, name, thinking, prefix) -> None:
    template = trl_chat_template(name)
    fmt = chat_format_from_tokenizer(tokenizer, thinking=thinking, template=template)
    assert isinstance(fmt, ChatFormat)
    assert fmt.end_of_turn == "<|im_end|>"
    assert fmt.assistant_prefix == prefix
    assert fmt.stop == ("<|im_end|>", "<|endoftext|>")
    opening, full = conversation(REPLIES)
    assert fmt.render(opening) == reference(tokenizer, template, opening, thinking)
    ours = transcript(fmt, opening, REPLIES)
    theirs = reference(tokenizer, template, full, thinking)
    # The template leaves the generation prefix out of earlier model turns; we keep what
    # the model actually saw. With no prefix the two are identical.
    header = "<|im_start|>assistant\n"
    for reply in REPLIES:
        theirs = theirs.replace(header + reply, header + prefix + reply)
    assert ours == theirs


def test_rerendering_drops_earlier_think_blocks_which_the_glue_keeps(tokenizer) -> None:
    template = trl_chat_template("qwen3_5_think")
    fmt = chat_format_from_tokenizer(tokenizer, thinking=True, template=template)
    replies = ["The user wants a count.\n</think>\n\n" + REPLIES[0], "Now count.\n</think>\n\n" + REPLIES[1]]
    opening, full = conversation(replies)
    ours = transcript(fmt, opening, replies)
    theirs = reference(tokenizer, template, full, True)
    assert "The user wants a count." in ours and "Now count." in ours
    assert "The user wants a count." not in theirs and "Now count." not in theirs
    assert ours.count("<think>\n") == 3 and theirs.count("<think>\n") == 1


def test_the_tokenizers_own_qwen3_template(tokenizer) -> None:
    on = chat_format_from_tokenizer(tokenizer)
    off = chat_format_from_tokenizer(tokenizer, thinking=False)
    assert (on.assistant_prefix, off.assistant_prefix) == ("", NO_THINK)
    assert on.render(initial_messages("q")).endswith("<|im_start|>assistant\n")
    assert off.render(initial_messages("q")).endswith("<|im_start|>assistant\n" + NO_THINK)
    assert on.turn_glue == "\n<|im_start|>user\n"
    assert on.end_of_turn + on.next_turn("x") == "<|im_end|>\n<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n"


def test_end_of_turn_without_a_tokenizer_falls_back_to_the_closing_line() -> None:
    fmt = chat_format_from_template(trl_chat_template("qwen2_5"))
    assert fmt.end_of_turn == "<|im_end|>"
    assert fmt.stop == ("<|im_end|>", "<|endoftext|>")


def test_a_template_that_cannot_hold_the_conversation_is_refused() -> None:
    with pytest.raises(ValueError, match="plain system/user/assistant"):
        chat_format_from_template("{% for m in messages %}{{ m.role }}{% endfor %}")


def test_the_qwen2_5_coder_gguf_template(tokenizer, qwen05_gguf) -> None:
    """The template embedded in the 0.5B preset's GGUF (Qwen2.5-Coder-Instruct)."""
    from gguf import GGUFReader

    field = GGUFReader(qwen05_gguf).fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode("utf-8")
    fmt = chat_format_from_template(template, eos_token="<|im_end|>")
    assert (fmt.end_of_turn, fmt.assistant_prefix) == ("<|im_end|>", "")
    opening, full = conversation(REPLIES)
    assert transcript(fmt, opening, REPLIES) == reference(tokenizer, template, full, True)
    assert template == trl_chat_template("qwen2_5")  # the same text trl ships
