"""The env creator :func:`fastvec.rllib_env` registers, in a module of its own: RLlib pickles the creator to
every EnvRunner, and an actor that unpickles it imports this module, not :mod:`fastvec.adapters.rllib` (which
imports RLlib and torch at import: about 4 s of CPU in each actor that only builds envs).

Imports ``ray`` (for the resources of the actor it runs in), gymnasium and fastvec's façade; nothing of RLlib.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import ray
from gymnasium.vector.utils import batch_space

from fastvec.native import is_native
from fastvec.vector import make

__all__ = [
    "POOL_KEYWORDS",
    "Creator",
    "MultiAgentCreator",
    "NormalizedImages",
    "assigned_cpus",
    "single_multiagent_env",
]


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


class MultiAgentCreator:
    """The creator of a multi-agent env RLlib calls (picklable, for remote runners). With ``num_envs`` in the
    env config (``FastvecMultiAgentEnvRunner`` passes it) it makes a :class:`fastvec.MultiAgentVectorEnv` of that
    many envs; without (RLlib's own ``MultiAgentEnvRunner``, which vectorizes itself) one RLlib ``MultiAgentEnv``:
    a PettingZoo ParallelEnv or AEC env wrapped in RLlib's ``ParallelPettingZooEnv`` (imported only then)."""

    def __init__(self, env: str | Callable[[], Any], kwargs: dict[str, Any]) -> None:
        self.env = env
        self.kwargs = kwargs

    def __call__(self, env_config: dict[str, Any]) -> Any:
        config = dict(env_config or {})
        num_envs = config.pop("num_envs", None)
        kwargs = {**self.kwargs, **config}
        if num_envs is not None:
            from fastvec.multiagent.routing import make as make_multiagent

            if "num_threads" not in kwargs and (cpus := assigned_cpus()) is not None:
                kwargs["num_threads"] = cpus
            env: Any = self.env
            pool_keys = (*POOL_KEYWORDS, "max_episode_steps")
            env_kwargs = {k: v for k, v in kwargs.items() if k not in pool_keys}
            backend = kwargs.get("backend", "auto")
            if isinstance(env, str) and (backend == "python" or (backend == "auto" and not _native(env))):
                # mpe2's env in the Python-env pool (asked for, or an id without a native port), its constructor made
                # here with the env's keywords (fastvec.make would pass it the pool's too: num_workers, start_method).
                from fastvec.multiagent.ids import python_constructor

                env = python_constructor(env.removeprefix("fastvec/"), env_kwargs) or env
                kwargs = {k: v for k, v in kwargs.items() if k in pool_keys and k != "backend"}
            elif callable(env):  # fastvec.make calls a constructor without arguments: the env's are bound here
                kwargs = {k: v for k, v in kwargs.items() if k in pool_keys}
                env = functools.partial(env, **env_kwargs) if env_kwargs else env
            return make_multiagent(env, num_envs, **kwargs)
        return single_multiagent_env(self.env, kwargs)


def _native(env_id: str) -> bool:
    """Whether ``env_id`` has a native port (a multi-agent id without one is no gymnasium id either)."""
    try:
        return is_native(env_id.removeprefix("fastvec/"))
    except ValueError:
        return False


# fastvec.make's keywords that are the pool's, not the env's (left out when RLlib makes one env itself).
POOL_KEYWORDS = (
    "num_threads",
    "num_workers",
    "seed",
    "batch_size",
    "block_size",
    "autoreset_mode",
    "episode_stats",
    "backend",
    "normalize_images",
    "start_method",
    "observation_mode",
)


def single_multiagent_env(env: str | Callable[[], Any], kwargs: dict[str, Any]) -> Any:
    """One multi-agent env of ``env`` as RLlib's ``MultiAgentEnvRunner`` steps it: an RLlib ``MultiAgentEnv`` as it
    is, a PettingZoo env (a multi-agent id: mpe2's) in RLlib's ``ParallelPettingZooEnv``. ``max_episode_steps``
    (the pool's time limit) has no equivalent there and is refused."""
    from fastvec.multiagent.as_one_env import PARALLEL, RLLIB, multiagent_kind
    from fastvec.multiagent.ids import python_constructor

    env_kwargs = {k: v for k, v in kwargs.items() if k not in POOL_KEYWORDS}
    if env_kwargs.pop("max_episode_steps", None) is not None:
        raise ValueError(
            "max_episode_steps is the fastvec pool's time limit: RLlib's own MultiAgentEnvRunner does not apply it "
            "(use the env's own limit, e.g. max_cycles for MPE)"
        )
    if isinstance(env, str):
        constructor = python_constructor(env.removeprefix("fastvec/"), env_kwargs)
        if constructor is None:
            raise ValueError(f"env {env!r} is no multi-agent id")
        made = constructor()
    else:
        made = env(**env_kwargs)
    kind = multiagent_kind(made)
    if kind == RLLIB:
        return made
    if kind == "aec":
        from pettingzoo.utils.conversions import aec_to_parallel

        made, kind = aec_to_parallel(made), PARALLEL
    if kind == PARALLEL:
        from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

        return ParallelPettingZooEnv(made)
    raise TypeError(f"env {env!r} made a {type(made).__name__}, not a multi-agent env")
