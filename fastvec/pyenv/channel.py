"""The parent's ends of its workers' pipes, and every wait on them.

Per worker a side pipe (the worker writes framed messages: an env's info or error under the env's id, start-up
messages and env-call replies under ``-1 - worker``) and a call pipe (the parent writes framed requests); one
results pipe for all (its bytes only wake the parent: the rings in shared memory say what is done), of which the
parent keeps the write end too, so that close() can wake a call that waits.

A channel knows nothing of the processes behind its pipes: it is given their exit sentinels to wait on and a
health check to call when it woke without what it waited for (it raises if a worker died).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import fastvec._core as _core
from fastvec.pyenv.layout import MESSAGE_HEADER, wait_readable, wait_ready

POLL_SECONDS = 0.25  # how often a blocked parent looks at its workers' health


class Channel:
    """The pipes of one pool's workers. ``messages``: the side pipes' whole messages, received and not yet taken,
    by key. ``closing``: set by close(); a wait that sees it raises "the pool is closed". ``check(wait)``: the
    workers' health check (``wait``: seconds to give a worker whose sentinel fired to finish exiting)."""

    def __init__(
        self,
        results_fd: int,
        nudge_fd: int,
        side_fds: list[int],
        call_fds: list[int],
        sentinels: list[int],
        check: Callable[[float], None],
    ) -> None:
        self.results_fd = results_fd
        os.set_blocking(results_fd, False)
        self._nudge_fd = nudge_fd
        os.set_blocking(nudge_fd, False)
        self.side_fds = side_fds
        for fd in side_fds:
            os.set_blocking(fd, False)
        self._side_bufs = [bytearray() for _ in side_fds]
        self._call_fds = call_fds
        for fd in call_fds:
            os.set_blocking(fd, False)
        # Per worker, the bytes of its call requests not yet in its call pipe (the rest of a request that an
        # exception interrupted goes out ahead of the next one, so that the worker never reads a torn request).
        self._call_out = [bytearray() for _ in call_fds]
        self._sentinels = sentinels
        self._block_fds = [results_fd, *sentinels, *side_fds]
        self._check = check
        self.closing = False
        self.messages: dict[int, bytes] = {}

    def raise_if_closing(self) -> None:
        if self.closing:
            raise RuntimeError("the pool is closed")

    def nudge(self) -> None:
        """Wakes a call that waits for results (it then sees ``closing``). Called only while that call
        holds the resources open, so the fd is still ours."""
        try:
            os.write(self._nudge_fd, b"\0")
        except OSError:  # the pipe is full (the waiter wakes anyway)
            pass

    def queue_request(self, w: int, key: int, payload: bytes) -> None:
        """Frames a request for worker ``w``'s call pipe; :meth:`write_requests` sends it."""
        self._call_out[w] += MESSAGE_HEADER.pack(key, len(payload)) + payload

    def write_requests(self, workers: list[int]) -> None:
        """Writes the pending call requests of ``workers`` into their call pipes; while a pipe is full, takes
        what the workers write meanwhile (a worker blocked on a full side pipe reads no requests)."""
        pending = [w for w in workers if self._call_out[w]]
        while pending:
            for w in pending:
                try:
                    # (written and taken off in one call: Ctrl-C between the two would send a request twice)
                    _core.write_pending(self._call_fds[w], self._call_out[w])
                except BrokenPipeError:  # the worker is gone
                    self._check(0.5)
                    raise
            pending = [w for w in pending if self._call_out[w]]
            if not pending:
                return
            self.raise_if_closing()
            ready = wait_ready(
                [self.results_fd, *self._sentinels, *self.side_fds],
                [self._call_fds[w] for w in pending],
                POLL_SECONDS,
            )
            self.take_wakeups(ready)
            self._check(0.05 if not ready.isdisjoint(self._sentinels) else 0.0)

    def take(self, w: int, key: int) -> bytes:
        """Waits for worker ``w``'s next message under ``key`` and takes it."""
        while True:
            self.pull(w)
            blob = self.messages.pop(key, None)
            if blob is not None:
                return blob
            self.raise_if_closing()
            ready = wait_readable([self.side_fds[w], self._sentinels[w], self.results_fd], POLL_SECONDS)
            self.take_wakeups(ready)
            if key not in self.messages:  # (a dead worker's side pipe is readable forever: it hung up)
                self._check(0.05 if self._sentinels[w] in ready else 0.0)

    def take_wakeups(self, ready: set[int]) -> None:
        """Empties the results pipe if it is among ``ready`` (its bytes are hints: the counters say what is done)
        and takes what the side pipes among them hold, so that a wait does not find them ready again."""
        if self.results_fd in ready:
            try:
                os.read(self.results_fd, 65536)
            except BlockingIOError:
                pass
        for w, fd in enumerate(self.side_fds):
            if fd in ready:
                self.pull(w)

    def pull(self, w: int) -> None:
        """Reads what worker ``w``'s side pipe holds, without blocking, and files every whole message in
        ``messages`` by its key (a part message waits in the worker's buffer for the rest)."""
        fd, buf = self.side_fds[w], self._side_bufs[w]
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break  # the worker is gone: its sentinel says so
            buf += chunk
        start, header = 0, MESSAGE_HEADER.size
        while len(buf) - start >= header:
            key, size = MESSAGE_HEADER.unpack_from(buf, start)
            end = start + header + size
            if len(buf) < end:
                break
            self.messages[key] = bytes(buf[start + header : end])
            start = end
        if start:
            del buf[:start]

    def await_message(self, w: int, e: int) -> None:
        """Pulls worker ``w``'s side pipe until env ``e``'s message is in. A worker writes all of a message
        before it publishes the result, so the first pull finds it; the loop is for a worker that died."""
        self.pull(w)
        while e not in self.messages:
            self.raise_if_closing()
            ready = wait_readable([self.side_fds[w], self._sentinels[w], self.results_fd], POLL_SECONDS)
            self.pull(w)
            if e not in self.messages:
                self._check(0.05 if self._sentinels[w] in ready else 0.0)

    def block(self, seconds: float = POLL_SECONDS) -> None:
        """Sleeps until a worker reports something (a result, a message, its death), close() nudges us,
        or ``seconds`` pass."""
        ready = wait_readable(self._block_fds, seconds)
        self.raise_if_closing()
        self.take_wakeups(ready)
        self._check(0.05 if not ready.isdisjoint(self._sentinels) else 0.0)
