"""sqlscout: an environment, evaluator, backends and GRPO trainer for small agentic
text-to-SQL models.

The environment (sandbox, tools, protocol, episode) and scoring depend only on the
standard library and sqlglot; model backends and the trainer are optional extras,
imported lazily.
"""

from sqlscout.env.chat import ChatFormat, ChatML
from sqlscout.data import load_tasks
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode, TurnRequest
from sqlscout.env.trace import AnswerSource, EpisodeResult, SegmentKind, StopReason
from sqlscout.errors import SqlscoutError
from sqlscout.env.parser import ToolCall, extract_final_sql, parse_turn
from sqlscout.env.prompts import PROMPT_VERSION, SchemaMode
from sqlscout.runner import Rollout, Runner, RunnerConfig, run_all
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.scoring import Outcome, RewardConfig, Semantics, Verdict, score_sql
from sqlscout.env.task import Task
from sqlscout.env.tools import TOOLS, call_tool, tool_specs

__version__ = "0.1.0"

__all__ = [
    "AnswerSource",
    "ChatFormat",
    "ChatML",
    "Database",
    "Episode",
    "EpisodeConfig",
    "EpisodeResult",
    "Outcome",
    "PROMPT_VERSION",
    "RewardConfig",
    "Rollout",
    "Runner",
    "RunnerConfig",
    "SandboxConfig",
    "SchemaMode",
    "SegmentKind",
    "Semantics",
    "SqlscoutError",
    "StopReason",
    "TOOLS",
    "Task",
    "ToolCall",
    "TurnRequest",
    "Verdict",
    "call_tool",
    "extract_final_sql",
    "load_tasks",
    "parse_turn",
    "run_all",
    "score_sql",
    "tool_specs",
]
