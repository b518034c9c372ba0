"""Per-step telemetry: ``telemetry.jsonl`` and ``telemetry.csv`` always, TensorBoard and
W&B when asked, and a progress bar with the key numbers.

One JSON object per step, keys as in :data:`STEP_KEYS` (shares in [0, 1]); evaluation
steps add ``eval/*`` keys. ``sqlscout report TRAIN_DIR`` plots these. On resume the
files are cut back to the checkpoint's step, so they always describe one run.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path
from typing import Any, Sequence

from sqlscout.scoring import Outcome
from sqlscout.train.rollout import Group

__all__ = ["EVAL_KEYS", "STEP_KEYS", "Telemetry", "episode_records", "episode_summaries", "rollout_metrics"]

STEP_KEYS = (
    "step",
    "outcome/equivalent",
    "outcome/executable",
    "outcome/parsable",
    "outcome/invalid",
    "episode/rounds",
    "episode/tool_calls",
    "episode/calls_per_round",
    "episode/submit_rate",
    "episode/tested_rate",
    "episode/unread_error_rate",
    "episode/known_error_rate",
    "episode/rerun_failed_rate",
    "episode/from_state",
    "state/equivalent",
    "reward/mean",
    "reward/std",
    "groups/uniform",
    "kl",
    "kl_coef",
    "clip_frac",
    "entropy",
    "is_weight",
    "loss",
    "grad_norm",
    "tokens/generated",
    "tokens/trained",
    "episodes",
    "episodes/dropped",
    "curriculum/mean_key",
    "curriculum/beta",
    "curriculum/epoch",
    "lr",
    "throughput/tokens_per_s",
    "time/rollout_s",
    "time/update_s",
    "time/step_s",
    "tokens/computed",
    "update/recomputed",
    "memory/peak_gb",
)
EVAL_KEYS = (
    "eval/official", "eval/strict", "eval/executable", "eval/submitted", "eval/rounds", "eval/tool_calls", "eval/questions",
)


def episode_summaries(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """What the step's telemetry needs of each episode (small, so processes can gather it);
    an episode the model did not end is only counted (``{"dropped": True}``)."""
    out: list[dict[str, Any]] = []
    for g in groups:
        out += [{"dropped": True, "stop_reason": r.result.stop_reason.value} for r in g.dropped]
        for rollout, scored, reward in zip(g.rollouts, g.scored, g.rewards):
            r = rollout.result
            out.append(
                {
                    "outcome": scored.verdict.outcome.value,
                    "rounds": len(r.rounds),
                    "tool_rounds": r.tool_rounds,
                    "tool_calls": r.tool_calls,
                    "submitted": r.answer_source.value == "submit_sql",
                    "tested": r.answer_tested,
                    "unread_error": r.answer_unread_error,
                    "known_error": r.answer_known_error(scored.pred.error),
                    "rerun_failed": r.reran_failed_query,
                    "generated": r.generated_tokens,
                    "reward": reward,
                    "uniform_group": g.uniform,
                    "group_size": len(g.rollouts),
                    "from_state": g.prelude > 0,
                    "dropped": False,
                }
            )
    return out


def rollout_metrics(summaries: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Outcome mix, episode shape and reward statistics of a step's scored episodes;
    ``episodes`` counts every episode played, ``episodes/dropped`` those left out."""
    episodes = [e for e in summaries if not e["dropped"]]
    n = max(len(episodes), 1)
    rewards = [e["reward"] for e in episodes]
    tool_rounds = sum(e["tool_rounds"] for e in episodes)
    calls = sum(e["tool_calls"] for e in episodes)
    groups = sum(1 / e["group_size"] for e in episodes)
    from_state = [e for e in episodes if e.get("from_state")]
    out = {f"outcome/{o.value}": sum(1 for e in episodes if e["outcome"] == o.value) / n for o in Outcome}
    out.update(
        {
            "episode/rounds": sum(e["rounds"] for e in episodes) / n,
            "episode/tool_calls": calls / n,
            "episode/calls_per_round": calls / tool_rounds if tool_rounds else 0.0,
            "episode/submit_rate": sum(1 for e in episodes if e["submitted"]) / n,
            "episode/tested_rate": sum(1 for e in episodes if e["tested"]) / n,
            "episode/unread_error_rate": sum(1 for e in episodes if e["unread_error"]) / n,
            "episode/known_error_rate": sum(1 for e in episodes if e["known_error"]) / n,
            "episode/rerun_failed_rate": sum(1 for e in episodes if e["rerun_failed"]) / n,
            # Groups started from a failure state: how many, and how often they recover.
            "episode/from_state": len(from_state) / n,
            "state/equivalent": sum(1 for e in from_state if e["outcome"] == "equivalent") / len(from_state) if from_state else 0.0,
            "reward/mean": statistics.fmean(rewards) if rewards else 0.0,
            "reward/std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            "groups/uniform": sum(1 / e["group_size"] for e in episodes if e["uniform_group"]) / groups if groups else 0.0,
            "tokens/generated": float(sum(e["generated"] for e in episodes)),
            "episodes": float(len(summaries)),
            "episodes/dropped": float(len(summaries) - len(episodes)),
        }
    )
    return out


