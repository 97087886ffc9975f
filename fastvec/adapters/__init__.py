"""Adapters for training libraries; each imports its framework only when called.

- :func:`sb3_vec`: a Stable-Baselines3 ``VecEnv`` (a slot per env and agent for a multi-agent env).
- :func:`tianshou_venv`: a Tianshou vector env.
- :func:`tianshou_ma_venv`: a Tianshou vector env of PettingZoo envs, for its multi-agent algorithms.
- :func:`rllib_env`: a name registered with Ray Tune for ``config.environment(env=...)``;
  :func:`fastvec.adapters.rllib.configure` sets up an ``AlgorithmConfig`` in one call.
"""

from __future__ import annotations

from typing import Any


def sb3_vec(env_id: Any, num_envs: int | None = None, **kwargs: Any) -> Any:
    """A Stable-Baselines3 ``VecEnv``: ``fastvec.sb3_vec("CartPole-v1", 8, seed=0)``.

    Takes :func:`fastvec.make`'s arguments (and ``monitor``: by default True for an id, as ``make_vec_env``, and
    False for a list of callables, as ``SubprocVecEnv``); see :mod:`fastvec.adapters.sb3`. A multi-agent
    env gives a slot per (env, agent), as SuperSuit's vec envs: see :mod:`fastvec.adapters.sb3_ma`.
    """
    from fastvec.adapters.sb3 import sb3_vec as impl

    return impl(env_id, num_envs, **kwargs)


def tianshou_venv(env_id: Any, num_envs: int | None = None, **kwargs: Any) -> Any:
    """A Tianshou vector env: ``fastvec.tianshou_venv("CartPole-v1", 8, seed=0)``.

    Takes :func:`fastvec.make`'s arguments; ``batch_size=k`` is Tianshou's ``wait_num=k``.
    """
    from fastvec.adapters.tianshou import tianshou_venv as impl

    return impl(env_id, num_envs, **kwargs)


def tianshou_ma_venv(env_fn: Any, num_envs: int | None = None, **kwargs: Any) -> Any:
    """A Tianshou vector env of PettingZoo envs stepped turn by turn, as ``DummyVectorEnv`` over Tianshou's
    ``PettingZooEnv``: ``fastvec.tianshou_ma_venv(tictactoe_v3.env, 8, seed=0)``.

    Takes a callable returning a PettingZoo ``AECEnv``/``ParallelEnv`` (or a list of them) and
    :func:`tianshou_venv`'s arguments; see :mod:`fastvec.adapters.tianshou_ma`.
    """
    from fastvec.adapters.tianshou_ma import tianshou_ma_venv as impl

    return impl(env_fn, num_envs, **kwargs)


def rllib_env(env_id: Any, **kwargs: Any) -> str:
    """Registers a fastvec creator with Ray Tune and returns its name for ``config.environment(env=...)``.

    RLlib must run with ``env_runners(gym_env_vectorize_mode="vector_entry_point")``;
    :func:`fastvec.adapters.rllib.configure` sets that up in one call.
    """
    from fastvec.adapters.rllib import rllib_env as impl

    return impl(env_id, **kwargs)


__all__ = ["rllib_env", "sb3_vec", "tianshou_ma_venv", "tianshou_venv"]
