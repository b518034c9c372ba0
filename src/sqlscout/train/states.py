"""Failure states: GRPO groups that start where the greedy policy's first query failed.

Issue 38's trained policy answers most questions in one query; when that query fails
(a quarter to a third of the evaluation's first queries) it almost never turns the error
into a query that works, and neither rewards (runs 3-4) nor imitated fixes (runs 4-7)
taught it to. A group sampled from the question's start spends its episodes on the first
query, and at temperature 1 it rarely fails the way the greedy policy does. A *state*
starts the group after the failure instead: every episode of the group replays the
policy's own greedy replies up to and including the one whose ``run_query`` failed, the
environment answers them as it would (the error, its "Did you mean"), and the sampler
takes over from there. What the group's samples do next (rerun, submit the broken query,
change the column the error names) is all that differs between them, so the reward's
ranking of those continuations is all the gradient says. The replayed replies are
context, never trained (as a fix's failing reply is not: :func:`untrained_replies`).

States come from an evaluator run's episodes on training questions (the policy greedy on
its own pool, ``python -m sqlscout.train.demos --evaluate``)::

    python -m sqlscout.train.states --config CONFIG.yaml --episodes runs/pool-greedy/episodes.jsonl --out states.jsonl

and a run plays ``rollout.state_groups`` of its ``questions_per_step`` groups a step from
``rollout.states``, drawn at random (the same draw on every process and on resume).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest
from sqlscout.backends.scripted import ScriptedBackend, ScriptTurn
from sqlscout.env.trace import EpisodeResult, SegmentKind
from sqlscout.errors import ConfigError
from sqlscout.runner import Rollout

__all__ = ["State", "PreludeBackend", "draw_states", "from_episodes", "load_states", "untrained_replies", "write_states"]


@dataclass(frozen=True)
class State:
    """A question and the model replies that lead to it (the last one ran a failing query)."""

    question_id: str
    replies: tuple[str, ...]
    error: str = ""  # the failing query's error, for reading the file

    def to_dict(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "replies": list(self.replies), "error": self.error}


def from_episodes(records: Iterable[dict[str, Any]]) -> tuple[list[State], Counter[str]]:
    """The failure states of evaluator episode records (``episodes.jsonl`` lines): for each
    episode whose first ``run_query`` failed, its replies up to that one. Returns them, one
    per question (the first seen), and why the other records gave none."""
    states: dict[str, State] = {}
    skipped: Counter[str] = Counter()
    for record in records:
        result = EpisodeResult.from_dict(record["episode"])
        question_id = result.task.question_id
        replies: list[str] = []
        for round_ in result.rounds:
            replies.append(round_.model_text)
            runs = [c for c in round_.calls if c.tool == "run_query"]
            if runs:
                break
        else:
            skipped["ran no query"] += 1
            continue
        first = runs[0]
        if first.ok:
            skipped["its first query ran"] += 1
        elif question_id in states:
            skipped["a second episode of the question"] += 1
        else:
            states[question_id] = State(question_id, tuple(replies), first.output.splitlines()[0] if first.output else "")
    return list(states.values()), skipped


def write_states(states: Sequence[State], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in states), encoding="utf-8")
    partial.replace(path)


def load_states(path: str | Path) -> list[State]:
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"rollout.states: {path} does not exist; write it with python -m sqlscout.train.states")
    states = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            states.append(State(str(row["question_id"]), tuple(str(r) for r in row["replies"]), str(row.get("error", ""))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}:{n}: not a state ({exc}); write the file with python -m sqlscout.train.states") from None
        if not states[-1].replies:
            raise ConfigError(f"{path}:{n}: a state needs at least one reply")
    if not states:
        raise ConfigError(f"rollout.states: {path} holds no states")
    return states


def draw_states(states: Sequence[State], n: int, seed: int, step: int) -> list[State]:
    """``n`` distinct states for ``step`` (fewer if there are fewer), the same for every
    process and every resume: a function of (seed, step) only."""
    rng = random.Random(f"states:{seed}:{step}")
    return rng.sample(list(states), min(n, len(states)))


class PreludeBackend(Backend):
    """``inner`` with the first replies of chosen episodes given, not generated.

    ``preludes[i]`` are the replies of every episode of task index ``i`` (of the runner's
    current ``run``): its k-th model turn gets ``preludes[i][k]`` in ``tokenizer``'s ids,
    and turns after them go to ``inner``. One instance serves one ``Runner.run``."""

    name = "prelude"

    def __init__(self, inner: Backend, preludes: dict[int, Sequence[str]], tokenizer: Any) -> None:
        self.inner = inner
        self.chat = inner.chat
        self.counter = inner.counter
        self.concurrent_requests = inner.concurrent_requests
        self._preludes = {i: list(p) for i, p in preludes.items() if p}
        self._served: Counter[tuple[int, int]] = Counter()
        self._lock = threading.Lock()  # continuous batching sends turns from several threads
        self._tokenizer = tokenizer

    def tokenize(self, text: str) -> list[int] | None:
        return self.inner.tokenize(text)

    def prepare(self, requests: Sequence[GenerationRequest]) -> None:
        self.inner.prepare(requests)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        given: dict[int, str] = {}  # request position -> the reply it gets
        with self._lock:
            for i, request in enumerate(requests):
                key = request.episode
                if key is None:
                    continue
                prelude = self._preludes.get(key[0], [])
                if not request.final and self._served[key] < len(prelude):
                    given[i] = prelude[self._served[key]]
                self._served[key] += 1
        out: list[Generation | None] = [None] * len(requests)
        if given:
            texts = {requests[i].episode: text for i, text in given.items()}

            def reply(turn: ScriptTurn) -> str:
                return texts[turn.episode]

            script = ScriptedBackend(reply, tokenizer=self._tokenizer, chat=self.chat)
            for i, generation in zip(given, script.generate([requests[i] for i in given])):
                out[i] = dataclasses.replace(generation, logprobs=None)  # no sampler drew them
        rest = [i for i in range(len(requests)) if i not in given]
        if rest:
            for i, generation in zip(rest, self.inner.generate([requests[i] for i in rest])):
                out[i] = generation
        return [g for g in out if g is not None]

    def close(self) -> None:  # the inner backend belongs to its owner
        pass


def untrained_replies(rollout: Rollout, n: int) -> Rollout:
    """``rollout`` with its first ``n`` model replies kept as context, not trained."""
    segments, seen = [], 0
    for kind, start, end in rollout.segments:
        if SegmentKind(kind) is SegmentKind.MODEL:
            seen += 1
            if seen <= n:
                kind = SegmentKind.ENV
        segments.append((kind, start, end))
    return dataclasses.replace(rollout, segments=segments)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sqlscout.train.states", description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="the run's config (its pool: states must be of its questions)")
    p.add_argument("--episodes", type=Path, nargs="*", default=[], help="evaluator episodes.jsonl[.gz] files on pool questions")
    p.add_argument("--evaluate", metavar="MODEL", default=None,
                   help="first run MODEL (the preset the run starts from) greedily on every pool question, with the run's episode settings, into --eval-out")
    p.add_argument("--eval-out", type=Path, default=None, help="with --evaluate: its run directory (resumed when run again)")
    p.add_argument("--out", type=Path, required=True)
    from sqlscout.train.pool import run_command

    return run_command(_build, p.parse_args(argv))


def _build(args: argparse.Namespace) -> int:
    """The command's work: the states of the episodes given (or of a greedy run) written."""
    from sqlscout.train.config import load_config
    from sqlscout.train.pool import greedy_on_pool, outside_pool, read_records
    from sqlscout.train.questions import load_questions

    if args.evaluate and not args.eval_out:
        raise ConfigError("--evaluate needs --eval-out, the directory its episodes go to")
    if not args.evaluate and not args.episodes:
        raise ConfigError("give --episodes (an evaluation on the pool) or --evaluate MODEL --eval-out DIR")
    config = load_config(args.config)
    paths = list(args.episodes)
    if args.evaluate:
        paths.append(greedy_on_pool(config, args.evaluate, args.eval_out))
    states, skipped = from_episodes(r for path in paths for r in read_records(Path(path)))
    outside = outside_pool((s.question_id for s in states), (t.question_id for t in load_questions(config.data)))
    if outside:
        raise ConfigError(f"{len(outside)} states are of questions outside the pool (first: {outside[0]}): build them from episodes on this config's pool")
    write_states(states, args.out)
    print(f"{len(states)} states -> {args.out}; " + ", ".join(f"{n} {why}" for why, n in skipped.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
