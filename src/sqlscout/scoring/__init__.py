"""Scoring: execution comparison, outcome tiers and rewards. Standard library and sqlglot only."""

from sqlscout.scoring.compare import (
    Semantics,
    has_top_level_order_by,
    official_match,
    results_match,
    spider_match,
    strict_match,
    test_suite_match,
)
from sqlscout.scoring.gold import GoldResults
from sqlscout.scoring.reward import REWARD_PRESETS, RewardConfig, group_rewards, reward, row_f1, tables_used
from sqlscout.scoring.verdict import ExecResult, Outcome, Scored, Verdict, execute_for_scoring, has_statement, parses, score_sql

__all__ = [
    "REWARD_PRESETS",
    "ExecResult",
    "GoldResults",
    "Outcome",
    "RewardConfig",
    "Scored",
    "Semantics",
    "Verdict",
    "execute_for_scoring",
    "group_rewards",
    "has_statement",
    "has_top_level_order_by",
    "official_match",
    "parses",
    "results_match",
    "reward",
    "row_f1",
    "score_sql",
    "spider_match",
    "strict_match",
    "tables_used",
    "test_suite_match",
]
