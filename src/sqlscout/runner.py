"""The runner: many episodes at once over one backend (what the evaluator and trainer call).

Up to ``max_batch`` episodes are live at once; finished episodes stream out as
:class:`Rollout` objects and make room for waiting ones, so the batch stays full until
the queue drains. How live episodes take their turns depends on the backend:

- **waves** (the default): each step gathers the pending model turn of every live
  episode into one ``backend.generate`` call and runs the episodes' tool calls
  concurrently on a thread pool; the step ends when the last reply of the wave is in.
- **continuous**, for a backend that serves concurrent calls
  (:attr:`Backend.concurrent_requests <sqlscout.backends.base.Backend.concurrent_requests>`:
  llama.cpp's server, OpenAI-compatible servers): every live episode sends its turn as
  a call of its own and advances as soon as its own reply is in, while the others are
  still decoding; a waiting episode starts the moment one finishes. Turn seeds do not
  depend on the mode, so the episodes are the same; only their finishing order differs.

Both modes take the same step (:meth:`Runner._step`) over a group of episodes: a wave
is one group of all live episodes, continuous mode sends groups of one.

The transcript is kept as token ids built by concatenation — the prompt's ids, each
completion's ids exactly as sampled, the ids of each environment turn — so the ids the
model saw are the ids the trainer trains on, the episode budget (counted with the
backend's own counter) is exact, and the trainer's mask comes straight from
:attr:`Rollout.segments`.

>>> from sqlscout.backends.scripted import ScriptedBackend
>>> from sqlscout.env.task import Task
>>> task = Task("q", "How many genres?", "src/sqlscout/data/chinook/Chinook_Sqlite.sqlite")
>>> backend = ScriptedBackend(['{"tool": "submit_sql", "args": {"sql": "SELECT COUNT(*) FROM Genre"}}'])
>>> with Runner(backend, RunnerConfig()) as runner:
...     [r.result.final_sql for r in runner.run([task], samples=2)]
['SELECT COUNT(*) FROM Genre', 'SELECT COUNT(*) FROM Genre']

It is the one episode driver: ``sqlscout eval`` and the trainer run many episodes
through it, ``sqlscout ask`` runs one and watches it turn by turn (``on_turn``), the
single-shot baseline is its ``single-shot`` mode, and the tests drive it with the
scripted backend.
"""

from __future__ import annotations

import hashlib
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Sequence, Union

from sqlscout.assist.profile import PROFILES, Profile
from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams
from sqlscout.env.config import EpisodeConfig
from sqlscout.env.episode import Episode
from sqlscout.env.trace import EpisodeResult, Segment, SegmentKind
from sqlscout.errors import ConfigError
from sqlscout.env.sandbox import Database, SandboxConfig
from sqlscout.env.single_shot import SingleShotEpisode
from sqlscout.env.task import Task

__all__ = ["Rollout", "RunMode", "Runner", "RunnerConfig", "Turn", "TurnCallback", "episode_seed", "run_all"]

AnyEpisode = Union[Episode, SingleShotEpisode]


class RunMode(str, Enum):
    """``agent``: the tool-using episode (SPEC §4). ``single-shot``: full schema, one answer."""

    AGENT = "agent"
    SINGLE_SHOT = "single-shot"


@dataclass(frozen=True)
class RunnerConfig:
    """How the runner drives episodes.

    Attributes:
        episode: limits and schema regime of every episode. Its budget decides each
            turn's ``max_tokens`` (``sampling.max_tokens`` is not used by the runner).
        assist: the help beside the protocol (a profile of rules; ``none``: the plain
            protocol, what a trained model sees).
        sampling: temperature, top-p, top-k and extra stop strings; the chat format's
            stop strings are always added, and each turn gets its own derived seed.
        max_batch: most episodes live at once: the most requests in one generate call
            (waves), or in flight together (continuous).
        tool_workers: threads running tool calls concurrently.
        seed: base seed; turn seeds derive from (seed, task index, sample, turn).
        mode: ``agent`` or ``single-shot``.
        sandbox: deadline and caps of the databases the runner opens.
        continuous: let episodes advance independently when the backend serves
            concurrent calls; False keeps lockstep waves on every backend.
        greedy_samples: samples numbered below it decode greedily (temperature 0), the
            others with ``sampling``: a GRPO group that holds what a greedy evaluation
            would play (a loop only greedy decoding falls into is sampled and paid for).
    """

    episode: EpisodeConfig = field(default_factory=EpisodeConfig)
    assist: Profile = field(default_factory=lambda: PROFILES["none"])
    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_batch: int = 64
    tool_workers: int = 8
    seed: int = 0
    mode: RunMode = RunMode.AGENT
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    continuous: bool = True
    greedy_samples: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", RunMode(self.mode))
        if self.greedy_samples < 0:
            raise ConfigError(f"greedy_samples must be >= 0, got {self.greedy_samples}")
        if self.max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {self.max_batch}")
        if self.tool_workers < 1:
            raise ConfigError(f"tool_workers must be >= 1, got {self.tool_workers}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode": self.episode.to_dict(),
            "assist": self.assist.to_dict(),
            "sampling": asdict(self.sampling),
            "max_batch": self.max_batch,
            "tool_workers": self.tool_workers,
            "seed": self.seed,
            "mode": self.mode.value,
            "sandbox": asdict(self.sandbox),
            "continuous": self.continuous,
            "greedy_samples": self.greedy_samples,
        }


