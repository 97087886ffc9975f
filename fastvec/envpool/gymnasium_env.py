"""EnvPool's gymnasium env over a native pool (:class:`GymnasiumEnvPool`, and EnvPool 0.6-0.8's gym API,
:class:`LegacyGymEnvPool`), and what EnvPool's envs have beyond gymnasium's VectorEnv (:class:`EnvPoolFace`)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from fastvec._args import check_env_ids, reset_mask_ids, reset_options
from fastvec._core import EnvError
from fastvec.envpool.spec import EnvPoolSpec
from fastvec.vector import VectorEnv


class EnvPoolFace:
    """What EnvPool's envs have beyond gymnasium's VectorEnv (mixed into both classes over a pool)."""

    _spec: EnvPoolSpec
    _pool_env: VectorEnv

    @property
    def config(self) -> dict[str, Any]:
        """EnvPool's config of this env, as a dict (``env.spec.config`` is the namedtuple)."""
        return self._spec.config._asdict()

    @property
    def is_async(self) -> bool:
        return not self._pool_env.sync

    @property
    def all_env_ids(self) -> np.ndarray:
        return np.arange(self._pool_env.num_envs, dtype=np.int32)

    def __len__(self) -> int:
        """The number of envs, as EnvPool's ``len(env)`` (Tianshou's EnvPool path sizes its buffers by it)."""
        return self._pool_env.num_envs


def _set_once(name: str) -> property:
    """An attribute that CleanRL's scripts set again to the value it has (``envs.num_envs = args.num_envs``),
    which EnvPool 1.2.5 refuses (no setter): the same value is taken, another is a ValueError."""
    private = f"_{name}_value"

    def get(self: Any) -> Any:
        return getattr(self, private)

    def put(self: Any, value: Any) -> None:
        if hasattr(self, private) and value != getattr(self, private):
            raise ValueError(f"{name} is {getattr(self, private)} for this pool and cannot change, got {value!r}")
        object.__setattr__(self, private, value)

    return property(get, put)


