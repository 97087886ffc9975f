"""RLlib (new API stack): each EnvRunner builds its own fastvec pool.

>>> from ray.rllib.algorithms.ppo import PPOConfig
>>> from fastvec.adapters.rllib import configure
>>> config = configure(PPOConfig(), "CartPole-v1", num_envs=64)   # was .environment("CartPole-v1")
>>> algo = config.build_algo()

RLlib's ``SingleAgentEnvRunner`` calls ``gym.make_vec(name, num_envs,
vectorization_mode=config.gym_env_vectorize_mode)``; with
``"vector_entry_point"`` that calls the creator registered here with
``env_config | {"num_envs": num_envs_per_env_runner}`` and uses the
returned :class:`fastvec.VectorEnv` as it is: next-step autoreset, every env
stepped each call, info a dict of arrays. RLlib resets with
``seed=config.seed + worker_index``; an int seed gives every env of every
runner its own stream. Runners are Ray actors and may sit on any node of a
Ray cluster, each stepping its pool with the CPUs Ray gave it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from fastvec.registry import lookup
from fastvec.vector import VectorEnv, make

try:
    from ray.tune.registry import register_env
except ImportError as e:  # pragma: no cover - exercised only without Ray
    raise ImportError('fastvec.rllib_env needs RLlib: pip install "ray[rllib]"') from e

_RESERVED = ("num_envs", "autoreset_mode", "batch_size")


class _Creator:
    """The env creator RLlib calls with ``env_config | {"num_envs": n}`` (picklable, for remote runners)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id = env_id
        self.kwargs = kwargs

    def __call__(self, env_config: dict[str, Any]) -> VectorEnv:
        config = dict(env_config or {})
        if "num_envs" not in config:
            raise ValueError(
                f"fastvec's RLlib env {self.env_id!r} is a vector env: RLlib must build it with "
                "env_runners(gym_env_vectorize_mode='vector_entry_point'), which passes num_envs "
                "(fastvec.adapters.rllib.configure sets this up)"
            )
        num_envs = config.pop("num_envs")
        return make(self.env_id, num_envs, **{**self.kwargs, **config})


def rllib_env(env_id: str, **kwargs: Any) -> str:
    """Registers a creator of fastvec pools of ``env_id`` with Ray Tune; returns its name.

    ``kwargs`` are :func:`fastvec.make`'s (``num_threads``, ``max_episode_steps``, env
    options); ``num_envs`` comes from ``num_envs_per_env_runner``.

    >>> config.environment(env=fastvec.rllib_env("CartPole-v1")).env_runners(
    ...     num_envs_per_env_runner=64, gym_env_vectorize_mode="vector_entry_point")
    """
    entry = lookup(env_id) if isinstance(env_id, str) else None
    if entry is None:
        raise TypeError(f"rllib_env takes an env id (str), got {type(env_id).__name__}")
    for key in _RESERVED:
        if key in kwargs:
            raise ValueError(
                f"rllib_env: {key!r} is RLlib's to choose (num_envs_per_env_runner; next-step autoreset; "
                "every env stepped each call)"
            )
    name = f"fastvec-{entry.id}"
    if kwargs:
        name += "-" + hashlib.sha1(repr(sorted(kwargs.items())).encode()).hexdigest()[:8]
    register_env(name, _Creator(entry.id, dict(kwargs)))
    return name


def configure(config: Any, env_id: str, num_envs: int, num_threads: int | None = None, **kwargs: Any) -> Any:
    """Sets ``config`` up to run ``num_envs`` copies of ``env_id`` in a fastvec pool per EnvRunner.

    Calls ``environment(env=...)`` and ``env_runners(num_envs_per_env_runner=num_envs,
    gym_env_vectorize_mode="vector_entry_point", num_cpus_per_env_runner=...)``. The pool's
    threads are the runner's CPUs: ``num_threads`` if given (and Ray reserves that many CPUs
    per runner), else ``config.num_cpus_per_env_runner``. Returns ``config``.

    >>> config = configure(PPOConfig(), "CartPole-v1", num_envs=64, num_threads=2)
    """
    cpus = num_threads if num_threads is not None else config.num_cpus_per_env_runner
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or cpus < 1:
        raise ValueError(f"num_threads must be a positive int, got {cpus!r}")
    cpus = int(cpus)
    name = rllib_env(env_id, num_threads=cpus, **kwargs)
    config.environment(env=name)
    config.env_runners(
        num_envs_per_env_runner=num_envs,
        gym_env_vectorize_mode="vector_entry_point",
        num_cpus_per_env_runner=cpus,
    )
    return config
