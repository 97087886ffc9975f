"""Tianshou's EnvPool path (``tianshou.highlevel.env.EnvPoolFactory``, which its ``examples/atari`` scripts use
when ``envpool`` is installed) with ``fastvec.envpool`` as ``envpool``, beside EnvPool 1.2.5 itself: the envs it
makes are sized with ``len(training_envs)`` (the highlevel API's replay buffer), and a Collector steps them."""

from __future__ import annotations

import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import fastvec.envpool

pytest.importorskip("tianshou")
from tianshou.algorithm.algorithm_base import Policy
from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer
from tianshou.highlevel.env import EnvFactoryRegistered, EnvPoolFactory, VectorEnvType

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # EnvPool's own import warns about its optional backends
    import envpool

# Tianshou stacks the infos of EnvPool's envs and warns that it falls back to object arrays, over EnvPool 1.2.5
# itself as over fastvec.envpool; EnvPool builds its Box spaces lazily, from float64 bounds, and gymnasium warns.
pytestmark = [
    pytest.mark.versions,
    pytest.mark.filterwarnings("ignore:.*precision lowered by casting to float32:UserWarning"),
    pytest.mark.filterwarnings("ignore:You are using tensors with different shape:UserWarning"),
]


class _FirstAction(Policy):
    """Always action 0 (CartPole: pushed left, it falls in 8 to 11 steps)."""

    def forward(self, batch, state=None, **kwargs):
        return Batch(act=np.zeros(len(batch.obs), dtype=np.int64))


@pytest.mark.parametrize("module", [envpool, fastvec.envpool], ids=["envpool", "fastvec.envpool"])
def test_tianshou_envpool_factory(module, monkeypatch):
    """EnvPoolFactory.create_venv does ``import envpool``: the module in its place makes the training and test
    envs; ``len()`` of each is its number of envs, the replay buffer is sized by it as Tianshou's highlevel
    ``create_training_and_test_collectors`` sizes it, and a Collector collects whole CartPole episodes."""
    monkeypatch.setitem(sys.modules, "envpool", module)
    factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY, envpool_factory=EnvPoolFactory())
    envs = factory.create_envs(4, 2)
    training_envs = envs.training_envs
    assert len(training_envs) == 4 and len(envs.test_envs) == 2
    collector = Collector[CollectStats](
        _FirstAction(gym.spaces.Discrete(2)), training_envs, VectorReplayBuffer(2000, len(training_envs))
    )
    collector.reset()
    stats = collector.collect(n_step=200)
    assert stats.n_collected_steps >= 200 and stats.n_collected_episodes >= 12
    assert np.all((stats.lens >= 8) & (stats.lens <= 11)) and np.array_equal(stats.returns, stats.lens)
    training_envs.close()
    envs.test_envs.close()
