"""Drive one episode with a backend, turn by turn — the single-episode loop.

The runner (``sqlscout.runner``) drives many episodes at once; this loop drives one
and calls back after every model turn, which is what ``sqlscout ask`` shows live. The
prompt is passed to the backend as token ids where the backend has a tokenizer: the
ids the model generated are kept as they were (re-tokenizing its text can split it
differently), so a prefix-caching backend finds the previous turn's tokens intact.
"""

from __future__ import annotations

from typing import Callable

from sqlscout.backends.base import Backend, Generation, GenerationRequest, SamplingParams
from sqlscout.env.episode import Episode
from sqlscout.env.trace import EpisodeResult
from sqlscout.errors import BackendError

__all__ = ["TurnCallback", "drive_episode", "turn_params"]

# (episode, the model's generation, the observation or None when the episode ended)
TurnCallback = Callable[[Episode, Generation, "str | None"], None]


def turn_params(params: SamplingParams, max_tokens: int, stop: tuple[str, ...]) -> SamplingParams:
    """``params`` for one turn: the episode decides the length and adds its stop strings."""
    merged = tuple(dict.fromkeys((*params.stop, *stop)))
    return params.with_(max_tokens=max_tokens, stop=merged)


def drive_episode(
    episode: Episode,
    backend: Backend,
    params: SamplingParams,
    *,
    on_turn: TurnCallback | None = None,
) -> EpisodeResult:
    """Run ``episode`` to its end with ``backend`` and return its result.

    Raises:
        BackendError: the backend failed a turn (the episode cannot go on without it).
    """
    ids = backend.tokenize(episode.segments[0].text)
    consumed = 1  # segments already in `ids`
    while not episode.done:
        turn = episode.request()
        request = GenerationRequest(turn_params(params, turn.max_tokens, turn.stop), prompt=turn.prompt, prompt_ids=ids)
        generation = backend.generate([request])[0]
        if generation.finish_reason == "error":
            raise BackendError(f"the {backend.name} backend failed a turn: {generation.error or 'no reason given'}")
        observation = episode.step(
            generation.text,
            n_tokens=len(generation.token_ids) or None,
            finish_reason=generation.finish_reason,
            model_time_s=generation.elapsed_s,
        )
        episode.rounds[-1].set_model_time(
            generation.prompt_evaluated, generation.prompt_reused, generation.prefill_s, generation.decode_s
        )
        if ids is not None and generation.token_ids:
            ids = ids + generation.token_ids
            for segment in episode.segments[consumed + 1 :]:
                ids += backend.tokenize(segment.text) or []
        elif ids is not None:  # no ids from the backend: fall back to text for the rest
            ids = None
        consumed = len(episode.segments)
        if on_turn is not None:
            on_turn(episode, generation, observation)
    return episode.result().tally()
