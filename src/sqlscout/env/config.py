"""The limits and schema regime of one episode (SPEC §4).

Only the protocol lives here: what a trained model is trained and evaluated under. Help
for untrained models is a layer beside the episode (``sqlscout.assist``), not a switch
in this config.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from sqlscout.env.prompts import PROMPT_VERSION, SchemaMode
from sqlscout.errors import ConfigError

__all__ = ["EpisodeConfig"]


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class EpisodeConfig:
    """Limits and regime of one episode; each field's ``help`` (its metadata) is what the
    command line shows for it.

    >>> EpisodeConfig(max_rounds=0)
    Traceback (most recent call last):
    ...
    sqlscout.errors.ConfigError: max_rounds must be >= 1, got 0
    """

    max_rounds: int = field(default=6, metadata=_help("Tool rounds before the final turn is forced (>= 1)."))
    max_failed_queries: int = field(
        default=4, metadata=_help("Failed run_query calls in a row that force the final turn (>= 1).")
    )
    token_budget: int = field(
        default=24_576, metadata=_help("Tokens per episode: the prompt plus everything appended stays within it.")
    )
    max_turn_tokens: int | None = field(
        default=None, metadata=_help("Most tokens in one model turn (null: what the budget has left).")
    )
    final_turn_reserve: int = field(
        default=256, metadata=_help("Tokens kept free for the final answer; less left after a result forces it.")
    )
    schema: SchemaMode = field(
        default=SchemaMode.WITHHELD, metadata=_help("withheld (the prompt holds no schema) or full (every CREATE TABLE).")
    )
    turn_time_limit_s: float | None = field(
        default=20.0, metadata=_help("Seconds the tool calls of one turn may take in all (null: no limit).")
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", SchemaMode(self.schema))
        if self.max_rounds < 1:
            raise ConfigError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if self.max_failed_queries < 1:
            raise ConfigError(f"max_failed_queries must be >= 1, got {self.max_failed_queries}")
        if self.final_turn_reserve < 1:
            raise ConfigError(f"final_turn_reserve must be >= 1, got {self.final_turn_reserve}")
        if self.token_budget <= self.final_turn_reserve:
            raise ConfigError(
                f"token_budget ({self.token_budget}) must exceed final_turn_reserve ({self.final_turn_reserve})"
            )
        if self.turn_time_limit_s is not None and not self.turn_time_limit_s > 0:
            raise ConfigError(f"turn_time_limit_s must be > 0 or None, got {self.turn_time_limit_s}")
        if self.max_turn_tokens is not None and self.max_turn_tokens < 1:
            raise ConfigError(f"max_turn_tokens must be >= 1 or None, got {self.max_turn_tokens}")

    def prompt_version(self, *, single_shot: bool = False) -> str:
        """The version of the plain protocol's prompts (a layer beside it adds its own)."""
        return PROMPT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "schema": self.schema.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeConfig:
        """The config stored in a result or run; the switches of help a run had before
        help was a layer of its own are not part of it."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
