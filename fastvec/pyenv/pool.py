"""The Python-env pool: gymnasium envs stepped in worker processes, results in shared memory.

Each worker process owns a contiguous range of envs. Actions, observations,
rewards and flags live in one shared mapping (a memfd: no name in /dev/shm,
so nothing can leak even if the parent is killed) laid out as the batch
arrays the caller receives; the parent copies a batch's rows out into fresh
arrays, so a returned array is never overwritten. Only info dicts and
tracebacks are pickled, and only when an env produced them.

One caller at a time: every public call holds ``_busy`` (an RLock, so that a signal handler running
inside a call is told that it re-entered instead of deadlocking); the pool's bookkeeping (``_state``,
``_in_flight``, ``_comp_tail``, ``_messages``, ``_kept``, ...) is read and written only by the holder. ``close()``
from a signal handler or another thread sets ``_closing`` and wakes the waiting call, which raises
"the pool is closed"; the resources are released by whoever holds ``_busy`` next.
"""

from __future__ import annotations

import ast
import mmap
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastvec import _core
from fastvec._args import (
    MODES,
    SET_KINDS,
    autoreset_mode_name,
    available_cores,
    check_env_ids,
    check_int,
    check_observation_mode,
    check_timeout,
)
from fastvec._core import EnvError, Result
from fastvec.pyenv import worker as _worker
from fastvec.pyenv.layout import (
    COMP_HEAD,
    MESSAGE_HEADER,
    OP_RESET,
    OP_RESET_EMPTY,
    OP_RESET_OPTIONS,
    OP_STEP,
    REQ_HEAD,
    RESET_OPTIONS,
    SHUTDOWN,
    Buffers,
    Layout,
    check_spaces,
    flatten,
    leaf_spaces,
    leaves,
    unflatten,
    wait_readable,
    wait_ready,
)

_FRESH, _IDLE, _IN_FLIGHT = 0, 1, 2
SPIN_SECONDS = 30e-6  # how long the parent polls for results before it blocks
_POLL_SECONDS = 0.25  # how often a blocked parent looks at its workers' health
MAX_ENVS = 1 << 16  # the most envs one Python-env pool takes (fastvec.make and RLlib's configure check it)


class WorkerDiedError(RuntimeError):
    """A worker process died (killed, crashed); the pool can only be closed."""


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


