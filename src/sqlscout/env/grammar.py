"""The one grammar of a model reply, derived from the tool definitions (issue 11 item 1).

An exploration reply is: optional reasoning (a ``<think>`` block for thinking models,
then at most a few short lines of plain text), then one or more JSON call lines, each
``{"tool": <one of the eight>, "args": {...}}`` whose arguments are exactly that tool's
parameters (required ones present, optional ones optional, in signature order, each of
its JSON type). ``submit_sql`` only stands alone: a reply that submits runs nothing
else, so a model cannot submit before it has read the results of its own calls. The
forced final turn (and the single-shot answer) is one fenced ``sql`` block whose
statement starts with ``SELECT`` or ``WITH``.

The grammar is written once, as GBNF text built from :data:`~sqlscout.env.tools.TOOLS`;
every backend that can apply a grammar compiles that same text: llama.cpp
(``llama-server``'s ``grammar`` field, xllamacpp), llguidance (which reads GBNF; the
transformers backend's logits processor) and vLLM's structured outputs.

>>> g = ReplyGrammar(TurnKind.CALLS)
>>> 'tool-describe-table ::= "\\\\"describe_table\\\\"" ws "," ws "\\\\"args\\\\""' in g.gbnf()
True
>>> ReplyGrammar(TurnKind.FINAL_SQL).to_dict()
{'kind': 'final_sql', 'think': 'optional', 'max_calls': 4, 'reasoning_lines': 3}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any

from sqlscout.env.tools import TOOLS, Tool, ToolParam
from sqlscout.errors import ConfigError

__all__ = ["CALL_HEAD", "ThinkMode", "TurnKind", "ReplyGrammar", "after_name", "jump_names", "name_gbnf", "think_mode_after"]

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


class TurnKind(str, Enum):
    """What a reply must contain."""

    CALLS = "calls"  # an exploration turn: tool calls
    FINAL_SQL = "final_sql"  # the forced final turn or a single-shot answer: SQL only


class ThinkMode(str, Enum):
    """How a reply may reason before its answer."""

    OPTIONAL = "optional"  # it may open with a <think>...</think> block
    OPEN = "open"  # the chat template already opened <think>: the reply must close it
    NONE = "none"  # the template already closed an (empty) think block: no thinking


def think_mode_after(assistant_prefix: str, template: str | None = None) -> ThinkMode:
    """The think mode of a reply that follows the chat format's ``assistant_prefix``; a
    chat ``template`` that knows no ``<think>`` block (Qwen2.5's) gets none.

    >>> think_mode_after(""), think_mode_after("<think>\\n"), think_mode_after("<think>\\n\\n</think>\\n\\n")
    (<ThinkMode.OPTIONAL: 'optional'>, <ThinkMode.OPEN: 'open'>, <ThinkMode.NONE: 'none'>)
    >>> think_mode_after("", template="{{ messages }}")
    <ThinkMode.NONE: 'none'>
    """
    if _THINK_CLOSE in assistant_prefix or (template is not None and _THINK_OPEN not in template):
        return ThinkMode.NONE
    if assistant_prefix.rstrip().endswith(_THINK_OPEN):
        return ThinkMode.OPEN
    return ThinkMode.OPTIONAL


@dataclass(frozen=True)
class ReplyGrammar:
    """The constraint on one reply.

    Attributes:
        kind: tool calls or the final SQL.
        think: whether and how a ``<think>`` block may come first.
        max_calls: most call lines in one exploration reply (>= 1).
        reasoning_lines: most lines of plain text before the calls (>= 0); each is at
            most 300 characters and cannot start with ``{``.
        tools: the tools a call may name (None: all eight); with ``submit_sql`` among
            them it still stands alone.
        submittable: when set, the only queries ``submit_sql`` may submit (the ones that
            ran without error, verbatim); empty: no submission yet.
        tables: when set, the only values a table argument (``table_name``, ``table_a``,
            ``table_b``) may take: the database's real table names, once they were shown.
    """

    kind: TurnKind = TurnKind.CALLS
    think: ThinkMode = ThinkMode.OPTIONAL
    max_calls: int = 4
    reasoning_lines: int = 3
    tools: tuple[str, ...] | None = None
    submittable: tuple[str, ...] | None = None
    tables: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TurnKind(self.kind))
        object.__setattr__(self, "think", ThinkMode(self.think))
        if self.max_calls < 1:
            raise ConfigError(f"max_calls must be >= 1, got {self.max_calls}")
        if self.reasoning_lines < 0:
            raise ConfigError(f"reasoning_lines must be >= 0, got {self.reasoning_lines}")
        if self.tools is not None:
            object.__setattr__(self, "tools", tuple(self.tools))
            unknown = [t for t in self.tools if t not in TOOLS]
            if unknown or not self.tools:
                raise ConfigError(f"a grammar's tools must be some of {', '.join(TOOLS)}, got {list(self.tools)}")
        if self.tables is not None:
            object.__setattr__(self, "tables", tuple(self.tables))
            if not self.tables:
                raise ConfigError("a grammar's tables, when given, must name at least one table")
        if self.submittable is not None:
            object.__setattr__(self, "submittable", tuple(self.submittable))
            if self.tools == ("submit_sql",) and not self.submittable:
                raise ConfigError("a grammar that only submits needs at least one submittable query")

    def gbnf(self) -> str:
        """The grammar as llama.cpp GBNF (also read by llguidance and vLLM)."""
        return _gbnf(self)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind.value,
            "think": self.think.value,
            "max_calls": self.max_calls,
            "reasoning_lines": self.reasoning_lines,
        }
        if self.tools is not None:
            data["tools"] = list(self.tools)
        if self.submittable is not None:
            data["submittable"] = list(self.submittable)
        if self.tables is not None:
            data["tables"] = list(self.tables)
        return data


# -- building the GBNF text ------------------------------------------------------------

_REASONING_LINE_CHARS = 300

# JSON values. Strings a tool takes are non-empty (an empty table name or query is no
# argument at all); integers are bounded to nine digits so a degenerate "1111..." ends.
# A string holds no raw brace (one is written \u007b, \u007d): SQL has none outside its
# literals, and a model that forgot a query's closing quote wrote the call's "}}" into
# it and ran on in prose to the turn's token limit (the 0.5B, once in each of two 100-
# question Spider runs); without the brace, the quote that closes the string comes next.
_VALUES = r"""
ws ::= [ ]?
string ::= "\"" char+ "\""
char ::= [^"\\{}\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= "-"? ("0" | [1-9] [0-9]{0,8})
number ::= integer ("." [0-9]{1,12})?
boolean ::= "true" | "false"
""".strip()

_TABLE_PARAMS = ("table_name", "table_a", "table_b")

_JSON_RULE = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}


def _literal(text: str) -> str:
    """A GBNF string literal."""
    return json.dumps(text, ensure_ascii=False)


def _rule_name(tool: Tool) -> str:
    return "tool-" + tool.name.replace("_", "-")


def _param_item(param: ToolParam, named_tables: bool = False) -> str:
    rule = "table-name" if named_tables and param.name in _TABLE_PARAMS else _JSON_RULE[param.json_type()]
    return f'{_literal(json.dumps(param.name))} ws ":" ws {rule}'


def _args_rule(tool: Tool, named_tables: bool = False) -> str:
    """``{...}`` holding the tool's parameters in signature order; optional ones may be left out."""
    required = [p for p in tool.params if p.required]
    optional = [p for p in tool.params if not p.required]
    if not tool.params:
        return '"{" ws "}"'
    if not required:  # not the case for any of the eight; kept general for a future tool
        items = " | ".join(_param_item(p, named_tables) for p in optional)
        return f'"{{" ws (({items}) ("," ws ({items}))*)? ws "}}"'
    body = ' "," ws '.join(_param_item(p, named_tables) for p in required)
    # Each optional parameter may follow the ones before it; nesting keeps the order.
    tail = ""
    for param in reversed(optional):
        tail = f'("," ws {_param_item(param, named_tables)} {tail})?'
    return f'"{{" ws {body} {tail} ws "}}"'.replace("  ", " ")


def _tool_rule(tool: Tool, submittable: tuple[str, ...] | None = None, named_tables: bool = False) -> str:
    """A call from the tool's name on; the opening ``{"tool": `` is shared (``call-head``).
    With ``submittable``, a submission's ``sql`` is one of those queries, verbatim."""
    name = _literal(json.dumps(tool.name))
    args = _args_rule(tool, named_tables)
    if tool.ends_episode and submittable:
        (param,) = tool.params
        choices = " | ".join(_literal(json.dumps(sql, ensure_ascii=False)) for sql in submittable)
        args = f'"{{" ws {_literal(json.dumps(param.name))} ws ":" ws ({choices}) ws "}}"'
    return f'{_rule_name(tool)} ::= {name} ws "," ws {_literal(json.dumps("args"))} ws ":" ws {args} ws "}}"'


def _think_rules(think: ThinkMode) -> tuple[str, list[str]]:
    """The prefix every reply starts with, and its rules."""
    body = r'think-text ::= ([^<] | "<" [^/] | "</" [^t] | "</t" [^h])*'
    close = f'{_literal(_THINK_CLOSE)} "\\n"*'
    if think is ThinkMode.NONE:
        return "", []
    if think is ThinkMode.OPEN:
        return "think ", [f"think ::= think-text {close}", body]
    return "think? ", [f"think ::= {_literal(_THINK_OPEN)} think-text {close}", body]


CALL_HEAD = '{"tool": "'  # how every call line starts, as the prompts write it


def jump_names(grammar: ReplyGrammar) -> tuple[str, ...] | None:
    """The tools a reply under ``grammar`` may call first, when the reply can only be call
    lines, each starting with :data:`CALL_HEAD` (no think block, no reasoning lines);
    else None. A decoder can then write the head itself instead of sampling it token by
    token (jump-forward decoding), and the forced text after the name too
    (:func:`after_name`)."""
    if grammar.kind is not TurnKind.CALLS or grammar.think is not ThinkMode.NONE or grammar.reasoning_lines:
        return None
    return tuple(t.name for t in _allowed(grammar))


def name_gbnf(remainders: tuple[str, ...]) -> str:
    """GBNF for one of a few literal texts: what is left to write of each candidate call
    opening (the rest of ``{"tool": "``, a tool's name and its closing quote)."""
    return "root ::= " + " | ".join(_literal(r) for r in remainders) + "\n"


@lru_cache(maxsize=64)
def after_name(grammar: ReplyGrammar, tool_name: str) -> tuple[str, str | None]:
    """What follows a call's tool name under ``grammar``: the text every such reply must
    write next (the closing quote, ``"args"``, the first parameter's name and, for a
    string, its opening quote; the whole call when it is fully determined), and the GBNF
    of the rest of the reply (None when nothing is left to choose).

    >>> g = ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0)
    >>> after_name(g, "run_query")[0]
    '", "args": {"sql": "'
    >>> after_name(ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, max_calls=1, reasoning_lines=0), "list_tables")
    ('", "args": {}}', None)
    >>> after_name(ReplyGrammar(TurnKind.CALLS, ThinkMode.NONE, reasoning_lines=0, tools=("submit_sql",), submittable=("SELECT 1",)), "submit_sql")
    ('", "args": {"sql": "SELECT 1"}}', None)
    """
    tool = TOOLS[tool_name]
    tables = grammar.tables is not None
    required = [p for p in tool.params if p.required]
    optional = [p for p in tool.params if not p.required]
    full = _gbnf(grammar).splitlines()
    more = f'("\\n" call){{0,{grammar.max_calls - 1}}}' if not tool.ends_episode and grammar.max_calls > 1 else ""
    forced = '", "args": {'
    if not required:  # list_tables, foreign_keys: no parameters (none of the eight has only optional ones)
        forced += "}}"
        if not more:
            return forced, None
        return forced, "\n".join([f"root ::= {more}", *full[1:]]) + "\n"
    first = required[0]
    forced += json.dumps(first.name) + ": "
    if tool.ends_episode and grammar.submittable:
        choices = [json.dumps(sql, ensure_ascii=False)[1:] for sql in grammar.submittable]
        if len(choices) == 1:
            return forced + '"' + choices[0] + "}}", None
        value = "(" + " | ".join(_literal(c) for c in choices) + ")"
    elif tables and first.name in _TABLE_PARAMS:
        value = "(" + " | ".join(_literal(json.dumps(t, ensure_ascii=False)[1:]) for t in grammar.tables or ()) + ")"
    elif first.json_type() == "string":
        value = 'char+ "\\""'
    else:
        value = _JSON_RULE[first.json_type()]
    if first.json_type() == "string":
        forced += '"'
    body = "".join(f' "," ws {_param_item(p, tables)}' for p in required[1:])
    tail = ""
    for param in reversed(optional):
        tail = f'("," ws {_param_item(param, tables)} {tail})?'
    root = f'root ::= {value}{body} {tail} ws "}}" ws "}}" {more}'.replace("  ", " ").rstrip()
    return forced, "\n".join([root, *full[1:]]) + "\n"


def _allowed(grammar: ReplyGrammar) -> list[Tool]:
    tools, submittable = grammar.tools, grammar.submittable
    return [t for t in TOOLS.values() if (tools is None or t.name in tools) and (submittable != () or not t.ends_episode)]


@lru_cache(maxsize=16)
def _gbnf(grammar: ReplyGrammar) -> str:  # a frozen grammar is its own cache key
    prefix, rules = _think_rules(grammar.think)
    max_calls, reasoning_lines = grammar.max_calls, grammar.reasoning_lines
    submittable, tables = grammar.submittable, grammar.tables
    if grammar.kind is TurnKind.FINAL_SQL:
        rules = [
            f'root ::= {prefix}"```sql\\n" sql "```"',
            # The statement may span lines; it cannot hold a backtick, so the fence ends
            # it. Its closing newline belongs to it: a lexer that reads the longest
            # match (llguidance) would otherwise swallow the fence's newline into it.
            'sql ::= sql-start [^`]* "\\n"',
            "sql-start ::= [Ss] [Ee] [Ll] [Ee] [Cc] [Tt] | [Ww] [Ii] [Tt] [Hh]",
            *rules,
        ]
        return "\n".join(rules) + "\n"
    allowed = _allowed(grammar)
    explore = [t for t in allowed if not t.ends_episode]
    final = [t for t in allowed if t.ends_episode]
    more = f'("\\n" call){{0,{max_calls - 1}}}' if max_calls > 1 else ""
    reasoning = f"(line \"\\n\"){{0,{reasoning_lines}}} " if reasoning_lines else ""
    # One shared head, then the tool's name: a grammar engine that tracks every open
    # alternative (llama.cpp) keeps one path, not eight, until the name decides.
    alternatives = [f"call-head ({' | '.join(_rule_name(t) for t in final)})"] if final else []
    alternatives += [f"call {more}".rstrip()] if explore else []
    rules = [
        f"root ::= {prefix}{reasoning}calls",
        f"calls ::= {' | '.join(alternatives)}",
        *([f"call ::= call-head ({' | '.join(_rule_name(t) for t in explore)})"] if explore else []),
        f'call-head ::= "{{" ws {_literal(json.dumps("tool"))} ws ":" ws',
        'line ::= [^{}`\\n]+',
        *rules,
        *(_tool_rule(t, submittable, tables is not None) for t in allowed),
    ]
    if tables is not None:  # table arguments name a real table
        rules.append("table-name ::= " + " | ".join(_literal(json.dumps(t, ensure_ascii=False)) for t in tables))
    return "\n".join(rules + [_VALUES]) + "\n"
