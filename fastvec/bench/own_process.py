"""A runner built, warmed up and timed in a fresh interpreter of its own, driven over a pipe.

Importing the mujoco Python bindings (gymnasium's MuJoCo envs do) installs MuJoCo's timer callback (mjcb_time) in
the libmujoco that fastvec's MuJoCo envs share, and from then on every mj_step in the process reads the clock
around each of its stages, fastvec's envs and the ceiling included (EnvPool, with its own MuJoCo, is not slowed;
the README's MuJoCo benchmark gives the cost). So a contender that would load them steps a MuJoCo env in a
process of its own (OwnProcessRunner, from Contender.build) and the measuring process never loads them; a process
that measures no fastvec (the memory probe) builds it in place (Contender.make).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe
from typing import Any

from fastvec.bench.runners import NotAvailable, Runner


class ChildExited(RuntimeError):
    """The process an :class:`OwnProcessRunner` steps in is gone."""


class OwnProcessRunner(Runner):
    """A contender's runner built, warmed up and timed in a fresh interpreter of its own, driven over a pipe: the
    measurements are the child's, taken as in this process; its construction and its messages are not timed."""

    def __init__(self, serve: Callable[[int], None], *make: Any) -> None:
        """``serve``: the child's main, a module-level function that calls :func:`serve_runner` with the pipe's
        file descriptor; ``make``: what the child builds its runner from."""
        self._conn, child = Pipe()
        code = f"from {serve.__module__} import {serve.__name__}; {serve.__name__}({child.fileno()})"
        # Not in the caller's directory, which may be fastvec's source tree (see measure.memory_in_fresh_interpreter).
        self._proc = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=[child.fileno()], cwd=tempfile.gettempdir()
        )
        child.close()
        try:
            self.steps_per_call = self._call("make", *make)
        except Exception:
            self._conn.close()
            self._proc.wait()
            raise

    def _call(self, *message: Any) -> Any:
        try:
            self._conn.send(message)
            status, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            raise ChildExited(f"the process stepping it exited with code {self._proc.wait()}") from exc
        if status == "not available":
            raise NotAvailable(value)
        if status == "error":
            raise RuntimeError(value)
        return value

    def run(self, calls: int) -> int:
        return self._call("run", calls)

    def warm_up(self, seconds: float) -> None:
        self._call("warm_up", seconds)

    def timed(self, seconds: float) -> dict[str, Any]:
        return self._call("timed", seconds)

    def close(self) -> None:
        try:
            self._call("close")
        except ChildExited:
            pass  # gone already: what it failed with was reported when it did
        finally:
            self._conn.close()
            self._proc.wait()


def serve_runner(fd: int, make: Callable[..., Runner]) -> None:
    """The child's side of :class:`OwnProcessRunner`: makes its runner in place (``make`` of the parent's
    arguments) and answers each call until "close"."""
    warnings.filterwarnings("ignore")  # as the measuring process: gymnasium warns on every construction
    conn, runner, parent = Connection(fd), None, os.getppid()
    while True:
        while not conn.poll(1.0):
            if os.getppid() != parent:
                return  # the bench died without closing it (processes it forked may hold the pipe open)
        method, *args = conn.recv()
        try:
            if method == "make":
                runner = make(*args)
                value = runner.steps_per_call
            else:
                value = getattr(runner, method)(*args)
        except NotAvailable as exc:
            conn.send(("not available", str(exc)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        else:
            conn.send(("ok", value))
        if method == "close" or (method == "make" and runner is None):
            return
