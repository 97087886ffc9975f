"""EnvPool's dm_env env (``env_type="dm"``) over a :class:`fastvec.envpool.gymnasium_env.GymnasiumEnvPool`."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastvec.envpool.gymnasium_env import EnvPoolFace, GymnasiumEnvPool
from fastvec.envpool.spec import EnvPoolSpec, Players, state_fields, state_type


class DMEnvPool(EnvPoolFace):
    """EnvPool's dm_env env (``env_type="dm"``): ``reset()``, ``step(actions, env_id=None)`` and ``recv()``
    return a batched ``dm_env.TimeStep``: ``step_type`` (int32: 0 first, 1 mid, 2 last), ``reward``
    (float32), ``discount`` (float32: 0 where the episode terminated, and on a lost life with
    ``zero_discount_on_life_loss``; 1 where it was truncated, as dm_env defines it) and ``observation``,
    a namedtuple ``State`` of ``env_id``, ``players``, ``obs`` and the env's info values (for dm_control's tasks,
    as EnvPool's: ``env_id``, ``players`` and each named observation, in the task's order)."""

    _pool_env: GymnasiumEnvPool

    def __init__(self, pool: GymnasiumEnvPool) -> None:
        import dm_env

        self._pool_env = pool
        self._spec = pool._spec
        self._time_step = dm_env.TimeStep
        self._state: Any = state_type(state_fields(self._spec))
        self._zero_on_life_loss = bool(getattr(self._spec.config, "zero_discount_on_life_loss", False))
        self._lives = np.zeros(pool.num_envs, dtype=np.int32)  # each env's lives at its last row
        self.num_envs = pool.num_envs
        self.batch_size = pool.batch_size
        self.observation_space = pool.observation_space
        self.action_space = pool.action_space

    @property
    def spec(self) -> EnvPoolSpec:
        return self._spec

    def observation_spec(self) -> Any:
        return self._spec.observation_spec()

    def action_spec(self) -> Any:
        return self._spec.action_spec()

    def reward_spec(self) -> Any:
        """dm_env's default reward spec, as EnvPool's dm env (a ``dm_env.Environment``) answers."""
        import dm_env

        return dm_env.Environment.reward_spec(self)  # type: ignore[arg-type]

    def discount_spec(self) -> Any:
        """dm_env's default discount spec, as EnvPool's dm env answers."""
        import dm_env

        return dm_env.Environment.discount_spec(self)  # type: ignore[arg-type]

    def seed(self, seed: Any = None) -> None:
        """Seeds each env's next reset, as the gymnasium env's :meth:`GymnasiumEnvPool.seed` (EnvPool ignores it)."""
        self._pool_env.seed(seed)

    def reset(self, env_id: Any = None) -> Any:
        """Resets every env (or those of ``env_id``) and returns their first TimeStep (async: the first
        ``batch_size`` envs')."""
        obs, info = self._pool_env.reset(env_id)
        return self._timestep(obs, np.zeros(len(info["env_id"]), np.float32), None, None, info)

    def render(self, env_ids: Any = None, camera_id: int | None = None) -> np.ndarray:
        """EnvPool's render (made with ``render_mode="rgb_array"``): :meth:`GymnasiumEnvPool.render`'s frames."""
        return self._pool_env.render(env_ids, camera_id)

    def step(self, actions: Any, env_id: Any = None) -> Any:
        return self._timestep(*self._pool_env.step(actions, env_id))

    def async_reset(self) -> None:
        self._pool_env.async_reset()

    def send(self, actions: Any, env_id: Any = None) -> None:
        self._pool_env.send(actions, env_id)

    def recv(self, timeout: float | None = None) -> Any:
        return self._timestep(*self._pool_env.recv(timeout))

    def close(self) -> None:
        self._pool_env.close()

    def __enter__(self) -> DMEnvPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def xla(self) -> Any:
        """EnvPool's dm ``xla()``: ``(handle, recv, send, step)`` as XLA custom calls for jitted JAX code, whose
        batches are ``TimeStep``s as :meth:`step` returns them (:meth:`fastvec.VectorEnv.xla` says the rest).
        Not with ``zero_discount_on_life_loss``, which needs each env's lives at its previous row."""
        from fastvec import _xla

        pool = self._pool_env
        if self._zero_on_life_loss:
            pool.check_open()
            raise ValueError(
                "xla() of a dm env with zero_discount_on_life_loss=True is not supported: the discount of a lost "
                "life needs each env's previous lives, which jitted calls do not keep; compare info lives yourself"
            )

        # (the calls hold no reference to the env: del env still closes it)
        envpool_result, state_type, time_step = pool._xla_result, self._state, self._time_step

        def result(obs: Any, reward: Any, terminated: Any, truncated: Any, info: dict[str, Any]) -> Any:
            import jax.numpy as jnp

            info = envpool_result(obs, reward, terminated, truncated, info)[4]
            step_type = jnp.where(info["elapsed_step"] == 0, 0, 1)
            step_type = jnp.where(terminated | truncated, 2, step_type).astype(jnp.int32)
            discount = jnp.where(terminated, 0.0, 1.0).astype(jnp.float32)
            values = {k: info[k] for k in state_type._fields if k not in ("obs", "players")}
            state = state_type(obs=obs, players=Players(info["env_id"]), **values)
            return time_step(
                step_type=step_type, reward=reward.astype(jnp.float32), discount=discount, observation=state
            )

        return _xla.make(pool._xla_pool(), pool.label, result, {"reward": np.float32} if pool._atari else None)

    def _timestep(
        self, obs: Any, reward: np.ndarray, terminated: np.ndarray | None, truncated: np.ndarray | None, info: dict
    ) -> Any:
        first = info["elapsed_step"] == 0  # a reset row (after an autoreset, too)
        step_type = np.where(first, 0, 1).astype(np.int32)
        discount = np.ones(len(step_type), dtype=np.float32)
        if terminated is not None and truncated is not None:
            step_type[terminated | truncated] = 2
            discount[terminated] = 0.0
        ids = info["env_id"]
        if "lives" in info:
            if self._zero_on_life_loss:
                lost = ~first & (info["lives"] < self._lives[ids])
                discount[lost] = 0.0
            self._lives[ids] = info["lives"]
        # dm_control's observations: a field of the State per name, as EnvPool's; else the one "obs" field
        named = obs if isinstance(obs, dict) else {"obs": obs}
        values = {k: info[k] for k in self._state._fields if k not in named and k != "players"}
        state = self._state(players=Players(ids), **named, **values)
        reward = reward.astype(np.float32)
        return self._time_step(step_type=step_type, reward=reward, discount=discount, observation=state)
