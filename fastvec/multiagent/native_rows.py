"""The rows translator of a native multi-agent family (MPE, ``src/envs/mpe``): its single env's observation row is
every agent's observation concatenated in ``possible_agents`` order (float32), its action row every agent's action
(float32: a Discrete agent's index as one float), and its info carries ``agent_rewards`` (float64 ``(A,)``) and
``terminated`` (the env's, which every agent shares). The pool's spec lists the agents (name, observation size,
action size, Discrete n); MPE agents never die, so every agent is active in every row.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from fastvec.multiagent.rows import AgentRows


class NativeRows:
    """Splits a native pool's flat rows into per-agent column views, and joins per-agent actions into rows."""

    consumed_info_keys: tuple[str, ...] = ("agent_rewards", "terminated")

    def __init__(self, agents: list[dict[str, Any]]) -> None:
        """``agents``: the pool's ``spec()["agents"]``."""
        self.possible_agents = [a["name"] for a in agents]
        self.observation_spaces: dict[str, gym.Space] = {}
        self.action_spaces: dict[str, gym.Space] = {}
        self._obs_slices: list[slice] = []
        self._action_slices: list[slice] = []
        obs_at = action_at = 0
        inf = np.float32(np.inf)
        for a in agents:
            name, size = a["name"], a["action_size"]
            self.observation_spaces[name] = gym.spaces.Box(-inf, inf, (a["obs_size"],), np.float32)
            self.action_spaces[name] = (
                gym.spaces.Discrete(a["num_actions"])
                if a["num_actions"]
                else gym.spaces.Box(0.0, 1.0, (size,), np.float32)
            )
            self._obs_slices.append(slice(obs_at, obs_at + a["obs_size"]))
            self._action_slices.append(slice(action_at, action_at + size))
            obs_at += a["obs_size"]
            action_at += size
        self._width = action_at

    def split(self, obs: Any, info: dict[str, Any]) -> AgentRows:
        return self._rows(obs, info["agent_rewards"], info["terminated"], np.ones(len(obs), dtype=bool))

    def split_final(self, final_obs: np.ndarray, final_info: dict[str, Any] | None, ended: np.ndarray) -> AgentRows:
        assert final_info is not None
        rows = np.flatnonzero(ended)
        obs = np.zeros((len(ended), self._obs_slices[-1].stop), dtype=np.float32)
        if len(rows):
            obs[rows] = np.stack(final_obs[rows].tolist())
        ended = np.asarray(ended, dtype=bool)
        # (B, A); a one-agent env's info field is (B,)
        agent_rewards = np.asarray(final_info["agent_rewards"], dtype=np.float64).reshape(len(ended), -1)
        rewards = np.where(ended[:, None], agent_rewards, 0.0)
        return self._rows(obs, rewards, np.where(ended, final_info["terminated"], 0), ended)

    def join(self, actions: dict[str, np.ndarray]) -> Any:
        rows = len(next(iter(actions.values())))
        out = np.empty((rows, self._width), dtype=np.float32)
        for a, s in zip(self.possible_agents, self._action_slices, strict=True):
            out[:, s] = np.reshape(actions[a], (rows, s.stop - s.start))
        return out

    def _rows(self, obs: np.ndarray, rewards: np.ndarray, terminated: np.ndarray, active: np.ndarray) -> AgentRows:
        n = len(self.possible_agents)
        # (B, A); an info field of one value per row, as a one-agent env's, is (B,)
        columns = np.ascontiguousarray(np.asarray(rewards, dtype=np.float64).reshape(len(obs), n).T)
        flags = np.zeros((3, n, len(obs)), dtype=bool)  # terminations, truncations, active: one row per agent
        flags[0] = np.asarray(terminated, dtype=bool)
        flags[2] = active
        return AgentRows(
            obs={a: obs[:, s] for a, s in zip(self.possible_agents, self._obs_slices, strict=True)},
            rewards={a: columns[k] for k, a in enumerate(self.possible_agents)},
            terminations={a: flags[0, k] for k, a in enumerate(self.possible_agents)},
            truncations={a: flags[1, k] for k, a in enumerate(self.possible_agents)},
            active={a: flags[2, k] for k, a in enumerate(self.possible_agents)},
        )


def over_native(venv: Any, episode_stats: bool | str) -> Any:
    """``venv`` (a native ``fastvec.VectorEnv``) itself, or a MultiAgentVectorEnv over it when its env has agents."""
    agents = venv.backend.spec().get("agents")
    if not agents:
        return venv
    from fastvec.multiagent.routing import multiagent_episode_stats
    from fastvec.multiagent.vector import MultiAgentVectorEnv

    stats = multiagent_episode_stats(venv, episode_stats)
    rows = NativeRows(agents)
    answer_as_parallel_env(venv, rows)
    return MultiAgentVectorEnv(venv, rows, episode_stats=stats)


# What the env's state decides, which a native env (no Python object) does not keep: env_call's error says so.
_STATEFUL = (
    "the agents of each env change as its episodes run and a native env keeps no Python object; "
    "infos['active'] says which agents have an observation (backend='python' runs mpe2's env, which has it)"
)
_UNANSWERABLE = {
    "agents": _STATEFUL,
    "num_agents": _STATEFUL,
    "state": "a native env keeps no Python object; backend='python' runs mpe2's env, whose state() it is",
}


def answer_as_parallel_env(venv: Any, rows: NativeRows) -> None:
    """Env calls (``env.call``, ``get_attr``) on the native pool ``venv`` answer what mpe2's ``parallel_env`` answers
    where the answer is fixed when the env is made: ``possible_agents``, ``max_num_agents``,
    ``observation_space(agent)``, ``action_space(agent)`` (and their dicts), ``state_space``, ``metadata`` (mpe2's,
    but ``render_modes``: a native env draws nothing); the options it was made with as before; a clear error for what
    changes as the env runs (``agents``, ``state()``)."""
    pool = venv.backend
    possible = list(rows.possible_agents)

    def observation_space(agent: str) -> gym.Space:
        return rows.observation_spaces[_agent(agent, possible)]

    def action_space(agent: str) -> gym.Space:
        return rows.action_spaces[_agent(agent, possible)]

    metadata = {**pool.attributes["metadata"], "is_parallelizable": True, "render_fps": 10, "name": pool.entry.id}
    pool.attributes.update(
        possible_agents=possible,
        max_num_agents=len(possible),
        observation_space=observation_space,
        action_space=action_space,
        observation_spaces=dict(rows.observation_spaces),
        action_spaces=dict(rows.action_spaces),
        state_space=venv.single_observation_space,  # every agent's observation, concatenated: mpe2's state()
        metadata=metadata,
    )
    pool.unanswerable.update(_UNANSWERABLE)
    venv.metadata = metadata


def _agent(agent: Any, possible: list[str]) -> str:
    if agent not in possible:
        raise KeyError(f"agent {agent!r} is not one of possible_agents {possible}")
    return str(agent)
