"""The worker processes of a Python-env pool: starting them with their pipes, hearing what each reports at
start-up, telling when one has died (and why, when it could be the main script's fault), and releasing them
with the shared mapping however the pool ends (close, garbage collection, interpreter exit, a fork).

The pool composes a :class:`Workers` with the :class:`~fastvec.pyenv.channel.Channel` that its start makes:
the channel waits on the workers' pipes and is handed :meth:`Workers.check` as its health check.
"""

from __future__ import annotations

import ast
import mmap
import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from fastvec.pyenv import worker
from fastvec.pyenv.channel import POLL_SECONDS, Channel
from fastvec.pyenv.layout import SHUTDOWN, Buffers, Layout, wait_readable


class WorkerDiedError(RuntimeError):
    """A worker process died (killed, crashed); the pool can only be closed."""

    # Raised through the pool and imported from it: its printed (and pickled) name stays the pool's.
    __module__ = "fastvec.pyenv.pool"


def _join_all(procs: list[Any], seconds: float) -> None:
    """Waits up to ``seconds`` in all for every process to exit."""
    deadline = time.monotonic() + seconds
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))


def _how(exitcode: int) -> str:
    if exitcode < 0:
        try:
            return f"was killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def _has_main_guard(path: str) -> bool:
    """Whether the script at ``path`` has a module-level ``if __name__ == "__main__":`` (True when unsure)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return True
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            sides = [test.left, test.comparators[0]]
            if any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and any(
                isinstance(x, ast.Constant) and x.value == "__main__" for x in sides
            ):
                return True
    return False


def refuse_in_main_import() -> None:
    """Raises if this process is a worker importing the main script (spawn, forkserver), whose top level makes a
    pool: that would start workers of its own, without end."""
    if getattr(mp.current_process(), "_inheriting", False):
        raise RuntimeError(
            "fastvec.make() was called while a worker process imports the main module: under the spawn and "
            "forkserver start methods each worker imports the main script, so code at its top level runs "
            'again there. Put the code that makes the pool under `if __name__ == "__main__":` (or pass '
            "start_method='fork')"
        )


def check_start_method(start_method: str | None) -> str:
    """``start_method`` checked, or the default: forkserver where there is one, else spawn."""
    methods = mp.get_all_start_methods()
    if start_method is None:
        start_method = "forkserver" if "forkserver" in methods else "spawn"
    if start_method not in methods:
        raise ValueError(f"start_method must be one of {methods}, got {start_method!r}")
    return start_method


class Resources:
    """Everything that must be released, kept apart from the env so that weakref.finalize can
    release it at garbage collection or interpreter exit without keeping the env alive."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # the process that owns the workers
        self.procs: list[Any] = []
        self.conns: list[Any] = []
        self.wake_fds: list[int] = []  # the parent's ends of the wake pipes (also in conns)
        self.mm: mmap.mmap | None = None
        self.buffers: Buffers | None = None
        _live.add(self)

    def close(self) -> None:
        if os.getpid() != self.pid:
            # A forked child holds a copy of the parent's pool: the workers and the shared memory are
            # the parent's, so the child only forgets them (shutting them down would stop the parent's).
            self.procs, self.conns, self.buffers = [], [], None
            return
        procs, self.procs = self.procs, []
        if self.buffers is not None:  # the workers run their loop: they exit at the next wake-up
            self.buffers.ctrl[:, SHUTDOWN] = 1
            for fd in self.wake_fds:  # (a forked worker holds a copy of its pipe's write end: closing ours
                try:  # would not wake it)
                    os.write(fd, b"\0")
                except OSError:
                    pass
        self.wake_fds = []
        for conn in self.conns:  # closing the wake pipes wakes a worker that waits for its layout
            try:
                conn.close()
            except OSError:
                pass
        self.conns = []
        _join_all(procs, 0.5)
        for p in procs:
            if p.exitcode is None:
                p.terminate()
        _join_all(procs, 0.5)
        for p in procs:
            if p.exitcode is None:
                p.kill()
                p.join()
            p.close()
        if self.buffers is not None:
            self.buffers.release()
            self.buffers = None
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:  # a view is still alive somewhere; the mapping goes with it
                pass
            self.mm = None


_live: weakref.WeakSet[Resources] = weakref.WeakSet()  # the pools of this process, for the fork hook


def _forget_parent_workers() -> None:
    """In a child made by os.fork(): drops the parent's workers from multiprocessing's children, whose
    exit hook would otherwise terminate them (it terminates every daemon child it knows) when the child
    exits normally. They serve the parent; the child's copy of a pool only forgets them."""
    children = getattr(mp.process, "_children", None)
    if children is None:
        return
    for res in list(_live):
        for p in res.procs:
            children.discard(p)


os.register_at_fork(after_in_child=_forget_parent_workers)


