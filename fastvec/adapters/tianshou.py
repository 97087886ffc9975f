"""Tianshou: a vector env the Collector takes in place of ``SubprocVectorEnv``.

>>> from tianshou.data import Collector
>>> train_envs = fastvec.tianshou_venv("CartPole-v1", 8, seed=0)   # was SubprocVectorEnv([...] * 8)
>>> async_envs = fastvec.tianshou_venv("CartPole-v1", 8, batch_size=4, seed=0)  # was wait_num=4

Protocol translation only. Tianshou wants an env that is not reset
automatically: ``step`` returns the last observation of a finished episode
and the Collector then calls ``reset(env_id=ids)``. The pool runs with
``autoreset_mode="same_step"``; this class returns ``final_obs`` as the
step's observation and hands out the new episode's first observation, which
the pool already has, when the Collector asks for the reset. So a reset costs
no round trip, also in async mode where other envs are in flight.

Tianshou steps chosen envs (``step(action, id)``) in sync mode too, so the
pool is built asynchronous (``batch_size = num_envs - 1``): a step of ``k``
envs is a send and at most two receives.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._args import autoreset_mode_name, check_timeout
from fastvec.batching import info_rows, row
from fastvec.vector import VectorEnv, make


class TianshouVectorEnv:
    """Tianshou's vector-env protocol (``BaseVectorEnv``'s methods and return
    formats) over a :class:`fastvec.VectorEnv`; made by :func:`fastvec.tianshou_venv`.

    ``step`` returns ``(obs, rew, terminated, truncated, info)`` with ``info`` a
    numpy object array of dicts, each with ``env_id``; ``reset`` returns
    ``(obs, info)``. ``obs`` is an array, or for a Dict or Tuple space an object array of each env's dict or
    tuple (as Tianshou's venvs return a Dict's). ``wait_num < env_num`` makes it asynchronous, for
    Tianshou's ``AsyncCollector``. ``get_env_attr``/``set_env_attr`` reach the envs
    (through :meth:`fastvec.VectorEnv.env_call`), and so do ``spec`` and ``metadata``.
    """

    def __init__(self, env: VectorEnv, wait_num: int | None = None, timeout: float | None = None) -> None:
        self.env = env
        self.env_num = env.num_envs
        self.wait_num = wait_num or env.num_envs
        timeout = check_timeout(timeout)
        if timeout == 0:
            raise ValueError("timeout must be None or positive (Tianshou's venvs require it), got 0")
        # As Tianshou's: a step returns the first wait_num envs to finish or, after timeout seconds, those that
        # have (at least one); either makes the venv asynchronous.
        self.timeout = timeout
        self.is_async = self.wait_num != env.num_envs or timeout is not None
        self.waiting_id: list[int] = []
        self.ready_id: list[int] = list(range(self.env_num))
        self.is_closed = False
        self._action_spaces = [copy.deepcopy(env.single_action_space) for _ in range(self.env_num)]
        # Dict/Tuple observations go out as Tianshou's venvs give a Dict's: an object array, each env's own; so do
        # those of spaces of no fixed size (Text, Graph, ...), which the pool batches as tuples of the envs' values.
        fixed = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
        self._structured = not isinstance(env.single_observation_space, fixed)
        # The first observation and reset info of episodes the pool began at the step that ended the last.
        self._reset_obs: dict[int, Any] = {}
        self._reset_info: dict[int, dict[str, Any]] = {}

    # -- Tianshou's attributes -----------------------------------------------

    def __len__(self) -> int:
        return self.env_num

    @property
    def action_space(self) -> list[Any]:
        return list(self._action_spaces)

    @property
    def observation_space(self) -> list[Any]:
        """Each env's own observation space (they may differ in bounds, as Tianshou's envs of several sizes do)."""
        if self.env.entry is not None:  # native: one space for every env
            return [self.env.single_observation_space] * self.env_num
        return self.get_env_attr("observation_space")

    @property
    def spec(self) -> list[Any]:
        return self.get_env_attr("spec")

    @property
    def metadata(self) -> list[dict[str, Any]]:
        return self.get_env_attr("metadata")

    @property
    def reward_range(self) -> list[tuple[float, float]]:
        return [(-float("inf"), float("inf"))] * self.env_num

    def get_env_attr(self, key: str, id: int | Sequence[int] | np.ndarray | None = None) -> list[Any]:
        """Attribute ``key`` of the envs ``id`` (all if None), in that order: ``env.get_wrapper_attr(key)``, the
        attribute of the outermost wrapper that has it. (``SubprocVectorEnv`` reads the outermost wrapper only and
        gives None where it lacks the attribute, ``DummyVectorEnv`` reads ``env.unwrapped``; here an attribute no
        layer has is an AttributeError.) An env that is stepping is refused, as Tianshou refuses it."""
        self._check_open()
        return self.env.env_call("get", key, env_ids=self._ids(id))

    def set_env_attr(self, key: str, value: Any, id: int | Sequence[int] | np.ndarray | None = None) -> None:
        """``setattr(env.unwrapped, key, value)`` on the envs ``id`` (all if None), as Tianshou's workers do."""
        self._check_open()
        ids = self._ids(id)
        self.env.env_call("set_unwrapped", key, [value] * len(ids), env_ids=ids)

    # -- stepping ---------------------------------------------------------------

    def reset(
        self, env_id: int | Sequence[int] | np.ndarray | None = None, **kwargs: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """Resets the envs in ``env_id`` (all if None); returns their observations and info dicts, in that order.

        ``seed=int`` seeds env ``i`` with ``seed + i``, as :meth:`seed` does (Tianshou's own venvs give every env
        the same seed); ``seed=[...]`` gives one seed per reset env. The info dicts are the envs' reset infos.
        A reset of every env discards the results of steps still in flight, as
        the AsyncCollector's ``reset`` needs; a reset of some envs needs them received.
        """
        self._check_open()
        seed = kwargs.pop("seed", None)
        options = kwargs.pop("options", None)
        if kwargs:
            raise TypeError(f"reset() got unexpected keyword arguments {sorted(kwargs)}")
        if options:
            raise ValueError(f"{self.env.label} takes no reset options, got {options!r}")
        ids = self._ids(env_id)
        unique = len(set(ids.tolist())) == len(ids)
        # Envs that just finished an episode (never in flight): the pool has begun their next one already, and
        # hands out its first observation; a reset of them (all envs too) resets each env once, as Tianshou does.
        if seed is None and unique and all(i in self._reset_obs for i in ids.tolist()):
            firsts = [self._reset_obs.pop(i) for i in ids.tolist()]
            obs = _object_array(firsts) if self._structured else np.stack(firsts)
            return obs, _object_array([self._reset_info.pop(i) for i in ids.tolist()])
        if len(ids) == self.env_num and unique:
            obs, info = self.env.reset(seed=seed)  # discards the results of steps still in flight
            obs = self._per_env(obs, self.env_num)
            self.waiting_id, self.ready_id = [], list(range(self.env_num))
            self._reset_obs.clear()
            self._reset_info.clear()
            rows = info_rows(info, self.env_num)
            return obs[ids], _object_array([rows[i] for i in ids.tolist()])
        return self._partial_reset(ids, seed)

    def step(
        self, action: Any, id: int | Sequence[int] | np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Steps the envs in ``id`` (all if None) with ``action``, one row per id.

        Sync: returns their results in ``id`` order. Async: returns the first
        ``wait_num`` envs to finish (fewer if fewer are stepping); ``info[k]["env_id"]``
        says which; ``action=None`` only receives.
        """
        self._check_open()
        ids = self._ids(id)
        if not self.is_async:
            if action is None:
                raise ValueError("action must be not-None for non-async")
            if len(action) != len(ids):
                raise ValueError(f"got {len(action)} actions for {len(ids)} env ids")
            if len(ids) == 0:
                return self._empty()
            self._send(action, ids)
            return self._translate(self._gather(len(ids)), order=ids)
        if action is not None:
            if len(action) != len(ids):
                raise ValueError(f"got {len(action)} actions for {len(ids)} env ids")
            busy = set(ids.tolist()) & set(self.waiting_id)
            if busy:
                raise RuntimeError(f"cannot step envs {sorted(busy)}: they are stepping already")
            self._send(action, ids)
            self.waiting_id.extend(ids.tolist())
            stepped = set(ids.tolist())
            self.ready_id = [i for i in self.ready_id if i not in stepped]
        if not self.waiting_id:
            raise RuntimeError("step(None) with no env stepping: nothing to receive")
        if self.timeout is None:
            result = self._gather(min(len(self.waiting_id), self.env.batch_size))
        else:
            result = self._gather(min(len(self.waiting_id), self.wait_num), self.timeout)
        done_ids = set(result[4].tolist())
        self.waiting_id = [i for i in self.waiting_id if i not in done_ids]
        self.ready_id.extend(result[4].tolist())
        return self._translate(result, order=None)

    def seed(self, seed: int | Sequence[int] | None = None) -> list[list[int] | None]:
        """Seeds env ``i`` with ``seed + i`` (or ``seed[i]``) and resets it, as Tianshou's workers do."""
        self._check_open()
        if seed is None:
            seeds: list[int | None] = [None] * self.env_num
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.env_num)]
        else:
            seeds = list(seed)
            if len(seeds) != self.env_num:
                raise ValueError(f"seed: a list of seeds needs one per env ({self.env_num}), got {len(seeds)}")
        for space, s in zip(self._action_spaces, seeds, strict=True):
            space.seed(s)
        self.env.reset(seed=seeds if any(s is not None for s in seeds) else None)
        self.waiting_id, self.ready_id = [], list(range(self.env_num))
        self._reset_obs.clear()
        self._reset_info.clear()
        return [None if s is None else [s] for s in seeds]

    def render(self, **kwargs: Any) -> list[Any]:
        """Each env's ``render()``, as Tianshou's venvs return their workers': its current frame with
        ``render_mode="rgb_array"``, None without a render mode; refused while envs are stepping (async), with
        Tianshou's RuntimeError. gymnasium's envs take no render arguments: neither does this."""
        self._check_open()
        if kwargs:
            raise TypeError(f"render() takes no arguments (the envs' render_mode says what they draw), got {kwargs}")
        if self.is_async and self.waiting_id:
            raise RuntimeError(f"Environments {self.waiting_id} are still stepping, cannot render them now.")
        frames = self.env.render()
        return [None] * self.env_num if frames is None else list(frames)

    def close(self) -> None:
        if not self.is_closed:
            self.env.close()
            self.is_closed = True

    # -- helpers ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self.is_closed:
            raise RuntimeError(f"Methods of {type(self).__name__} cannot be called after close.")

    def _ids(self, id: Any) -> np.ndarray:
        if id is None:
            return np.arange(self.env_num, dtype=np.int32)
        ids = np.asarray(id).reshape(-1)
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= self.env_num):
            raise ValueError(f"env ids must be integers in [0, {self.env_num}), got {id!r}")
        return ids.astype(np.int32)

    def _send(self, action: Any, ids: np.ndarray) -> None:
        for i in ids.tolist():
            self._reset_obs.pop(i, None)  # stepped without a reset: the episode simply goes on
            self._reset_info.pop(i, None)
        action = self._discrete(np.asarray(action))
        if self.env.sync:  # one env: the pool is sync
            self.env.send(action, None)
        else:
            self.env.send(action, ids)

    def _discrete(self, action: np.ndarray) -> np.ndarray:
        """Integral floats as ints for a Discrete action space (Tianshou's collectors may send float64)."""
        if not isinstance(self.env.single_action_space, gym.spaces.Discrete) or action.dtype.kind != "f":
            return action
        whole = np.isfinite(action) & (action == np.round(action))
        if not whole.all():
            bad = action.reshape(-1)[np.flatnonzero(~whole.reshape(-1))[0]]
            raise ValueError(f"actions for {self.env.single_action_space} must be integral, got {bad!r}")
        return action.astype(np.int64)

    def _gather(self, k: int, timeout: float | None = None) -> tuple[Any, ...]:
        """Receives ``k`` results: whole batches, then the rest (with a ``timeout``: those of the ``k`` that come
        within it, at least one). Returns obs, rew, terminated, truncated, env_id, final_obs (an object array),
        and per row the env's info of the step (of its last step, for an env whose episode ended) and, for
        those, the new episode's reset info (None for the others)."""
        parts = []
        batch = self.env.batch_size
        if timeout is not None:
            parts.append(self.env.recv_ready(k, timeout))
            k = 0
        while k >= batch:
            parts.append(self.env.recv())
            k -= batch
        if k:
            parts.append(self.env.recv_rest())
        finals, infos, reset_infos = [], [], []
        for p in parts:
            info, n = p[4], len(p[1])
            rows = info_rows(info, n)
            resets: list[dict[str, Any] | None] = [None] * n
            if "final_obs" in info:
                finals.append(info["final_obs"])
                last = info_rows(info["final_info"], n)
                for r in np.flatnonzero(info["_final_obs"]).tolist():
                    resets[r], rows[r] = rows[r], last[r]
            else:
                finals.append(np.full(n, None, dtype=object))
            infos += rows
            reset_infos += resets
        if len(parts) == 1:
            p = parts[0]
            return self._per_env(p[0], len(p[1])), p[1], p[2], p[3], self._env_ids(p), finals[0], infos, reset_infos
        return (
            np.concatenate([self._per_env(p[0], len(p[1])) for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            np.concatenate([p[3] for p in parts]),
            np.concatenate([self._env_ids(p) for p in parts]),
            np.concatenate(finals),
            infos,
            reset_infos,
        )

    def _env_ids(self, result: tuple) -> np.ndarray:
        """The env of each row of a recv() result: info["env_id"] in async mode, env order in a sync pool."""
        info = result[4]
        return info["env_id"] if "env_id" in info else np.arange(len(result[1]), dtype=np.int32)

    def _translate(self, result: tuple[Any, ...], order: np.ndarray | None):
        obs, rew, term, trunc, env_id, final_obs, infos, reset_infos = result
        if order is not None and not np.array_equal(env_id, order):
            row = np.empty(self.env_num, dtype=np.intp)
            row[env_id] = np.arange(len(env_id))
            pick = row[order]
            obs, rew, term, trunc, env_id, final_obs = (a[pick] for a in (obs, rew, term, trunc, env_id, final_obs))
            infos, reset_infos = [infos[r] for r in pick], [reset_infos[r] for r in pick]
        for r in np.flatnonzero(term | trunc).tolist():
            e = int(env_id[r])
            self._reset_obs[e] = obs[r] if self._structured else obs[r].copy()
            self._reset_info[e] = reset_infos[r] or {}
            obs[r] = final_obs[r]
        info = _object_array([{**d, "env_id": int(e)} for d, e in zip(infos, env_id.tolist(), strict=True)])
        return obs, rew, term, trunc, info

    def _partial_reset(self, ids: np.ndarray, seed: Any) -> tuple[np.ndarray, np.ndarray]:
        busy = set(ids.tolist()) & set(self.waiting_id)
        if busy:
            raise RuntimeError(f"cannot reset envs {sorted(busy)}: they are stepping; receive their results first")
        if self.waiting_id:
            raise RuntimeError(
                f"a reset of envs {ids.tolist()} that have not just finished an episode needs every env received "
                f"first (envs {self.waiting_id} are stepping)"
            )
        for i in ids.tolist():
            self._reset_obs.pop(i, None)
            self._reset_info.pop(i, None)
        self.env.async_reset(seed, env_id=ids)
        obs, _, _, _, env_id, _, infos, _ = self._gather(len(ids))
        row = np.empty(self.env_num, dtype=np.intp)
        row[env_id] = np.arange(len(env_id))
        pick = row[ids]
        return obs[pick], _object_array([infos[r] for r in pick.tolist()])

    def _per_env(self, obs: Any, n: int) -> Any:
        """The pool's batch of ``n`` observations as Tianshou's venvs return them: the array itself, or for a
        Dict/Tuple space (a dict/tuple of arrays) an object array of each env's dict/tuple."""
        if not self._structured:
            return obs
        return _object_array([row(self.env.single_observation_space, obs, i) for i in range(n)])

    def _empty(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        space = self.env.single_observation_space
        if self._structured:
            obs = _object_array([])
        else:
            assert space.shape is not None  # not a Dict or Tuple space
            obs = np.empty((0, *space.shape), dtype=space.dtype)
        return (
            obs,
            np.empty(0, dtype=np.float32),
            np.empty(0, dtype=np.bool_),
            np.empty(0, dtype=np.bool_),
            _object_array([]),
        )


def _object_array(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):  # one by one: numpy would take a list of tuples for a 2-d array
        out[i] = item
    return out


def tianshou_venv(
    env_id: Any,
    num_envs: int | None = None,
    *,
    batch_size: int | None = None,
    timeout: float | None = None,
    **kwargs: Any,
) -> TianshouVectorEnv:
    """A Tianshou vector env of ``num_envs`` copies of ``env_id``; takes :func:`fastvec.make`'s
    arguments, ``batch_size=k`` standing for Tianshou's ``wait_num=k``, and Tianshou's ``timeout`` (a step
    returns the envs that finish within it, at least one; the native pool's envs never block, so there it
    returns whole batches).

    >>> envs = fastvec.tianshou_venv("CartPole-v1", 4, seed=0)
    >>> obs, info = envs.reset()
    >>> obs, rew, terminated, truncated, info = envs.step(np.zeros(4, dtype=int))
    """
    # Tianshou's venvs take envs whose observation spaces differ (its tests build envs of several sizes): so does
    # the Python-env pool in gymnasium's "different" mode, batching them as env 0's when shape and dtype agree.
    kwargs.setdefault("observation_mode", "different")
    mode = kwargs.pop("autoreset_mode", "same_step")
    if autoreset_mode_name(mode) != "same_step":
        raise ValueError(
            f"the Tianshou adapter needs autoreset_mode='same_step' (the default), got {mode!r}: the Collector resets "
            "finished envs itself, and the adapter answers those resets with the first observation the pool "
            "already made in the same step, so a reset costs no round trip"
        )
    args = (env_id,) if num_envs is None else (env_id, num_envs)
    probe_n = (
        num_envs
        if num_envs is not None
        else (len(env_id) if isinstance(env_id, Sequence) and not isinstance(env_id, str) else None)
    )
    if batch_size is not None and probe_n is not None and batch_size >= probe_n:
        batch_size = None
    if batch_size is None:
        # Tianshou sync: the pool is async one short of all envs, so any subset can be stepped.
        pool_batch = None if probe_n is None or probe_n == 1 else probe_n - 1
        env = make(*args, batch_size=pool_batch, autoreset_mode="same_step", **kwargs)
        return _adapter(env, None, timeout)
    env = make(*args, batch_size=batch_size, autoreset_mode="same_step", **kwargs)
    return _adapter(env, batch_size, timeout)


def _adapter(env: VectorEnv, wait_num: int | None, timeout: float | None) -> TianshouVectorEnv:
    try:
        if not isinstance(env, VectorEnv):  # a MultiAgentVectorEnv: fastvec.make took a multi-agent env
            raise TypeError(
                "env_id makes multi-agent envs: Tianshou steps them turn by turn (its PettingZooEnv), which "
                "fastvec.tianshou_ma_venv(env_fn, num_envs) does"
            )
        return TianshouVectorEnv(env, wait_num=wait_num, timeout=timeout)
    except BaseException:
        env.close()
        raise
