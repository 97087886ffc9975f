"""``fastvec.make``'s multi-agent part on the Python-env path: constructors wrapped so that a worker makes a
multi-agent env ONE gymnasium env (:class:`~fastvec.multiagent.as_one_env.Maker`), and the pool it made put behind a
:class:`~fastvec.multiagent.vector.MultiAgentVectorEnv` when its workers said their envs are multi-agent.

No env is made in the parent to find out: each worker reports its envs' metadata with their spaces at start-up
(:mod:`fastvec.pyenv.worker`), and an :class:`~fastvec.multiagent.as_one_env.AsOneEnv`'s metadata carries
:data:`~fastvec.multiagent.as_one_env.MARKER` (its possible_agents).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from fastvec.multiagent.as_one_env import MARKER, Maker
from fastvec.multiagent.ids import multiagent_ids, python_constructor
from fastvec.multiagent.rows import PyPoolRows
from fastvec.multiagent.vector import MultiAgentVectorEnv

if TYPE_CHECKING:
    from fastvec.vector import PyVectorEnv


def python_env_id(env_id: Any, env_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``env_id`` and ``env_kwargs`` as the Python-env pool takes them: a multi-agent id becomes its constructor
    (taking the kwargs), and every constructor is wrapped in a :class:`Maker`; a gymnasium id is left as it is."""
    if isinstance(env_id, str):
        name = env_id.removeprefix("fastvec/")
        made = python_constructor(name, env_kwargs)
        if made is not None:
            return Maker(made), {}
        close = difflib.get_close_matches(name, multiagent_ids(), n=1)
        if close and name not in gym.registry:
            raise ValueError(f"unknown env_id {name!r}; did you mean {close[0]!r} (a multi-agent id)?")
        return env_id, env_kwargs
    if callable(env_id):
        return Maker(env_id), env_kwargs
    if isinstance(env_id, Sequence) and all(callable(f) for f in env_id):
        makers: dict[int, Maker] = {}  # one Maker per distinct constructor: [f] * n pickles f once
        return [makers.setdefault(id(f), Maker(f)) for f in env_id], env_kwargs
    return env_id, env_kwargs


def over_pool(venv: PyVectorEnv, episode_stats: bool | str) -> Any:
    """``venv`` itself, or a MultiAgentVectorEnv over it when its envs are multi-agent."""
    agents = venv.metadata.get(MARKER)
    if agents is None:
        return venv
    stats = multiagent_episode_stats(venv, episode_stats)
    obs_space, act_space = venv.single_observation_space, venv.single_action_space
    assert isinstance(obs_space, gym.spaces.Dict) and isinstance(act_space, gym.spaces.Dict)
    return MultiAgentVectorEnv(venv, PyPoolRows(agents, obs_space, act_space), episode_stats=stats)


def multiagent_episode_stats(venv: Any, episode_stats: bool | str) -> bool:
    """``episode_stats`` for a MultiAgentVectorEnv over ``venv``: a bool; "gymnasium" is refused (closing ``venv``)."""
    if episode_stats == "gymnasium":
        venv.close()
        raise ValueError(
            "episode_stats='gymnasium' (RecordEpisodeStatistics' keys) is for single-agent envs; a multi-agent env "
            "takes episode_stats=True (episode_return, episode_length and episode_agent_returns)"
        )
    return bool(episode_stats)


def make(env_id: Any, num_envs: int | None = None, **kwargs: Any) -> MultiAgentVectorEnv:
    """``fastvec.make(env_id, num_envs, **kwargs)`` typed for a multi-agent env (what the adapters call): a TypeError
    if ``env_id`` makes single-agent envs.

    >>> env = fastvec.multiagent.make(lambda: mpe2.simple_spread_v3.parallel_env(), 8)
    """
    from fastvec.vector import make as make_any

    env: Any = make_any(env_id, num_envs, **kwargs)
    if not isinstance(env, MultiAgentVectorEnv):
        env.close()
        raise TypeError(
            f"env_id {env_id!r} makes single-agent envs (a {type(env).__name__}); a multi-agent env is a PettingZoo "
            "ParallelEnv or AEC env, an RLlib MultiAgentEnv, or a multi-agent id"
        )
    return env