def episode_records(step: int, groups: Sequence[Group]) -> list[dict[str, Any]]:
    """A compact line per training episode (its full trace would dwarf the run); the
    dropped ones say why they ended."""
    out: list[dict[str, Any]] = []
    for g in groups:
        for rollout, scored, reward in zip(g.rollouts, g.scored, g.rewards):
            r = rollout.result
            out.append({
                "step": step, "question_id": g.task.question_id, "sample": rollout.sample,
                "reward": reward, "outcome": scored.verdict.outcome.value, "final_sql": r.final_sql,
                "rounds": len(r.rounds), "tool_calls": r.tool_calls, "stop_reason": r.stop_reason.value,
                "generated_tokens": r.generated_tokens, **({"from_state": True} if g.prelude else {}),
            })  # fmt: skip
        for rollout in g.dropped:  # not scored, not trained: why it ended is what matters
            r = rollout.result
            out.append({
                "step": step, "question_id": g.task.question_id, "sample": rollout.sample, "dropped": True,
                "stop_reason": r.stop_reason.value, "error": r.error,
            })  # fmt: skip
    return out


class Telemetry:
    """Writes one row per step; on resume after ``start_step`` completed steps, the rows
    of later steps (written before the interruption) are dropped first."""

    def __init__(self, out: Path, *, start_step: int, tensorboard: bool, wandb: str, wandb_project: str,
                 config: dict[str, Any], enabled: bool = True) -> None:  # fmt: skip
        self.out = Path(out)
        self.enabled = enabled
        self.jsonl = self.out / "telemetry.jsonl"
        self.csv = self.out / "telemetry.csv"
        self.episodes = self.out / "episodes.jsonl"
        self._tb: Any = None
        self._wandb: Any = None
        if not enabled:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        self._truncate(start_step)
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ImportError("telemetry.tensorboard needs the tensorboard package: pip install tensorboard") from None
            self._tb = SummaryWriter(str(self.out / "tensorboard"), purge_step=start_step + 1 if start_step else None)
        if wandb != "off":
            self._wandb = _start_wandb(wandb, wandb_project, config, self.out, resume=start_step > 0)

    def log(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        row = {k: _clean(v) for k, v in row.items()}
        with self.jsonl.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        new = not self.csv.exists()
        with self.csv.open("a", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(STEP_KEYS + EVAL_KEYS), extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)
        step = int(row["step"])
        if self._tb is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, (int, float)):
                    self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log({k: v for k, v in row.items() if k != "step"}, step=step)

    def has_eval(self, step: int) -> bool:
        """Whether the held-out evaluation of ``step`` is logged (read from the file, so
        every process of a run gets the same answer; from the start, the rows are dropped)."""
        if step == 0 or not self.jsonl.exists():
            return False
        rows = (json.loads(line) for line in self.jsonl.read_text(encoding="utf-8").splitlines() if line.strip())
        return any(r.get("step") == step and "eval/official" in r for r in rows)

    def log_episodes(self, records: Sequence[dict[str, Any]]) -> None:
        """Append a step's :func:`episode_records` (of every process) to ``episodes.jsonl``."""
        if not self.enabled:
            return
        with self.episodes.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(record) + "\n" for record in records)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()

    def _truncate(self, start_step: int) -> None:
        """Drop rows of steps after ``start_step`` left by an interrupted run (from the
        start: every row, the step-0 evaluation too, which is run again)."""

        def keep(step: int) -> bool:
            return 0 < start_step and step <= start_step

        for path in (self.jsonl, self.episodes):
            if path.exists():
                rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
                kept = [line for line in rows if keep(json.loads(line)["step"])]
                path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        if self.csv.exists():
            with self.csv.open(encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
            kept_rows = [r for r in rows if keep(int(r["step"]))]
            with self.csv.open("w", encoding="utf-8", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(STEP_KEYS + EVAL_KEYS), extrasaction="ignore")
                writer.writeheader()
                writer.writerows(kept_rows)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _start_wandb(mode: str, project: str, config: dict[str, Any], out: Path, resume: bool) -> Any:
    try:
        import wandb
    except ImportError:
        if mode == "on":
            raise ImportError("telemetry.wandb is on but wandb is not installed: pip install wandb") from None
        return None
    if mode == "auto" and not getattr(getattr(wandb, "api", None), "api_key", None):
        return None  # installed but not logged in
    return wandb.init(project=project, config=config, dir=str(out), resume="allow" if resume else None)
