"""Python envs that more than one test file makes, in a module of their own (tests/ is on sys.path: its
conftest.py is there), so that each is written once. A worker process of the Python-env pool imports the
module that defines an env class, as it imports a test file's own."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

THROW = 3  # the action on which Thrower and the native _Debug-v0 (throw_on_action=3) raise


class ThrowerError(ArithmeticError):
    """An exception type no pool raises of its own (it comes back from the worker with its type)."""


class Thrower(gym.Env):
    """The Python twin of ``_Debug-v0`` with ``throw_on_action=3``: obs = [steps since reset, last action],
    reward = action; raises ``error`` (a ValueError unless given) when its action is THROW; episodes of
    ``episode_length`` steps."""

    observation_space = gym.spaces.Box(0.0, 1e9, (2,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self, episode_length: int = 5, error: type[Exception] = ValueError) -> None:
        self.episode_length, self.error, self.t, self.last = episode_length, error, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = self.last = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if action == THROW:
            raise self.error(f"Thrower asked to throw (action {action})")
        self.t, self.last = self.t + 1, int(action)
        return np.array([self.t, self.last], np.float32), float(action), self.t >= self.episode_length, False, {}
