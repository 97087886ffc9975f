"""Stable-Baselines3: a ``VecEnv`` over a fastvec pool.

>>> from stable_baselines3 import PPO
>>> env = fastvec.sb3_vec("CartPole-v1", num_envs=8, seed=0)   # was make_vec_env("CartPole-v1", 8)
>>> PPO("MlpPolicy", env).learn(10_000)

Protocol translation only: the pool autoresets (``autoreset_mode="same_step"``)
and counts episodes; this class turns its arrays into SB3's ``dones`` and
list of info dicts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices
    from stable_baselines3.common.vec_env.util import check_for_nested_spaces
except ImportError as e:  # pragma: no cover - exercised only without SB3
    raise ImportError("fastvec.sb3_vec needs Stable-Baselines3: pip install stable-baselines3") from e

from fastvec._args import autoreset_mode_name
from fastvec.vector import VectorEnv, info_rows, make

# Attributes every env of a pool shares, answered by get_attr without a Python env object.
_SHARED_ATTRS = ("render_mode", "observation_space", "action_space", "spec", "metadata", "reward_range")


class SB3VecEnv(VecEnv):
    """A ``stable_baselines3`` ``VecEnv`` over a :class:`fastvec.VectorEnv` made with
    ``autoreset_mode="same_step"``; made by :func:`fastvec.sb3_vec`.

    Finished envs carry ``terminal_observation`` and ``TimeLimit.truncated`` in
    their info dict and, with ``monitor=True``, Monitor's ``episode`` dict
    (``r``, ``l``, ``t``), so the env behaves like ``make_vec_env``'s
    Monitor-wrapped envs and ``env_is_wrapped(Monitor)`` says so.
    """

    def __init__(self, env: VectorEnv, monitor: bool = True) -> None:
        if env.autoreset_mode != gym.vector.AutoresetMode.SAME_STEP:
            raise ValueError(f"SB3 needs autoreset_mode='same_step', got {env.autoreset_mode}")
        if env.batch_size != env.num_envs:
            raise ValueError(
                f"SB3 steps every env each call: batch_size must equal num_envs ({env.num_envs}), got {env.batch_size}"
            )
        if monitor and not env.episode_stats:
            raise ValueError("monitor=True makes Monitor's episode dicts from a pool made with episode_stats=True")
        check_for_nested_spaces(env.single_observation_space)  # NotImplementedError, as SB3's own VecEnvs
        self.env = env
        self.monitor = monitor
        self._t_start = time.time()
        self._actions: Any = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    # -- stepping ---------------------------------------------------------

    def reset(self) -> np.ndarray:
        """Resets every env with the seeds and options staged by :meth:`seed` / :meth:`set_options`."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options
        self._reset_seeds()
        self._reset_options()
        if any(options):
            raise ValueError(f"{self.env.label} takes no reset options, got {options[0]!r}")
        self._actions = None
        obs, info = self.env.reset(seed=seeds)
        self.reset_infos = info_rows(info, self.num_envs)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        obs, reward, terminated, truncated, info = self.env.step(actions)
        dones = terminated | truncated
        # Each env's info of this step, as SubprocVecEnv returns it: for an env whose episode ended, the
        # info of its last step (info["final_info"]); the new episode's reset info goes to reset_infos.
        infos = info_rows(info, self.num_envs)
        if "final_obs" in info:
            final_obs = info["final_obs"]
            finals = info_rows(info["final_info"], self.num_envs)
            ep_return, ep_length = info["episode_return"], info["episode_length"]
            t = round(time.time() - self._t_start, 6)
            for i in np.flatnonzero(info["_final_obs"]).tolist():
                self.reset_infos[i], infos[i] = infos[i], finals[i]
                d = infos[i]
                d["terminal_observation"] = final_obs[i]
                if self.monitor:
                    d["episode"] = {"r": float(ep_return[i]), "l": int(ep_length[i]), "t": t}
        for d, flag in zip(infos, (truncated & ~terminated).tolist(), strict=True):
            d["TimeLimit.truncated"] = flag  # on every step, as SB3's VecEnvs set it
        return obs, reward, dones, infos

    def close(self) -> None:
        self.env.close()

    # -- attributes -------------------------------------------------------

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attributes the envs share (``render_mode``, the single-env spaces, ``spec``, ...)."""
        idx = self._indices(indices)
        if attr_name not in _SHARED_ATTRS:
            raise AttributeError(f"{self.env.label} has no Python env object; get_attr answers only {_SHARED_ATTRS}")
        value = {
            "render_mode": None,
            "observation_space": self.env.single_observation_space,
            "action_space": self.env.single_action_space,
            "spec": None,
            "metadata": {"render_modes": []},
            "reward_range": (-float("inf"), float("inf")),
        }[attr_name]
        return [value for _ in idx]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(
            f"{self.env.label} has no Python env object: cannot set {attr_name!r}; "
            "env options are keyword arguments of fastvec.sb3_vec"
        )

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        raise AttributeError(f"{self.env.label} has no Python env object: cannot call {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """True only for ``Monitor`` with ``monitor=True``: the pool adds Monitor's ``episode`` info itself."""
        wrapped = self.monitor and issubclass(Monitor, wrapper_class)
        return [wrapped for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        raise NotImplementedError(f"{self.env.label} does not render")

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        idx = list(self._get_indices(indices))
        for i in idx:
            if not -self.num_envs <= i < self.num_envs:
                raise IndexError(f"env index {i} out of range for {self.num_envs} envs")
        return idx


def sb3_vec(env_id: Any, num_envs: int | None = None, *, monitor: bool = True, **kwargs: Any) -> SB3VecEnv:
    """An SB3 ``VecEnv`` of ``num_envs`` copies of ``env_id``; takes :func:`fastvec.make`'s arguments.

    >>> env = fastvec.sb3_vec("CartPole-v1", 8, seed=0)
    >>> env.reset().shape
    (8, 4)
    """
    mode = kwargs.pop("autoreset_mode", "same_step")
    if autoreset_mode_name(mode) != "same_step":
        raise ValueError(
            f"SB3 VecEnvs reset finished envs in the same step: autoreset_mode must be 'same_step', got {mode!r}"
        )
    args = (env_id,) if num_envs is None else (env_id, num_envs)
    kwargs["episode_stats"] = True  # Monitor's "episode" dicts are made from them
    return SB3VecEnv(make(*args, autoreset_mode="same_step", **kwargs), monitor=monitor)
