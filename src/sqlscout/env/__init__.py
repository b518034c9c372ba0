"""The environment: one question over one SQLite file, explored with eight tools.

Readable and testable alone, with no ML dependency (standard library, and sqlglot only
where SQL is parsed). Its modules, from the bottom up:

- ``sandbox`` — the read-only database (SPEC §2); ``schema`` — what a database holds;
  ``render`` — result tables as text.
- ``tools`` — the eight tools, their specs from one definition (SPEC §3).
- ``parser`` — model text to tool calls; ``prompts`` — the versioned prompt text;
  ``chat`` — turn glue; ``tokens`` — token counting (SPEC §4).
- ``task`` — a question; ``config`` — an episode's limits; ``trace`` — what an episode
  records; ``episode`` — the state machine; ``single_shot`` — the one-turn baseline.

Nothing here drives a model: :mod:`sqlscout.runner` does, for every command.
"""

from typing import TYPE_CHECKING

from sqlscout.env.lazy import lazy_names

# Public name -> the module that defines it. Resolved on first use (PEP 562), so that
# importing one module of the package (``sqlscout.env.task``, say) loads only that
# module and what it needs: commands that need no episode start fast.
_WHERE = {
    "AnswerSource": "sqlscout.env.trace",
    "ApproxTokenCounter": "sqlscout.env.tokens",
    "CallRecord": "sqlscout.env.trace",
    "ChatFormat": "sqlscout.env.chat",
    "ChatML": "sqlscout.env.chat",
    "Database": "sqlscout.env.sandbox",
    "Episode": "sqlscout.env.episode",
    "EpisodeBase": "sqlscout.env.episode_base",
    "EpisodeConfig": "sqlscout.env.config",
    "EpisodeResult": "sqlscout.env.trace",
    "Message": "sqlscout.env.chat",
    "PROMPT_VERSION": "sqlscout.env.prompts",
    "QueryResult": "sqlscout.env.sandbox",
    "RoundRecord": "sqlscout.env.trace",
    "SandboxConfig": "sqlscout.env.sandbox",
    "SchemaMode": "sqlscout.env.prompts",
    "Segment": "sqlscout.env.trace",
    "SegmentKind": "sqlscout.env.trace",
    "SingleShotEpisode": "sqlscout.env.single_shot",
    "StopReason": "sqlscout.env.trace",
    "TOOLS": "sqlscout.env.tools",
    "Task": "sqlscout.env.task",
    "TokenCounter": "sqlscout.env.tokens",
    "ToolCall": "sqlscout.env.parser",
    "ToolOutcome": "sqlscout.env.tools",
    "TurnRequest": "sqlscout.env.episode_base",
    "call_tool": "sqlscout.env.tools",
    "extract_final_sql": "sqlscout.env.parser",
    "parse_turn": "sqlscout.env.parser",
    "tool_specs": "sqlscout.env.tools",
}

__all__ = [
    "AnswerSource",
    "ApproxTokenCounter",
    "CallRecord",
    "ChatFormat",
    "ChatML",
    "Database",
    "Episode",
    "EpisodeBase",
    "EpisodeConfig",
    "EpisodeResult",
    "Message",
    "PROMPT_VERSION",
    "QueryResult",
    "RoundRecord",
    "SandboxConfig",
    "SchemaMode",
    "Segment",
    "SegmentKind",
    "SingleShotEpisode",
    "StopReason",
    "TOOLS",
    "Task",
    "TokenCounter",
    "ToolCall",
    "ToolOutcome",
    "TurnRequest",
    "call_tool",
    "extract_final_sql",
    "parse_turn",
    "tool_specs",
]


__getattr__, __dir__ = lazy_names(globals(), _WHERE)


if TYPE_CHECKING:  # what type checkers and IDEs see
    from sqlscout.env.chat import ChatFormat, ChatML, Message
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.episode import Episode
    from sqlscout.env.episode_base import EpisodeBase, TurnRequest
    from sqlscout.env.parser import ToolCall, extract_final_sql, parse_turn
    from sqlscout.env.prompts import PROMPT_VERSION, SchemaMode
    from sqlscout.env.sandbox import Database, QueryResult, SandboxConfig
    from sqlscout.env.single_shot import SingleShotEpisode
    from sqlscout.env.task import Task
    from sqlscout.env.tokens import ApproxTokenCounter, TokenCounter
    from sqlscout.env.tools import TOOLS, ToolOutcome, call_tool, tool_specs
    from sqlscout.env.trace import (
        AnswerSource,
        CallRecord,
        EpisodeResult,
        RoundRecord,
        Segment,
        SegmentKind,
        StopReason,
    )
