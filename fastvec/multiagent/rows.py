"""Rows translators: from a backend ``fastvec.VectorEnv``'s batches to per-agent arrays, and back for actions.

:class:`fastvec.MultiAgentVectorEnv` runs over a plain :class:`fastvec.VectorEnv` whose single env stands for a
whole multi-agent env. How that env's observation, reward and info carry the agents differs by backend, and a
translator (:class:`RowsTranslator`) is all that knows it:

- the Python-env pool (:class:`PyPoolRows`): each env is an :class:`~fastvec.multiagent.as_one_env.AsOneEnv`,
  whose Dict observation holds the per-agent observations, rewards, returns, flags and ``active`` mask;
- a native multi-agent family (MPE): a flat float32 observation row (every agent's, concatenated in
  ``possible_agents`` order) and per-agent rewards in info fields; its translator splits the row into per-agent
  column views.

A translator gives per-agent arrays for the rows it is handed (B rows: every env in sync mode, a batch in async);
the façade does everything else (the agents alive per env, action checks, ``same_step``'s final observations,
time-limit truncations, episode statistics, info keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np


@dataclass
class AgentRows:
    """Per-agent arrays of B rows, keyed by agent id (every agent of ``possible_agents``).

    ``obs[a]``: ``(B, *observation_space(a).shape)`` (zeros where ``a`` has no observation); ``rewards[a]``
    float64 ``(B,)``; ``terminations[a]``, ``truncations[a]``, ``active[a]``: bool ``(B,)``; ``returns[a]``:
    float64 ``(B,)``, the agent's return so far in the row's episode, or None if the backend keeps none (the
    façade then sums the rewards it receives).
    """

    obs: dict[str, Any]
    rewards: dict[str, np.ndarray]
    terminations: dict[str, np.ndarray]
    truncations: dict[str, np.ndarray]
    active: dict[str, np.ndarray]
    returns: dict[str, np.ndarray] | None = None


class RowsTranslator(Protocol):
    """What :class:`fastvec.MultiAgentVectorEnv` needs of a backend beyond its ``fastvec.VectorEnv``."""

    possible_agents: list[str]
    observation_spaces: dict[str, gym.Space]  #: agent -> single-env observation space
    action_spaces: dict[str, gym.Space]  #: agent -> single-env action space (Box/Discrete/MultiDiscrete/MultiBinary)
    #: the backend's info keys the translator consumes (e.g. per-agent rewards): left out of the façade's infos
    consumed_info_keys: tuple[str, ...]

    def split(self, obs: Any, info: dict[str, Any]) -> AgentRows:
        """The per-agent arrays of a batch the backend returned (``obs``: its observation batch; ``info``: its info
        dict, the envs' own keys). Rewards and flags are this batch's (for a reset: zeros and False), as the env set
        them: the façade adds the pool's time-limit truncations (every agent active, not terminated, in a row whose
        env-level ``truncated`` is set), so a backend whose agents never end by themselves returns False flags."""

    def split_final(self, final_obs: np.ndarray, final_info: dict[str, Any] | None, ended: np.ndarray) -> AgentRows:
        """``same_step`` mode: the per-agent arrays of the final step of the rows ``ended`` (bool ``(B,)``), from the
        backend's ``info["final_obs"]`` (an object array, one single-env observation per ended row) and
        ``info["final_info"]``; zeros and False in the other rows."""

    def join(self, actions: dict[str, np.ndarray]) -> Any:
        """The backend's action batch from per-agent arrays of B rows, one per agent of ``possible_agents``, each
        checked and filled (rows of agents that are not alive hold a valid filler)."""


class PyPoolRows:
    """The translator of the Python-env pool, whose envs are :class:`~fastvec.multiagent.as_one_env.AsOneEnv`."""

    consumed_info_keys: tuple[str, ...] = ()  # (everything per agent is in the observation)

    def __init__(self, possible_agents: list[str], observation_space: gym.spaces.Dict, action_space: gym.spaces.Dict):
        self.possible_agents = list(possible_agents)
        self._slot = {a: i for i, a in enumerate(sorted(possible_agents))}
        obs_spaces = observation_space["obs"]
        assert isinstance(obs_spaces, gym.spaces.Dict)
        self.observation_spaces = {a: obs_spaces[a] for a in self.possible_agents}
        self.action_spaces = {a: action_space[a] for a in self.possible_agents}

    def split(self, obs: Any, info: dict[str, Any]) -> AgentRows:
        return AgentRows(
            obs={a: obs["obs"][a] for a in self.possible_agents},
            rewards=self._columns(obs["rewards"], None),
            terminations=self._columns(obs["terminations"], bool),
            truncations=self._columns(obs["truncations"], bool),
            active=self._columns(obs["active"], bool),
            returns=self._columns(obs["returns"], None),
        )

    def split_final(self, final_obs: np.ndarray, final_info: dict[str, Any] | None, ended: np.ndarray) -> AgentRows:
        rows = np.flatnonzero(ended).tolist()
        n, b = len(self.possible_agents), len(ended)
        rewards, returns = np.zeros((b, n)), np.zeros((b, n))
        flags = np.zeros((3, b, n), dtype=bool)
        obs = {a: _zeros(s, b) for a, s in self.observation_spaces.items()}
        for r in rows:
            one = final_obs[r]
            rewards[r], returns[r] = one["rewards"], one["returns"]
            flags[0, r], flags[1, r], flags[2, r] = one["terminations"], one["truncations"], one["active"]
            for a in self.possible_agents:
                _put(obs[a], r, one["obs"][a])
        return AgentRows(
            obs=obs,
            rewards=self._columns(rewards, None),
            terminations=self._columns(flags[0], None),
            truncations=self._columns(flags[1], None),
            active=self._columns(flags[2], None),
            returns=self._columns(returns, None),
        )

    def join(self, actions: dict[str, np.ndarray]) -> Any:
        return actions  # the AsOneEnv's action space is the Dict of the agents' spaces

    def _columns(self, matrix: np.ndarray, dtype: type | None) -> dict[str, np.ndarray]:
        """Per agent, its column of a ``(B, A)`` matrix (columns in sorted agent order, as AsOneEnv writes them) as
        a contiguous array (one copy for all)."""
        t = np.ascontiguousarray(matrix.T, dtype=dtype)
        return {a: t[self._slot[a]] for a in self.possible_agents}


def _zeros(space: gym.Space, rows: int) -> Any:
    """A batch of ``rows`` zero observations of ``space``, structured as the pool batches it."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _zeros(s, rows) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_zeros(s, rows) for s in space.spaces)
    return np.zeros((rows, *(space.shape or ())), dtype=space.dtype)


def _put(batch: Any, row: int, value: Any) -> None:
    if isinstance(batch, dict):
        for k, b in batch.items():
            _put(b, row, value[k])
    elif isinstance(batch, tuple):
        for b, v in zip(batch, value, strict=True):
            _put(b, row, v)
    else:
        batch[row] = value