class Workers:
    """The worker processes of one pool: worker ``w`` steps envs ``bounds[w]..bounds[w + 1] - 1``. Its processes
    and pipes are kept in ``res`` (released there); ``dead`` says, once :meth:`check` has found a worker dead,
    which one and how (the pool can then only be closed)."""

    def __init__(self, res: Resources, start_method: str, bounds: list[int]) -> None:
        self.res = res
        self.start_method = start_method
        self.bounds = bounds
        self.num_workers = len(bounds) - 1
        self.dead: str | None = None

    def start(self, env_fns: list[Callable[[], gym.Env]], memfd: int, config: dict[str, Any]) -> Channel:
        """Starts one process per worker, each with its env constructors, and keeps the parent's pipe ends: the
        wake pipes here, the others in the channel returned."""
        import cloudpickle

        res = self.res
        ctx: Any = mp.get_context(self.start_method)
        results_r, results_w = ctx.Pipe(duplex=False)
        # The parent keeps a write end of the results pipe too: close() from a signal handler or another
        # thread writes to it to wake the call that waits.
        res.conns += [results_r, results_w]
        self.wake: list[Any] = []
        sides: list[Any] = []
        calls: list[Any] = []
        child_ends = []
        try:
            for w in range(self.num_workers):
                wake_r, wake_w = ctx.Pipe(duplex=False)
                side_r, side_w = ctx.Pipe(duplex=False)
                call_r, call_w = ctx.Pipe(duplex=False)
                res.conns += [wake_w, side_r, call_w]
                child_ends += [wake_r, side_w, call_r]
                lo, hi = self.bounds[w], self.bounds[w + 1]
                blob = cloudpickle.dumps(env_fns[lo:hi])
                proc = ctx.Process(
                    target=worker.run,
                    name=f"fastvec-pyenv-{w}",
                    daemon=True,
                    args=(w, lo, hi, blob, worker.SharedFd(memfd), wake_r, results_w, side_w, call_r, config),
                )
                proc.start()
                res.procs.append(proc)
                self.wake.append(wake_w)
                sides.append(side_r)
                calls.append(call_w)
        finally:
            for conn in child_ends:
                conn.close()
        self.procs = list(res.procs)
        self.sentinels: list[int] = [p.sentinel for p in self.procs]
        return Channel(
            results_r.fileno(),
            results_w.fileno(),
            [c.fileno() for c in sides],
            [c.fileno() for c in calls],
            self.sentinels,
            self.check,
        )

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def await_startup(self, channel: Channel, stage: str) -> list[tuple]:
        """Waits for every worker's start-up message ``stage`` ("spaces", then "ready"); raises a worker's
        init_error, or a WorkerDiedError naming a worker that dies first."""
        doing = "while making its envs" if stage == "spaces" else "while starting"
        got: dict[int, tuple] = {}
        waiting = list(range(self.num_workers))
        while waiting:
            for w in waiting:
                channel.pull(w)
                blob = channel.messages.pop(-1 - w, None)
                if blob is None:
                    continue
                msg = pickle.loads(blob)
                if msg[0] == "init_error":
                    kinds = {"ValueError": ValueError, "TypeError": TypeError, "AttributeError": AttributeError}
                    kind = kinds.get(msg[1].split(":")[0], RuntimeError)
                    raise kind(f"making the envs of worker {w} failed: {msg[1]}\n\nworker traceback:\n{msg[2]}")
                got[w] = msg
            waiting = [w for w in waiting if w not in got]
            if not waiting:
                break
            fds = [channel.side_fds[w] for w in waiting] + [self.sentinels[w] for w in waiting]
            ready = wait_readable(fds, POLL_SECONDS)
            for w in waiting:
                if self.sentinels[w] in ready:
                    channel.pull(w)  # it may have said why before it went
                    if -1 - w not in channel.messages:
                        self.check(wait=0.05, starting=doing)
        return [got[w] for w in range(self.num_workers)]

    def send_layout(self, layout: Layout, pool_spaces: bytes) -> None:
        """Sends every worker the shared mapping's layout and the pool's spaces (pickled), then makes the wake
        pipes non-blocking: from here on a wake-up never waits."""
        for conn in self.wake:
            try:
                conn.send((layout, pool_spaces))
            except BrokenPipeError:  # the worker died after it reported its spaces
                self.check(wait=0.5, starting="while starting")
                raise
            os.set_blocking(conn.fileno(), False)
            self.res.wake_fds.append(conn.fileno())

    def check(self, wait: float = 0.0, starting: str = "") -> None:
        """Raises WorkerDiedError if a worker has exited (``starting``: what it was doing, during start-up)."""
        for w, p in enumerate(self.procs):
            if p.exitcode is None and wait:
                p.join(wait)
            if p.exitcode is not None:
                lo, hi = self.bounds[w], self.bounds[w + 1]
                what = f"worker {w} (pid {p.pid}, envs {lo}..{hi - 1}) {_how(p.exitcode)}"
                if starting:
                    raise WorkerDiedError(f"{what} {starting}{self._main_guard_advice()}")
                self.dead = f"{what}; the pool cannot continue, close it and make a new one"
                raise WorkerDiedError(self.dead)

    def _main_guard_advice(self) -> str:
        """Under spawn/forkserver, a worker that died during start-up may have run a main script that has
        no main guard (and so tried to make a pool of its own): then says what to add."""
        path = getattr(sys.modules.get("__main__"), "__file__", None)
        if self.start_method == "fork" or not path or _has_main_guard(path):
            return ""
        return (
            f'; {path} has no module-level `if __name__ == "__main__":` guard: under start_method='
            f"{self.start_method!r} every worker imports the main script, whose top-level code then makes a "
            'pool again. Put the code that makes the pool under `if __name__ == "__main__":` (or pass '
            "start_method='fork')"
        )