@dataclass
class Rollout:
    """One finished episode with its transcript in the backend's token ids.

    ``segments`` are ``(kind, start, end)`` spans into ``token_ids``; ``logprobs[i]`` is
    the sampler's log-probability for a MODEL token and None elsewhere. Both ids lists
    are empty when the backend has no tokenizer. Which tokens are trained is decided by
    ``sqlscout.train.mask`` from ``segments``.
    """

    index: int
    sample: int
    result: EpisodeResult
    token_ids: list[int] = field(default_factory=list)
    segments: list[tuple[SegmentKind, int, int]] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)


@dataclass(frozen=True)
class Turn:
    """One model turn as it happened: which episode, what the model produced, and the
    environment's answer (None when the turn ended the episode)."""

    index: int
    sample: int
    episode: AnyEpisode
    generation: Generation
    observation: str | None


# Called on the runner's thread after every model turn: in the order of the batch in
# waves, in the order the replies come in in continuous mode.
TurnCallback = Callable[[Turn], None]


def episode_seed(seed: int, index: int, sample: int, turn: int) -> int:
    """A stable 31-bit seed for one turn (the same across runs, processes and platforms).

    >>> episode_seed(0, 1, 2, 3) == episode_seed(0, 1, 2, 3) != episode_seed(0, 1, 2, 4)
    True
    """
    digest = hashlib.blake2b(f"{seed}:{index}:{sample}:{turn}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (2**31 - 1)


@dataclass
class _Live:
    """An episode in flight and its token transcript."""

    index: int
    sample: int
    episode: AnyEpisode
    ids: list[int] | None
    spans: list[tuple[SegmentKind, int, int]]
    logprobs: list[float | None]
    turn: int = 0
    # The episode's segments mirrored so far, each with its ids and log-probabilities.
    mirrored: list[tuple[Segment, list[int], list[float | None]]] = field(default_factory=list)
    observation: str | None = None  # the environment's answer to the latest turn


class Runner:
    """Drives episodes over ``backend``; see the module docstring.

    Databases are opened once per file and shared by every episode on that file, across
    calls to :meth:`run`; :meth:`close` (or the ``with`` block) closes them.
    """

    def __init__(self, backend: Backend, config: RunnerConfig | None = None) -> None:
        self.backend = backend
        self.config = config or RunnerConfig()
        self._databases: dict[Path | str, Database] = {}
        self._adopted: set[int] = set()
        self._has_ids = backend.tokenize("a") is not None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for db in self._databases.values():
            if id(db) not in self._adopted:
                db.close()
        self._databases.clear()
        self._adopted.clear()

    def adopt(self, db: Database) -> None:
        """Use ``db``, already open, for the tasks that name it (by its path or its URL
        without a password), so that no credential need travel in a task."""
        from sqlscout.engines import database_key

        self._databases.setdefault(database_key(db.path), db)
        self._adopted.add(id(db))  # its owner closes it, not the runner

    def database(self, path: Path | str) -> Database:
        """The database a task names (a SQLite path or an engine's URL), opened once."""
        from sqlscout.engines import database_key, open_database

        key = database_key(path)
        if key not in self._databases:
            self._databases[key] = open_database(key if isinstance(key, Path) else path, self.config.sandbox)
        return self._databases[key]

    def run(
        self,
        tasks: Sequence[Task],
        samples: int = 1,
        *,
        skip: Collection[tuple[int, int]] = (),
        on_turn: TurnCallback | None = None,
    ) -> Iterator[Rollout]:
        """Run ``samples`` episodes of every task; yield each as soon as it finishes.

        Rollouts come in finishing order; ``rollout.index`` and ``rollout.sample`` say
        which they are. A backend failure ends the affected episodes with stop reason
        ``backend_error`` (the message is in ``result.error``) instead of raising.
        ``skip`` names (index, sample) pairs not to run — a resumed evaluation's finished
        episodes — so that the others keep the seeds they have in a full run.
        ``on_turn`` sees every model turn as it is taken (what ``sqlscout ask`` shows).
        """
        if samples < 1:
            raise ConfigError(f"samples must be >= 1, got {samples}")
        skipped = set(skip)
        waiting = deque((i, s) for i in range(len(tasks)) for s in range(samples) if (i, s) not in skipped)
        ready: list[_Live] = []  # live episodes whose next turn is not sent yet
        in_flight: dict[Future[list[Generation] | None], list[_Live]] = {}  # in order of sending
        continuous = self.config.continuous and self.backend.concurrent_requests
        tools = ThreadPoolExecutor(self.config.tool_workers, thread_name_prefix="sqlscout-tools")
        turns = ThreadPoolExecutor(self.config.max_batch, thread_name_prefix="sqlscout-turns") if continuous else None
        try:
            while waiting or ready or in_flight:
                started: list[_Live] = []
                while waiting and len(ready) + sum(map(len, in_flight.values())) < self.config.max_batch:
                    index, sample = waiting.popleft()
                    state = self._start(tasks[index], index, sample)
                    if state.episode.done:  # the prompt alone is over budget
                        yield self._rollout(state)
                    else:
                        ready.append(state)
                        started.append(state)
                if turns is not None:  # every ready episode sends its turn alone
                    requests = self._requests(ready)
                    if len(started) > 1:  # episodes starting together may share a prefix
                        self.backend.prepare(requests[-len(started) :])
                    for state, request in zip(ready, requests):
                        in_flight[turns.submit(self._step, [state], [request], tools)] = [state]
                    ready = []
                elif ready and not in_flight:  # a wave: every live episode, one call, on this thread
                    wave: Future[list[Generation] | None] = Future()
                    wave.set_result(self._step(ready, self._requests(ready), tools))
                    in_flight[wave], ready = ready, []
                if not in_flight:
                    continue
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in [f for f in in_flight if f in finished]:
                    group = in_flight.pop(future)
                    generations = future.result()
                    if on_turn is not None and generations is not None:
                        for state, generation in zip(group, generations):
                            on_turn(Turn(state.index, state.sample, state.episode, generation, state.observation))
                    for state in group:
                        if state.episode.done:
                            yield self._rollout(state)
                        else:
                            ready.append(state)
        finally:
            if turns is not None:
                turns.shutdown(wait=True, cancel_futures=True)
            tools.shutdown(wait=True, cancel_futures=True)

    # -- internals ---------------------------------------------------------------

    def episode(self, task: Task) -> AnyEpisode:
        """A new episode of ``task`` under this runner's settings (the mode's kind, the
        episode config, the profile's hooks and version, the backend's chat and counter)."""
        db = self.database(task.db_path)
        single = self.config.mode is RunMode.SINGLE_SHOT
        kind = SingleShotEpisode if single else Episode
        profile = self.config.assist
        return kind(
            task,
            db,
            self.config.episode,
            chat=self.backend.chat,
            counter=self.backend.counter,
            hooks=profile.hooks(single_shot=single),
            version=profile.episode_version(self.config.episode.prompt_version(), single_shot=single),
        )

    def _start(self, task: Task, index: int, sample: int) -> _Live:
        state = _Live(index, sample, self.episode(task), [] if self._has_ids else None, [], [])
        self._mirror(state, None)
        return state

    def _requests(self, group: list[_Live]) -> list[GenerationRequest]:
        base = self.config.sampling
        requests = []
        for state in group:
            turn = state.episode.request()
            stop = tuple(dict.fromkeys(turn.stop + base.stop))
            seed = episode_seed(self.config.seed, state.index, state.sample, state.turn)
            greedy = state.sample < self.config.greedy_samples
            params = base.with_(max_tokens=turn.max_tokens, stop=stop, seed=seed, temperature=0.0 if greedy else base.temperature)
            ids = list(state.ids) if state.ids is not None else None
            requests.append(
                GenerationRequest(
                    params,
                    prompt=turn.prompt,
                    prompt_ids=ids,
                    episode=(state.index, state.sample),
                    final=turn.final,
                    constraint=turn.constraint,
                )
            )
        return requests

    def _step(
        self, group: list[_Live], requests: list[GenerationRequest], tools: ThreadPoolExecutor
    ) -> list[Generation] | None:
        """One model turn of every episode in ``group``: generate, then feed each reply to
        its episode (tool calls run on ``tools``). A backend failure ends the group's
        episodes and returns None."""
        try:
            generations = self.backend.generate(requests)
        except Exception as exc:  # noqa: BLE001 - any backend failure becomes recorded outcomes
            error = f"{self.backend.name} backend failed: {type(exc).__name__}: {exc}"
        else:
            if len(generations) == len(requests):
                list(tools.map(self._advance, group, generations))
                return generations
            error = f"{self.backend.name} backend returned {len(generations)} results for {len(requests)} requests"
        for state in group:
            state.episode.abort(error)
        return None

    def _advance(self, state: _Live, generation: Generation) -> None:
        """Feed one completion to its episode (tool calls run here, on a pool thread)."""
        state.turn += 1
        state.observation = None
        if generation.finish_reason == "error":
            state.episode.abort(generation.error or f"{self.backend.name} backend returned an error")
            return
        n_tokens = len(generation.token_ids) if generation.token_ids else None
        state.observation = state.episode.step(
            generation.text,
            n_tokens=n_tokens,
            finish_reason=generation.finish_reason,
            model_time_s=generation.elapsed_s,
        )
        _record_model_time(state.episode, generation)
        self._mirror(state, generation)

    def _mirror(self, state: _Live, generation: Generation | None) -> None:
        """The token transcript of the episode's segments: each segment's ids are made once
        (a model segment's are the ids sampled, with their log-probabilities) and kept while
        the episode keeps that segment; a transcript the episode began again is followed."""
        if state.ids is None:
            return
        kept = {id(segment): (ids, lps) for segment, ids, lps in state.mirrored}
        mirrored = []
        for segment in state.episode.segments:
            if id(segment) in kept:
                ids, lps = kept[id(segment)]
            elif segment.kind is SegmentKind.MODEL and generation is not None and generation.token_ids:
                ids = list(generation.token_ids)
                lps = list(generation.logprobs) if generation.logprobs is not None else [None] * len(ids)
            else:
                ids = self.backend.tokenize(segment.text) or []
                lps = [None] * len(ids)
            mirrored.append((segment, ids, lps))
        common = 0
        while common < min(len(mirrored), len(state.mirrored)) and mirrored[common][0] is state.mirrored[common][0]:
            common += 1
        if common < len(state.mirrored):  # the episode began its transcript again
            state.ids.clear(), state.logprobs.clear(), state.spans.clear()
            common = 0
        for segment, ids, lps in mirrored[common:]:
            state.spans.append((segment.kind, len(state.ids), len(state.ids) + len(ids)))
            state.ids.extend(ids)
            state.logprobs.extend(lps)
        state.mirrored = mirrored

    def _rollout(self, state: _Live) -> Rollout:
        return Rollout(
            index=state.index,
            sample=state.sample,
            result=state.episode.result().tally(),
            token_ids=state.ids or [],
            segments=state.spans,
            logprobs=state.logprobs,
        )


def _record_model_time(episode: AnyEpisode, generation: Generation) -> None:
    """The backend's prompt-cache and prefill/decode figures onto the round the turn opened."""
    if episode.rounds:
        g = generation
        episode.rounds[-1].set_model_time(g.prompt_evaluated, g.prompt_reused, g.prefill_s, g.decode_s)


def run_all(backend: Backend, tasks: Sequence[Task], config: RunnerConfig | None = None, samples: int = 1) -> list[Rollout]:
    """Every rollout, ordered by (task index, sample): the convenient batch form of :meth:`Runner.run`."""
    with Runner(backend, config) as runner:
        rollouts = list(runner.run(tasks, samples))
    return sorted(rollouts, key=lambda r: (r.index, r.sample))

