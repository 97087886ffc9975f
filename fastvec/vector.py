"""fastvec.VectorEnv: the one gymnasium VectorEnv of fastvec, over either backend.

Two backends implement the same small protocol (:class:`Backend`): the native pool
(:class:`fastvec.native.NativePool`: ``fastvec._core.Pool``, C++ threads) and the Python-env pool
(:class:`fastvec.pyenv.pool.PyEnvPool`, worker processes). Each owns its envs' states and checks the calls
that depend on them (actions, env ids, which env may be sent or reset); both return
:class:`fastvec._core.Result` batches. Everything above that is written here once: ``make``'s routing, the
arguments of reset, seeding, partial resets, the sync/async rules of ``step``, the info dict gymnasium's
vector envs build, and the arguments of the per-env calls (``call``, ``get_attr``, ``set_attr``,
:meth:`VectorEnv.env_call`). The native pool's making and option checks are :mod:`fastvec.native`'s; the
batching of rows and info dicts is :mod:`fastvec.batching`'s.

Why this file is over 600 lines: :class:`VectorEnv` is one state machine of about 600 lines (its sync,
gymnasium-async, async and per-env calls share the pending call, the seeds still to apply and the info rules),
and ``make`` (``fastvec.vector.make``) routes to it and to :class:`PyVectorEnv`, which must be defined here.
"""

from __future__ import annotations

import copy
import multiprocessing
import secrets
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError
from gymnasium.vector import AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import batch_differing_spaces, batch_space

import fastvec._core as _core
from fastvec._args import (
    ENV_CALL_KINDS,
    MODES,
    POOL_METHODS,
    SET_KINDS,
    PoolShape,
    autoreset_mode_name,
    check_env_ids,
    check_seed,
    check_timeout,
    is_int_seed,
    partial_reset_ids,
    refuse_reset_options,
    reset_options,
)
from fastvec.batching import concatenate, info_rows_at, merge_infos, row, rows
from fastvec.native import NativePool, is_native, make_pool
from fastvec.registry import EnvEntry, lookup

if TYPE_CHECKING:
    from fastvec.pyenv import PyEnvPool

Seed = int | Sequence[int | None] | None
_V = TypeVar("_V", bound="VectorEnv")


class ClosedError(ClosedEnvironmentError, RuntimeError):
    """A call on a closed pool: gymnasium's ClosedEnvironmentError (and a RuntimeError)."""


class WaitTimeout(multiprocessing.TimeoutError, TimeoutError):
    """A wait that did not end within its ``timeout``: ``multiprocessing.TimeoutError``, as gymnasium's
    AsyncVectorEnv raises it, and the builtin TimeoutError. What was in flight stays in flight."""


