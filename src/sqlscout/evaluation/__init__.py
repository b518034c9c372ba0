"""The evaluator: run a model over a benchmark, store every episode, compute metrics.

``run_eval`` streams scored episodes to a run directory (``config.json`` +
``episodes.jsonl``); ``compute_metrics`` turns the stored records into the numbers of
SPEC §6; ``sqlscout report`` renders them.
"""

from sqlscout.evaluation.config import EvalConfig, EvalMode, config_mismatch
from sqlscout.evaluation.metrics import Accuracy, RunMetrics, compute_metrics, majority_vote, pass_at_k
from sqlscout.evaluation.record import EpisodeRecord, ResultPreview, task_key
from sqlscout.evaluation.run import Progress, RunOutcome, plan_jobs, run_eval
from sqlscout.evaluation.sources import EpisodeSource, Job, policy_source, runner_source
from sqlscout.evaluation.store import RunDir
from sqlscout.evaluation.trace import EpisodeFacts, episode_facts

__all__ = [
    "Accuracy",
    "EpisodeFacts",
    "EpisodeRecord",
    "EpisodeSource",
    "EvalConfig",
    "EvalMode",
    "Job",
    "Progress",
    "ResultPreview",
    "RunDir",
    "RunMetrics",
    "RunOutcome",
    "compute_metrics",
    "config_mismatch",
    "episode_facts",
    "majority_vote",
    "pass_at_k",
    "plan_jobs",
    "policy_source",
    "run_eval",
    "runner_source",
    "task_key",
]
