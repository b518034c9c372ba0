"""Model text → tool calls, and model text → final SQL (SPEC §4).

Tolerant by design: reasoning before the calls, ``<think>`` blocks, code fences,
trailing prose, ``arguments`` instead of ``args``, arguments given as a JSON string,
several objects in one reply, single-quoted Python-style dicts. It never raises: what
cannot be read becomes a :attr:`ParsedTurn.errors` line the model is shown.

>>> turn = parse_turn('Let me look.\\n{"tool": "describe_table", "arguments": {"table_name": "singer"}} done')
>>> turn.calls
[ToolCall(tool='describe_table', args={'table_name': 'singer'})]
>>> extract_final_sql("Here it is:\\n```sql\\nSELECT 1;\\n```")
'SELECT 1'
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParsedTurn", "ToolCall", "extract_final_sql", "parse_turn", "strip_reasoning"]

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_NAME_KEYS = ("tool", "tool_name", "name", "function")
_ARG_KEYS = ("args", "arguments", "parameters", "input", "params")
_CALLISH = re.compile(r"""\{\s*["'](?:tool|tool_name|name|function)["']\s*:""")
# Where an object can start: a brace, then a quoted key or the closing brace. Skipping
# other braces keeps prose full of "{" (or a degenerate "{{{{..." reply) linear.
_OBJECT_START = re.compile(r"""\{\s*["'}]""")


@dataclass(frozen=True)
class ToolCall:
    tool: str
    args: dict[str, Any]

    def key(self) -> str:
        """Identity of a call, used to run identical calls of one round once."""
        return json.dumps([self.tool, self.args], sort_keys=True, default=str)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.tool}({inner})"


@dataclass(frozen=True)
class ParsedTurn:
    """The calls found in one model reply, and what could not be read. ``notes`` (by the
    position of a call) is what the environment says before a call's result: a layer
    beside the protocol (:mod:`sqlscout.env.hooks`) notes there a call it changed."""

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)


def strip_reasoning(text: str) -> str:
    """Drop ``<think>`` blocks; an unclosed one (a reply cut short) hides all after it.

    >>> strip_reasoning("<think>hmm {x}</think>answer")
    'answer'
    >>> strip_reasoning("already thinking</think> answer")
    ' answer'
    """
    if _THINK_CLOSE in text:
        text = text[text.rindex(_THINK_CLOSE) + len(_THINK_CLOSE):]
    if _THINK_OPEN in text:
        text = text[: text.index(_THINK_OPEN)]
    return text


def parse_turn(text: str) -> ParsedTurn:
    """Find every tool call in a model reply, in order."""
    body = strip_reasoning(text)
    calls: list[ToolCall] = []
    errors: list[str] = []
    decoder = json.JSONDecoder()
    pos = 0
    while (found := _OBJECT_START.search(body, pos)) is not None:
        start = found.start()
        obj: Any = None
        end = start + 1
        try:
            obj, end = decoder.raw_decode(body, start)
        except (ValueError, RecursionError):  # deep nesting makes json recurse past the limit
            if not _CALLISH.match(body, start):
                pos = start + 1
                continue
            span = _balanced_span(body, start)
            obj = _lenient_load(body[start:span]) if span is not None else None
            if obj is None:
                if span is None:
                    errors.append(_cut_off(body[start:]))
                else:
                    snippet = body[start:span][:80].replace("\n", " ")
                    errors.append(f"Could not read the tool call starting {snippet!r}: it is not valid JSON.")
            end = span or len(body)
        pos = end
        if isinstance(obj, dict):
            call, error = _as_call(obj)
            if call is not None:
                calls.append(call)
            elif error:
                errors.append(error)
    return ParsedTurn(calls, errors)


_TOOL_NAMED = re.compile(r"""["'](?:tool|tool_name|name|function)["']\s*:\s*["'](\w{1,40})["']""")


def _cut_off(text: str) -> str:
    """The error for a call the reply ended inside (the turn's token limit). It names the
    call and never quotes it: the 0.5B model copied a quoted start, with the words after
    the quote, as its next query, round after round."""
    named = _TOOL_NAMED.search(text[:200])  # the call's own name comes first
    what = f"the {named.group(1)} call" if named else "a tool call"
    tail = text[-40:]
    runaway = len(text) >= 400 and len(tail.strip()) >= 20 and text.count(tail) >= 3
    why = "repeating the same words until the reply hit its token limit" if runaway else "where the reply hit its token limit"
    return f"Could not read {what} ({len(text):,} characters): it is cut off, {why}, so it did not run. Write it again, shorter."


