"""The limits of a server: what the HTTP API and the MCP server share."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlscout.env.sandbox import SandboxConfig
from sqlscout.errors import ConfigError

__all__ = ["ServeConfig"]


@dataclass(frozen=True)
class ServeConfig:
    """Deadlines and caps of a server.

    Attributes:
        sandbox: every database's per-query deadline and row/size caps, as in episodes.
        request_timeout_s: deadline of one tool or score request (> 0).
        ask_timeout_s: deadline of one ``ask`` episode, from start to answer (> 0).
        max_episodes: most ``ask`` episodes running at once; more are refused (busy).
        tool_workers: threads running tool calls and scoring at once.
        answer_rows: rows of the answer's result that ``ask`` returns.
    """

    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    request_timeout_s: float = 30.0
    ask_timeout_s: float = 300.0
    max_episodes: int = 8
    tool_workers: int = 16
    answer_rows: int = 100

    def __post_init__(self) -> None:
        if not self.request_timeout_s > 0:
            raise ConfigError(f"request_timeout_s must be > 0, got {self.request_timeout_s}")
        if not self.ask_timeout_s > 0:
            raise ConfigError(f"ask_timeout_s must be > 0, got {self.ask_timeout_s}")
        if self.max_episodes < 1:
            raise ConfigError(f"max_episodes must be >= 1, got {self.max_episodes}")
        if self.tool_workers < 1:
            raise ConfigError(f"tool_workers must be >= 1, got {self.tool_workers}")
        if self.answer_rows < 1:
            raise ConfigError(f"answer_rows must be >= 1, got {self.answer_rows}")