class Backend(Protocol):
    """What a pool gives the façade. Calls come from one thread at a time per pool, or are serialised by it."""

    @property
    def shape(self) -> PoolShape:
        """Its ``num_envs`` and ``batch_size``, and whether it is sync."""

    @property
    def num_threads(self) -> int: ...
    @property
    def block_size(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def step(self, actions: Any) -> _core.Result:
        """Steps every env of a sync pool; rows in env order."""

    def send(self, actions: Any, env_id: Any) -> None:
        """Queues a step of each env in ``env_id`` (every env if None)."""

    def recv(self, timeout: float | None = None) -> _core.Result:
        """The first ``batch_size`` envs to finish (every env in env order, in a sync pool). Past ``timeout``
        seconds (None: no limit; checked, finite, >= 0) a TimeoutError, with nothing taken: a later recv gets
        the results."""

    def recv_rest(self, timeout: float | None = None) -> _core.Result:
        """The envs still in flight in an async pool, when they are fewer than ``batch_size``; ``timeout`` as
        :meth:`recv`'s."""

    def recv_ready(self, rows: int, timeout: float | None) -> _core.Result:
        """Waits for ``rows`` results (at most the envs in flight) for up to ``timeout`` seconds, then returns
        those that have come, at least one."""

    def send_reset(self, env_id: Any, seeds: list[int | None], options: dict[str, Any] | None = None) -> None:
        """Queues a reset of every env (None) or of the idle envs in ``env_id``; ``seeds``: one per env, or none;
        ``options``: what each env's ``reset(options=...)`` gets (a backend whose envs take none refuses any)."""

    def reset_envs(
        self, env_id: Any, seeds: list[int | None], all_rows: bool, options: dict[str, Any] | None = None
    ) -> _core.Result:
        """Resets the envs in ``env_id`` of a sync pool and waits; rows of at least those envs, or every env's
        in env order (``all_rows``; the others report their observation only); ``options`` as for send_reset."""

    def drain(self) -> None:
        """Waits for every env in flight and drops its results."""

    def refused(self, exc: RuntimeError, env_id: Any) -> None:
        """Given the RuntimeError with which :meth:`step` (``env_id`` None) or :meth:`send` refused a step, raises
        a more precise exception if there is one (else returns, and the façade re-raises ``exc``)."""

    def env_call(self, env_id: np.ndarray, kind: str, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """Runs ``kind`` (one of ``fastvec._args.ENV_CALL_KINDS``) of attribute ``name`` on each env of ``env_id``
        (checked int32 ids, which may repeat); the results in that order. The set kinds take one value per env
        in ``args``; the façade has checked the kind, the name and the values."""

    def close(self) -> None: ...


def make(
    env_id: str | Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
    num_envs: int | None = None,
    *,
    batch_size: int | None = None,
    num_threads: int | None = None,
    seed: int | None = None,
    autoreset_mode: str | AutoresetMode = "next_step",
    max_episode_steps: int | None = None,
    block_size: int | None = None,
    backend: str = "auto",
    episode_stats: bool | str = False,
    **env_kwargs: Any,
) -> VectorEnv:
    """Makes ``num_envs`` copies of ``env_id`` stepped in a native thread pool (or, for a callable,
    a list of callables, a gymnasium id with no native port, or ``backend="python"``, in the
    Python-env pool of worker processes, where ``num_threads`` is its number of worker processes, also
    called ``num_workers``, and ``start_method`` is multiprocessing's).

    >>> env = fastvec.make("CartPole-v1", num_envs=4, seed=0)
    >>> obs, info = env.reset()
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(4, dtype=np.int64))

    ``batch_size < num_envs`` makes the pool asynchronous: ``async_reset()``,
    then ``recv()`` returns the first ``batch_size`` envs to finish and
    ``send(actions, info["env_id"])`` steps exactly those.

    ``seed`` seeds each env's first reset as ``reset(seed=seed)`` would (env ``i`` with ``seed + i``).
    ``episode_stats=True`` adds each ended episode's return and length to ``info`` (the adapters turn it on);
    ``episode_stats="gymnasium"`` adds them as gymnasium's ``RecordEpisodeStatistics`` does: ``info["episode"]``
    (``r``, ``l``, ``t``) and its mask ``info["_episode"]``, which CleanRL's gymnasium scripts read.
    ``observation_mode="different"`` (gymnasium's AsyncVectorEnv's; default ``"same"``) lets a list of Python envs
    have observation spaces that differ in bounds but share type, shape and dtype (Tianshou's envs of several sizes).

    A callable (or list of callables) returning a multi-agent env (a PettingZoo ParallelEnv or AEC env, an RLlib
    MultiAgentEnv), or a multi-agent id such as ``"simple_spread_v3"``, gives a :class:`fastvec.MultiAgentVectorEnv`
    instead (typed as such by :func:`fastvec.multiagent.make`); see docs/multi-agent.md.
    """
    if backend not in ("auto", "native", "python"):
        raise ValueError(f"backend must be 'auto', 'native' or 'python', got {backend!r}")
    mode = autoreset_mode_name(autoreset_mode)
    if not isinstance(episode_stats, bool) and episode_stats != "gymnasium":
        raise TypeError(
            f"episode_stats must be a bool or 'gymnasium', got {type(episode_stats).__name__} {episode_stats!r}"
        )
    if seed is not None:
        seed = check_seed("seed", seed)
        n = num_envs if isinstance(num_envs, int) else 1
        if num_envs is None and isinstance(env_id, Sequence) and not isinstance(env_id, str):
            n = len(env_id)  # one env per constructor
        _check_seed_range(seed, n)
    if backend == "python" or not isinstance(env_id, str) or (backend == "auto" and not is_native(env_id)):
        if block_size is not None:
            raise ValueError("block_size applies to the native pool only, not to the Python-env pool")
        import fastvec.pyenv as pyenv

        if num_threads is not None:  # the Python-env pool's parallelism is its worker processes
            if env_kwargs.get("num_workers", num_threads) != num_threads:
                raise ValueError(
                    f"num_threads ({num_threads}) and num_workers ({env_kwargs['num_workers']}) "
                    "both name the Python-env pool's worker processes; pass one of them"
                )
            env_kwargs["num_workers"] = num_threads
        from fastvec.multiagent.routing import over_pool, python_env_id

        env_id, env_kwargs = python_env_id(env_id, env_kwargs)  # multi-agent envs: one gymnasium env each
        venv = PyVectorEnv(
            pyenv.make(
                env_id,
                num_envs,
                batch_size=batch_size,
                autoreset_mode=mode,
                max_episode_steps=max_episode_steps,
                **env_kwargs,
            ),
            MODES[mode],
            seed=seed,
            episode_stats=episode_stats,
        )
        return over_pool(venv, episode_stats)  # a MultiAgentVectorEnv if the workers made multi-agent envs
    entry = lookup(env_id)
    pool = make_pool(
        entry,
        num_envs,
        batch_size=batch_size,
        num_threads=num_threads,
        seed=seed,
        autoreset_mode=mode,
        max_episode_steps=max_episode_steps,
        block_size=block_size,
        env_kwargs=env_kwargs,
        vector_entry_point=MakeNative(entry.id),
    )
    from fastvec.multiagent.native_rows import over_native

    # a MultiAgentVectorEnv if the native env has agents (MPE)
    return over_native(VectorEnv.over_native(pool, seed=seed, episode_stats=episode_stats), episode_stats)


def _check_seed_range(seed: int, num_envs: int) -> None:
    if seed + num_envs > 2**64:
        raise ValueError(
            f"seed: env i is seeded with seed + i, which must stay below 2**64; seed must be at most "
            f"{2**64 - num_envs} for {num_envs} envs, got {seed}"
        )


@dataclass(frozen=True)
class MakeNative:
    """``fastvec.make(env_id, ...)`` as a vector entry point that compares by value (a spec's copies compare equal):
    the native pools' specs' and gymnasium's registry entries' (fastvec._gymnasium)."""

    env_id: str

    def __call__(self, **kwargs: Any) -> VectorEnv:
        return make(self.env_id, **kwargs)


class VectorEnv(gym.vector.VectorEnv):
    """``num_envs`` envs stepped by a pool (native threads or Python-env worker processes); made by
    :func:`fastvec.make`.

    ``info`` is a dict of arrays: ``env_id`` always; the envs' own values (Atari: ``lives``; a Python env's
    info keys with their ``_key`` masks, as gymnasium's vector envs batch them); when an episode ended,
    ``episode_return``/``episode_length`` with masks ``_episode_return``/``_episode_length``; with
    ``autoreset_mode="same_step"`` also ``final_obs``/``final_info`` as gymnasium defines them.
    """

    def __init__(
        self,
        backend: Backend,
        autoreset_mode: AutoresetMode,
        single_observation_space: gym.Space,
        single_action_space: gym.Space,
        *,
        max_episode_steps: int | None,
        entry: EnvEntry | None = None,
        metadata: dict[str, Any] | None = None,
        spec: Any = None,
        render_mode: str | None = None,
        seed: int | None = None,
        episode_stats: bool | str = False,
    ) -> None:
        self._pool = backend
        self.entry = entry  #: the registry entry of a native env (None for the Python-env pool)
        shape = backend.shape
        self.num_envs = shape.num_envs
        self.batch_size = shape.batch_size
        #: batch_size == num_envs: every env stepped at once, rows in env order (else: async, send/recv)
        self.sync = shape.sync
        self.num_threads = backend.num_threads
        self.block_size = backend.block_size  #: envs stepped as one unit of work (1 in the Python-env pool)
        self.max_episode_steps = max_episode_steps
        self.single_observation_space = single_observation_space
        self.single_action_space = single_action_space
        self.observation_space = batch_space(single_observation_space, self.batch_size)
        self.action_space = batch_space(single_action_space, self.batch_size)
        self.metadata = {"render_modes": [], **(metadata or {}), "autoreset_mode": autoreset_mode}
        self.render_mode = render_mode  #: the first env's (gymnasium's AsyncVectorEnv takes it from its first env)
        self.spec = spec
        self._mode = autoreset_mode
        self._episode_stats = episode_stats is True  # fastvec's keys (episode_return, episode_length)
        self._gymnasium_stats = episode_stats == "gymnasium"  # RecordEpisodeStatistics' (episode, _episode)
        self._stats_mode = episode_stats
        # When each env's episode began (the gymnasium stats' "t"; only for them).
        self._episode_start = np.full(self.num_envs, time.perf_counter()) if self._gymnasium_stats else None
        # Rows come in env order in sync mode; in async mode info["env_id"] says which env each row is.
        self._with_env_id = not self.sync
        self._all_ids = range(self.num_envs)
        # make()'s seed, for each env's first reset that brings no seed of its own (None: none pending).
        self._pending_seeds: list[int | None] | None = None
        if seed is None and entry is not None:
            # A native env with no seed draws one from entropy, as a gymnasium env does (a random seed s: env i
            # gets s + i, as with make(seed=s)), so that np_random_seed can name it.
            seed = secrets.randbits(63)
        if seed is not None:
            self._pending_seeds = self._int_seeds(seed, range(self.num_envs))
        self._all_env_ids = np.arange(self.num_envs, dtype=np.int32)
        # gymnasium's async API: the call started by reset_async/step_async and not waited for yet (None: none;
        # checked on every step, so not AsyncState.DEFAULT, an enum lookup), the batches
        # of a reset_wait that timed out part-way, and a partial reset done in reset_async.
        self._waiting: AsyncState | None = None
        self._timed_out = False  # the pending call's wait timed out (reset() may then start over)
        self._reset_batches: list[_core.Result] = []
        self._reset_done: tuple[Any, dict[str, Any]] | None = None
        # The seed each env was last reset with (-1: not reset yet), for np_random_seed.
        self._env_seeds = [-1] * self.num_envs
        # Atari: the native pool's record of each env's lives, kept here from each batch taken (for its ale stand-in).
        self._lives = backend.lives if isinstance(backend, NativePool) else None

    @classmethod
    def over_native(cls: type[_V], pool: NativePool, *, seed: int | None, episode_stats: bool | str) -> _V:
        """A ``cls`` (fastvec.envpool's classes are made so too) over a native pool from
        :func:`fastvec.native.make_pool`, which holds its spaces, spec, metadata and render mode; ``seed``: the
        pool's ``seed`` (checked), for each env's first reset; ``episode_stats`` as :func:`make` takes it."""
        spec = pool.attributes["spec"]
        return cls(
            pool,
            pool.autoreset_mode,
            pool.single_observation_space,
            pool.single_action_space,
            max_episode_steps=pool.max_episode_steps,
            entry=pool.entry,
            spec=copy.deepcopy(spec),  # (its own: get_attr("spec") gives copies too)
            metadata=pool.attributes["metadata"],
            render_mode=pool.attributes["render_mode"],
            seed=seed,
            episode_stats=episode_stats,
        )

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self._mode

    @property
    def backend(self) -> Backend:
        """The pool under this façade: its ``step``/``send``/``recv``/``recv_rest`` return the raw
        :class:`fastvec._core.Result` batches that :meth:`step` and :meth:`recv` make their tuples of. The fast
        path of a front that lays results out its own way (fastvec.envpool: ``step = env.backend.step``, bound
        once, no Python layer per step): it checks first what :meth:`step` checks (a sync pool for ``step``, no
        ``reset_async``/``step_async`` pending) and passes a RuntimeError the pool raises to
        :meth:`step_refused`."""
        return self._pool

    @property
    def active_threads(self) -> int:
        """How many of ``num_threads`` step envs now. With the default ``num_threads`` a native pool adapts it to
        the machine's load (it steps on fewer threads while other processes take cores and that is faster);
        otherwise it is ``num_threads``."""
        return getattr(self._pool, "active_threads", self.num_threads)

    @property
    def episode_stats(self) -> bool | str:
        """Whether ``info`` carries each ended episode's ``episode_return`` and ``episode_length``."""
        return self._stats_mode

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]  # as AsyncVectorEnv's
        """Each env's ``np_random_seed``, as gymnasium's AsyncVectorEnv gives it: a Python env's own; for a native
        env, the seed of its last seeded reset, or, before its first reset, the seed that reset will take (make()'s,
        or one drawn from entropy, as a gymnasium env draws its seed when it is asked for it unseeded)."""
        if self.entry is None:
            return self.get_attr("np_random_seed")
        self.check_open()
        pending = self._pending_seeds
        if pending is None:
            return tuple(self._env_seeds)
        return tuple(p if s == -1 and p is not None else s for s, p in zip(self._env_seeds, pending, strict=True))

    @property
    def label(self) -> str:
        """What the pool runs, for messages: ``"fastvec's native CartPole-v1"``."""
        return f"fastvec's native {self.entry.id}" if self.entry is not None else "fastvec's Python-env pool"

    # -- sync API ---------------------------------------------------------

    def reset(self, *, seed: Seed = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets every env (or, with ``options={"reset_mask": mask}`` or
        ``options={"env_id": ids}``, only some) and returns their observations.

        ``seed`` as an int seeds env ``i`` with ``seed + i``, as gymnasium's vector envs do; as a list, env ``i``
        with ``seed[i]``; each seeded exactly as ``gymnasium.make(...).reset(seed=...)`` seeds one env. The other
        keys of ``options`` go to each reset env's ``reset(options=...)``, as gymnasium's vector envs pass them
        (Python envs; native envs take none and refuse them).
        """
        self.check_open()
        if self._waiting is not None:
            if not self._timed_out:
                self._refuse_pending("reset")
            self._abandon_pending()  # after a time-out, a reset starts over
        reset_mask, ids, env_options = reset_options(options)
        if reset_mask is not None or ids is not None:
            return self._partial_reset(seed, reset_mask, ids, env_options)
        self._send_full_reset(seed, env_options)
        return self._reset_rows(None)

    def _send_full_reset(self, seed: Seed, env_options: dict[str, Any] | None) -> None:
        """Starts a reset of every env (what reset(), reset_async() and async_reset() share): drops what is in
        flight, then sends the reset with its seeds and the envs' options."""
        seeds = self._seeds(seed, self._all_ids)
        if self.entry is not None:  # native envs take no options: refused before what is in flight is dropped
            refuse_reset_options(self.label, env_options)
        self._pool.drain()
        self._reset_batches = []  # a reset that raised part way kept the batches it had: not this reset's
        self._pool.send_reset(None, seeds, env_options)
        self._reset_sent(self._all_ids, seeds)
        if self._episode_start is not None:
            self._episode_start[:] = time.perf_counter()

    def _reset_rows(self, timeout: float | None) -> tuple[Any, dict[str, Any]]:
        """Every env's row of the reset in flight, in env order; past ``timeout`` a :class:`WaitTimeout`, the
        batches taken so far kept for the next call."""
        batches = self._reset_batches
        end = None if timeout is None else time.perf_counter() + timeout
        whole = self.num_envs // self.batch_size
        while len(batches) < whole + (self.num_envs % self.batch_size > 0):
            left = None if end is None else max(0.0, end - time.perf_counter())
            try:
                batches.append(self._pool.recv(left) if len(batches) < whole else self._pool.recv_rest(left))
            except TimeoutError as e:
                raise WaitTimeout(str(e)) from None
        self._reset_batches = []
        if len(batches) == 1:
            return batches[0].obs, self._info(batches[0])
        env_id = np.concatenate([b.env_id for b in batches])
        order = np.argsort(env_id, kind="stable")
        if self._lives is not None:
            for b in batches:
                self._lives[b.env_id] = b.info["lives"]
        obs = rows(
            self.single_observation_space, concatenate(self.single_observation_space, [b.obs for b in batches]), order
        )
        info = merge_infos([b.info for b in batches], [len(b.env_id) for b in batches], order)
        return obs, ({"env_id": env_id[order]} if self._with_env_id else {}) | info

    def step(self, actions: Any, env_id: Any = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env with ``actions`` (one row per env, env order).

        In async mode, ``step(actions, env_id)`` is ``send`` followed by ``recv``.
        """
        if self._waiting is not None:
            self._refuse_pending("step")
        if env_id is None:
            if not self.sync:
                self._refuse_step_of_every_env("step(actions) without env_id")
            try:
                r = self._pool.step(actions)
            except RuntimeError as exc:
                self.step_refused(exc, None)
                raise
            return self._result(r)
        if self.sync and np.size(env_id) != self.num_envs:
            self.check_open()
            raise ValueError(
                f"step(actions, env_id) in sync mode must step every env ({self.num_envs}), got {np.size(env_id)} "
                "env ids; make the pool with batch_size < num_envs to step some envs at a time"
            )
        try:
            self._pool.send(actions, env_id)
        except RuntimeError as exc:
            self.step_refused(exc, env_id)
            raise
        return self._result(self._pool.recv())

    # -- gymnasium's async API ----------------------------------------------

    def reset_async(self, seed: Seed = None, options: dict[str, Any] | None = None) -> None:
        """Starts ``reset(seed=seed, options=options)`` and returns at once; :meth:`reset_wait` returns its
        result, as gymnasium's ``AsyncVectorEnv`` has them. A partial reset (``reset_mask``/``env_id`` in
        ``options``) is done here, and :meth:`reset_wait` returns it."""
        self.check_open()
        if self._waiting is not None:
            self._refuse_pending("reset_async")
        reset_mask, ids, env_options = reset_options(options)
        if reset_mask is not None or ids is not None:
            self._reset_done = self._partial_reset(seed, reset_mask, ids, env_options)
        else:
            self._send_full_reset(seed, env_options)
        self._waiting = AsyncState.WAITING_RESET

    def reset_wait(self, timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
        """The observations and info of the reset :meth:`reset_async` started. Past ``timeout`` seconds (None:
        no limit) a :class:`WaitTimeout` (``multiprocessing.TimeoutError``, as gymnasium raises). Unlike
        gymnasium, whose next call would then mix up the late results, the reset stays pending: ``reset_wait``
        again returns it, ``reset()`` starts over (waiting for what is in flight), ``close()`` always works."""
        self.check_open()
        timeout = check_timeout(timeout)
        if self._waiting is not AsyncState.WAITING_RESET:
            raise NoAsyncCallError("Calling `reset_wait` without any prior call to `reset_async`.", "reset")
        if self._reset_done is not None:
            done, self._reset_done = self._reset_done, None
            self._waiting = None
            return done
        try:
            rows = self._reset_rows(timeout)
        except WaitTimeout:
            self._timed_out = True
            raise
        self._waiting, self._timed_out = None, False
        return rows

    def step_async(self, actions: Any) -> None:
        """Starts a step of every env with ``actions`` and returns at once; :meth:`step_wait` returns its result,
        as gymnasium's ``AsyncVectorEnv`` has them (in async mode, ``send``/``recv`` step some envs instead)."""
        self.check_open()
        if self._waiting is not None:
            self._refuse_pending("step_async")
        if not self.sync:
            self._refuse_step_of_every_env("step_async(actions)")
        try:
            self._pool.send(actions, None)
        except RuntimeError as exc:
            self.step_refused(exc, None)
            raise
        self._waiting = AsyncState.WAITING_STEP

    def step_wait(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The result of the step :meth:`step_async` started. Past ``timeout`` seconds (None: no limit) a
        :class:`WaitTimeout`, as :meth:`reset_wait`'s: the step stays pending, so ``step_wait`` again returns it.
        (In the native pool the waiting thread may step envs itself; the time-out is checked between envs.)"""
        self.check_open()
        timeout = check_timeout(timeout)
        if self._waiting is not AsyncState.WAITING_STEP:
            raise NoAsyncCallError("Calling `step_wait` without any prior call to `step_async`.", "step")
        try:
            r = self._pool.recv(timeout)
        except TimeoutError as e:
            self._timed_out = True
            raise WaitTimeout(str(e)) from None
        self._waiting, self._timed_out = None, False
        return self._result(r)

    def step_refused(self, exc: RuntimeError, env_id: Any) -> None:
        """A step of ``env_id`` (every env if None) that the backend refused with ``exc``: raises ClosedError if the
        pool is closed, else the backend's more precise exception if it has one (the caller re-raises ``exc``
        otherwise). What :meth:`step` does with a refusal; for a front that steps :attr:`backend` itself."""
        self.check_open()
        self._pool.refused(exc, env_id)

    def _refuse_step_of_every_env(self, call: str) -> None:
        """``call`` steps every env: an async pool (batch_size < num_envs) steps some at a time."""
        self.check_open()
        raise ValueError(
            f"{call} steps every env and needs batch_size == num_envs; in async mode use send(actions, env_id) "
            "and recv()"
        )

    def _abandon_pending(self) -> None:
        """Forgets the pending call whose wait timed out (what it left in flight is drained by the caller)."""
        self._waiting, self._timed_out = None, False
        self._reset_batches = []

    def _refuse_pending(self, call: str) -> None:
        self.check_open()
        pending = self._waiting.value if self._waiting is not None else ""
        raise AlreadyPendingCallError(
            f"Calling `{call}` while waiting for a pending call to `{pending}` to complete: "
            f"call `{pending}_wait` first",
            pending,
        )

    # -- async API --------------------------------------------------------

    def async_reset(self, seed: Seed = None, env_id: Any = None, options: dict[str, Any] | None = None) -> None:
        """Starts a reset of every env (or of the idle envs in ``env_id``, with one seed each if any)
        and returns at once; results come from :meth:`recv` (or :meth:`recv_rest`). ``options`` go to each
        reset env's ``reset(options=...)``, as in :meth:`reset` (the envs to reset are ``env_id``'s)."""
        self.check_open()
        if self._waiting is not None:
            self._refuse_pending("async_reset")
        reset_mask, option_ids, env_options = reset_options(options)
        if reset_mask is not None or option_ids is not None:
            raise ValueError("async_reset takes the envs to reset as env_id=..., not as options['reset_mask'/'env_id']")
        if env_id is not None:
            ids = check_env_ids(env_id, self.num_envs)
            seeds = self._seeds(seed, ids.tolist(), listed=True)
            self._pool.send_reset(ids, seeds, env_options)
            self._reset_sent(ids.tolist(), seeds)
            return
        self._send_full_reset(seed, env_options)

    def send(self, actions: Any, env_id: Any = None) -> None:
        """Queues one step of each env in ``env_id`` (all envs if None) and returns at once."""
        if self._waiting is not None:
            self._refuse_pending("send")
        try:
            self._pool.send(actions, env_id)
        except RuntimeError as exc:
            self.step_refused(exc, env_id)
            raise

    def recv(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for the first ``batch_size`` envs to finish; ``info["env_id"]`` says which. Past ``timeout``
        seconds (None: no limit) a :class:`WaitTimeout` naming the envs that have not answered (in the Python-env
        pool); they stay in flight, and a later ``recv`` takes them."""
        if self._waiting is not None:  # (self._receive, inlined: hot)
            self._refuse_pending("recv")
        if timeout is not None:  # checked here, for both pools' words (the native binding's would be pybind11's)
            timeout = check_timeout(timeout)
        try:
            r = self._pool.recv(timeout)
        except TimeoutError as e:
            raise WaitTimeout(str(e)) from None
        except RuntimeError:
            self.check_open()
            raise
        return self._result(r)

    def recv_ready(
        self, rows: int, timeout: float | None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for ``rows`` envs (at most the envs in flight) to finish, for up to ``timeout`` seconds, then
        returns those that have finished, at least one: Tianshou's ``timeout``, as its ``SubprocVectorEnv``
        returns the envs ready by then. (The native pool's envs never block: it returns a whole batch, or the
        envs in flight when they are fewer than ``rows`` and ``batch_size``.)"""
        return self._receive("recv_ready", lambda: self._pool.recv_ready(rows, timeout))

    def recv_rest(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """In async mode, waits for the envs still in flight when they are fewer than ``batch_size``
        (after sending only some) and returns their rows; ``timeout`` as :meth:`recv`'s."""
        timeout = check_timeout(timeout)  # (as recv does, for both pools' words)
        return self._receive("recv_rest", lambda: self._pool.recv_rest(timeout))

    def _receive(
        self, call: str, take: Callable[[], _core.Result]
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """``take()``'s batch as :meth:`recv` returns it, with recv's checks and errors (which it has inlined: hot)."""
        if self._waiting is not None:
            self._refuse_pending(call)
        try:
            r = take()
        except TimeoutError as e:
            raise WaitTimeout(str(e)) from None
        except RuntimeError:
            self.check_open()
            raise
        return self._result(r)

    # -- jitted JAX code ---------------------------------------------------

    def xla(self) -> Any:
        """``(handle, recv, send, step)``: this pool's calls as XLA custom calls, for jitted JAX code
        (``jax.jit``, ``jax.lax.scan``), as EnvPool's ``xla()`` gives them; JAX's CPU backend, native envs, and
        ``autoreset_mode="next_step"`` only (jax is the ``xla`` extra).

        >>> handle, recv, send, step = env.xla()
        >>> handle, (obs, reward, terminated, truncated, info) = jax.jit(step)(handle, actions)

        Each call takes the handle the previous one returned (``lax.scan`` carries it) and returns the next;
        a handle already used, of another pool or of a closed pool is an error. ``info`` holds ``env_id`` and
        the env's values (with their ``_name`` masks where the env has them), every key in every batch (a
        jitted function's outputs have fixed shapes); no episode statistics. Reset from Python first
        (``reset()``, or ``async_reset()`` for an async pool, whose ``recv`` takes the first batch).
        """
        from fastvec import _xla

        return _xla.make(self._xla_pool(), self.label, lambda *result: result)

    def _xla_pool(self) -> NativePool:
        """The native pool under this façade, for :meth:`xla` (refused for what xla() cannot step)."""
        self.check_open()
        if not isinstance(self._pool, NativePool):
            raise TypeError(
                f"xla() steps fastvec's native envs only; {self.label} runs Python envs in worker processes"
            )
        if self._mode is not AutoresetMode.NEXT_STEP:
            raise ValueError(
                f"xla() needs autoreset_mode='next_step' (EnvPool's and ale-py's), got {self._mode.value!r}"
            )
        return self._pool

    # -- per-env access ----------------------------------------------------

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Calls method ``name`` of every env with ``args`` and ``kwargs`` and returns the results in env order, as
        gymnasium's ``AsyncVectorEnv.call`` does (an attribute that is not callable comes back as it is).

        >>> env = fastvec.make([lambda: gymnasium.make("CartPole-v1")] * 2)
        >>> env.call("gravity")
        (9.8, 9.8)
        """
        return tuple(self.env_call("call", name, args, kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env, in env order: ``call(name)``, as gymnasium defines it (so a method is
        called, without arguments)."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Sets attribute ``name`` of every env (``env.set_wrapper_attr(name, value)``, as gymnasium's vector envs
        do): ``values`` is a list or tuple of one value per env, or any other object, set in every env."""
        self.check_open()
        if not isinstance(values, (list, tuple)):
            values = [values for _ in range(self.num_envs)]
        if len(values) != self.num_envs:
            raise ValueError(
                "Values must be a list or tuple with length equal to the number of environments. "
                f"Got `{len(values)}` values for {self.num_envs} environments."
            )
        self.env_call("set", name, values)

    def render(self) -> tuple[Any, ...] | None:
        """Each env's frame, in env order, as gymnasium's vector envs render (None when the envs have no render
        mode): a Python env's ``render()``; a native env's ``(H, W, 3)`` uint8 frame (Atari: the emulator's screen;
        classic control: gymnasium's drawing of its state), which needs every env out of flight."""
        if self.render_mode is None:
            self.check_open()
            return None
        if self.entry is not None:
            self.check_open()
            return tuple(self._native_pool().frames(None))
        return self.call("render")

    def _native_pool(self) -> NativePool:
        assert isinstance(self._pool, NativePool)
        return self._pool

    def env_call(
        self,
        kind: str,
        name: str,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        env_ids: Any = None,
    ) -> list[Any]:
        """Runs ``kind`` of attribute ``name`` on the envs ``env_ids`` (every env if None; an id may be listed
        twice) and returns their results in that order: what :meth:`call`, :meth:`get_attr`, :meth:`set_attr`
        and the adapters' per-env calls are made of. ``kind`` says how, as the upstream vector envs do it:

        - ``"get"``: ``env.get_wrapper_attr(name)`` (SB3's ``get_attr``, Tianshou's ``get_env_attr``);
        - ``"call"``: that attribute called with ``args`` and ``kwargs`` if callable, else itself (gymnasium's
          ``call``); ``"method"``: called in any case (SB3's ``env_method``);
        - ``"set"``: ``env.set_wrapper_attr(name, value)`` (gymnasium's ``set_attr``); ``"set_outer"``:
          ``setattr(env, name, value)`` on the outermost wrapper (SB3's ``set_attr``); ``"set_unwrapped"``:
          ``setattr(env.unwrapped, name, value)`` (Tianshou's ``set_env_attr``); ``args`` has one value per env;
        - ``"is_wrapped"``: whether a wrapper of class ``args[0]`` wraps the env (SB3's ``env_is_wrapped``).

        >>> env.env_call("method", "compute_reward", (achieved, desired, infos), env_ids=[0])

        In the Python-env pool each env runs it in its worker process; an env in flight (async mode) is
        refused, and an exception the env raises comes back with its own type and a note naming the env (with
        the worker's traceback). A native env has no Python object: it answers the attributes it really has
        (``spec``, ``render_mode``, ``metadata``, its single-env spaces and its options, by name), raises an
        AttributeError naming the env for the others, and refuses every set.
        """
        self.check_open()
        if self._waiting is not None:
            self._refuse_pending(kind)
        if kind not in ENV_CALL_KINDS:
            raise ValueError(f"kind must be one of {ENV_CALL_KINDS}, got {kind!r}")
        if not isinstance(name, str):
            raise TypeError(f"the attribute name must be a str, got {type(name).__name__} {name!r}")
        if kind in ("call", "method") and name in POOL_METHODS:
            raise ValueError(
                f"Trying to call function `{name}` with `call`, use `{name}` directly instead: the pool resets, "
                "steps and closes the envs itself (and counts their steps)"
            )
        ids = self._all_env_ids if env_ids is None else check_env_ids(env_ids, self.num_envs, unique=False)
        args = tuple(args)
        kwargs = dict(kwargs or {})
        if kind in SET_KINDS and len(args) != len(ids):
            raise ValueError(f"{kind} {name!r}: args must hold one value per env ({len(ids)}), got {len(args)}")
        if kind == "is_wrapped" and (len(args) != 1 or not isinstance(args[0], type)):
            raise TypeError(f"is_wrapped takes one argument, a wrapper class; got {args!r}")
        if kwargs and kind not in ("call", "method"):
            raise TypeError(f"{kind} takes no keyword arguments, got {sorted(kwargs)}")
        if len(ids) == 0:
            return []
        return self._pool.env_call(ids, kind, name, args, kwargs)

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close_extras(self, **kwargs: Any) -> None:
        """Closes the pool (``close()``'s ``timeout=`` and ``terminate=``, AsyncVectorEnv's, change nothing: it
        returns promptly in any case). With a ``reset_async``/``step_async`` not waited for, warns as
        AsyncVectorEnv does (after closing, so that warnings turned into errors leave it closed), but does not
        wait for it; not after its wait timed out, where AsyncVectorEnv has forgotten the call."""
        pending = None if self._timed_out else self._waiting
        self._abandon_pending()
        self._pool.close()
        if pending is not None:
            warnings.warn(
                f"Calling `close` while waiting for a pending call to `{pending.value}` to complete.",
                UserWarning,
                stacklevel=3,
            )

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    # -- helpers ----------------------------------------------------------

    def check_open(self) -> None:
        """Raises :class:`ClosedError` if the pool is closed: a call on a closed pool is refused as closed before
        its arguments are looked at (the backends do so for the calls they check)."""
        if self._pool.closed:
            raise ClosedError("the pool is closed")

    def _seeds(self, seed: Any, ids: Sequence[int], listed: bool = False) -> list[int | None]:
        """The seeds for a reset of the envs ``ids``, one per env (empty: none), as gymnasium's vector envs take
        them: an int ``s`` seeds env ``i`` with ``s + i``; a list has one seed per env of the pool, or per env
        in ``ids`` when ``listed``. Envs that get no seed take make()'s, at their first reset."""
        if seed is None:
            seeds: list[int | None] = [None] * len(ids)
        elif is_int_seed(seed):
            seeds = self._int_seeds(check_seed("seed", seed), ids)
        else:
            if isinstance(seed, (str, bytes)) or not isinstance(seed, Sequence | np.ndarray):
                raise TypeError(f"seed must be an int, a list of ints (or None), or None; got {type(seed).__name__}")
            n = len(ids) if listed else self.num_envs
            if len(seed) != n:
                what = "per env reset" if listed else "per env"
                raise ValueError(f"seed: a list of seeds needs one {what} ({n}), got {len(seed)}")
            given = [None if v is None else check_seed(f"seed[{k}]", v) for k, v in enumerate(seed)]
            seeds = given if listed else [given[i] for i in ids]
        if self._pending_seeds is not None:
            pending = self._pending_seeds
            seeds = [pending[i] if s is None else s for s, i in zip(seeds, ids, strict=True)]
        return seeds if any(s is not None for s in seeds) else []

    def _reset_sent(self, ids: Sequence[int], seeds: Sequence[int | None]) -> None:
        """The envs ``ids`` are resetting with ``seeds`` (one per env, or none): make()'s seed no longer applies
        to them."""
        if seeds:
            for i, s in zip(ids, seeds, strict=True):
                if s is not None:
                    self._env_seeds[i] = s
        if self._pending_seeds is not None:
            for i in ids:
                self._pending_seeds[i] = None
            if all(p is None for p in self._pending_seeds):
                self._pending_seeds = None

    def _int_seeds(self, seed: int, ids: Sequence[int]) -> list[int | None]:
        _check_seed_range(seed, self.num_envs)
        return [seed + i for i in ids]

    def _partial_reset(
        self, seed: Any, reset_mask: Any, ids: Any, env_options: dict[str, Any] | None
    ) -> tuple[Any, dict[str, Any]]:
        mask_ids = partial_reset_ids(reset_mask, self._pool.shape)
        ids = mask_ids if mask_ids is not None else check_env_ids(ids, self.num_envs)
        seeds = self._seeds(seed, ids.tolist(), listed=mask_ids is None)
        r = self._pool.reset_envs(ids, seeds, reset_mask is not None, env_options)
        self._reset_sent(ids.tolist(), seeds)
        info = self._info(r)
        if reset_mask is not None:
            return r.obs, info
        # The rows of ids, in their order (a backend may have returned every env's row).
        position = np.empty(self.num_envs, dtype=np.intp)
        position[r.env_id] = np.arange(len(r.env_id))
        pick = position[ids]
        return rows(self.single_observation_space, r.obs, pick), info_rows_at(info, pick)

    def _info(self, r: _core.Result) -> dict[str, Any]:
        """A batch's info dict: the envs' own values (often none: a shared, empty mapping) and, in async mode,
        the env of each row."""
        info: dict[str, Any] = {"env_id": r.env_id} if self._with_env_id else {}
        if r.info:
            info.update(r.info)
        if self._lives is not None:
            self._lives[r.env_id] = r.info["lives"]
        return info

    def _result(self, r: _core.Result) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        info: dict[str, Any] = {"env_id": r.env_id} if self._with_env_id else {}  # self._info(r), inlined: hot
        if r.info:
            info.update(r.info)
        if self._lives is not None:
            self._lives[r.env_id] = r.info["lives"]
        if r.ended is not None:
            # Each mask is an array of its own, as gymnasium's are: a caller may change one in place.
            done = r.ended
            stats: dict[str, Any] = {}
            if self._episode_stats:
                stats = {
                    "episode_return": r.episode_return,
                    "_episode_return": done,
                    "episode_length": r.episode_length,
                    "_episode_length": done.copy(),
                }
                info.update(stats)
            elif self._gymnasium_stats:
                self._gymnasium_episode(r, info)
            if r.final_obs is not None:
                boxed = np.full(len(done), None, dtype=object)
                for i in np.flatnonzero(done).tolist():
                    boxed[i] = row(self.single_observation_space, r.final_obs, i)
                info["final_obs"], info["_final_obs"] = boxed, done.copy()
                # The info of the step that ended each episode: the env's values and, when asked for, its
                # statistics (info itself has the new episode's).
                final_stats = {k: v.copy() for k, v in stats.items()}
                info["final_info"], info["_final_info"] = {**final_stats, **(r.final_info or {})}, done.copy()
        return r.obs, r.reward, r.terminated, r.truncated, info

    def _gymnasium_episode(self, r: _core.Result, info: dict[str, Any]) -> None:
        """Ended episodes' statistics as gymnasium's vector ``RecordEpisodeStatistics`` adds them: ``episode``
        (``r``: returns, ``l``: lengths, ``t``: seconds since the episode started; 0 in other rows) and its mask
        ``_episode``."""
        done, returns, lengths = r.ended, r.episode_return, r.episode_length
        assert self._episode_start is not None and done is not None and returns is not None and lengths is not None
        now = time.perf_counter()
        ids = r.env_id
        seconds = np.where(done, np.round(now - self._episode_start[ids], 6), 0.0)
        self._episode_start[ids[done]] = now
        info["episode"] = {  # (0 in other rows, as gymnasium's; the Python-env pool leaves running values there)
            "r": np.where(done, returns, 0.0),
            "l": np.where(done, lengths, 0).astype(np.int32),
            "t": seconds,
        }
        info["_episode"] = done.copy()


class PyVectorEnv(VectorEnv):
    """A :class:`VectorEnv` over the Python-env pool; what :func:`fastvec.make` returns for Python envs,
    with that pool's worker processes in view."""

    def __init__(
        self,
        pool: PyEnvPool,
        autoreset_mode: AutoresetMode,
        seed: int | None = None,
        episode_stats: bool | str = False,
    ) -> None:
        super().__init__(
            pool,
            autoreset_mode,
            pool.single_observation_space,
            pool.single_action_space,
            max_episode_steps=pool.max_episode_steps,
            metadata=pool.metadata,
            spec=pool.spec,
            render_mode=pool.render_mode,
            seed=seed,
            episode_stats=episode_stats,
        )
        self.observation_mode = pool.observation_mode  #: "same" or "different", as gymnasium's AsyncVectorEnv has it
        if pool.observation_mode == "different" and self.sync:
            # As gymnasium's vector envs in that mode: each row bounded by its env's space (async batches hold
            # any envs: there, env 0's space batched, as in "same" mode).
            self.observation_space = batch_differing_spaces(pool.env_observation_spaces)
        self._workers = pool
        self.num_workers = pool.num_workers
        self.start_method = pool.start_method

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers (for monitoring and tests)."""
        return self._workers.worker_pids
