"""The request and result rings in the shared mapping, one pair per worker, and the wake pipes.

The parent appends the envs it sends to their worker's request ring, publishes the new head and wakes the
worker; the worker appends each env it has finished to its result ring and publishes that head. A worker never
overwrites an entry the parent has not taken: each env has at most one request in flight, and a ring holds one
entry per env of its worker. The parent takes results in two steps (:meth:`Rings.peek`, then :meth:`Rings.take`),
so that a wait in between (for an env's message) can be interrupted without losing any.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from fastvec.pyenv.layout import COMP_HEAD, REQ_HEAD, Buffers

# A worker, its env ids and their rows (a slice when they are all its envs: cheaper to assign than the ids).
Group = tuple[int, np.ndarray, Any]
# A worker, the number of results taken from its ring and their env ids.
Part = tuple[int, int, np.ndarray]


class Rings:
    """The rings of one pool: worker ``w`` steps envs ``bounds[w]..bounds[w + 1] - 1`` (``worker_of``: each env's
    worker); ``wake_fds``: the parent's ends of the wake pipes; ``check(wait)``: the workers' health check, for a
    wake pipe that broke."""

    def __init__(
        self,
        b: Buffers,
        bounds: list[int],
        worker_of: np.ndarray,
        all_ids: np.ndarray,
        wake_fds: list[int],
        check: Callable[[float], None],
    ) -> None:
        self._b = b
        self._ring = b.comp_ring.shape[1]  # a ring's capacity
        self._worker_of = worker_of
        self._all_ids = all_ids
        self._wake_fds = wake_fds
        self._check = check
        workers = len(wake_fds)
        self._workers = workers
        pairs = enumerate(itertools.pairwise(bounds))
        self._all_groups: list[Group] = [(w, np.arange(lo, hi, dtype=np.int32), slice(lo, hi)) for w, (lo, hi) in pairs]
        self._req_head = [0] * workers
        self._comp_tail = [0] * workers
        self._start_worker = 0  # the worker whose results are taken first (in turn: no worker waits on another)

    def groups(self, ids: np.ndarray) -> Iterable[Group]:
        """``ids`` by worker."""
        if ids is self._all_ids:
            return self._all_groups
        owner = self._worker_of[ids]
        return ((w, sub, sub) for w in np.unique(owner).tolist() for sub in (ids[owner == w],))

    def request(self, w: int, sub: np.ndarray) -> None:
        """Appends ``sub`` to worker ``w``'s request ring: its envs are in flight from the moment its REQ_HEAD says
        so (then :meth:`wake` it)."""
        head = self._req_head[w]
        count = len(sub)
        self._b.req_ring[w, np.arange(head, head + count) % self._ring] = sub
        head += count
        self._req_head[w] = head
        self._b.ctrl[w, REQ_HEAD] = head

    def wake(self, w: int) -> None:
        try:
            os.write(self._wake_fds[w], b"\0")
        except BlockingIOError:  # the worker has unread wake-ups already
            pass
        except BrokenPipeError:  # the worker is gone
            self._check(0.5)
            raise

    def heads(self) -> list[int]:
        """Each worker's published result head."""
        return self._b.ctrl[:, COMP_HEAD].tolist()

    def published(self, heads: list[int]) -> int:
        """The results published (by ``heads``) and not taken yet."""
        return sum(heads) - sum(self._comp_tail)

    def peek(self, heads: list[int], need: int) -> tuple[list[Part], np.ndarray | None]:
        """The first ``need`` results published by ``heads`` (at most), the workers' in turn, without taking them:
        the parts of :meth:`take` and their env ids (None if none)."""
        ring, tails, comp_ring, workers = self._ring, self._comp_tail, self._b.comp_ring, self._workers
        start = self._start_worker
        parts: list[Part] = []
        for k in range(workers):
            if need == 0:
                break
            w = (start + k) % workers
            tail = tails[w]
            take = min(heads[w] - tail, need)
            if take > 0:
                first = tail % ring
                if first + take <= ring:
                    got = comp_ring[w, first : first + take].copy()
                else:
                    got = comp_ring[w, np.arange(tail, tail + take) % ring]
                parts.append((w, take, got))
                need -= take
                if need == 0:
                    break
        ids = parts[0][2] if len(parts) == 1 else np.concatenate([p[2] for p in parts]) if parts else None
        return parts, ids

    def take(self, parts: list[Part]) -> None:
        """Takes the results of ``parts`` (from :meth:`peek`) off their rings; the next take starts at the next
        worker."""
        for w, take, _ in parts:
            self._comp_tail[w] += take
        self._start_worker = (self._start_worker + 1) % self._workers

    def answered(self, heads: list[int]) -> list[int]:
        """The envs whose results are published (by ``heads``) and not taken yet."""
        ring = self._ring
        out: list[int] = []
        for w, (head, tail) in enumerate(zip(heads, self._comp_tail, strict=True)):
            out += self._b.comp_ring[w, np.arange(tail, head) % ring].tolist()
        return out