def _add_info(infos: dict[str, Any], env_info: dict[str, Any], row: int, size: int) -> dict[str, Any]:
    """gymnasium's VectorEnv._add_info for a batch of ``size`` rows (not always num_envs)."""
    for key, value in env_info.items():
        if isinstance(value, dict):
            array = _add_info(infos.get(key, {}), value, row, size)
        else:
            array = infos.get(key)
            if array is None:
                if type(value) in (int, float, bool) or issubclass(type(value), np.number):
                    array = np.zeros(size, dtype=type(value))
                elif isinstance(value, np.ndarray):
                    array = np.zeros((size, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(size, fill_value=None, dtype=object)
            array[row] = value
        mask = infos.get(f"_{key}")
        if mask is None:
            mask = np.zeros(size, dtype=np.bool_)
        mask[row] = True
        infos[key], infos[f"_{key}"] = array, mask
    return infos


def _env_exception(
    e: int, what: str, exc_blob: bytes | None, type_name: str, message: str, trace: str
) -> BaseException:
    """The exception env ``e`` raised in ``what`` in its worker (pickled there as ``exc_blob``), with its own type, as
    gymnasium's AsyncVectorEnv re-raises it, and a note naming the env with the worker's traceback; an EnvError
    with its type and message when it could not travel."""
    error: BaseException | None = None
    if exc_blob is not None:
        try:
            error = pickle.loads(exc_blob)
        except Exception:
            error = None
    if not isinstance(error, BaseException):  # it could not travel: its type and message as text
        error = EnvError(f"env {e} raised {type_name}: {message}")
    note = f"raised by env {e} in {what}, in its worker process; traceback there:\n{trace.rstrip()}"
    if hasattr(error, "add_note"):
        error.add_note(note)
    else:  # Python 3.10: notes are kept, not printed
        error.__notes__ = [*getattr(error, "__notes__", []), note]  # type: ignore[attr-defined]
    return error


class _Resources:
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


_live: weakref.WeakSet[_Resources] = weakref.WeakSet()  # the pools of this process, for the fork hook


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


def make(
    env_id: str | Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
    num_envs: int | None = None,
    *,
    batch_size: int | None = None,
    num_workers: int | str | None = None,
    autoreset_mode: str | AutoresetMode = "next_step",
    max_episode_steps: int | None = None,
    start_method: str | None = None,
    observation_mode: str = "same",
    **env_kwargs: Any,
) -> PyEnvPool:
    """Makes the Python-env backend: a pool of Python gymnasium envs stepped in worker processes (what
    ``fastvec.make`` puts behind its :class:`fastvec.VectorEnv` for such envs).

    >>> env = fastvec.make(lambda: gymnasium.make("CartPole-v1"), num_envs=8, seed=0)
    >>> obs, info = env.reset()

    ``env_id`` is a gymnasium id (made with ``gymnasium.make(env, **env_kwargs)``), a callable
    returning an env, or a list of callables, one per env (``num_envs`` is then its length).
    ``num_workers``: the number of worker processes, by default one fewer than the cores (right for envs that
    compute); ``"per_env"`` starts one per env, for envs that wait (I/O, a socket, ``time.sleep``), which a
    worker would otherwise step one after another.

    ``observation_mode`` is gymnasium's AsyncVectorEnv's: ``"same"`` (every env has env 0's observation space) or
    ``"different"`` (spaces that differ in bounds, e.g. ``Discrete(5)`` and ``Discrete(10)``, but share type, shape
    and dtype; batched as env 0's). Action spaces are equal in either mode.
    """
    if getattr(mp.current_process(), "_inheriting", False):
        raise RuntimeError(
            "fastvec.make() was called while a worker process imports the main module: under the spawn and "
            "forkserver start methods each worker imports the main script, so code at its top level runs "
            'again there. Put the code that makes the pool under `if __name__ == "__main__":` (or pass '
            "start_method='fork')"
        )
    env = env_id
    if isinstance(env, str):
        env_id = env.removeprefix("fastvec/")
        try:
            spec = gym.spec(env_id)
        except gym.error.Error as exc:  # NameNotFound, VersionNotFound, ...: keep gymnasium's suggestions
            raise ValueError(f"unknown env_id {env_id!r}: {exc}") from exc
        if max_episode_steps is None:
            max_episode_steps = spec.max_episode_steps
        kwargs = dict(env_kwargs)
        if max_episode_steps is not None:
            kwargs["max_episode_steps"] = max_episode_steps
        num_envs = 1 if num_envs is None else check_int("num_envs", num_envs, 1, MAX_ENVS)
        env_fns: list[Callable[[], gym.Env]] = [_GymMake(env_id, kwargs)] * num_envs
    else:
        if env_kwargs:
            raise TypeError(
                f"keyword arguments {sorted(env_kwargs)} are passed to gymnasium.make and need an env id; "
                "a callable takes its own arguments"
            )
        if callable(env):
            num_envs = 1 if num_envs is None else check_int("num_envs", num_envs, 1, MAX_ENVS)
            env_fns = [env] * num_envs
        elif isinstance(env, Sequence) and len(env) > 0 and all(callable(f) for f in env):
            if num_envs is not None and num_envs != len(env):
                raise ValueError(f"num_envs ({num_envs}) must equal the number of env constructors ({len(env)})")
            env_fns = list(env)
            num_envs = len(env_fns)
        else:
            raise TypeError(
                "env_id must be a gymnasium id, a callable returning a gymnasium.Env, or a non-empty list of such "
                f"callables; got {type(env).__name__}"
            )
    batch_size = num_envs if batch_size is None else check_int("batch_size", batch_size, 1, num_envs)
    num_workers = _num_workers(num_workers, num_envs)
    autoreset_mode = autoreset_mode_name(autoreset_mode)
    if max_episode_steps is not None:
        max_episode_steps = check_int("max_episode_steps", max_episode_steps, 1, 2**31 - 1)
    observation_mode = check_observation_mode(observation_mode)
    methods = mp.get_all_start_methods()
    if start_method is None:
        start_method = "forkserver" if "forkserver" in methods else "spawn"
    if start_method not in methods:
        raise ValueError(f"start_method must be one of {methods}, got {start_method!r}")
    return PyEnvPool(
        env_fns,
        batch_size=batch_size,
        num_workers=num_workers,
        autoreset_mode=autoreset_mode,
        max_episode_steps=max_episode_steps,
        start_method=start_method,
        observation_mode=observation_mode,
    )


def _num_workers(num_workers: int | str | None, num_envs: int) -> int:
    """The number of worker processes for ``num_envs`` envs: ``num_workers`` as given (an int, or "per_env"), or
    the default.

    The default is for envs that compute: one worker fewer than the cores (the parent is busy too: copying
    batches, the policy), so that no two processes fight for a core. A worker steps its envs one after another,
    so envs that wait (I/O, a simulator over a socket, ``time.sleep``) wait one after another: they want
    ``num_workers="per_env"``, one process per env as SubprocVecEnv, SubprocVectorEnv and AsyncVectorEnv run
    them. Measured with ``benchmarks/bench_pyenv.py`` on 2 (busy) cores, steps/s of the default (1 worker) vs
    "per_env": envs that sleep 5 ms a step, 174 vs 1,026 (8 envs; SB3's SubprocVecEnv 1,077) and 183 vs 4,095
    (32 envs; SubprocVecEnv 3,369); CartPole, 7,893 vs 6,112 (8 envs) and 10,726 vs 3,893 (32 envs: every step
    wakes 32 processes on 2 cores); HeavyEnv (numpy work), 5,955 vs 5,341 (8) and 6,098 vs 5,586 (32). One
    process per env would cost computing envs up to 2.8x (and a process's memory per env); one worker per core
    costs waiting envs a factor of their number. The pool cannot tell beforehand which kind it was given, and
    guessing from the first steps' timings would change its speed and its processes behind the user's back
    (and misjudge envs that wait only sometimes), so the default stays the one that is right for envs that
    compute, and "per_env" is the documented answer for envs that wait."""
    if num_workers is None:
        return max(1, min(available_cores() - 1, num_envs))
    if isinstance(num_workers, str):
        if num_workers != "per_env":
            raise ValueError(f"num_workers must be an int or 'per_env', got {num_workers!r}")
        return num_envs
    return check_int("num_workers", num_workers, 1, num_envs)


class _GymMake:
    """``gymnasium.make(env_id, **kwargs)`` as a picklable callable."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id, self.kwargs = env_id, kwargs

    def __call__(self) -> gym.Env:
        return gym.make(self.env_id, **self.kwargs)


class PyEnvPool:
    """The Python-env backend of :class:`fastvec.VectorEnv`: ``num_envs`` Python envs stepped by worker
    processes. Its calls are the backend protocol (:class:`fastvec.vector.Backend`): results come back as
    :class:`fastvec._core.Result` batches, the envs' infos merged in as gymnasium's vector envs merge them.
    """

    def __init__(
        self,
        env_fns: list[Callable[[], gym.Env]],
        *,
        batch_size: int,
        num_workers: int,
        autoreset_mode: str,
        max_episode_steps: int | None,
        start_method: str,
        observation_mode: str = "same",
    ) -> None:
        self.num_envs = n = len(env_fns)
        self.batch_size = batch_size
        self.num_workers = self.num_threads = num_workers
        self.block_size = 1  # each env is its own unit of work
        self.max_episode_steps = max_episode_steps
        self.start_method = start_method
        self._mode = MODES[autoreset_mode]
        self._busy = threading.RLock()  # held by the call in progress (see the module docstring)
        self._depth = 0  # 1 while a call holds _busy: a second acquire by the same thread is re-entry
        self._closing = False  # close() was called: a waiting call raises "the pool is closed"
        self._close_on_leave = False  # close() came from a signal handler inside a call: that call closes
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.close)
        self._dead: str | None = None
        self._messages: dict[int, bytes] = {}  # side-channel payloads received, not yet handed out, by key

        bounds = np.linspace(0, n, num_workers + 1).round().astype(int)
        self._lo = bounds[:-1].tolist()
        counts = np.diff(bounds)
        self._worker_of = np.repeat(np.arange(num_workers), counts).astype(np.int32)
        self._worker_ids = [np.arange(lo, lo + c, dtype=np.int32) for lo, c in zip(self._lo, counts, strict=True)]
        self._all_groups = [(w, sub, slice(int(sub[0]), int(sub[-1]) + 1)) for w, sub in enumerate(self._worker_ids)]
        # Spinning pays only when a core is free for it; on a full machine it steals the core a worker
        # (or the parent) needs, and blocking at once is faster (measured: 1.6x on 2 cores, 2 workers).
        spare_core = available_cores() > num_workers
        self._spin = SPIN_SECONDS if spare_core else 0.0
        config = {
            "autoreset_mode": autoreset_mode,
            "max_episode_steps": max_episode_steps,
            "spin_seconds": _worker.SPIN_SECONDS if spare_core else 0.0,
        }

        # The workers make the envs and report their spaces; only then is the shared memory sized and
        # mapped (no env constructor runs in this process: one that crashes takes its worker, not us).
        memfd = os.memfd_create("fastvec-pyenv", os.MFD_CLOEXEC)
        try:
            self._start_workers(env_fns, bounds, memfd, config)
            spaces = self._await_startup("spaces")
            # Each env's spaces, from each worker's distinct ones (checked against env 0's, which lay out the
            # shared memory: every worker reads and writes by them).
            obs_spaces = [msg[1][0][i] for msg in spaces for i in msg[1][1]]
            act_spaces = [msg[2][0][i] for msg in spaces for i in msg[2][1]]
            check_spaces(obs_spaces, act_spaces, observation_mode)
            obs_space, act_space = obs_spaces[0], act_spaces[0]
            self.observation_mode = observation_mode
            #: each env's observation space (gymnasium's "different" mode batches them with batch_differing_spaces)
            self.env_observation_spaces = obs_spaces
            self.metadata = spaces[0][3]
            self.spec = spaces[0][4]
            self.render_mode = spaces[0][5]
            self.single_observation_space = obs_space
            self.single_action_space = act_space
            self._action_space = batch_space(act_space, batch_size)  # for messages
            self._act_spaces = leaf_spaces(act_space)
            layout = Layout(
                n,
                num_workers,
                int(counts.max()),
                tuple(leaves(obs_space)),
                tuple(leaves(act_space)),
                autoreset_mode == "same_step",
            )
            self._layout = layout
            self._simple_obs = len(layout.obs) == 1 and not layout.obs[0].path
            os.ftruncate(memfd, layout.size)
            self._res.mm = mmap.mmap(memfd, layout.size)
            self._b = self._res.buffers = Buffers(layout, self._res.mm)
            import cloudpickle

            # The pool's spaces, cloudpickled as the workers sent them (a Space subclass may not pickle by name).
            pool_spaces = cloudpickle.dumps((obs_space, act_space), pickle.HIGHEST_PROTOCOL)
            for conn in self._wake:
                try:
                    conn.send((layout, pool_spaces))
                except BrokenPipeError:  # the worker died after it reported its spaces
                    self._check_workers(wait=0.5, starting="while starting")
                    raise
                os.set_blocking(conn.fileno(), False)
                self._res.wake_fds.append(conn.fileno())
            self._wake_fds = list(self._res.wake_fds)
            self._await_startup("ready")
        except BaseException:
            self._res.close()
            raise
        finally:
            os.close(memfd)
        self._req_head = [0] * num_workers
        self._comp_tail = [0] * num_workers
        self._state = np.zeros(n, dtype=np.uint8)
        self._broken = np.zeros(n, dtype=bool)
        self._needs_reset = np.zeros(n, dtype=bool)
        self._in_flight = 0  # envs sent and not received (kept rows included)
        # In an async pool, the rows an env's exception kept from a recv (its batch's others, in row order; their
        # envs stay in flight and their results in their shared rows) and their side-channel messages: the next
        # receiving call returns them first (_collect). Empty on the path without errors.
        self._kept: list[int] = []
        self._kept_messages: dict[int, bytes] = {}
        self._observing = False  # the batch in flight is a partial reset that returns every env's row
        self._all_ids = np.arange(n, dtype=np.int32)
        self._start_worker = 0
        self._call_seq = 0  # the sequence number of the last env call
        # Per worker, the bytes of its call requests not yet in its call pipe (the rest of a request that an
        # exception interrupted goes out ahead of the next one, so that the worker never reads a torn request).
        self._call_out = [bytearray() for _ in range(num_workers)]

    def _start_workers(
        self, env_fns: list[Callable[[], gym.Env]], bounds: np.ndarray, memfd: int, config: dict[str, Any]
    ) -> None:
        """Starts one process per worker, each with its env constructors, and keeps the parent's pipe ends."""
        import cloudpickle

        ctx = mp.get_context(self.start_method)
        results_r, results_w = ctx.Pipe(duplex=False)
        # The parent keeps a write end of the results pipe too: close() from a signal handler or another
        # thread writes to it to wake the call that waits.
        self._res.conns += [results_r, results_w]
        self._wake: list[Any] = []
        self._sides: list[Any] = []
        calls: list[Any] = []
        child_ends = []
        try:
            for w in range(self.num_workers):
                wake_r, wake_w = ctx.Pipe(duplex=False)
                side_r, side_w = ctx.Pipe(duplex=False)
                call_r, call_w = ctx.Pipe(duplex=False)
                self._res.conns += [wake_w, side_r, call_w]
                child_ends += [wake_r, side_w, call_r]
                lo, hi = int(bounds[w]), int(bounds[w + 1])
                blob = cloudpickle.dumps(env_fns[lo:hi])
                proc = ctx.Process(
                    target=_worker.run,
                    name=f"fastvec-pyenv-{w}",
                    daemon=True,
                    args=(w, lo, hi, blob, _worker.SharedFd(memfd), wake_r, results_w, side_w, call_r, config),
                )
                proc.start()
                self._res.procs.append(proc)
                self._wake.append(wake_w)
                self._sides.append(side_r)
                calls.append(call_w)
        finally:
            for conn in child_ends:
                conn.close()
        self._results_fd = results_r.fileno()
        os.set_blocking(self._results_fd, False)
        self._nudge_fd = results_w.fileno()
        os.set_blocking(self._nudge_fd, False)
        self._side_fds = [c.fileno() for c in self._sides]
        for fd in self._side_fds:
            os.set_blocking(fd, False)
        self._side_bufs = [bytearray() for _ in range(self.num_workers)]
        self._call_fds = [c.fileno() for c in calls]
        for fd in self._call_fds:
            os.set_blocking(fd, False)
        self._procs = list(self._res.procs)
        self._sentinels = [p.sentinel for p in self._procs]
        self._block_fds = [self._results_fd, *self._sentinels, *self._side_fds]

    @property
    def closed(self) -> bool:
        return self._closing or not self._finalizer.alive

    # -- the backend protocol ---------------------------------------------

    def step(self, actions: Any) -> Result:
        """Steps every env (a sync pool), rows in env order."""
        self._enter("step")
        try:
            self._send(actions, None)
            return self._recv()
        finally:
            self._leave()

    def send(self, actions: Any, env_id: Any) -> None:
        """Queues one step of each env in ``env_id`` (every env if None) and returns at once."""
        self._enter("send")
        try:
            self._send(actions, env_id)
        finally:
            self._leave()

    def recv(self, timeout: float | None = None) -> Result:
        """Waits for the first ``batch_size`` envs to finish (every env in env order, in a sync pool); after
        ``timeout`` seconds (None: no limit), a TimeoutError naming the envs that have not answered, which stay
        in flight."""
        self._enter("recv")
        try:
            return self._recv(check_timeout(timeout))
        finally:
            self._leave()

    def recv_ready(self, rows: int, timeout: float | None) -> Result:
        """Waits for ``rows`` results (at most the envs in flight) for up to ``timeout`` seconds, then takes those
        that have come, at least one (Tianshou's ``timeout``); rows in the order taken."""
        self._enter("recv")
        try:
            timeout = check_timeout(timeout)
            if not self._in_flight:
                raise RuntimeError("recv_ready() would wait forever: no env is in flight")
            rows = check_int("rows", rows, 1, self._in_flight)
            ids, messages = self._collect(rows, timeout, settle=True)
            return self._result(ids, messages, sort=False)
        finally:
            self._leave()

    def recv_rest(self, timeout: float | None = None) -> Result:
        """In an async pool, waits for the envs still in flight when they are fewer than ``batch_size``."""
        self._enter("recv_rest")
        try:
            timeout = check_timeout(timeout)
            if self.batch_size == self.num_envs or not 0 < self._in_flight < self.batch_size:
                sync = self.batch_size == self.num_envs
                whole = ": the Python-env pool takes a sync pool's steps whole" if sync else ""
                raise RuntimeError(
                    "recv_rest() takes the envs in flight when they are fewer than batch_size "
                    f"({self._in_flight} env(s) in flight, batch_size {self.batch_size}{whole})"
                )
            ids, messages = self._collect(self._in_flight, timeout)
            return self._result(ids, messages, sort=False)
        finally:
            self._leave()

    def send_reset(self, env_id: Any, seeds: Sequence[int | None], options: dict[str, Any] | None = None) -> None:
        """Queues a reset of every env (``env_id`` None) or of the idle envs in ``env_id``; ``seeds``, when not
        empty, has one seed (or None) per env reset; ``options``: each env's ``reset(options=...)``, a copy each."""
        blob = self._options_blob(options)
        self._enter("async_reset")
        try:
            if env_id is None:
                self._send_reset(self._all_ids, list(seeds) or None, options, blob)
                return
            ids = self._check_ids(env_id)
            busy = ids[self._state[ids] == _IN_FLIGHT]
            if len(busy):
                raise RuntimeError(f"env {busy[0]} is in flight; receive its result before resetting it")
            self._send_reset(ids, list(seeds) or None, options, blob)
        finally:
            self._leave()

    def reset_envs(
        self, env_id: Any, seeds: Sequence[int | None], all_rows: bool, options: dict[str, Any] | None = None
    ) -> Result:
        """Resets the envs in ``env_id`` (nothing may be in flight) and waits: their rows, in ``env_id``'s
        order, or (``all_rows``) every env's in env order, the others reporting their observation with no
        reward and no flags (then every other env must have been reset once); ``options`` as for send_reset."""
        blob = self._options_blob(options)
        self._enter("reset")
        try:
            ids = self._check_ids(env_id)
            if self._in_flight:
                raise RuntimeError("envs are in flight; receive their results before a partial reset")
            if all_rows:
                fresh = self._state == _FRESH
                fresh[ids] = False
                if fresh.any():
                    e = int(np.flatnonzero(fresh)[0])
                    raise RuntimeError(
                        f"env {e} has never been reset; a partial reset needs every other env reset once"
                    )
            self._send_reset(ids, list(seeds) or None, options, blob)
            _, messages = self._collect(len(ids))
            if all_rows:
                return self._result(ids, messages, sort=True, reset=ids)
            return self._result(ids, messages, sort=False)
        finally:
            self._leave()

    def drain(self) -> None:
        """Waits for every env in flight and drops its results."""
        self._enter("reset")
        try:
            self._drain()
        finally:
            self._leave()

    def refused(self, exc: RuntimeError, env_id: Any) -> None:
        """Nothing more precise to say about a refused step: the pool's own RuntimeError names the env and why."""

    def env_call(self, env_id: np.ndarray, kind: str, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """Runs ``kind`` (one of fastvec._args.ENV_CALL_KINDS) of attribute ``name`` on each env of ``env_id``
        (checked by the façade; may repeat) in its worker, and returns the results in that order; for the set
        kinds ``args`` holds one value per env. An env in flight is refused (as gymnasium's AsyncVectorEnv
        refuses a call while a step is pending); the other envs of its worker may be: the worker answers once
        it has stepped them. An exception of an env is raised here with its own type, a note naming the env
        and the worker's traceback (the first env's, in ``env_id`` order, when several raise)."""
        self._enter("env_call")
        try:
            ids = np.asarray(env_id, dtype=np.int32).reshape(-1).tolist()
            state = self._state
            for e in ids:
                if state[e] == _IN_FLIGHT:
                    raise RuntimeError(
                        f"env {e} is in flight (sent, its result not received yet); receive its result before "
                        f"accessing its attributes ({name!r})"
                    )
            blobs = self._call_blobs(kind, name, args, kwargs, len(ids))
            self._call_seq += 1
            seq = self._call_seq
            rows: dict[int, list[int]] = {}  # per worker, the positions in ids of its envs
            for r, e in enumerate(ids):
                rows.setdefault(int(self._worker_of[e]), []).append(r)
            for w, mine in rows.items():
                payload = pickle.dumps((kind, name, [(ids[r], blobs[r]) for r in mine]), pickle.HIGHEST_PROTOCOL)
                self._call_out[w] += MESSAGE_HEADER.pack(seq, len(payload)) + payload
            self._write_calls(list(rows))
            replies: list[tuple] = [()] * len(ids)
            for w, mine in rows.items():
                for r, reply in zip(mine, self._await_call_reply(w, seq), strict=True):
                    replies[r] = reply
            return [self._call_result(e, kind, name, reply) for e, reply in zip(ids, replies, strict=True)]
        finally:
            self._leave()

    def _send(self, actions: Any, env_id: Any) -> None:
        ids = self._all_ids if env_id is None else self._check_ids(env_id)
        state = self._state[ids]
        # An env never reset (_FRESH) is stepped too, as gymnasium's and SB3's vector envs step it: the env
        # decides (gymnasium's OrderEnforcing raises ResetNeeded, which comes back with its own type).
        if (
            (state == _IN_FLIGHT).any()
            or self._broken[ids].any()
            or (self._mode == AutoresetMode.DISABLED and self._needs_reset[ids].any())
        ):
            self._explain_refusal(ids)
        self._write_actions(actions, ids)
        self._b.op[ids] = OP_STEP
        self._dispatch(ids)

    def _recv(self, timeout: float | None = None) -> Result:
        if self._in_flight < self.batch_size:
            raise RuntimeError(
                f"recv() would wait forever: {self._in_flight} env(s) are in flight but batch_size is "
                f"{self.batch_size}; send actions (or async_reset) first"
            )
        ids, messages = self._collect(self.batch_size, timeout)
        return self._result(ids, messages, sort=self.batch_size == self.num_envs)

    def close(self) -> None:
        """Stops the workers and releases everything; from a signal handler inside a call of this pool, or
        while another thread's call waits, it makes that call raise "the pool is closed" (promptly: it wakes
        it), and the resources go once that call is over."""
        if os.getpid() != self._res.pid:  # a forked child's copy only forgets the parent's workers; it must not
            self._finalizer()  # wait for _busy, which a thread of the parent may have held at the fork
            return
        self._closing = True
        if self._busy.acquire(blocking=False):  # no call in progress, or this thread's (a signal handler's)
            try:
                if self._depth:  # re-entered from a signal handler: the call in progress closes on its way out
                    self._close_on_leave = True
                    self._nudge()
                    return
                self._finalizer()
            finally:
                self._busy.release()
            return
        self._nudge()  # another thread's call: it wakes, raises and lets go of _busy; then we close
        with self._busy:
            self._finalizer()

    def __del__(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers (for monitoring and tests)."""
        return [p.pid for p in self._procs]

    # -- helpers ----------------------------------------------------------

    def _enter(self, call: str) -> None:
        """Starts public call ``call``: takes _busy (a call of another thread goes first, as the native pool
        serialises calls), or raises if this thread is inside a call already (a signal handler's) or the pool
        is unusable."""
        if not self._busy.acquire(False):
            self._check_usable()
            self._busy.acquire()
        if not (self._depth or self.closed or self._dead is not None or os.getpid() != self._res.pid):
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

    def _leave(self) -> None:
        """Ends a public call; if a signal handler called close() in the meantime, closes the pool now."""
        self._depth = 0
        self._busy.release()
        if self._close_on_leave:
            with self._busy:
                self._finalizer()

    def _nudge(self) -> None:
        """Wakes a call that waits for results (it then sees ``_closing``). Called only while that call
        holds the resources open, so the fd is still ours."""
        try:
            os.write(self._nudge_fd, b"\0")
        except (OSError, AttributeError):  # the pipe is full (the waiter wakes anyway), or it was never made
            pass

    def _check_usable(self) -> None:
        if os.getpid() != self._res.pid:
            raise RuntimeError(
                f"this pool was made in process {self._res.pid} and cannot be used after fork "
                "(its workers serve the parent only); make a new pool in the child process"
            )
        if self.closed:
            raise RuntimeError("the pool is closed")
        if self._dead is not None:
            raise WorkerDiedError(self._dead)

    def _check_ids(self, env_id: Any) -> np.ndarray:
        return check_env_ids(env_id, self.num_envs)

    def _explain_refusal(self, ids: np.ndarray) -> None:
        for e in ids.tolist():
            if self._state[e] == _IN_FLIGHT:
                raise RuntimeError(
                    f"env {e} is not awaiting an action (it was sent one and its result has not been received)"
                )
            if self._broken[e]:
                raise RuntimeError(f"env {e} raised an exception earlier; reset it before stepping it again")
            if self._needs_reset[e]:
                raise RuntimeError(
                    f"env {e} finished its episode and autoreset_mode='disabled'; reset it "
                    "(reset(options={'reset_mask': mask})) before stepping it again"
                )

    def _write_actions(self, actions: Any, ids: np.ndarray) -> None:
        rows = len(ids)
        full = rows == self.num_envs and ids is self._all_ids
        if len(self._act_spaces) == 1 and not self._layout.act[0].path:
            values = [actions]
        else:
            try:
                values = flatten(self.single_action_space, actions, [])
            except (KeyError, TypeError, IndexError, ValueError) as exc:
                raise TypeError(f"actions must be batched like the action space {self._action_space}: {exc}") from exc
        checked = [self._check_leaf(space, value, rows) for space, value in zip(self._act_spaces, values, strict=True)]
        for array, value in zip(self._b.act, checked, strict=True):
            if full:
                array[:] = value
            else:
                array[ids] = value

    @staticmethod
    def _check_leaf(space: gym.Space, value: Any, rows: int) -> np.ndarray:
        arr = np.asarray(value)
        if isinstance(space, gym.spaces.Box):
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"actions for a Box space must be real numbers, got dtype {arr.dtype}")
            shape = (rows, *space.shape)
            if arr.shape != shape and not (space.shape == (1,) and arr.shape == (rows,)):
                raise ValueError(f"actions must have shape {shape}, got {arr.shape}")
            if arr.dtype.kind == "f" or space.dtype.kind == "f":
                # checked as the env's dtype receives them: 1e300 is finite as float64, inf as float32
                with np.errstate(over="ignore", invalid="ignore"):
                    cast = arr.astype(space.dtype, copy=False) if space.dtype.kind == "f" else arr
                if not np.isfinite(cast).all():
                    finite = np.isfinite(cast.reshape(rows, -1))
                    bad = int(np.flatnonzero(~finite.all(axis=1))[0])
                    value = arr.reshape(rows, -1)[bad][~finite[bad]][0]
                    raise ValueError(f"actions must be finite as {space.dtype}, got {float(value)!r} for env row {bad}")
                arr = cast
            return arr.reshape(shape)
        if arr.dtype.kind not in "iub":
            raise TypeError(f"actions for {space} must be integers, got dtype {arr.dtype}")
        if isinstance(space, gym.spaces.Discrete):
            if arr.shape != (rows,):
                raise ValueError(f"actions must have shape ({rows},), got {arr.shape}")
            low, high = int(space.start), int(space.start + space.n)
        elif isinstance(space, gym.spaces.MultiDiscrete):
            if arr.shape != (rows, *space.shape):
                raise ValueError(f"actions must have shape {(rows, *space.shape)}, got {arr.shape}")
            low, high = space.start, space.start + space.nvec
        else:
            if arr.shape != (rows, *space.shape):
                raise ValueError(f"actions must have shape {(rows, *space.shape)}, got {arr.shape}")
            low, high = 0, 2
        bad = (arr < low) | (arr >= high)
        if bad.any():
            where = np.argwhere(bad)[0]
            index = ", ".join(str(i) for i in where)
            raise ValueError(f"actions[{index}] = {arr[tuple(where)]} is out of range for {space}")
        return arr

    def _dispatch(self, ids: np.ndarray) -> None:
        """Appends ``ids`` to their workers' request rings and wakes those workers."""
        b = self._b
        ring = self._layout.ring
        if ids is self._all_ids:  # (w, its env ids, its rows: a slice, cheaper to assign than the ids)
            groups = self._all_groups
        else:
            owner = self._worker_of[ids]
            groups = ((w, sub, sub) for w in np.unique(owner).tolist() for sub in (ids[owner == w],))
        for w, sub, rows in groups:  # a worker's envs are in flight from the moment its REQ_HEAD says so
            head = self._req_head[w]
            count = len(sub)
            b.req_ring[w, np.arange(head, head + count) % ring] = sub
            head += count
            self._req_head[w] = head
            b.ctrl[w, REQ_HEAD] = head
            self._state[rows] = _IN_FLIGHT
            self._in_flight += count
            try:
                os.write(self._wake_fds[w], b"\0")
            except BlockingIOError:  # the worker has unread wake-ups already
                pass
            except BrokenPipeError:  # the worker is gone
                self._check_workers(wait=0.5)
                raise

    @staticmethod
    def _options_blob(options: dict[str, Any] | None) -> bytes | None:
        """Reset options pickled for the workers (None for no options or an empty dict, which need no message);
        a TypeError before anything is sent if they cannot be pickled."""
        if not options:
            return None
        import cloudpickle

        try:
            return cloudpickle.dumps(options, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise TypeError(
                "the reset options cannot be pickled to be sent to the envs' worker processes: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def _send_reset(
        self, ids: np.ndarray, seeds: list[int | None] | None, options: dict[str, Any] | None, blob: bytes | None
    ) -> None:
        """Resets ``ids``; with options (``blob``: them pickled), each worker gets its envs' first, whole, on its
        call pipe: it reads them there when it comes to the reset."""
        b = self._b
        if blob is not None:
            owner = self._worker_of[ids]
            workers = np.unique(owner).tolist()
            for w in workers:
                targets = [(e, blob) for e in ids[owner == w].tolist()]
                payload = pickle.dumps((RESET_OPTIONS, "", targets), pickle.HIGHEST_PROTOCOL)
                self._call_out[w] += MESSAGE_HEADER.pack(0, len(payload)) + payload
            self._write_calls(workers)
        if seeds is None:
            b.seeded[ids] = False
        else:
            for e, s in zip(ids.tolist(), seeds, strict=True):
                b.seeded[e] = s is not None
                b.seed[e] = 0 if s is None else s
        b.op[ids] = OP_RESET if options is None else OP_RESET_EMPTY if blob is None else OP_RESET_OPTIONS
        self._broken[ids] = False
        self._needs_reset[ids] = False
        self._dispatch(ids)

    def _collect(
        self, n: int, timeout: float | None = None, settle: bool = False
    ) -> tuple[np.ndarray, dict[int, bytes]]:
        """Waits for ``n`` more results; the env ids in the order they were taken, and the side-channel
        messages of those that have one. After ``timeout`` seconds (None: no limit) raises a TimeoutError
        naming the envs that have not answered, or (``settle``) takes the results there are, once there is one.

        Nothing is consumed until every wait is over: results stay in the result rings (a worker never
        overwrites an entry the parent has not taken: each env has at most one request in flight, and a
        ring holds one entry per env) and messages in ``_messages``, so an exception at any blocking
        point (Ctrl-C, a dead worker, close(), the time-out) leaves them for the next call. Rows kept by an
        env's exception (``_kept``) are results there already: they come first.
        """
        kept = len(self._kept)
        give_up = None if timeout is None else time.perf_counter() + timeout
        ctrl = self._b.ctrl
        comp_ring = self._b.comp_ring
        flags = self._b.flags
        ring = self._layout.ring
        workers = self._layout.num_workers
        tails = self._comp_tail
        deadline = 0.0
        while True:
            heads = ctrl[:, COMP_HEAD].tolist()
            if sum(heads) - sum(tails) + kept >= n:
                break
            if self._closing:
                raise RuntimeError("the pool is closed")
            if deadline == 0.0:
                deadline = time.perf_counter() + self._spin
            elif time.perf_counter() > deadline:
                if give_up is not None:
                    left = give_up - time.perf_counter()
                    if left > 0:
                        self._block(min(left, _POLL_SECONDS))
                    elif not settle:
                        self._time_out(timeout, n, heads)
                    elif sum(heads) - sum(tails) + kept > 0:
                        n = sum(heads) - sum(tails) + kept
                        break
                    else:
                        self._block()
                else:
                    self._block()
        start = self._start_worker
        parts: list[tuple[int, int, np.ndarray]] = []
        from_kept = self._kept[:n]
        need = n - len(from_kept)
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
        if kept:  # (the kept envs' messages were taken when they were first received)
            fresh = ids
            ids = np.array(from_kept, np.int32) if ids is None else np.concatenate([from_kept, ids]).astype(np.int32)
            has_message = fresh is not None and flags[fresh].any()
            flagged = fresh[flags[fresh] != 0].tolist() if has_message else []
        else:
            has_message = flags.any() if n == self.num_envs else flags[ids].any()  # (ids: every env, in some order)
            flagged = ids[flags[ids] != 0].tolist() if has_message else []
        for e in flagged:  # a worker sends an env's message before it publishes the result: it is in the pipe
            if e not in self._messages:
                self._await_message(int(self._worker_of[e]), e)
        for w, take, _ in parts:  # hand out: from here on nothing blocks
            tails[w] += take
        self._start_worker = (start + 1) % workers
        self._in_flight -= n
        self._state[ids] = _IDLE
        messages = {e: self._messages.pop(e) for e in flagged}
        if kept:
            del self._kept[: len(from_kept)]
            for e in from_kept:
                blob = self._kept_messages.pop(e, None)
                if blob is not None:
                    messages[e] = blob
        return ids, messages

    @staticmethod
    def _call_blobs(kind: str, name: str, args: tuple, kwargs: dict[str, Any], n: int) -> list[bytes]:
        """Each target env's pickled ``(args, kwargs)`` (the same bytes when they are shared: each env unpickles
        its own copy); a TypeError before anything is sent if they cannot be pickled."""
        import cloudpickle

        try:
            if kind not in SET_KINDS:
                return [cloudpickle.dumps((args, kwargs), pickle.HIGHEST_PROTOCOL)] * n
            if all(v is args[0] for v in args):
                return [cloudpickle.dumps(((args[0],), {}), pickle.HIGHEST_PROTOCOL)] * n
            return [cloudpickle.dumps(((v,), {}), pickle.HIGHEST_PROTOCOL) for v in args]
        except Exception as exc:
            what = "the value" if kind in SET_KINDS else "the arguments"
            raise TypeError(
                f"{what} for {name!r} cannot be pickled to be sent to the envs' worker processes: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def _write_calls(self, workers: list[int]) -> None:
        """Writes the pending call requests of ``workers`` into their call pipes; while a pipe is full, takes
        what the workers write meanwhile (a worker blocked on a full side pipe reads no requests)."""
        pending = [w for w in workers if self._call_out[w]]
        while pending:
            for w in pending:
                try:
                    # (written and taken off in one call: Ctrl-C between the two would send a request twice)
                    _core.write_pending(self._call_fds[w], self._call_out[w])
                except BrokenPipeError:  # the worker is gone
                    self._check_workers(wait=0.5)
                    raise
            pending = [w for w in pending if self._call_out[w]]
            if not pending:
                return
            if self._closing:
                raise RuntimeError("the pool is closed")
            ready = wait_ready(
                [self._results_fd, *self._sentinels, *self._side_fds],
                [self._call_fds[w] for w in pending],
                _POLL_SECONDS,
            )
            self._take_wakeups(ready)
            self._check_workers(wait=0.05 if not ready.isdisjoint(self._sentinels) else 0.0)

    def _await_call_reply(self, w: int, seq: int) -> list[tuple]:
        """Worker ``w``'s per-env replies to env call ``seq`` (a reply to an earlier call that an exception
        interrupted is dropped)."""
        key = -1 - w
        while True:
            self._pull(w)
            blob = self._messages.pop(key, None)
            if blob is not None:
                got, replies = pickle.loads(blob)
                if got == seq:
                    return replies
                continue
            if self._closing:
                raise RuntimeError("the pool is closed")
            ready = wait_readable([self._side_fds[w], self._sentinels[w], self._results_fd], _POLL_SECONDS)
            self._take_wakeups(ready)
            if key not in self._messages:  # (a dead worker's side pipe is readable forever: it hung up)
                self._check_workers(wait=0.05 if self._sentinels[w] in ready else 0.0)

    def _take_wakeups(self, ready: set[int]) -> None:
        """Empties the results pipe if it is among ``ready`` (its bytes are hints: the counters say what is done)
        and takes what the side pipes among them hold, so that a wait does not find them ready again."""
        if self._results_fd in ready:
            try:
                os.read(self._results_fd, 65536)
            except BlockingIOError:
                pass
        for w, fd in enumerate(self._side_fds):
            if fd in ready:
                self._pull(w)

    def _call_result(self, e: int, kind: str, name: str, reply: tuple) -> Any:
        """Env ``e``'s result of an env call, unpickled, or its exception raised."""
        what = f"{kind} {name!r}" if kind != "is_wrapped" else "is_wrapped"
        if reply[0] == "ok":
            try:
                return pickle.loads(reply[1])
            except Exception as exc:
                raise pickle.UnpicklingError(
                    f"env {e}: the result of {what} was pickled in its worker but cannot be unpickled here: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        if reply[0] == "unpicklable":
            raise pickle.PicklingError(
                f"env {e}: the result of {what} (a {reply[1]}) cannot be pickled to be sent back from its worker "
                f"process: {reply[2]}"
            )
        raise _env_exception(e, what, *reply[1:])

    def _pull(self, w: int) -> None:
        """Reads what worker ``w``'s side pipe holds, without blocking, and files every whole message in
        ``_messages`` by its key (a part message waits in the worker's buffer for the rest)."""
        fd, buf = self._side_fds[w], self._side_bufs[w]
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
            self._messages[key] = bytes(buf[start + header : end])
            start = end
        if start:
            del buf[:start]

    def _await_message(self, w: int, e: int) -> None:
        """Pulls worker ``w``'s side pipe until env ``e``'s message is in. A worker writes all of a message
        before it publishes the result, so the first pull finds it; the loop is for a worker that died."""
        self._pull(w)
        while e not in self._messages:
            if self._closing:
                raise RuntimeError("the pool is closed")
            ready = wait_readable([self._side_fds[w], self._sentinels[w], self._results_fd], _POLL_SECONDS)
            self._pull(w)
            if e not in self._messages:
                self._check_workers(wait=0.05 if self._sentinels[w] in ready else 0.0)

    def _time_out(self, timeout: float | None, n: int, heads: list[int]) -> None:
        """Raises the TimeoutError of a wait for ``n`` results that did not come within ``timeout`` seconds,
        naming the envs in flight that have not answered (their results are not in a ring yet)."""
        ring = self._layout.ring
        answered: set[int] = set(self._kept)
        for w, (head, tail) in enumerate(zip(heads, self._comp_tail, strict=True)):
            answered.update(self._b.comp_ring[w, np.arange(tail, head) % ring].tolist())
        silent = [e for e in np.flatnonzero(self._state == _IN_FLIGHT).tolist() if e not in answered]
        where = ", ".join(f"env {e} (worker {int(self._worker_of[e])})" for e in silent[:8])
        more = f" and {len(silent) - 8} more" if len(silent) > 8 else ""
        raise TimeoutError(
            f"recv(timeout={timeout}): waited for {n} results, {len(answered)} came; no answer yet from "
            f"{where}{more}. They stay in flight: recv() again to take their results, or close() the pool"
        )

    def _block(self, seconds: float = _POLL_SECONDS) -> None:
        """Sleeps until a worker reports something (a result, a message, its death), close() nudges us,
        or ``seconds`` pass."""
        ready = wait_readable(self._block_fds, seconds)
        if self._closing:
            raise RuntimeError("the pool is closed")
        self._take_wakeups(ready)
        self._check_workers(wait=0.05 if not ready.isdisjoint(self._sentinels) else 0.0)

    def _check_workers(self, wait: float = 0.0, starting: str = "") -> None:
        """Raises WorkerDiedError if a worker has exited (``starting``: what it was doing, during start-up)."""
        for w, p in enumerate(self._procs):
            if p.exitcode is None and wait:
                p.join(wait)
            if p.exitcode is not None:
                lo, hi = self._lo[w], self._lo[w] + len(self._worker_ids[w])
                what = f"worker {w} (pid {p.pid}, envs {lo}..{hi - 1}) {_how(p.exitcode)}"
                if starting:
                    raise WorkerDiedError(f"{what} {starting}{self._main_guard_advice()}")
                self._dead = f"{what}; the pool cannot continue, close it and make a new one"
                raise WorkerDiedError(self._dead)

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

    def _await_startup(self, stage: str) -> list[tuple]:
        """Waits for every worker's start-up message ``stage`` ("spaces", then "ready"); raises a worker's
        init_error, or a WorkerDiedError naming a worker that dies first."""
        doing = "while making its envs" if stage == "spaces" else "while starting"
        got: dict[int, tuple] = {}
        waiting = list(range(self.num_workers))
        while waiting:
            for w in waiting:
                self._pull(w)
                blob = self._messages.pop(-1 - w, None)
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
            fds = [self._side_fds[w] for w in waiting] + [self._sentinels[w] for w in waiting]
            ready = wait_readable(fds, _POLL_SECONDS)
            for w in waiting:
                if self._sentinels[w] in ready:
                    self._pull(w)  # it may have said why before it went
                    if -1 - w not in self._messages:
                        self._check_workers(wait=0.05, starting=doing)
        return [got[w] for w in range(self.num_workers)]

    def _drain(self) -> None:
        """Waits for every env in flight and drops its results (reset starts over)."""
        if self._in_flight:
            self._collect(self._in_flight)

    def _obs_rows(self, arrays: list[np.ndarray], ids: np.ndarray | None) -> Any:
        values = [a.copy() if ids is None else a[ids] for a in arrays]
        if self._simple_obs:
            return values[0]
        return unflatten(self.single_observation_space, values)[0]

    def _result(
        self, ids: np.ndarray, messages: dict[int, bytes], sort: bool, reset: np.ndarray | None = None
    ) -> Result:
        """The batch rows of ``ids`` (every env when ``sort``), with the infos (or the first error, as an
        EnvError) of ``messages``. ``reset``: a partial reset that returns every row; the other envs report
        their observation only (their rows still hold their last step's reward and flags).

        When an env raised, its exception is raised (``env_id`` naming it); an async pool keeps the batch's other
        rows for the next receiving call (see :meth:`_keep`), a sync batch (every env) is dropped."""
        b = self._b
        keep = self.batch_size < self.num_envs
        rows: np.ndarray | None
        if sort:
            rows = None  # every env, in env order: whole-array copies
            env_id = self._all_ids.copy()
        else:
            rows = ids
            env_id = ids.astype(np.int32)
        pick = (lambda a: a.copy()) if rows is None else (lambda a: a[rows])
        obs = self._obs_rows(b.obs, rows)
        reward, terminated, truncated, ended = pick(b.reward), pick(b.terminated), pick(b.truncated), pick(b.ended)
        if self._mode == AutoresetMode.DISABLED:  # (an observed env's flags are its last step's: unchanged)
            self._needs_reset[env_id] = terminated | truncated
        if reset is not None:
            observed = np.ones(self.num_envs, dtype=bool)
            observed[reset] = False
            reward[observed], terminated[observed], truncated[observed], ended[observed] = 0, False, False, False
        size = len(env_id)
        ep_return = ep_length = final_obs = final_info = None
        if ended.any():
            ep_return, ep_length = pick(b.episode_return), pick(b.episode_length)
            if self._mode == AutoresetMode.SAME_STEP:
                final_obs = self._obs_rows(b.final_obs, env_id)
                final_info = {}
        info: dict[str, Any] = {}
        error: BaseException | None = None
        failed = -1
        if messages:
            for r, e in enumerate(env_id.tolist()):  # in row order: the first error reported is the first row's
                blob = messages.get(e)
                if blob is None:
                    continue
                try:
                    msg = pickle.loads(blob)
                except Exception as exc:  # a value the worker could pickle and this process cannot rebuild
                    msg = ("bad_info", f"{type(exc).__name__}: {exc}")
                if msg[0] != "info":
                    if error is None:
                        self._broken[e] = True
                        error, failed = self._env_error(e, msg), e
                        if keep:
                            break
                    self._broken[e] = True  # (a sync batch: every error's env, its row dropped)
                    continue
                _, env_info, env_final_info = msg
                if env_info:
                    _add_info(info, env_info, r, size)
                if env_final_info:
                    _add_info(final_info, env_final_info, r, size)
        if error is not None:
            if keep:
                self._keep(env_id, messages, failed)
            raise error
        return Result(
            (
                obs,
                reward,
                terminated,
                truncated,
                env_id,
                ended if ep_return is not None else None,
                ep_return,
                ep_length,
                final_obs,
                info,
                final_info,
            )
        )

    def _keep(self, env_id: np.ndarray, messages: dict[int, bytes], failed: int) -> None:
        """Keeps the rows of ``env_id`` but env ``failed``'s (whose exception is being raised) for the next
        receiving call, first: their envs are in flight again (not sent or reset until then), their results stay
        in their shared rows and their messages (an error among them included: that recv raises it) here."""
        rows = [e for e in env_id.tolist() if e != failed]
        self._kept += rows
        for e in rows:
            if e in messages:
                self._kept_messages[e] = messages[e]
        self._state[rows] = _IN_FLIGHT
        self._in_flight += len(rows)

    @staticmethod
    def _env_error(e: int, msg: tuple) -> BaseException:
        """The exception for env ``e``'s error message: what the env raised in reset() or step(), with its own type
        (see _env_exception); an EnvError for an observation that does not fit its space or an info that cannot
        be unpickled here."""
        if msg[0] == "error":
            error = _env_exception(e, f"{msg[5]}()", *msg[1:5])
        elif msg[0] == "bad_obs":
            error = EnvError(f"env {e}: {msg[1]}")
        else:
            error = EnvError(f"env {e}: its info could not be unpickled in the parent: {msg[1]}")
        try:  # the env to reset to go on, as the native pool's EnvError names it
            error.env_id = e  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # an exception type that takes no attributes: its note names the env
            pass
        return error
