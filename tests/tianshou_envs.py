"""Envs for tests/test_adapter_tianshou.py, in a module of their own: a worker process of the Python-env pool
imports the module that defines an env class, and this one imports no Tianshou (nor torch)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class DictObsEnv(gym.Env):
    """Dict observations (nested, with Discrete and MultiBinary leaves), seeded starts, episodes of 2 to 5
    steps ending terminated, or truncated at step 4; the step's info and the reset's differ."""

    observation_space = gym.spaces.Dict(
        {
            "pos": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
            "phase": gym.spaces.Discrete(3),
            "inner": gym.spaces.Dict({"bits": gym.spaces.MultiBinary(2)}),
        }
    )
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.x = 0, float(self.np_random.uniform(-1, 1))
        self.length = int(self.np_random.integers(2, 6))
        return self._obs(), {"start": self.x}

    def step(self, action):
        self.t += 1
        self.x += float(action) - 0.5
        return self._obs(), float(action) + self.t, self.t >= self.length, self.t >= 4, {"t": self.t}

    def _obs(self):
        bits = np.array([self.t % 2, int(self.x > 0)], dtype=np.int8)
        return {"pos": np.array([self.x, self.t], np.float32), "phase": self.t % 3, "inner": {"bits": bits}}


class TupleObsEnv(DictObsEnv):
    """DictObsEnv's observations as a Tuple (Box, Discrete, Tuple(MultiBinary))."""

    observation_space = gym.spaces.Tuple(
        (
            DictObsEnv.observation_space["pos"],
            DictObsEnv.observation_space["phase"],
            gym.spaces.Tuple((gym.spaces.MultiBinary(2),)),
        )
    )

    def _obs(self):
        d = super()._obs()
        return d["pos"], d["phase"], (d["inner"]["bits"],)
