"""Stable-Baselines3 over multi-agent envs: one ``VecEnv`` slot per (env, agent), SuperSuit's recipe.

>>> env = fastvec.sb3_vec(lambda: simple_spread_v3.parallel_env(), 8, seed=0)   # 24 slots: 8 envs x 3 agents
>>> # was concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(simple_spread_v3.parallel_env()), 8, ...)
>>> PPO("MlpPolicy", env).learn(100_000)   # one policy shared by every agent

Single-agent algorithms with parameter sharing: every agent of every env is a slot of one ``VecEnv``, slots
env-major as SuperSuit's ``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), n)`` orders them (env 0's
agents in ``possible_agents`` order, then env 1's, ...), so every agent needs the same observation and action
space.

Agents that are not there (dead, or not yet born) keep their slot, as SuperSuit's ``black_death_v3`` keeps it:
a zero observation, a zero reward, ``done`` False. A slot's ``done`` is its env's episode end (no agent left, or
the time limit), when every slot of that env is done at once, with ``terminal_observation`` (zeros for an agent
that was not there at the end) and ``TimeLimit.truncated`` (the agent was truncated, not terminated) in its
info, and the env is reset in the same step. Unlike ``black_death_v3``, an env whose agents all terminate ends
(its ``terminations & truncations`` test never fires on terminations alone); like it, an agent that terminates
while others play on is not ``done``: its slot's episode is its env's, and its value after death is learnt from
the zero observations that follow (zero rewards).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices
    from stable_baselines3.common.vec_env.util import check_for_nested_spaces
except ImportError as e:  # pragma: no cover - exercised only without SB3
    raise ImportError("fastvec.sb3_vec needs Stable-Baselines3: pip install stable-baselines3") from e

from fastvec.adapters.sb3 import SB3Base
from fastvec.batching import info_rows
from fastvec.multiagent import MultiAgentVectorEnv


class SB3MultiAgentVecEnv(SB3Base):
    """A ``stable_baselines3`` ``VecEnv`` whose slots are the (env, agent) pairs of a
    :class:`fastvec.MultiAgentVectorEnv` made with ``autoreset_mode="same_step"``; made by :func:`fastvec.sb3_vec`
    from a multi-agent env.

    Slot ``e * len(possible_agents) + j`` is agent ``possible_agents[j]`` of env ``e``. ``env_slot(slot)`` gives
    that pair. ``seed(s)`` seeds env ``e`` with ``s + e`` (every slot of an env shares its env's seed). With
    ``monitor=True`` a slot's info at its env's episode end carries Monitor's ``episode`` dict (``r``: that agent's
    return, ``l``: the env's length in steps, ``t``). ``get_attr``, ``set_attr`` and ``env_method`` reach the
    multi-agent env behind each slot (a method called on several slots of one env runs once in that env).
    """

    def __init__(self, env: MultiAgentVectorEnv, monitor: bool = True) -> None:
        if env.autoreset_mode != gym.vector.AutoresetMode.SAME_STEP:
            raise ValueError(f"SB3 needs autoreset_mode='same_step', got {env.autoreset_mode}")
        if not env.sync:
            raise ValueError(
                f"SB3 steps every env each call: batch_size must equal num_envs ({env.num_envs}), got {env.batch_size}"
            )
        self.agents = list(env.possible_agents)
        first = self.agents[0]
        obs_space, act_space = env.observation_space(first), env.action_space(first)
        for kind, space_of, space in (
            ("observation", env.observation_space, obs_space),
            ("action", env.action_space, act_space),
        ):
            differ = {a: space_of(a) for a in self.agents if space_of(a) != space}
            if differ:
                raise ValueError(
                    f"sb3_vec gives each agent a slot of one VecEnv, so every agent needs the same {kind} space: "
                    f"agent {first!r} has {space}, but "
                    + ", ".join(f"agent {a!r} has {s}" for a, s in differ.items())
                    + " (SuperSuit's pad_observations_v0 / pad_action_space_v0 pad them to one)"
                )
        check_for_nested_spaces(obs_space)  # NotImplementedError, as SB3's own VecEnvs
        self.env = env
        self.monitor = monitor
        self.n_agents = len(self.agents)
        self._unit = "slot"
        self._t_start = time.time()
        self._env_seeds: list[int | None] = [None] * env.num_envs
        super().__init__(env.num_envs * self.n_agents, obs_space, act_space)

    def env_slot(self, slot: int) -> tuple[int, str]:
        """The (env id, agent) of VecEnv slot ``slot``."""
        return slot // self.n_agents, self.agents[slot % self.n_agents]

    # -- stepping ---------------------------------------------------------

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seeds env ``e`` with ``seed + e`` at the next reset, as SuperSuit's ``concat_vec_envs_v1`` seeds its
        envs; returns each slot's env seed."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        self._env_seeds = [seed + e for e in range(self.env.num_envs)]
        return [self._env_seeds[s // self.n_agents] for s in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        """Resets every env with the seeds staged by :meth:`seed` and the options of :meth:`set_options` (one set
        for every slot: the slots of an env share its reset)."""
        seeds = None if all(s is None for s in self._env_seeds) else list(self._env_seeds)
        options = self._options
        self._env_seeds = [None] * self.env.num_envs
        self._reset_options()
        self._actions = None
        if any(o != options[0] for o in options):
            raise ValueError(
                "set_options: the slots of a multi-agent env share its reset, so every slot takes the same options "
                f"here, got {options}"
            )
        obs, infos = self.env.reset(seed=seeds, options=dict(options[0]) if options[0] else None)
        self.reset_infos = self._agent_infos(infos, self.env.num_envs)
        return self._slots(obs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        actions = self._take_actions()
        n, k = self.env.num_envs, self.n_agents
        obs, rewards, terms, truncs, infos = self.env.step(self._agent_actions(actions))
        ended = infos.get("_final_obs")
        ended = np.zeros(n, dtype=bool) if ended is None else ended
        reward = self._stack(rewards).reshape(-1).astype(np.float32)
        slot_infos = self._agent_infos(infos, n)
        if ended.any():
            final_obs = infos["final_obs"]
            finals = self._agent_infos(infos.get("final_info", {}), n)
            returns = infos.get("episode_agent_returns")
            length = infos.get("episode_length")
            t = round(time.time() - self._t_start, 6)
            for e in np.flatnonzero(ended).tolist():
                for j, a in enumerate(self.agents):
                    s = e * k + j
                    self.reset_infos[s], slot_infos[s] = slot_infos[s], finals[s]
                    d = slot_infos[s]
                    d["terminal_observation"] = final_obs[a][e]
                    if self.monitor and returns is not None and length is not None:
                        d["episode"] = {"r": round(float(returns[a][e]), 6), "l": int(length[e]), "t": t}
        limit = (self._stack(truncs) & ~self._stack(terms)).reshape(-1)
        for d, flag in zip(slot_infos, limit.tolist(), strict=True):
            d["TimeLimit.truncated"] = flag  # on every step, as SB3's VecEnvs set it
        return self._slots(obs), reward, np.repeat(ended, k), slot_infos

    def close(self) -> None:
        self.env.close()

    # -- attributes -------------------------------------------------------

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the multi-agent env behind each slot (``render_mode``: the pool's, which
        PettingZoo envs without the attribute render with: None)."""
        slots = self._indices(indices)
        if attr_name == "render_mode":
            return [self.env.render_mode] * len(slots)
        envs = sorted({s // self.n_agents for s in slots})
        values = dict(zip(envs, self.env.env_call("get", attr_name, env_ids=envs), strict=True))
        return [values[s // self.n_agents] for s in slots]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Sets ``attr_name`` of the multi-agent env behind each slot (once per env)."""
        envs = sorted({s // self.n_agents for s in self._indices(indices)})
        self.env.env_call("set_outer", attr_name, [value] * len(envs), env_ids=envs)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Calls ``method_name`` of the multi-agent env behind each slot, once per env; each slot gets its env's
        result."""
        slots = self._indices(indices)
        envs = sorted({s // self.n_agents for s in slots})
        out = self.env.env_call("method", method_name, method_args, method_kwargs, env_ids=envs)
        values = dict(zip(envs, out, strict=True))
        return [values[s // self.n_agents] for s in slots]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """True for ``Monitor`` (and its bases) with ``monitor=True``, whose ``episode`` info the adapter adds;
        False otherwise, as SuperSuit's vec envs answer (a PettingZoo env has no gymnasium wrappers)."""
        return [self.monitor and issubclass(Monitor, wrapper_class)] * len(self._indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Each slot's env's ``render()`` (``render_mode="rgb_array"``): the slots of one env share its frame."""
        if self.render_mode != "rgb_array":
            return [None] * self.num_envs
        frames = self.env.call("render")
        return [frames[s // self.n_agents] for s in range(self.num_envs)]

    # -- helpers ------------------------------------------------------------

    def _slots(self, per_agent: dict[str, np.ndarray]) -> np.ndarray:
        """Per-agent ``(num_envs, *shape)`` arrays as env-major slots ``(num_envs * n_agents, *shape)``."""
        stacked = self._stack(per_agent)
        return stacked.reshape(-1, *stacked.shape[2:])

    def _stack(self, per_agent: dict[str, np.ndarray]) -> np.ndarray:
        return np.stack([per_agent[a] for a in self.agents], axis=1)

    def _agent_actions(self, actions: Any) -> dict[str, np.ndarray]:
        arr = np.asarray(actions)
        if arr.shape[:1] != (self.num_envs,):
            raise ValueError(
                f"actions: one per slot ({self.num_envs} = {self.env.num_envs} envs x {self.n_agents} agents), "
                f"got shape {arr.shape}"
            )
        arr = arr.reshape(self.env.num_envs, self.n_agents, *arr.shape[1:])
        return {a: arr[:, j] for j, a in enumerate(self.agents)}

    def _agent_infos(self, infos: dict[str, Any], n: int) -> list[dict[str, Any]]:
        """Each slot's info dict: its agent's info in its env (``infos[agent]``, batched as gymnasium batches)."""
        per_agent: list[list[dict[str, Any]]] = [
            info_rows(infos[a], n) if isinstance(infos.get(a), dict) else [{} for _ in range(n)] for a in self.agents
        ]
        return [per_agent[j][e] for e in range(n) for j in range(self.n_agents)]