class GymnasiumEnvPool(EnvPoolFace, VectorEnv, gym.Env):  # type: ignore[misc]  # (as EnvPool's: both)
    """EnvPool's gymnasium env (``env_type="gymnasium"`` or ``"gym"``): a :class:`fastvec.VectorEnv` whose
    ``observation_space``/``action_space`` are one env's, whose info has EnvPool's keys, and which steps some
    envs of a sync pool with ``step(actions, env_id)``. Also a ``gymnasium.Env``, as EnvPool's is, so that
    ``gymnasium.Wrapper`` subclasses (CleanRL's ``RecordEpisodeStatistics``) wrap it."""

    num_envs = _set_once("num_envs")
    batch_size = _set_once("batch_size")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pool_env = self
        self._with_env_id = True  # info["env_id"] also in sync mode, as EnvPool's
        self._atari = self.entry is not None and self.entry.rom is not None
        self._step_batch = self.backend.step  # (bound once: the façade's fast path, see step)
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space

    @property
    def is_vector_env(self) -> bool:
        """True, as EnvPool's: the flag older vector-aware gymnasium wrappers look for."""
        return True

    @is_vector_env.setter
    def is_vector_env(self, value: Any) -> None:
        """CleanRL's EnvPool scripts set it (``envs.is_vector_env = True``), as EnvPool 0.6-0.8 took and 1.2.5
        refuses (no setter): True is taken, as ``num_envs``' own value is."""
        if value is not True:
            raise ValueError(f"is_vector_env is True for this pool and cannot change, got {value!r}")

    @property  # type: ignore[override]
    def spec(self) -> EnvPoolSpec:
        return self._spec

    @spec.setter
    def spec(self, value: Any) -> None:  # VectorEnv.__init__ sets the gymnasium EnvSpec: EnvPool's is kept
        pass

    def reset(  # type: ignore[override]
        self, env_id: Any = None, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """EnvPool's reset: every env (sync), or the envs of ``env_id`` (or of ``options["reset_mask"]``), and
        their rows only, in ``env_id``'s order; an async pool returns the next batch, EnvPool's: the first
        ``batch_size`` envs to finish, these or others in flight (the rest come from :meth:`recv`), or every env
        in flight when they are fewer. ``seed`` reseeds as fastvec's ``reset`` does (EnvPool ignores it)."""
        reset_mask, option_ids, env_options = reset_options(options)
        if reset_mask is not None:
            option_ids = reset_mask_ids(reset_mask, self.num_envs)
        if env_id is not None and option_ids is not None:
            raise ValueError("pass the envs to reset as env_id or in options, not both")
        env_id = option_ids if env_id is None else env_id
        if env_id is None and self.sync:
            return super().reset(seed=seed, options=env_options)
        ids = None if env_id is None else self._ids(env_id)
        self.async_reset(seed=seed, env_id=ids, options=env_options)
        obs, _, _, _, info = self._rows_of(self.num_envs if ids is None else ids)
        return obs, info

    def step(  # type: ignore[override]
        self, actions: Any, env_id: Any = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env (``env_id`` None, sync), or the envs of ``env_id``, rows in that order (sync; async:
        ``send`` then ``recv``, EnvPool's)."""
        if env_id is None and self.sync and self._waiting is None:  # the backend's step, and _result inlined: hot
            try:
                r = self._step_batch(actions)
            except RuntimeError as exc:
                self.step_refused(exc, None)
                raise
            info: Any = r.info  # EnvPool's, built by the pool (info_layout="envpool"): a dict of its own
            if self._atari:
                info["reward"] = info["reward"].astype(np.float32)
                self._lives[r.env_id] = info["lives"]  # type: ignore[index]  # (an Atari pool has it; _result's)
            return r.obs, r.reward, r.terminated, r.truncated, info
        if env_id is None or not self.sync:
            return super().step(actions, env_id)
        ids = self._ids(env_id)
        if self._waiting is not None:
            self._refuse_pending("step")
        try:
            self.backend.send(actions, ids)
        except RuntimeError as exc:
            self.step_refused(exc, ids)
            raise
        return self._rows_of(ids)

    def _ids(self, env_id: Any) -> np.ndarray:
        ids = check_env_ids(env_id, self.num_envs)
        if not len(ids):
            raise ValueError("env_id must name at least one env, got none")
        return ids

    def _rows_of(self, sent: np.ndarray | int) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The rows of the envs just sent (``sent``: their ids, or how many when all): a sync pool's in the order
        of the ids (it returns them in env order), an async pool's first batch of them (completion order)."""
        n = sent if isinstance(sent, int) else len(sent)
        if not self.sync:
            return self._result(self.backend.recv() if n >= self.batch_size else self._next_rows())
        result = self._result(self.backend.recv() if n == self.num_envs else self.backend.recv_rest())
        ids = sent
        if isinstance(ids, np.ndarray) and len(ids) > 1 and np.any(ids[1:] < ids[:-1]):
            rank = np.argsort(np.argsort(ids, kind="stable"), kind="stable")
            result = _pick(result, rank)
        return result

    def _next_rows(self) -> Any:
        """After an async pool's reset of fewer than ``batch_size`` envs: the next batch, as EnvPool's reset
        returns it (its ``recv()``: the first ``batch_size`` envs to finish, these or others in flight), or, when
        fewer than ``batch_size`` envs are in flight, all of them (EnvPool would wait forever). Only the pool
        knows how many are in flight: its ``recv()`` refuses (a RuntimeError, nothing taken) when they are too
        few, and the reset just sent leaves at least one, which ``recv_rest()`` takes."""
        try:
            return self.backend.recv()
        except EnvError:  # an env's own exception (a RuntimeError too): the caller's to see
            raise
        except RuntimeError:
            self.check_open()
            return self.backend.recv_rest()

    def _info(self, r: Any) -> dict[str, Any]:
        return self._result(r)[4]

    def _result(self, r: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        info: Any = r.info  # EnvPool's, built by the pool (info_layout="envpool"): a dict of its own
        if self._atari:
            info["reward"] = info["reward"].astype(np.float32)
            self._lives[r.env_id] = info["lives"]  # type: ignore[index]  # (VectorEnv's record: the ale stand-in)
        return r.obs, r.reward, r.terminated, r.truncated, info

    def render(self, env_ids: Any = None, camera_id: int | None = None) -> np.ndarray:  # type: ignore[override]
        """EnvPool's render: the current frames of ``env_ids`` (default env 0), ``(n, H, W, 3)`` uint8, made with
        ``render_mode="rgb_array"``; the envs must not be in flight."""
        if self.render_mode is None:
            self.check_open()
            raise RuntimeError(
                "render_mode must be set to 'rgb_array' when creating this env: envpool.make(..., "
                "render_mode='rgb_array')"
            )
        if camera_id not in (None, -1, 0):
            raise ValueError(f"camera_id: fastvec's envs have one view (0), got {camera_id!r}")
        ids = np.zeros(1, np.int32) if env_ids is None else self._ids(env_ids)
        self.check_open()
        return self._native_pool().frames(ids)

    def seed(self, seed: int | Sequence[int] | None = None) -> None:
        """Seeds each env's next reset: gym's ``env.seed(s)`` (env ``i`` with ``s + i``)."""
        if seed is not None:
            ids = range(self.num_envs)
            self._pending_seeds = list(self._seeds(seed, ids)) or None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec!r})"

    def xla(self) -> Any:
        """EnvPool's ``xla()``: ``(handle, recv, send, step)`` as XLA custom calls for jitted JAX code, where
        ``step(handle, actions, env_id=None)`` returns ``(handle, (obs, reward, terminated, truncated, info))``
        with EnvPool's info keys (:meth:`fastvec.VectorEnv.xla` says the rest)."""
        from fastvec import _xla

        return _xla.make(
            self._xla_pool(), self.label, self._xla_result, {"reward": np.float32} if self._atari else None
        )

    @staticmethod
    def _xla_result(obs: Any, reward: Any, terminated: Any, truncated: Any, info: dict[str, Any]) -> tuple:
        """A jitted batch as EnvPool's xla() gives it (its info: env_id, players, the env's values)."""
        env_id = info.pop("env_id")
        return obs, reward, terminated, truncated, {"env_id": env_id, "players": {"env_id": env_id}, **info}


def _pick(result: tuple, rows: np.ndarray) -> tuple:
    obs, rew, term, trunc, info = result

    def take(v: Any) -> Any:
        return {k: take(x) for k, x in v.items()} if isinstance(v, dict) else v[rows]

    return take(obs) if isinstance(obs, dict) else obs[rows], rew[rows], term[rows], trunc[rows], take(info)


class LegacyGymEnvPool(GymnasiumEnvPool):
    """EnvPool 0.6-0.8's gym API, which CleanRL's EnvPool scripts were written for: ``reset()`` -> obs (with
    ``gym_reset_return_info=True``: ``(obs, info)``), ``step()`` and ``recv()`` -> ``(obs, reward, done, info)``
    with ``done = terminated | truncated`` and ``info["TimeLimit.truncated"]`` (truncated, not terminated).
    Made by :mod:`fastvec.envpool.legacy`'s ``make(..., env_type="gym")``.

    With the ``gym`` package importable, ``observation_space`` and ``action_space`` are ``gym``'s spaces, as
    EnvPool 0.6-0.8 (built on ``gym``) gave them: CleanRL's scripts check ``isinstance(envs.action_space,
    gym.spaces.Discrete)``. ``single_observation_space``/``single_action_space`` stay gymnasium's (fastvec's
    VectorEnv's; EnvPool 0.6-0.8 had none, and CleanRL's scripts set them to the ``gym`` ones)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        legacy = _gym_module()
        if legacy is not None:
            self.observation_space = _as_gym_space(legacy, self.single_observation_space)
            self.action_space = _as_gym_space(legacy, self.single_action_space)

    def reset(  # type: ignore[override]
        self, env_id: Any = None, *, seed: Any = None, options: dict[str, Any] | None = None
    ) -> Any:
        obs, info = super().reset(env_id, seed=seed, options=options)
        return (obs, info) if self._spec.config.gym_reset_return_info else obs

    def step(self, actions: Any, env_id: Any = None) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:  # type: ignore[override]
        return _legacy(super().step(actions, env_id))

    def recv(self, timeout: float | None = None) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:  # type: ignore[override]
        return _legacy(super().recv(timeout))

    def xla(self) -> Any:
        """EnvPool 0.6-0.8's ``xla()``, which CleanRL's ``ppo_atari_envpool_xla_jax*.py`` use: ``step(handle,
        actions)`` returns ``(handle, (obs, reward, done, info))``, with ``info["TimeLimit.truncated"]``."""
        from fastvec import _xla

        envpool_result = self._xla_result  # (the calls hold no reference to the env: del env still closes it)

        def result(obs: Any, reward: Any, terminated: Any, truncated: Any, info: dict[str, Any]) -> tuple:
            obs, reward, terminated, truncated, info = envpool_result(obs, reward, terminated, truncated, info)
            info["TimeLimit.truncated"] = truncated & ~terminated
            return obs, reward, terminated | truncated, info

        return _xla.make(self._xla_pool(), self.label, result, {"reward": np.float32} if self._atari else None)


def _gym_module() -> Any:
    """The ``gym`` package if it is installed and imports (gym 0.26 does beside numpy 2), else None."""
    if importlib.util.find_spec("gym") is None:
        return None
    try:
        import gym  # type: ignore[import-not-found]
    except Exception:  # an old gym that cannot import here: gymnasium's spaces, as without gym
        return None
    return gym


def _as_gym_space(legacy: Any, space: gym.Space) -> Any:
    """``space`` (gymnasium's) as the ``legacy`` gym package's space of the same kind, bounds and dtype."""
    spaces = legacy.spaces
    if isinstance(space, gym.spaces.Discrete):
        return spaces.Discrete(int(space.n), start=int(space.start))
    if isinstance(space, gym.spaces.Box):
        return spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return spaces.MultiDiscrete(space.nvec, dtype=space.dtype)
    if isinstance(space, gym.spaces.MultiBinary):
        return spaces.MultiBinary(space.n)
    if isinstance(space, gym.spaces.Dict):
        return spaces.Dict({k: _as_gym_space(legacy, s) for k, s in space.spaces.items()})
    if isinstance(space, gym.spaces.Tuple):
        return spaces.Tuple(tuple(_as_gym_space(legacy, s) for s in space.spaces))
    raise TypeError(f"no gym space for {space}")


def _legacy(result: tuple) -> tuple:
    obs, rew, term, trunc, info = result
    info["TimeLimit.truncated"] = trunc & ~term
    return obs, rew, term | trunc, info
