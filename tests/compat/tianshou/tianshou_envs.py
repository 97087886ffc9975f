"""Envs for tests/compat/tianshou/test_adapter_tianshou.py, in a module of their own: a worker process of the
Python-env pool imports the module that defines an env class, and this one imports no Tianshou (nor torch)."""

from __future__ import annotations

import copy
import random
import time

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


class MyTestEnv(gym.Env):
    """Tianshou's test env (its ``test/base/env.py``), rewritten: walk right from index 0 to ``size``.

    Action 1 moves right, 0 left (not below 0); reaching ``size`` terminates with reward 1 (reward 0
    otherwise); a step after that raises. Each reset and step sleeps ``sleep`` seconds (times a uniform draw
    if ``random_sleep``). The observation is ``[index]`` in ``Box((1,), 0, size - 1)``; ``dict_state``:
    ``{"index", "rand"}``; ``recurse_state``: ``{"index", "dict": {"tuple": (array([1]), rand(2)),
    "rand": rand(1, 2)}}``; ``array_state``: a (4, 84, 84) image of the index. Infos are ``{"key": 1,
    "env": self}`` (``{}`` for the step after reaching ``size``), as in Tianshou's newer version of the env (the
    older gave ``{}`` for a step left, which Batch.cat in test_async_env cannot join with the others).
    """

    def __init__(self, size, sleep=0.0, dict_state=False, recurse_state=False, random_sleep=False, array_state=False):
        assert dict_state + recurse_state + array_state <= 1
        self.size, self.sleep, self.random_sleep = size, sleep, random_sleep
        self.dict_state, self.recurse_state, self.array_state = dict_state, recurse_state, array_state
        index = gym.spaces.Box(0, size - 1, (1,))
        rand = gym.spaces.Box(0, 1, (1,), np.float64)
        if dict_state:
            self.observation_space = gym.spaces.Dict({"index": index, "rand": rand})
        elif recurse_state:
            pair = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (2,), np.float64)))
            inner = gym.spaces.Dict({"tuple": pair, "rand": gym.spaces.Box(0, 1, (1, 2), np.float64)})
            self.observation_space = gym.spaces.Dict({"index": index, "dict": inner})
        elif array_state:
            self.observation_space = gym.spaces.Box(0, 255, (4, 84, 84))
        else:
            self.observation_space = index
        self.action_space = gym.spaces.Discrete(2)
        self.steps, self.index, self.terminated = 0, 0, False

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.terminated = False
        self._sleep()
        self.index = 0 if options is None else options["state"]
        return self._state(), {"key": 1, "env": self}

    def step(self, action):
        self.steps += 1
        if self.terminated:
            raise ValueError("step after done !!!")
        self._sleep()
        if self.index == self.size:
            self.terminated = True
            return self._state(), int(self.terminated), True, False, {}
        if action == 0:
            self.index = max(self.index - 1, 0)
            return self._state(), int(self.terminated), False, False, {"key": 1, "env": self}
        if action != 1:
            raise ValueError(f"Invalid action {action}")
        self.index += 1
        self.terminated = self.index == self.size
        return self._state(), int(self.terminated), self.terminated, False, {"key": 1, "env": self}

    def _sleep(self):
        if self.sleep > 0:
            time.sleep(self.sleep * (random.random() if self.random_sleep else 1))

    def _state(self):
        index = np.array([self.index], dtype=np.float32)
        if self.dict_state:
            return {"index": index, "rand": self.np_random.random(1)}
        if self.recurse_state:
            pair = (np.array([1], dtype=int), self.np_random.random(2))
            return {"index": index, "dict": {"tuple": pair, "rand": self.np_random.random((1, 2))}}
        if self.array_state:
            img = np.zeros((4, 84, 84), int)
            diag = np.arange(84)
            img[3, diag, diag] = self.index
            img[2, diag] = self.index
            img[1, :, diag] = self.index
            img[0] = self.index
            return img
        return index


class NXEnv(gym.Env):
    """Tianshou's NXEnv, rewritten: ``size`` nodes of random features, observed as an array of shape
    (size, feat_dim) (``obs_type="array"``) or as a networkx graph (``"object"``); it has no observation space."""

    def __init__(self, size, obs_type, feat_dim=32):
        import networkx as nx

        assert obs_type in ("array", "object")
        self.size, self.obs_type, self.feat_dim = size, obs_type, feat_dim
        self.graph = nx.Graph()
        self.graph.add_nodes_from(range(size))

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._refresh()
        return self._obs(), {}

    def step(self, action):
        self._refresh()
        return self._obs(), 1.0, False, False, {}

    def _refresh(self):
        for i, row in enumerate(np.random.rand(self.size, self.feat_dim)):
            self.graph.nodes[i]["data"] = row

    def _obs(self):
        if self.obs_type == "array":
            return np.stack([v["data"] for v in self.graph.nodes.values()])
        return copy.deepcopy(self.graph)


class EchoActionEnv(gym.Env):
    """Tianshou's test_gym_wrappers env with a reset: Box(-1, 2, (4,)) actions, each observed as it came (so a
    wrapper's conversion shows), reward -1, every episode truncated after ``length`` steps."""

    action_space = gym.spaces.Box(-1.0, 2.0, (4,), np.float32)
    observation_space = gym.spaces.Box(-1.0, 2.0, (4,), np.float32)

    def __init__(self, length=1):
        self.length = length

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.asarray(action, np.float32), -1.0, False, self.t >= self.length, {}


def wrapped_echo_env():
    """EchoActionEnv in Tianshou's wrappers: TruncatedAsTerminated(MultiDiscreteToDiscrete(ContinuousToDiscrete(
    env, [4, 6, 10, 7]))). (One env with all three: a worker that makes it imports Tianshou, and torch, once.)"""
    from tianshou.env import ContinuousToDiscrete, MultiDiscreteToDiscrete
    from tianshou.env.gym_wrappers import TruncatedAsTerminated

    return TruncatedAsTerminated(MultiDiscreteToDiscrete(ContinuousToDiscrete(EchoActionEnv(), [4, 6, 10, 7])))
