"""RLlib (new API stack): each EnvRunner builds its own fastvec pool.

>>> from ray.rllib.algorithms.ppo import PPOConfig
>>> from fastvec.adapters.rllib import configure
>>> config = configure(PPOConfig(), "CartPole-v1", num_envs=64)   # was .environment("CartPole-v1")
>>> algo = config.build_algo()

``configure`` also sets ``env_runners(env_runner_cls=FastvecEnvRunner)``: a ``SingleAgentEnvRunner``
that steps the pool in batches and builds RLlib's episode chunks in bulk, from numpy columns (see
:mod:`fastvec.adapters._rllib_runner`; by hand: ``config.env_runners(env_runner_cls=FastvecEnvRunner)``).

RLlib's ``SingleAgentEnvRunner`` calls ``gym.make_vec(name, num_envs,
vectorization_mode=config.gym_env_vectorize_mode)``; with
``"vector_entry_point"`` that calls the creator registered here with
``env_config | {"num_envs": num_envs_per_env_runner}`` and uses the
returned :class:`fastvec.VectorEnv` as it is: next-step autoreset, every env
stepped each call, info a dict of arrays. ``FastvecEnvRunner`` seeds env ``i``
of runner ``w`` with ``config.seed + w * num_envs + i``, so no two envs of any
runners share a stream. Runners are Ray actors and may sit on any node of a
Ray cluster, each stepping its pool with the CPUs Ray gave it (a pool made
without ``num_threads`` takes that many threads).

Images: RLlib's CNN encoders take float32 frames, channels last. Atari pools
are made with ``channels_last=True``, and uint8 frames reach RLlib as RLlib's
own Atari wrappers give them, ``x / 128 - 1`` in float32
(``normalize_images=False`` hands over the uint8 frames).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from fastvec.registry import lookup
from fastvec.vector import _is_native, make

try:
    import ray
    from ray.tune.registry import register_env

    from fastvec.adapters._rllib_runner import FastvecEnvRunner
except ImportError as e:  # pragma: no cover - exercised only without Ray
    raise ImportError('fastvec.rllib_env needs RLlib: pip install "ray[rllib]"') from e

__all__ = ["FastvecEnvRunner", "NormalizedImages", "configure", "rllib_env"]

_RESERVED = ("num_envs", "autoreset_mode", "batch_size")


class _Creator:
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
        if "num_threads" not in kwargs and (cpus := _assigned_cpus()) is not None:
            kwargs["num_threads"] = cpus
        env = make(self.env, num_envs, **kwargs)
        space = env.single_observation_space
        images = isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3
        if images and self.normalize_images is not False:
            return NormalizedImages(env)
        return env


def _assigned_cpus() -> int | None:
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

    def observations(self, observations: np.ndarray) -> np.ndarray:
        out = observations.astype(np.float32)
        out *= 1 / 128  # a power of two: the same as dividing
        out -= 1.0
        return out


def rllib_env(env_id: str | Callable[[], gym.Env], *, normalize_images: bool | None = None, **kwargs: Any) -> str:
    """Registers a creator of fastvec pools of ``env_id`` with Ray Tune; returns its name.

    ``env_id`` is what :func:`fastvec.make` takes: a native or Atari id, a gymnasium id
    without a native port, or a callable returning a gymnasium env (both run in the
    Python-env pool). ``kwargs`` are :func:`fastvec.make`'s (``num_threads``,
    ``max_episode_steps``, env options); ``num_envs`` comes from ``num_envs_per_env_runner``.
    uint8 image observations are normalized for RLlib's CNNs unless ``normalize_images=False``.

    >>> config.environment(env=fastvec.rllib_env("CartPole-v1")).env_runners(
    ...     num_envs_per_env_runner=64, gym_env_vectorize_mode="vector_entry_point")
    """
    if isinstance(env_id, str):
        label = env_id.removeprefix("fastvec/")
        if _is_native(label) and kwargs.get("backend", "auto") != "python":
            entry = lookup(label)
            label = entry.id
            if entry.rom:
                kwargs.setdefault("channels_last", True)
    elif callable(env_id):
        label = getattr(env_id, "__qualname__", type(env_id).__name__).replace("<", "").replace(">", "")
    else:
        raise TypeError(
            f"rllib_env takes an env id (str) or a callable returning a gymnasium env, got "
            f"{type(env_id).__name__} (RLlib chooses num_envs: a list of constructors does not apply)"
        )
    for key in _RESERVED:
        if key in kwargs:
            raise ValueError(
                f"rllib_env: {key!r} is RLlib's to choose (num_envs_per_env_runner; next-step autoreset; "
                "every env stepped each call)"
            )
    if normalize_images is not None and not isinstance(normalize_images, bool):
        raise TypeError(f"normalize_images must be a bool or None, got {normalize_images!r}")
    env = label if isinstance(env_id, str) else env_id
    if isinstance(env_id, str) and _is_native(label) and kwargs.get("backend", "auto") != "python":
        # Bad env kwargs fail here, with fastvec.make's words, not as an IndexError of RLlib's
        # once a remote runner has failed to build its env (the TypeError only in the worker's log).
        make(label, 1, **kwargs).close()
    name = f"fastvec-{label}".replace(":", "-")  # gymnasium reads 'module:id' as an import
    extra = {**kwargs, "normalize_images": normalize_images} if normalize_images is not None else kwargs
    if extra or not isinstance(env_id, str):
        key = repr(("" if isinstance(env_id, str) else env_id, sorted(extra.items(), key=lambda kv: kv[0])))
        name += "-" + hashlib.sha1(key.encode()).hexdigest()[:8]
    register_env(name, _Creator(env, dict(kwargs), normalize_images))
    return name


def configure(
    config: Any,
    env_id: str,
    num_envs: int,
    num_threads: int | None = None,
    *,
    env_runner_cls: type | None = FastvecEnvRunner,
    **kwargs: Any,
) -> Any:
    """Sets ``config`` up to run ``num_envs`` copies of ``env_id`` in a fastvec pool per EnvRunner.

    Calls ``environment(env=...)`` and ``env_runners(num_envs_per_env_runner=num_envs,
    gym_env_vectorize_mode="vector_entry_point", num_cpus_per_env_runner=...,
    env_runner_cls=FastvecEnvRunner)``. The pool's threads are the runner's CPUs: ``num_threads`` if
    given (and Ray reserves that many CPUs per runner), else ``config.num_cpus_per_env_runner``; more
    than the largest node has is refused (Ray could never place the runner). ``env_runner_cls=None``
    keeps RLlib's ``SingleAgentEnvRunner``. Returns ``config``.

    >>> config = configure(PPOConfig(), "CartPole-v1", num_envs=64, num_threads=2)
    """
    cpus = num_threads if num_threads is not None else config.num_cpus_per_env_runner
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or cpus < 1:
        raise ValueError(f"num_threads must be a positive int, got {cpus!r}")
    cpus = int(cpus)
    largest = _largest_node_cpus()
    if cpus > largest:
        where = "node of the Ray cluster" if ray.is_initialized() else "CPU count of this machine (what ray.init gives)"
        raise ValueError(
            f"num_threads={cpus}: an EnvRunner reserves a CPU per pool thread, and the largest {where} is "
            f"{largest}; RLlib would wait for ever to place the runner. Use num_threads <= {largest}."
        )
    name = rllib_env(env_id, num_threads=cpus, **kwargs)
    config.environment(env=name)
    config.env_runners(
        num_envs_per_env_runner=num_envs,
        gym_env_vectorize_mode="vector_entry_point",
        num_cpus_per_env_runner=cpus,
    )
    if env_runner_cls is not None:
        config.env_runners(env_runner_cls=env_runner_cls)
    return config


def _largest_node_cpus() -> int:
    """The most CPUs one node offers: of the Ray cluster if Ray is up, else of this machine."""
    if ray.is_initialized():
        return int(max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0))
    return os.cpu_count() or 1
