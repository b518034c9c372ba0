"""One model shared by concurrent requests: their generate calls merged into batches.

Each ``ask`` request drives its episode through its own :class:`~sqlscout.runner.Runner`
(so a request can start while others are mid-episode), and every runner calls the same
:class:`BatchingBackend`. While the model works on one batch, the calls that arrive
wait together and go to it as the next batch: concurrent episodes share each forward
pass, as the runner's own episodes do within one run. :class:`RequestBackend` is one
request's view of it, which stops generating once that request is cancelled or past its
deadline (the runner then ends the episode with stop reason ``backend_error``).

>>> from sqlscout.backends.scripted import ScriptedBackend
>>> from sqlscout.backends.base import GenerationRequest, SamplingParams
>>> shared = BatchingBackend(ScriptedBackend(["SELECT 1"]))
>>> shared.generate([GenerationRequest(SamplingParams(), prompt="<|im_start|>assistant\\n")])[0].text
'SELECT 1<|im_end|>'
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Sequence

from sqlscout.backends.base import Backend, Generation, GenerationRequest

__all__ = ["BatchStats", "BatchingBackend", "RequestBackend"]


@dataclass
class _Call:
    requests: list[GenerationRequest]
    generations: list[Generation] | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass
class BatchStats:
    """How the shared model was used: calls merged, batches run, the largest batch."""

    calls: int = 0
    batches: int = 0
    largest: int = 0
    requests: int = 0


class BatchingBackend(Backend):
    """Merges the generate calls of concurrent threads into batched calls of ``backend``.

    Args:
        backend: the model, loaded once.
        max_batch: most requests in one batched call.
    """

    def __init__(self, backend: Backend, max_batch: int = 64) -> None:
        self.backend = backend
        self.name = backend.name
        self.chat = backend.chat
        self.counter = backend.counter
        self.max_batch = max_batch
        self.stats = BatchStats()
        self._cond = threading.Condition()
        self._pending: list[_Call] = []
        self._busy = False

    def tokenize(self, text: str) -> list[int] | None:
        return self.backend.tokenize(text)

    @property
    def parameters(self) -> int | None:
        return self.backend.parameters

    def close(self) -> None:
        self.backend.close()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        call = _Call(list(requests))
        with self._cond:
            self._pending.append(call)
            self.stats.calls += 1
            while not call.done:
                if self._busy:
                    self._cond.wait()
                    continue
                # Nobody is generating: lead one batch of what is waiting (ours, or the
                # earlier calls ahead of it), then look again.
                batch = self._take()
                self._busy = True
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if call.error is not None:
            raise call.error
        assert call.generations is not None
        return call.generations

    def _take(self) -> list[_Call]:
        batch: list[_Call] = []
        size = 0
        while self._pending and (not batch or size + len(self._pending[0].requests) <= self.max_batch):
            call = self._pending.pop(0)
            batch.append(call)
            size += len(call.requests)
        self.stats.batches += 1
        self.stats.requests += size
        self.stats.largest = max(self.stats.largest, size)
        return batch

    def _run(self, batch: list[_Call]) -> None:
        flat = [r for call in batch for r in call.requests]
        try:
            generations = self.backend.generate(flat)
            if len(generations) != len(flat):
                raise RuntimeError(f"{self.name} returned {len(generations)} results for {len(flat)} requests")
        except Exception as exc:  # noqa: BLE001 - each caller's runner records it for its own episode
            for call in batch:
                call.error, call.done = exc, True
            return
        start = 0
        for call in batch:
            call.generations = generations[start : start + len(call.requests)]
            call.done = True
            start += len(call.requests)


class RequestBackend(Backend):
    """One request's view of the shared model: it answers with errors once ``cancelled``
    is set or ``deadline`` (a :func:`time.monotonic` time) has passed."""

    def __init__(self, shared: BatchingBackend, deadline: float, cancelled: threading.Event, timeout_s: float) -> None:
        self.shared = shared
        self.name = shared.name
        self.chat = shared.chat
        self.counter = shared.counter
        self.deadline = deadline
        self.cancelled = cancelled
        self.timeout_s = timeout_s

    def tokenize(self, text: str) -> list[int] | None:
        return self.shared.tokenize(text)

    @property
    def stopped(self) -> str | None:
        """Why this request may not generate any more, or None."""
        if self.cancelled.is_set():
            return "the request was cancelled"
        if time.monotonic() > self.deadline:
            return f"the request ran past its deadline of {self.timeout_s:g} s"
        return None

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        reason = self.stopped
        if reason is not None:
            return [Generation("", [], None, "error", error=reason) for _ in requests]
        return self.shared.generate(requests)
