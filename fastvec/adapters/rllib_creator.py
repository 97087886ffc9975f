"""The env creator :func:`fastvec.rllib_env` registers, in a module of its own: RLlib pickles the creator to
every EnvRunner, and an actor that unpickles it imports this module, not :mod:`fastvec.adapters.rllib` (which
imports RLlib and torch at import: about 4 s of CPU in each actor that only builds envs).

Imports ``ray`` (for the resources of the actor it runs in), gymnasium and fastvec's façade; nothing of RLlib.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import ray
from gymnasium.vector.utils import batch_space

from fastvec.vector import make

__all__ = ["Creator", "NormalizedImages", "assigned_cpus"]


class Creator:
    """The env creator RLlib calls with ``env_config | {"num_envs": n}`` (picklable, for remote runners)."""

    def __init__(self, env: str | Callable[[], gym.Env], kwargs: dict[str, Any], normalize_images: bool | None) -> None:
        self.env = env
        self.kwargs = kwargs
        self.normalize_images = normalize_images

    def __call__(self, env_config: dict[str, Any]) -> gym.vector.VectorEnv:
        config = dict(env_config or {})
        if "num_envs" not in config:
            raise ValueError(
                f"fastvec's RLlib env {self.env!r} is a vector env: RLlib must build it with "
                "env_runners(gym_env_vectorize_mode='vector_entry_point'), which passes num_envs "
                "(fastvec.adapters.rllib.configure sets this up)"
            )
        num_envs = config.pop("num_envs")
        kwargs = {**self.kwargs, **config}
        if "num_threads" not in kwargs and (cpus := assigned_cpus()) is not None:
            kwargs["num_threads"] = cpus
        env = make(self.env, num_envs, **kwargs)
        space = env.single_observation_space
        images = isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3
        if images and self.normalize_images is not False:
            return NormalizedImages(env)
        return env


def assigned_cpus() -> int | None:
    """The CPUs Ray gave the actor this runs in (an EnvRunner's ``num_cpus_per_env_runner``); None
    outside a Ray actor (the local EnvRunner, in the driver: the pool's own default applies)."""
    if not ray.is_initialized():
        return None
    context = ray.get_runtime_context()
    if context.get_actor_id() is None:
        return None
    cpus = context.get_assigned_resources().get("CPU")
    return max(1, int(cpus)) if cpus else None


class NormalizedImages(gym.vector.VectorObservationWrapper):
    """uint8 frames as float32 ``x / 128 - 1`` in [-1, 1), as RLlib's Atari wrappers
    (``NormalizedImageEnv``) give them to its CNN encoders. ``env.unwrapped`` is the pool."""

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        shape = env.single_observation_space.shape
        self.single_observation_space = gym.spaces.Box(-1.0, 1.0, shape, np.float32)
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)

    # (gymnasium types this method with an ObsType its VectorObservationWrapper does not bind.)
    def observations(self, observations: np.ndarray) -> np.ndarray:  # type: ignore[override]
        out = observations.astype(np.float32)
        out *= 1 / 128  # a power of two: the same as dividing
        out -= 1.0
        return out
