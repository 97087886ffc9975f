"""The Python-env pool: gymnasium envs stepped in worker processes, results in shared memory.

Each worker process owns a contiguous range of envs. Actions, observations,
rewards and flags live in one shared mapping (a memfd: no name in /dev/shm,
so nothing can leak even if the parent is killed) laid out as the batch
arrays the caller receives; the parent copies a batch's rows out into fresh
arrays, so a returned array is never overwritten. Only info dicts and
tracebacks are pickled, and only when an env produced them, and the values of
spaces of no fixed size (Text, Graph, Sequence, OneOf, custom spaces: "dynamic
leaves"), as gymnasium's AsyncVectorEnv(shared_memory=False) pickles them.

:class:`PyEnvPool` is the state machine (each env fresh, idle or in flight; broken; needing a reset) over
the request and result rings in the mapping (:mod:`fastvec.pyenv.rings`). It composes the worker processes
(:mod:`fastvec.pyenv.processes`), the pipes and the waits on them (:mod:`fastvec.pyenv.channel`), env calls
(:mod:`fastvec.pyenv.calls`), the infos and errors that come back (:mod:`fastvec.pyenv.results`) and the checks
of its arguments (:mod:`fastvec.pyenv.arguments`).

One caller at a time (:mod:`fastvec.pyenv.gate`): every public call holds ``_busy``, and the pool's bookkeeping
(``_state``, ``_in_flight``, the rings' tails, the channel's messages, ``_kept``, ...) is read and written only by
the holder. (A little over 600 lines: the backend protocol's calls and the bookkeeping they share are one job.)
"""

from __future__ import annotations

import mmap
import os
import pickle
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastvec._args import (
    MODES,
    PoolShape,
    autoreset_mode_name,
    available_cores,
    check_env_ids,
    check_int,
    check_observation_mode,
    check_timeout,
)
from fastvec._core import Result
from fastvec.pyenv import worker
from fastvec.pyenv.arguments import MAX_ENVS, check_actions, count_workers, env_constructors
from fastvec.pyenv.calls import EnvCalls, options_blob
from fastvec.pyenv.channel import POLL_SECONDS
from fastvec.pyenv.gate import CallGate
from fastvec.pyenv.layout import (
    OP_RESET,
    OP_RESET_EMPTY,
    OP_RESET_OPTIONS,
    OP_STEP,
    Buffers,
    Layout,
    check_spaces,
    leaf_spaces,
    leaves,
)
from fastvec.pyenv.processes import Resources, WorkerDiedError, Workers, check_start_method, refuse_in_main_import
from fastvec.pyenv.results import Rows, decode_messages, merge_messages
from fastvec.pyenv.rings import Rings

__all__ = ["MAX_ENVS", "SPIN_SECONDS", "PyEnvPool", "WorkerDiedError", "make"]

_FRESH, _IDLE, _IN_FLIGHT = 0, 1, 2
SPIN_SECONDS = 30e-6  # how long the parent polls for results before it blocks


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
    refuse_in_main_import()
    env_fns, max_episode_steps = env_constructors(env_id, num_envs, max_episode_steps, env_kwargs)
    shape = PoolShape.check(len(env_fns), batch_size)
    num_workers = count_workers(num_workers, shape.num_envs)
    autoreset_mode = autoreset_mode_name(autoreset_mode)
    if max_episode_steps is not None:
        max_episode_steps = check_int("max_episode_steps", max_episode_steps, 1, 2**31 - 1)
    observation_mode = check_observation_mode(observation_mode)
    start_method = check_start_method(start_method)
    return PyEnvPool(
        env_fns,
        shape=shape,
        num_workers=num_workers,
        autoreset_mode=autoreset_mode,
        max_episode_steps=max_episode_steps,
        start_method=start_method,
        observation_mode=observation_mode,
    )


