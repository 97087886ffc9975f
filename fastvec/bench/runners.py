"""The Runner, what every contender is stepped through: one constructed, reset vector env and the loop that
steps it, how a runner is timed (warm-up, then chunked timing), and the two generic loops (sync steps; async
recv/send, EnvPool's idiom). NotAvailable is what a contender raises for an env it cannot run."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from fastvec.bench.machine import CpuShare

CHUNK_SECONDS = 0.01  # the timer is read once per chunk of calls, not per call


class NotAvailable(Exception):
    """The contender cannot run this env (shown in the table as the message)."""


class Runner:
    """One constructed, reset vector env and the loop that steps it.

    ``run(calls)`` makes ``calls`` step calls (sync) or recv/send pairs (async)
    and returns the number of env steps they made.
    """

    steps_per_call: int
    chunk = 1  # calls timed at once, set by the warm-up

    def run(self, calls: int) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def warm_up(self, seconds: float) -> None:
        """Untimed stepping for at least ``seconds``, which also picks the chunk of calls timed at once."""
        self.chunk = calibrate(self, seconds)

    def timed(self, seconds: float) -> dict[str, Any]:
        """One measurement of about ``seconds``: :func:`measure`'s dict."""
        return measure(self, self.chunk, seconds)


class SyncRunner(Runner):
    """``step(actions)`` with each of ``actions`` in turn (pre-drawn batches: the rows of an array, or a multi-agent
    env's dicts), counting ``steps_per_call`` steps a call."""

    def __init__(
        self,
        env: Any,
        step: Callable[[Any], Any],
        actions: Iterable[Any],
        steps_per_call: int,
        close: Callable[[], None],
    ) -> None:
        self.env = env  # kept alive for the lifetime of the runner
        self._step = step
        self._actions: Iterator[Any] = itertools.cycle(list(actions))
        self.steps_per_call = steps_per_call
        self._close = close

    def run(self, calls: int) -> int:
        step = self._step
        for a in itertools.islice(self._actions, calls):
            step(a)
        return calls * self.steps_per_call

    def close(self) -> None:
        self._close()


class AsyncRunner(Runner):
    """EnvPool's async idiom, which fastvec shares: recv a batch, send actions for exactly those envs."""

    def __init__(self, env: Any, actions: np.ndarray, batch_size: int) -> None:
        self.env = env
        self._actions: Iterator[np.ndarray] = itertools.cycle(list(actions[:, :batch_size]))
        self.steps_per_call = batch_size
        env.async_reset()
        # The first recv returns reset results, not steps: take it here, outside any timing.
        info = env.recv()[4]
        env.send(next(self._actions), info["env_id"])

    def run(self, calls: int) -> int:
        recv, send = self.env.recv, self.env.send
        for a in itertools.islice(self._actions, calls):
            info = recv()[4]
            send(a, info["env_id"])
        return calls * self.steps_per_call

    def close(self) -> None:
        self.env.close()


def calibrate(runner: Runner, warmup_seconds: float) -> int:
    """Warms the runner up and returns a chunk size whose calls take about CHUNK_SECONDS."""
    chunk, per_call = 1, 0.0
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        runner.run(chunk)
        t1 = time.perf_counter()
        per_call = (t1 - t0) / chunk
        if t1 - start >= warmup_seconds and t1 - t0 >= CHUNK_SECONDS / 2:
            break
        if t1 - t0 < CHUNK_SECONDS:
            chunk *= 2
    return max(1, int(CHUNK_SECONDS / max(per_call, 1e-9)))


def measure(runner: Runner, chunk: int, seconds: float) -> dict[str, Any]:
    """Steps in chunks of ``chunk`` calls for ``seconds``: steps/s, µs per call, other processes' CPU share."""
    runner.run(chunk)  # re-warm caches after the other contenders ran
    share = CpuShare()
    steps = calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        steps += runner.run(chunk)
        calls += chunk
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    return {"steps_per_s": steps / elapsed, "us_per_call": elapsed / calls * 1e6, "other_cpu": share.other()}
