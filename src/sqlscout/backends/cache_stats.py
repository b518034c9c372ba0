"""What the llama-cpp backend's prompt cache saved: the figures behind ``backend.stats``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PromptCacheStats"]


@dataclass
class PromptCacheStats:
    """Prompt tokens of all requests, and how many came from the cache instead of being evaluated.

    ``shared_evaluated`` / ``shared_prefill_s`` count the shared prefixes evaluated once
    for several requests (not part of any one request's figures).
    """

    requests: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0
    evaluated_tokens: int = 0
    generated_tokens: int = 0
    prefill_s: float = 0.0
    decode_s: float = 0.0
    shared_prefixes: int = 0
    shared_evaluated: int = 0
    shared_prefill_s: float = 0.0
    restores: int = 0
    forced_tokens: int = 0  # of the generated ones, written by jump-forward, not sampled

    @property
    def hit_rate(self) -> float:
        """Share of prompt tokens that were not evaluated for their request (0 when none)."""
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def summary(self) -> str:
        return (
            f"prompt cache: {self.reused_tokens:,} of {self.prompt_tokens:,} prompt tokens reused "
            f"({self.hit_rate:.1%}); {self.evaluated_tokens:,} evaluated in {self.prefill_s:.1f}s "
            f"+ {self.shared_evaluated:,} in {self.shared_prefixes} shared prefixes ({self.shared_prefill_s:.1f}s); "
            f"{self.generated_tokens:,} generated in {self.decode_s:.1f}s"
            + (f" ({self.forced_tokens:,} of them forced by the grammar)" if self.forced_tokens else "")
        )