def _as_call(obj: dict[str, Any]) -> tuple[ToolCall | None, str | None]:
    """Normalise the shapes models use for a call; (None, None) when it is no call at all."""
    if isinstance(obj.get("function"), dict):  # OpenAI tool_calls entry
        obj = obj["function"]
    name_key = next((k for k in _NAME_KEYS if k in obj), None)
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    if name_key is None or (name_key in ("name", "function") and arg_key is None):
        return None, None
    name = obj[name_key]
    if not isinstance(name, str) or not name.strip():
        return None, f"A tool call needs a tool name as a string, got {name!r}."
    if arg_key is None:
        args: Any = {k: v for k, v in obj.items() if k != name_key}
    else:
        args = obj[arg_key]
    if isinstance(args, str):
        loaded = _lenient_load(args) if args.strip() else {}
        if not isinstance(loaded, dict):
            return None, f"The arguments of {name} must be a JSON object, got {args[:60]!r}."
        args = loaded
    if args is None or (isinstance(args, (list, tuple)) and not args):
        args = {}  # `"args": []` and `"args": null` mean "no arguments"
    if not isinstance(args, dict):
        return None, f"The arguments of {name} must be a JSON object, got {args!r}."
    try:
        plain = _plain(args, _MAX_ARG_DEPTH)
    except _TooDeep:
        return None, f"The arguments of {name} are nested too deeply."
    return ToolCall(_plain_text(name.strip()), plain), None


_MAX_ARG_DEPTH = 32  # real arguments are flat; deeper nesting would only recurse


class _TooDeep(Exception):
    pass


def _plain(value: Any, depth: int) -> Any:
    """JSON-safe values only, so a call can be stored and shown whatever the model wrote:
    Python literals (bytes, sets, tuples, complex) become strings or lists, and lone
    surrogates (from JSON escapes such as ``\\ud800``) become replacement characters."""
    if isinstance(value, str):
        return _plain_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth <= 0:
        raise _TooDeep
    if isinstance(value, dict):
        return {_plain_text(str(k)): _plain(v, depth - 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth - 1) for v in value]
    return _plain_text(str(value))


def _plain_text(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _balanced_span(text: str, start: int) -> int | None:
    """End index of the brace group opening at ``start``, minding quoted strings."""
    depth = 0
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _lenient_load(snippet: str) -> Any:
    """JSON with the usual slips repaired, or a Python literal; None if neither."""
    for candidate in (snippet, _TRAILING_COMMA.sub(r"\1", snippet)):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            pass
    try:
        value = ast.literal_eval(
            re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", snippet)))
        )
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (dict, list, str, int, float)) else None


# The info string stops at a backtick so that a run of fences without newlines stays linear.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n(.*?)(?:```|$)", re.S)
_SQL_START = re.compile(r"(?im)^[ \t>*]*((?:SELECT|WITH)\b)")
_SQL_WORD = re.compile(r"\b(?:SELECT|WITH)\b", re.I)


def extract_final_sql(text: str) -> str | None:
    """The final answer in a reply: a ``submit_sql`` call, else fenced SQL, else bare SQL.

    Returns None when the reply holds no SQL. A trailing semicolon is removed.

    >>> extract_final_sql('{"tool": "submit_sql", "args": {"sql": "SELECT a FROM t;"}}')
    'SELECT a FROM t'
    >>> extract_final_sql("The answer is\\nSELECT name FROM singer\\n\\nThis lists all singers.")
    'SELECT name FROM singer'
    """
    body = strip_reasoning(text)
    submitted = [c for c in parse_turn(body).calls if c.tool == "submit_sql" and isinstance(c.args.get("sql"), str)]
    if submitted:
        return _clean(submitted[-1].args["sql"])
    fenced = [m.group(2) for m in _FENCE.finditer(body) if _SQL_WORD.search(m.group(2))]
    if fenced:
        return _clean(fenced[-1])
    match = _SQL_START.search(body)
    if match is None:
        return None
    rest = body[match.start(1):]
    statement = rest.split(";", 1)[0] if ";" in rest else re.split(r"\n[ \t]*\n", rest, maxsplit=1)[0]
    return _clean(statement)


def _clean(sql: str) -> str | None:
    sql = sql.strip().rstrip(";").strip()
    return sql or None
