"""The evaluator: run a model over a benchmark, store every episode, compute metrics.

``run_eval`` streams scored episodes to a run directory (``config.json`` +
``episodes.jsonl``); ``compute_metrics`` turns the stored records into the numbers of
SPEC §6; ``sqlscout report`` renders them.
"""

from typing import TYPE_CHECKING

from sqlscout.env.lazy import lazy_names

if TYPE_CHECKING:
    from sqlscout.evaluation.config import EvalConfig, config_mismatch
    from sqlscout.evaluation.metrics import Accuracy, RunMetrics, compute_metrics, majority_vote, pass_at_k
    from sqlscout.evaluation.record import EpisodeRecord, ResultPreview, task_key
    from sqlscout.evaluation.run import Progress, RunOutcome, plan_jobs, run_eval
    from sqlscout.evaluation.sources import EpisodeSource, Job, runner_source, scripted_source
    from sqlscout.evaluation.selection import Selection, select_by_execution
    from sqlscout.evaluation.store import RunDir
    from sqlscout.evaluation.trace import EpisodeFacts, episode_facts

# Imported when first asked for: `sqlscout score` needs only the scorer and the
# predictions reader of this package, not the runner, metrics and stores below.
_HOME = {
    **dict.fromkeys(("EvalConfig", "config_mismatch"), "config"),
    **dict.fromkeys(("Accuracy", "RunMetrics", "compute_metrics", "majority_vote", "pass_at_k"), "metrics"),
    **dict.fromkeys(("EpisodeRecord", "ResultPreview", "task_key"), "record"),
    **dict.fromkeys(("Progress", "RunOutcome", "plan_jobs", "run_eval"), "run"),
    **dict.fromkeys(("EpisodeSource", "Job", "runner_source", "scripted_source"), "sources"),
    "RunDir": "store",
    **dict.fromkeys(("Selection", "select_by_execution"), "selection"),
    **dict.fromkeys(("EpisodeFacts", "episode_facts"), "trace"),
}


__getattr__, __dir__ = lazy_names(globals(), {name: f"{__name__}.{module}" for name, module in _HOME.items()})


__all__ = [
    "Accuracy",
    "EpisodeFacts",
    "EpisodeRecord",
    "EpisodeSource",
    "EvalConfig",
    "Job",
    "Progress",
    "ResultPreview",
    "RunDir",
    "RunMetrics",
    "RunOutcome",
    "Selection",
    "compute_metrics",
    "config_mismatch",
    "episode_facts",
    "majority_vote",
    "pass_at_k",
    "plan_jobs",
    "run_eval",
    "runner_source",
    "scripted_source",
    "select_by_execution",
    "task_key",
]
