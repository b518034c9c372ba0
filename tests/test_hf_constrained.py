"""Constrained decoding in the transformers backend: llguidance masks a tiny random Qwen3's
logits so that whatever it samples follows the reply grammar."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("llguidance")

from sqlscout.backends.base import GenerationRequest, SamplingParams  # noqa: E402
from sqlscout.backends.guidance import GrammarTokenizer  # noqa: E402
from sqlscout.backends.hf import HFBackend  # noqa: E402
from tiny_models import tiny_qwen3  # noqa: E402
from sqlscout.env.grammar import ReplyGrammar, ThinkMode, TurnKind  # noqa: E402
from sqlscout.env.parser import extract_final_sql, parse_turn  # noqa: E402


@pytest.fixture(scope="module")
def backend() -> HFBackend:
    model, tokenizer = tiny_qwen3(seed=0)
    return HFBackend(model, tokenizer)


def test_every_sampled_token_is_one_the_grammar_allows(backend: HFBackend) -> None:
    prompt = backend.tokenize(backend.chat.render([{"role": "user", "content": "How many albums?"}]))
    grammars = [ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0), ReplyGrammar(TurnKind.FINAL_SQL, ThinkMode.NONE)]
    params = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, max_tokens=24, stop=backend.chat.stop, seed=1)
    requests = [GenerationRequest(params, prompt_ids=prompt, constraint=g) for g in grammars]
    requests.append(GenerationRequest(params.with_(seed=1), prompt_ids=prompt))  # an unconstrained row in the same batch
    gens = backend.generate(requests)
    checker = backend._grammar_tokenizer()  # built by the constrained rows above
    for request, gen in zip(requests[:-1], gens):
        matcher = checker.matcher(request.constraint)
        ids = [t for t in gen.token_ids if t not in backend._eos_ids]
        assert all(matcher.consume(t) for t in ids), gen.text  # a valid prefix, token by token
        assert all(lp > float("-inf") for lp in gen.logprobs or [])
        if gen.finish_reason == "stop":  # finished on its own: a whole reply
            if request.constraint.kind is TurnKind.CALLS:
                assert parse_turn(gen.text).calls and not parse_turn(gen.text).errors
            else:
                assert extract_final_sql(gen.text)
    assert gens[0].text.startswith('{"tool"') or gens[0].text.startswith('{ "tool"')
    assert gens[1].text.startswith("```sql\n")
    assert not gens[-1].text.startswith(("{", "```"))  # the random model, left alone, writes noise


def test_a_reply_forced_to_its_end_stops_on_the_end_of_turn(backend: HFBackend) -> None:
    # With every token but the grammar's masked, a random model can only finish a short
    # fixed reply: list_tables has no arguments, so its call is fully determined.
    from sqlscout.backends.hf import _masked

    checker = GrammarTokenizer(backend.tokenizer, sorted(backend._eos_ids))
    assert checker.tokenize("<|im_end|>") == [backend.tokenizer.convert_tokens_to_ids("<|im_end|>")]
    matcher = checker.matcher(ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0))
    text = '{"tool": "list_tables", "args": {}}'
    for token in checker.tokenize(text):
        allowed = _masked(torch.zeros(backend.model.config.vocab_size), matcher.allowed())
        assert allowed[token] == 0.0
        assert matcher.consume(token)
    allowed = _masked(torch.zeros(backend.model.config.vocab_size), matcher.allowed())
    ends = {int(i) for i in torch.nonzero(allowed == 0.0).flatten()}
    assert ends <= set(backend._eos_ids) | set(checker.tokenize("\n")) | set(checker.tokenize(" "))
    assert ends & set(backend._eos_ids)