class PyEnvPool:
    """The Python-env backend of :class:`fastvec.VectorEnv`: ``num_envs`` Python envs stepped by worker
    processes. Its calls are the backend protocol (:class:`fastvec.vector.Backend`): results come back as
    :class:`fastvec._core.Result` batches, the envs' infos merged in as gymnasium's vector envs merge them.
    """

    def __init__(
        self,
        env_fns: list[Callable[[], gym.Env]],
        *,
        shape: PoolShape,
        num_workers: int,
        autoreset_mode: str,
        max_episode_steps: int | None,
        start_method: str,
        observation_mode: str = "same",
    ) -> None:
        self.shape = shape  # (of len(env_fns) envs)
        self.num_envs = n = shape.num_envs
        self.batch_size = batch_size = shape.batch_size
        self._sync = shape.sync
        self.num_workers = self.num_threads = num_workers
        self.block_size = 1  # each env is its own unit of work
        self.max_episode_steps = max_episode_steps
        self.start_method = start_method
        self._mode = MODES[autoreset_mode]
        self._busy = threading.RLock()  # held by the call in progress (see fastvec.pyenv.gate)
        self._res = Resources()
        self._finalizer = weakref.finalize(self, self._res.close)

        bounds = np.linspace(0, n, num_workers + 1).round().astype(int)
        self._workers = workers = Workers(self._res, start_method, bounds.tolist())
        counts = np.diff(bounds)
        self._worker_of = np.repeat(np.arange(num_workers), counts).astype(np.int32)
        self._all_ids = np.arange(n, dtype=np.int32)
        # Spinning pays only when a core is free for it; on a full machine it steals the core a worker
        # (or the parent) needs, and blocking at once is faster (measured: docs/performance.md).
        spare_core = available_cores() > num_workers
        self._spin = SPIN_SECONDS if spare_core else 0.0
        config = {
            "autoreset_mode": autoreset_mode,
            "max_episode_steps": max_episode_steps,
            "spin_seconds": worker.SPIN_SECONDS if spare_core else 0.0,
        }

        # The workers make the envs and report their spaces; only then is the shared memory sized and
        # mapped (no env constructor runs in this process: one that crashes takes its worker, not us).
        memfd = os.memfd_create("fastvec-pyenv", os.MFD_CLOEXEC)
        try:
            self._channel = channel = workers.start(env_fns, memfd, config)
            spaces = workers.await_startup(channel, "spaces")
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
            obs_leaves, act_leaves = tuple(leaves(obs_space)), tuple(leaves(act_space))
            layout = Layout(n, num_workers, int(counts.max()), obs_leaves, act_leaves, autoreset_mode == "same_step")
            self._simple_act = len(self._act_spaces) == 1 and not layout.act[0].path
            self._act_leaves = layout.act
            self._dynamic_act = any(leaf.dynamic for leaf in layout.act)
            os.ftruncate(memfd, layout.size)
            self._res.mm = mmap.mmap(memfd, layout.size)
            self._b = self._res.buffers = Buffers(layout, self._res.mm)
            self._rows = Rows(self._b, obs_space, layout.obs)
            import cloudpickle

            # The pool's spaces, cloudpickled as the workers sent them (a Space subclass may not pickle by name).
            workers.send_layout(layout, cloudpickle.dumps((obs_space, act_space), pickle.HIGHEST_PROTOCOL))
            wake_fds = list(self._res.wake_fds)
            self._rings = Rings(self._b, bounds.tolist(), self._worker_of, self._all_ids, wake_fds, workers.check)
            workers.await_startup(channel, "ready")
        except BaseException:
            self._res.close()
            raise
        finally:
            os.close(memfd)
        self._gate = CallGate(self._busy, self._res, self._finalizer, channel, workers)
        self._calls = EnvCalls(channel, self._worker_of)
        self._state = np.zeros(n, dtype=np.uint8)
        self._broken = np.zeros(n, dtype=bool)
        self._needs_reset = np.zeros(n, dtype=bool)
        self._in_flight = 0  # envs sent and not received (kept rows included)
        # In an async pool, the rows an env's exception kept from a recv (its batch's others, in row order; their
        # envs stay in flight and their results in their shared rows) and their side-channel messages: the next
        # receiving call returns them first (_collect). Empty on the path without errors.
        self._kept: list[int] = []
        self._kept_messages: dict[int, Any] = {}

    @property
    def closed(self) -> bool:
        return self._gate.closed

    # -- the backend protocol ---------------------------------------------

    def step(self, actions: Any) -> Result:
        """Steps every env (a sync pool), rows in env order."""
        self._gate.enter("step")
        try:
            self._send(actions, None)
            return self._recv()
        finally:
            self._gate.leave()

    def send(self, actions: Any, env_id: Any) -> None:
        """Queues one step of each env in ``env_id`` (every env if None) and returns at once."""
        self._gate.enter("send")
        try:
            self._send(actions, env_id)
        finally:
            self._gate.leave()

    def recv(self, timeout: float | None = None) -> Result:
        """Waits for the first ``batch_size`` envs to finish (every env in env order, in a sync pool); after
        ``timeout`` seconds (None: no limit), a TimeoutError naming the envs that have not answered, which stay
        in flight."""
        self._gate.enter("recv")
        try:
            return self._recv(check_timeout(timeout))
        finally:
            self._gate.leave()

    def recv_ready(self, rows: int, timeout: float | None) -> Result:
        """Waits for ``rows`` results (at most the envs in flight) for up to ``timeout`` seconds, then takes those
        that have come, at least one (Tianshou's ``timeout``); rows in the order taken."""
        self._gate.enter("recv")
        try:
            timeout = check_timeout(timeout)
            if not self._in_flight:
                raise RuntimeError("recv_ready() would wait forever: no env is in flight")
            rows = check_int("rows", rows, 1, self._in_flight)
            ids, messages = self._collect(rows, timeout, settle=True)
            return self._result(ids, messages, sort=False)
        finally:
            self._gate.leave()

    def recv_rest(self, timeout: float | None = None) -> Result:
        """Waits for the envs still in flight when they are fewer than ``batch_size``: in an async pool, the rows
        in the order they came; in a sync pool (a step of some envs, EnvPool's ``step(actions, env_id)``), in env
        order, as the native pool returns them."""
        self._gate.enter("recv_rest")
        try:
            timeout = check_timeout(timeout)
            if not 0 < self._in_flight < self.batch_size:
                raise RuntimeError(
                    "recv_rest() takes the envs in flight when they are fewer than batch_size "
                    f"({self._in_flight} env(s) in flight, batch_size {self.batch_size})"
                )
            ids, messages = self._collect(self._in_flight, timeout)
            if self._sync:
                ids = np.sort(ids)
            return self._result(ids, messages, sort=False)
        finally:
            self._gate.leave()

    def send_reset(self, env_id: Any, seeds: Sequence[int | None], options: dict[str, Any] | None = None) -> None:
        """Queues a reset of every env (``env_id`` None) or of the idle envs in ``env_id``; ``seeds``, when not
        empty, has one seed (or None) per env reset; ``options``: each env's ``reset(options=...)``, a copy each."""
        blob = options_blob(options)
        self._gate.enter("async_reset")
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
            self._gate.leave()

    def reset_envs(
        self, env_id: Any, seeds: Sequence[int | None], all_rows: bool, options: dict[str, Any] | None = None
    ) -> Result:
        """Resets the envs in ``env_id`` (nothing may be in flight) and waits: their rows, in ``env_id``'s
        order, or (``all_rows``) every env's in env order, the others reporting their observation with no
        reward and no flags (then every other env must have been reset once); ``options`` as for send_reset."""
        blob = options_blob(options)
        self._gate.enter("reset")
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
            self._gate.leave()

    def drain(self) -> None:
        """Waits for every env in flight and drops its results."""
        self._gate.enter("reset")
        try:
            self._drain()
        finally:
            self._gate.leave()

    def refused(self, exc: RuntimeError, env_id: Any) -> None:
        """Nothing more precise to say about a refused step: the pool's own RuntimeError names the env and why."""

    def env_call(self, env_id: np.ndarray, kind: str, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """Runs ``kind`` (one of fastvec._args.ENV_CALL_KINDS) of attribute ``name`` on each env of ``env_id``
        (checked by the façade; may repeat) in its worker, and returns the results in that order; for the set
        kinds ``args`` holds one value per env. An env in flight is refused (as gymnasium's AsyncVectorEnv
        refuses a call while a step is pending); the other envs of its worker may be: the worker answers once
        it has stepped them. An exception of an env is raised here with its own type, a note naming the env
        and the worker's traceback (the first env's, in ``env_id`` order, when several raise)."""
        self._gate.enter("env_call")
        try:
            ids = np.asarray(env_id, dtype=np.int32).reshape(-1).tolist()
            state = self._state
            for e in ids:
                if state[e] == _IN_FLIGHT:
                    raise RuntimeError(
                        f"env {e} is in flight (sent, its result not received yet); receive its result before "
                        f"accessing its attributes ({name!r})"
                    )
            return self._calls.call(ids, kind, name, args, kwargs)
        finally:
            self._gate.leave()

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
        return self._result(ids, messages, sort=self._sync)

    def close(self) -> None:
        """Stops the workers and releases everything; from a signal handler inside a call of this pool, or
        while another thread's call waits, it makes that call raise "the pool is closed" (promptly: it wakes
        it), and the resources go once that call is over."""
        self._gate.close()

    def __del__(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers (for monitoring and tests)."""
        return self._workers.pids

    # -- helpers ----------------------------------------------------------

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
        checked = check_actions(
            self.single_action_space, self._act_spaces, self._simple_act, self._action_space, actions, rows
        )
        if self._dynamic_act:
            checked = self._send_dynamic_actions(checked, ids)
        for array, value in zip(self._b.act, checked, strict=True):
            if full:
                array[:] = value
            else:
                array[ids] = value

    def _send_dynamic_actions(self, checked: list[Any], ids: np.ndarray) -> list[Any]:
        """Sends each env its action's dynamic leaves, pickled (a TypeError before anything is sent if they cannot
        be); the fixed leaves' values, for the shared memory."""
        objects = [value for leaf, value in zip(self._act_leaves, checked, strict=True) if leaf.dynamic]
        try:
            blobs = [pickle.dumps([o[i] for o in objects], pickle.HIGHEST_PROTOCOL) for i in range(len(ids))]
        except Exception as exc:
            raise TypeError(
                f"actions for {self.single_action_space} cannot be pickled to be sent to the envs' worker processes: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        self._calls.send_actions(ids, blobs)
        return [value for leaf, value in zip(self._act_leaves, checked, strict=True) if not leaf.dynamic]

    def _dispatch(self, ids: np.ndarray) -> None:
        """Appends ``ids`` to their workers' request rings and wakes those workers."""
        rings = self._rings
        for w, sub, rows in rings.groups(ids):
            rings.request(w, sub)
            self._state[rows] = _IN_FLIGHT
            self._in_flight += len(sub)
            rings.wake(w)

    def _send_reset(
        self, ids: np.ndarray, seeds: list[int | None] | None, options: dict[str, Any] | None, blob: bytes | None
    ) -> None:
        """Resets ``ids``; with options (``blob``: them pickled), each worker gets its envs' first, whole, on its
        call pipe: it reads them there when it comes to the reset."""
        b = self._b
        if blob is not None:
            self._calls.send_reset_options(ids, blob)
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

        Nothing is consumed until every wait is over: results stay in the result rings (see
        :mod:`fastvec.pyenv.rings`) and messages in the channel, so an exception at any blocking point (Ctrl-C,
        a dead worker, close(), the time-out) leaves them for the next call. Rows kept by an env's exception
        (``_kept``) are results there already: they come first.
        """
        kept = len(self._kept)
        channel = self._channel
        give_up = None if timeout is None else time.perf_counter() + timeout
        rings = self._rings
        flags = self._b.flags
        deadline = 0.0
        while True:
            heads = rings.heads()
            if rings.published(heads) + kept >= n:
                break
            channel.raise_if_closing()
            if deadline == 0.0:
                deadline = time.perf_counter() + self._spin
            elif time.perf_counter() > deadline:
                if give_up is not None:
                    left = give_up - time.perf_counter()
                    if left > 0:
                        channel.block(min(left, POLL_SECONDS))
                    elif not settle:
                        self._time_out(timeout, n, heads)
                    elif rings.published(heads) + kept > 0:
                        n = rings.published(heads) + kept
                        break
                    else:
                        channel.block()
                else:
                    channel.block()
        from_kept = self._kept[:n]
        parts, ids = rings.peek(heads, n - len(from_kept))
        if kept:  # (the kept envs' messages were taken when they were first received)
            fresh = ids
            ids = np.array(from_kept, np.int32) if ids is None else np.concatenate([from_kept, ids]).astype(np.int32)
            has_message = fresh is not None and flags[fresh].any()
            flagged = cast(np.ndarray, fresh)[flags[fresh] != 0].tolist() if has_message else []
        else:
            ids = cast(np.ndarray, ids)  # (n > 0 results taken, none kept)
            has_message = flags.any() if n == self.num_envs else flags[ids].any()  # (ids: every env, in some order)
            flagged = ids[flags[ids] != 0].tolist() if has_message else []
        for e in flagged:  # a worker sends an env's message before it publishes the result: it is in the pipe
            if e not in channel.messages:
                channel.await_message(int(self._worker_of[e]), e)
        rings.take(parts)  # hand out: from here on nothing blocks
        self._in_flight -= n
        self._state[ids] = _IDLE
        messages = {e: channel.messages.pop(e) for e in flagged}
        if kept:
            del self._kept[: len(from_kept)]
            for e in from_kept:
                blob = self._kept_messages.pop(e, None)
                if blob is not None:
                    messages[e] = blob
        return ids, messages

    def _time_out(self, timeout: float | None, n: int, heads: list[int]) -> None:
        """Raises the TimeoutError of a wait for ``n`` results that did not come within ``timeout`` seconds,
        naming the envs in flight that have not answered (their results are not in a ring yet)."""
        answered: set[int] = set(self._kept)
        answered.update(self._rings.answered(heads))
        silent = [e for e in np.flatnonzero(self._state == _IN_FLIGHT).tolist() if e not in answered]
        where = ", ".join(f"env {e} (worker {int(self._worker_of[e])})" for e in silent[:8])
        more = f" and {len(silent) - 8} more" if len(silent) > 8 else ""
        raise TimeoutError(
            f"recv(timeout={timeout}): waited for {n} results, {len(answered)} came; no answer yet from "
            f"{where}{more}. They stay in flight: recv() again to take their results, or close() the pool"
        )

    def _drain(self) -> None:
        """Waits for every env in flight and drops its results (reset starts over)."""
        if self._in_flight:
            self._collect(self._in_flight)

    def _result(self, ids: np.ndarray, messages: dict[int, Any], sort: bool, reset: np.ndarray | None = None) -> Result:
        """The batch rows of ``ids`` (every env when ``sort``), with the infos (or the first error, as an
        EnvError) of ``messages``. ``reset``: a partial reset that returns every row; the other envs report
        their observation only (their rows still hold their last step's reward and flags).

        When an env raised, its exception is raised (``env_id`` naming it); an async pool keeps the batch's other
        rows for the next receiving call (see :meth:`_keep`), a sync batch (every env) is dropped."""
        keep = not self._sync
        rows: np.ndarray | None
        if sort:
            rows = None  # every env, in env order: whole-array copies
            env_id = self._all_ids.copy()
        else:
            rows = ids
            env_id = ids.astype(np.int32)
        objects = final_objects = None
        if self._rows.dynamic:  # the dynamic leaves' values are in the messages: unpickled once, here
            messages = decode_messages(messages)
            objects, final_objects = self._rows.objects(env_id, messages)
        obs, reward, terminated, truncated, ended = self._rows.step(rows, objects)
        if self._mode == AutoresetMode.DISABLED:  # (an observed env's flags are its last step's: unchanged)
            self._needs_reset[env_id] = terminated | truncated
        if reset is not None:
            observed = np.ones(self.num_envs, dtype=bool)
            observed[reset] = False
            reward[observed], terminated[observed], truncated[observed], ended[observed] = 0, False, False, False
        ep_return = ep_length = final_obs = None
        final_info: dict[str, Any] | None = None
        if ended.any():
            ep_return, ep_length = self._rows.episodes(rows)
            if self._mode == AutoresetMode.SAME_STEP:
                final_obs = self._rows.obs(self._b.final_obs, env_id, final_objects)
                final_info = {}
        info: dict[str, Any] = {}
        error: BaseException | None = None
        if messages:
            info, error, failed = merge_messages(env_id, messages, final_info, self._broken, keep)
        if error is not None:
            if keep:
                self._keep(env_id, messages, failed)
            raise error
        return Result(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            env_id=env_id,
            ended=ended if ep_return is not None else None,
            episode_return=ep_return,
            episode_length=ep_length,
            final_obs=final_obs,
            info=info,
            final_info=final_info,
        )

    def _keep(self, env_id: np.ndarray, messages: dict[int, Any], failed: int) -> None:
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
