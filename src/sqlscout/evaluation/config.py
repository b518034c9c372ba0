"""What an evaluation run is: the settings that decide its results, stored in ``config.json``.

:class:`EvalConfig` holds everything that changes what a run's episodes would be —
model, backend, mode, data selection, sampling, episode limits, seed, number of
samples. A resume compares the stored settings with the new ones and refuses to mix
episodes of two different runs in one directory (:func:`config_mismatch`).
Provenance (sqlscout version, git commit, when) is recorded too, but differing
provenance does not block a resume: it is kept per session, so a fix to the code
between two sessions is visible in the file.

>>> cfg = EvalConfig(benchmark="spider", model="scripted", samples=4)
>>> cfg.to_dict()["mode"], cfg.to_dict()["samples"]
('agent', 4)
>>> config_mismatch(cfg.to_dict(), EvalConfig(benchmark="spider", model="scripted", samples=8).to_dict())
['samples: stored 4, now 8']
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlscout.assist.profile import PROFILES, Profile
from sqlscout.backends.base import SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.errors import ConfigError
from sqlscout.env.prompts import SchemaMode
from sqlscout.env.sandbox import SandboxConfig
from sqlscout.runner import RunMode, RunnerConfig

__all__ = ["EvalConfig", "config_mismatch"]

_CONDITION = re.compile(r"^(gold|full|distractors:\d+)$")


@dataclass(frozen=True)
class EvalConfig:
    """The settings of one evaluation run.

    Attributes:
        benchmark: ``spider``, ``spider-dk``, ``bird``, ``bird-mini``, ``sqale`` or ``jsonl``.
        model: model name, preset or path, as given to the backend loader.
        data: the benchmark's file or folder (None: the loader's default).
        backend: backend name (None: the loader's choice for the model).
        mode: ``agent`` or ``single-shot`` (single-shot always shows the full schema).
        episode: episode limits and the schema regime (``withheld`` or ``full``).
        assist: the profile of help beside the protocol (``none``: the plain protocol).
        sampling: sampling settings (temperature 0.6, top-p 0.95, top-k 20 by default).
        samples: episodes per question (>= 1); above 1, pass@k and majority vote are reported.
        select_by: ``none``, or ``vote``: each question's answer is the query most of its
            samples agree on by result (execution-guided selection; needs samples >= 2).
            It chooses among episodes and changes none, so a resume may change it.
        seed: seeds question selection and sampling; the same seed gives the same run.
        condition: schema-size condition: ``gold``, ``distractors:K`` or ``full``.
        phrasing: SQaLe phrasing filter (``all`` or a style), None when not applicable.
        difficulty: difficulty filter, None for all.
        split: the benchmark split (None: the loader's default).
        limit: evaluate only this many questions.
        select: which ``limit`` questions: ``first`` in file order, or ``random`` (a
            sample drawn with ``seed``, kept in file order).
        evidence: show BIRD-style evidence notes when the benchmark has them.
        prompt_version: the version the run's episodes record (None: the protocol's prompt
            version and the profile's, :meth:`Profile.episode_version`, derived from the
            rules and their source, so a resume under other help is refused).
        parameters: the model's parameter count when the backend knows it (for compute).
        extra: anything else a caller wants recorded and compared (e.g. loader options).
    """

    benchmark: str
    model: str
    data: str | None = None
    backend: str | None = None
    mode: RunMode = RunMode.AGENT
    episode: EpisodeConfig = field(default_factory=EpisodeConfig)
    assist: Profile = field(default_factory=lambda: PROFILES["none"])
    sampling: SamplingParams = field(default_factory=SamplingParams)
    samples: int = 1
    select_by: str = "none"
    seed: int = 0
    condition: str = "full"
    phrasing: str | None = None
    difficulty: str | None = None
    split: str | None = None
    limit: int | None = None
    select: str = "first"
    evidence: bool = True
    prompt_version: str | None = None
    parameters: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", RunMode(self.mode))
        if self.prompt_version is None:
            single = self.mode is RunMode.SINGLE_SHOT
            version = self.assist.episode_version(self.episode.prompt_version(), single_shot=single)
            object.__setattr__(self, "prompt_version", version)
        if self.samples < 1:
            raise ConfigError(f"samples must be >= 1, got {self.samples}")
        if self.select_by not in ("none", "vote"):
            raise ConfigError(f"select_by must be 'none' or 'vote', got '{self.select_by}'")
        if self.select_by == "vote" and self.samples < 2:
            raise ConfigError("--select-by vote chooses among samples; give --samples 2 or more")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be >= 1, got {self.limit}")
        if self.select not in ("first", "random"):
            raise ConfigError(f"select must be 'first' or 'random', got '{self.select}'")
        if not _CONDITION.match(self.condition):
            raise ConfigError(f"condition must be gold, full or distractors:K (K a whole number), got '{self.condition}'")
        if self.mode is RunMode.SINGLE_SHOT and self.episode.schema is not SchemaMode.FULL:
            raise ConfigError("single-shot mode always shows the full schema; use --schema full (or leave it out)")
        if self.parameters is not None and self.parameters < 1:
            raise ConfigError(f"parameters must be a positive count, got {self.parameters}")

    def runner_config(
        self, *, max_batch: int = 64, tool_workers: int = 8, sandbox: SandboxConfig | None = None
    ) -> RunnerConfig:
        """The runner's settings for this run: its mode, episode, sampling and seed, plus
        how many episodes run at once and how databases are opened (which change speed
        or access, not results, so they are not part of the run's identity and may
        differ between sessions of one run)."""
        return RunnerConfig(
            sandbox=sandbox or SandboxConfig(),
            episode=self.episode,
            assist=self.assist,
            sampling=self.sampling,
            max_batch=max_batch,
            tool_workers=tool_workers,
            seed=self.seed,
            mode=self.mode,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["mode"] = self.mode.value
        data["episode"] = self.episode.to_dict()
        data["assist"] = self.assist.to_dict()
        data["sampling"] = {**asdict(self.sampling), "stop": list(self.sampling.stop)}
        return data


# Recorded for the reader, not part of what makes two runs the same run.
_NOT_COMPARED = {"parameters", "select_by"}


def config_mismatch(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The settings that differ between a stored run and a new invocation, as
    ``name: stored X, now Y`` lines (empty when the two are the same run)."""
    differences: list[str] = []
    for name in sorted(set(stored) | set(current)):
        if name in _NOT_COMPARED:
            continue
        old, new = stored.get(name), current.get(name)
        if isinstance(old, dict) and isinstance(new, dict):
            differences += [f"{name}.{line}" for line in config_mismatch(old, new)]
        elif old != new:
            differences.append(f"{name}: stored {old!r}, now {new!r}")
    return differences
