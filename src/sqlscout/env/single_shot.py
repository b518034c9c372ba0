"""The single-shot baseline: the full schema in the prompt, one answer, no tools.

It drives like an :class:`~sqlscout.env.episode.Episode` (``request`` / ``step`` /
``result``, the same transcript segments), so the runner, the evaluator and the
reports treat both modes alike; its result is an ordinary
:class:`~sqlscout.env.episode.EpisodeResult` with one final round.

>>> from sqlscout.env.sandbox import Database
>>> from sqlscout.env.task import Task
>>> task = Task("q", "How many genres?", "src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
>>> shot = SingleShotEpisode(task, Database(task.db_path))
>>> shot.step("```sql\\nSELECT COUNT(*) FROM Genre\\n```") is None
True
>>> shot.result().final_sql, shot.result().answer_source.value
('SELECT COUNT(*) FROM Genre', 'direct')
"""

from __future__ import annotations

from dataclasses import replace

from sqlscout.env.chat import ChatFormat, Message
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode_base import EpisodeBase
from sqlscout.env.hooks import Hooks
from sqlscout.env.trace import AnswerSource, StopReason
from sqlscout.env.parser import extract_final_sql
from sqlscout.env.prompts import SchemaMode, engine_label, single_shot_messages
from sqlscout.env.schema_text import schema_text
from sqlscout.env.sandbox import Database
from sqlscout.env.task import Task
from sqlscout.env.tokens import TokenCounter

__all__ = ["SingleShotEpisode"]


class SingleShotEpisode(EpisodeBase):
    """One question answered in one model turn from the full schema.

    The config's ``token_budget`` and ``max_turn_tokens`` bound the answer; its schema
    regime is always ``full`` (recorded as such in the result). ``hooks`` may change its
    prompt and ask for a grammar (:mod:`sqlscout.env.hooks`); its reply is the answer.
    """

    def __init__(
        self,
        task: Task,
        db: Database,
        config: EpisodeConfig | None = None,
        *,
        chat: ChatFormat | None = None,
        counter: TokenCounter | None = None,
        hooks: Hooks | None = None,
        version: str | None = None,
    ) -> None:
        config = replace(config or EpisodeConfig(), schema=SchemaMode.FULL)
        messages = single_shot_messages(task.question, schema_sql=schema_text(db), evidence=task.evidence, engine=engine_label(db))
        super().__init__(task, db, config, messages, chat=chat, counter=counter, hooks=hooks, version=version)
        if self.tokens_used >= self.config.token_budget:
            self._finish(None, AnswerSource.NONE, StopReason.BUDGET_EXHAUSTED)

    def step(
        self,
        completion: str,
        *,
        n_tokens: int | None = None,
        finish_reason: str | None = None,
        model_time_s: float = 0.0,
    ) -> None:
        """Take the answer; the episode always ends here (returns None)."""
        record = self._take(completion, n_tokens, finish_reason, model_time_s)
        sql = extract_final_sql(record.model_text)
        reason = StopReason.BUDGET_EXHAUSTED if finish_reason == "length" else StopReason.ANSWERED
        self._finish(sql, AnswerSource.DIRECT if sql else AnswerSource.NONE, reason)
        return None

    def opening_messages(self, *, schema_sql: str | None = None) -> list[Message]:
        """The single-shot prompt for this episode's question, with ``schema_sql`` as the schema."""
        return single_shot_messages(
            self.task.question, schema_sql=schema_sql or schema_text(self.db), evidence=self.task.evidence, engine=engine_label(self.db)
        )
