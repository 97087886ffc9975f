"""Small multi-agent envs for the multi-agent tests (a module of its own, so that the pool's worker processes import
them by name), and a reference loop that steps PettingZoo parallel envs directly, as the pool must.

``Lifecycle``: a PettingZoo ParallelEnv whose agents have different spaces, where ``b`` dies early and ``c`` is born
mid-episode. ``Misbehaving``: one that breaks a rule of the API on request. ``Raising``: one whose step raises for one
agent's action. ``Duo``: a tiny RLlib MultiAgentEnv.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv


class Lifecycle(ParallelEnv):
    """Agents ``a`` (Box(3) float32 obs, Discrete(3) actions), ``b`` (Discrete(5) obs, Box(2) actions; terminated at
    step 3) and ``c`` (MultiBinary(4) obs, MultiDiscrete([2, 3]) actions; born at step 2). The episode ends when
    ``a`` is truncated at step ``length``. Rewards depend on the actions and on the seeded start, so that parity
    checks both."""

    metadata: ClassVar[dict] = {"name": "lifecycle_v0", "is_parallelizable": True}

    def __init__(self, length: int = 6) -> None:
        self.length = length
        self.possible_agents = ["a", "b", "c"]
        self._obs = {
            "a": gym.spaces.Box(-10.0, 10.0, (3,), np.float32),
            "b": gym.spaces.Discrete(5),
            "c": gym.spaces.MultiBinary(4),
        }
        self._act = {
            "a": gym.spaces.Discrete(3),
            "b": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "c": gym.spaces.MultiDiscrete([2, 3]),
        }
        self.rng = np.random.default_rng()
        self.agents: list[str] = []
        self.t = 0
        self.x = 0.0

    def observation_space(self, agent):
        return self._obs[agent]

    def action_space(self, agent):
        return self._act[agent]

    def _observe(self, agent):
        if agent == "a":
            return np.array([self.t, self.x, -self.x], np.float32)
        if agent == "b":
            return self.t % 5
        return np.array([self.t % 2, 1, 0, int(self.x > 0)], np.int8)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.x = float(self.rng.uniform(-1, 1))
        self.agents = ["a", "b"]
        return {a: self._observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (sorted(actions), self.agents)
        self.t += 1
        rewards = {}
        for agent, action in actions.items():
            if agent == "a":
                rewards[agent] = float(action) - self.x
            elif agent == "b":
                rewards[agent] = float(np.sum(action)) + self.rng.normal()
            else:
                rewards[agent] = float(action[0] * 3 + action[1])
        self.x += 0.1 * float(self.rng.standard_normal())
        terminations = {a: a == "b" and self.t >= 3 for a in self.agents}
        truncations = {a: a == "a" and self.t >= self.length for a in self.agents}
        if truncations.get("a"):  # the episode ends with a: everyone goes
            truncations = {a: True for a in self.agents}
        obs = {a: self._observe(a) for a in self.agents}
        infos = {a: ({"t": self.t} if a == "a" else {}) for a in self.agents}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        if self.t == 2:
            self.agents.append("c")
            obs["c"] = self._observe("c")
            rewards["c"] = 0.0
        return obs, rewards, terminations, truncations, infos


class Misbehaving(Lifecycle):
    """A Lifecycle that breaks a rule at step ``at``: ``"stranger"`` returns an agent outside possible_agents,
    ``"spaces"`` changes a's observation space at its second reset, ``"hidden"`` lists an agent in ``agents``
    without returning its observation."""

    def __init__(self, how: str, at: int = 2) -> None:
        super().__init__(length=6)
        self.how, self.at = how, at
        self.resets = 0

    def reset(self, seed=None, options=None):
        self.resets += 1
        if self.how == "spaces" and self.resets == 2:
            self._obs = {**self._obs, "a": gym.spaces.Box(-10.0, 10.0, (4,), np.float32)}
        return super().reset(seed=seed, options=options)

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = super().step(actions)
        if self.t == self.at:
            if self.how == "stranger":
                obs["zed"] = obs["a"]
            elif self.how == "hidden":
                del obs["a"]
        return obs, rewards, terminations, truncations, infos


class AgentStepError(Exception):
    """What :class:`Raising` raises (a type of its own, which no pool raises)."""


class Raising(Lifecycle):
    """A Lifecycle whose step raises AgentStepError, naming agent ``c``, when c's action is ``THROW`` (before it
    changes anything: the env is as before the step, and a reset goes on from there)."""

    THROW = (1, 2)

    def step(self, actions):
        c = actions.get("c")
        if c is not None and tuple(np.asarray(c).tolist()) == self.THROW:
            raise AgentStepError(f"agent 'c' cannot take action {list(self.THROW)} at step {self.t + 1}")
        return super().step(actions)


def duo_class():
    """An RLlib MultiAgentEnv (imported from ray only here): ``x`` terminates after 2 steps, the episode after 4
    (``__all__``); rewards: x gets its action, y gets 10 * its action."""
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    class Duo(MultiAgentEnv):
        def __init__(self, config=None):
            super().__init__()
            self.possible_agents = ["x", "y"]
            self.agents = list(self.possible_agents)
            self.observation_spaces = {a: gym.spaces.Box(0.0, 100.0, (1,), np.float32) for a in self.possible_agents}
            self.action_spaces = {a: gym.spaces.Discrete(4) for a in self.possible_agents}
            self.t = 0

        def reset(self, *, seed=None, options=None):
            self.t = 0
            return {a: np.array([0.0], np.float32) for a in self.possible_agents}, {"__common__": {"start": 1}}

        def step(self, action_dict):
            self.t += 1
            obs = {a: np.array([self.t], np.float32) for a in action_dict}
            rewards = {a: float(v) * (10 if a == "y" else 1) for a, v in action_dict.items()}
            terminateds = {a: a == "x" and self.t >= 2 for a in action_dict}
            terminateds["__all__"] = self.t >= 4
            return obs, rewards, terminateds, {"__all__": False}, {}

    return Duo


def make_duo():
    return duo_class()()


class Reference:
    """One PettingZoo parallel env stepped directly, returning what the pool must return for it under
    ``autoreset_mode``: per row, ``obs``, ``rewards``, ``terminations``, ``truncations`` (dicts over the agents that
    have them), ``active`` (a set) and, in same_step mode where an episode ended, ``final``."""

    def __init__(self, env, mode: str, max_steps: int | None = None) -> None:
        self.env, self.mode, self.max_steps = env, mode, max_steps
        self.needs_reset = False
        self.t = 0

    def reset(self, seed=None):
        obs, _ = self.env.reset(seed=seed)
        self.t, self.needs_reset = 0, False
        return {"obs": obs, "rewards": {}, "terminations": {}, "truncations": {}, "active": set(obs)}

    def step(self, actions):
        if self.needs_reset:
            return self.reset()
        live = list(self.env.agents)
        obs, rewards, terms, truncs, _ = self.env.step({a: actions[a] for a in live})
        self.t += 1
        truncs = dict(truncs)
        if self.max_steps is not None and self.t >= self.max_steps:
            truncs.update({a: True for a in obs if not terms.get(a)})
        row = {
            "obs": obs,
            "rewards": dict(rewards),
            "terminations": dict(terms),
            "truncations": truncs,
            "active": set(obs),
        }
        if not self.env.agents or (self.max_steps is not None and self.t >= self.max_steps):
            if self.mode == "same_step":
                new = self.reset()
                return {**row, "obs": new["obs"], "active": new["active"], "final": row}
            self.needs_reset = True
        return row


class Nested(ParallelEnv):
    """Agent ``p`` observes a Dict, ``q`` a Tuple; both act Discrete(2); the episode is 2 steps."""

    metadata: ClassVar[dict] = {"name": "nested_v0"}

    def __init__(self) -> None:
        self.possible_agents = ["p", "q"]
        self.agents: list[str] = []
        self.t = 0

    def observation_space(self, agent):
        if agent == "p":
            return gym.spaces.Dict({"pos": gym.spaces.Box(-5.0, 5.0, (2,), np.float32), "id": gym.spaces.Discrete(3)})
        return gym.spaces.Tuple((gym.spaces.Discrete(4), gym.spaces.Box(0.0, 9.0, (1,), np.float64)))

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def _obs(self):
        return {
            "p": {"pos": np.array([self.t, -self.t], np.float32), "id": self.t % 3},
            "q": (self.t, np.array([self.t + 0.5])),
        }

    def reset(self, seed=None, options=None):
        self.t, self.agents = 0, list(self.possible_agents)
        return self._obs(), {}

    def step(self, actions):
        self.t += 1
        done = self.t >= 2
        flags = {a: done for a in self.agents}
        rewards = {a: float(actions[a]) for a in self.agents}
        if done:
            self.agents = []
        return self._obs(), rewards, flags, {a: False for a in flags}, {}


class Reversed(Lifecycle):
    """A Lifecycle that lists its agents in the other order."""

    def __init__(self, length: int = 6) -> None:
        super().__init__(length)
        self.possible_agents = ["c", "b", "a"]


class DictActions(Nested):
    """A Nested whose agent ``q`` acts with a Dict, which the multi-agent pool does not take."""

    def action_space(self, agent):
        if agent == "q":
            return gym.spaces.Dict({"move": gym.spaces.Discrete(2)})
        return gym.spaces.Discrete(2)
