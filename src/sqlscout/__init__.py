"""sqlscout: an environment, evaluator, backends and GRPO trainer for small agentic
text-to-SQL models.

The environment (sandbox, tools, protocol, episode) and scoring depend only on the
standard library and sqlglot; model backends and the trainer are optional extras,
imported lazily. So are the public names below: ``import sqlscout`` loads nothing
until a name is used (``sqlscout.Database`` imports the sandbox then), so commands
that need none of them start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_WHERE = {
    "AnswerSource": "sqlscout.env.trace",
    "ChatFormat": "sqlscout.env.chat",
    "ChatML": "sqlscout.env.chat",
    "Database": "sqlscout.env.sandbox",
    "Episode": "sqlscout.env.episode",
    "EpisodeConfig": "sqlscout.env.config",
    "EpisodeResult": "sqlscout.env.trace",
    "Outcome": "sqlscout.scoring",
    "PROMPT_VERSION": "sqlscout.env.prompts",
    "RewardConfig": "sqlscout.scoring",
    "Rollout": "sqlscout.runner",
    "Runner": "sqlscout.runner",
    "RunnerConfig": "sqlscout.runner",
    "SandboxConfig": "sqlscout.env.sandbox",
    "SchemaMode": "sqlscout.env.prompts",
    "SegmentKind": "sqlscout.env.trace",
    "Semantics": "sqlscout.scoring",
    "SqlscoutError": "sqlscout.errors",
    "StopReason": "sqlscout.env.trace",
    "TOOLS": "sqlscout.env.tools",
    "Task": "sqlscout.env.task",
    "ToolCall": "sqlscout.env.parser",
    "TurnRequest": "sqlscout.env.episode_base",
    "Verdict": "sqlscout.scoring",
    "call_tool": "sqlscout.env.tools",
    "extract_final_sql": "sqlscout.env.parser",
    "load_tasks": "sqlscout.data",
    "parse_turn": "sqlscout.env.parser",
    "run_all": "sqlscout.runner",
    "score_sql": "sqlscout.scoring",
    "tool_specs": "sqlscout.env.tools",
}

__all__ = sorted(_WHERE)


# sqlscout.env.lazy.lazy_names, written out: `import sqlscout` loads no submodule at all
# (tests/test_startup.py), not even that helper.
def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sqlscout' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once resolved, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see
    from sqlscout.data import load_tasks
    from sqlscout.env.chat import ChatFormat, ChatML
    from sqlscout.env.config import EpisodeConfig
    from sqlscout.env.episode import Episode
    from sqlscout.env.episode_base import TurnRequest
    from sqlscout.env.parser import ToolCall, extract_final_sql, parse_turn
    from sqlscout.env.prompts import PROMPT_VERSION, SchemaMode
    from sqlscout.env.sandbox import Database, SandboxConfig
    from sqlscout.env.task import Task
    from sqlscout.env.tools import TOOLS, call_tool, tool_specs
    from sqlscout.env.trace import AnswerSource, EpisodeResult, SegmentKind, StopReason
    from sqlscout.errors import SqlscoutError
    from sqlscout.runner import Rollout, Runner, RunnerConfig, run_all
    from sqlscout.scoring import Outcome, RewardConfig, Semantics, Verdict, score_sql
