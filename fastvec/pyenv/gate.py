"""Who may call a Python-env pool, and when: one call at a time, and close() from anywhere.

Every public call of the pool holds ``busy`` (an RLock, so that a signal handler running inside a call is told
that it re-entered instead of deadlocking); a call of another thread waits for it, as the native pool serialises
calls. ``close()`` from a signal handler or another thread sets the channel's ``closing`` and wakes the waiting
call, which raises "the pool is closed"; the resources are released by whoever holds ``busy`` next. A forked
child's copy of the pool refuses every call and only forgets the parent's workers when closed.
"""

from __future__ import annotations

import os
import threading
import weakref

from fastvec.pyenv.channel import Channel
from fastvec.pyenv.processes import Resources, WorkerDiedError, Workers


class CallGate:
    """The gate of one pool: ``busy`` is held by the call in progress, ``release`` releases ``res`` (once)."""

    def __init__(
        self,
        busy: threading.RLock,
        res: Resources,
        release: weakref.finalize,
        channel: Channel,
        workers: Workers,
    ) -> None:
        self._busy = busy
        self._res = res
        self._release = release
        self._channel = channel
        self._workers = workers
        self._depth = 0  # 1 while a call holds busy: a second acquire by the same thread is re-entry
        self._close_on_leave = False  # close() came from a signal handler inside a call: that call closes

    @property
    def closed(self) -> bool:
        return self._channel.closing or not self._release.alive

    def enter(self, call: str) -> None:
        """Starts public call ``call``: takes busy (a call of another thread goes first, as the native pool
        serialises calls), or raises if this thread is inside a call already (a signal handler's) or the pool
        is unusable."""
        if not self._busy.acquire(False):
            self._check_usable()
            self._busy.acquire()
        if not (self._depth or self.closed or self._workers.dead is not None or os.getpid() != self._res.pid):
            self._depth = 1
            return
        self._busy.release()
        if self._depth:
            raise RuntimeError(
                f"{call}() called from a signal handler (or re-entrantly) while this pool waits in recv(); the "
                "pool serves one call at a time: let the handler set a flag (or raise) and act on it once the "
                "call returns, or close() the pool from the handler"
            )
        self._check_usable()

    def leave(self) -> None:
        """Ends a public call; if a signal handler called close() in the meantime, closes the pool now."""
        self._depth = 0
        self._busy.release()
        if self._close_on_leave:
            with self._busy:
                self._release()

    def close(self) -> None:
        """The pool's close() (see :meth:`fastvec.pyenv.pool.PyEnvPool.close`)."""
        if os.getpid() != self._res.pid:  # a forked child's copy only forgets the parent's workers; it must not
            self._release()  # wait for busy, which a thread of the parent may have held at the fork
            return
        self._channel.closing = True
        if self._busy.acquire(blocking=False):  # no call in progress, or this thread's (a signal handler's)
            try:
                if self._depth:  # re-entered from a signal handler: the call in progress closes on its way out
                    self._close_on_leave = True
                    self._channel.nudge()
                    return
                self._release()
            finally:
                self._busy.release()
            return
        self._channel.nudge()  # another thread's call: it wakes, raises and lets go of busy; then we close
        with self._busy:
            self._release()

    def _check_usable(self) -> None:
        if os.getpid() != self._res.pid:
            raise RuntimeError(
                f"this pool was made in process {self._res.pid} and cannot be used after fork "
                "(its workers serve the parent only); make a new pool in the child process"
            )
        if self.closed:
            raise RuntimeError("the pool is closed")
        if self._workers.dead is not None:
            raise WorkerDiedError(self._workers.dead)
