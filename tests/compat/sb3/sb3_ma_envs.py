"""A PettingZoo ParallelEnv for tests/compat/sb3/test_multiagent_sb3.py, in a module of its own: the pool's worker
processes import it by name (and it imports neither SB3 nor torch)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv


class Dwindle(ParallelEnv):
    """Agents ``a``, ``b``, ``c`` with equal spaces (Box(3) float32 observations, Discrete(3) actions). ``b``
    terminates at step 2, ``c`` is born at step 1 (with ``birth``; else it is there from the start); the episode
    ends when ``a`` and ``c`` terminate at step ``length`` (``end="terminated"``) or are truncated there
    (``end="truncated"``). Observation ``[t, agent + 1, x]``; reward ``action + agent + 1`` (never 0)."""

    metadata: ClassVar[dict] = {"name": "dwindle_v0", "is_parallelizable": True}

    def __init__(self, length: int = 4, end: str = "terminated", birth: bool = True) -> None:
        self.length, self.end, self.birth = length, end, birth
        self.possible_agents = ["a", "b", "c"]
        self.render_mode = None
        self.agents: list[str] = []
        self.rng = np.random.default_rng()
        self.t, self.x = 0, 0.0

    def observation_space(self, agent):
        return gym.spaces.Box(-100.0, 100.0, (3,), np.float32)

    def action_space(self, agent):
        return gym.spaces.Discrete(3)

    def _observe(self, agent):
        return np.array([self.t, self.possible_agents.index(agent) + 1, self.x], np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.x = 0, float(self.rng.uniform(-1, 1))
        self.agents = ["a", "b"] if self.birth else ["a", "b", "c"]
        return {a: self._observe(a) for a in self.agents}, {a: {"born": 0} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (sorted(actions), self.agents)
        self.t += 1
        rewards = {a: float(actions[a]) + self.possible_agents.index(a) + 1 for a in self.agents}
        over = self.t >= self.length
        terms = {a: (a == "b" and self.t >= 2) or (over and self.end == "terminated") for a in self.agents}
        truncs = {a: over and self.end == "truncated" for a in self.agents}
        obs = {a: self._observe(a) for a in self.agents}
        infos = {a: {"t": self.t} for a in self.agents}
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        if self.t == 1 and self.birth:
            self.agents.append("c")
            obs["c"] = self._observe("c")
            infos["c"] = {"born": self.t}
        return obs, rewards, terms, truncs, infos
