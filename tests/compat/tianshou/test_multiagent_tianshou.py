"""fastvec.tianshou_ma_venv against Tianshou's own multi-agent stack: DummyVectorEnv over Tianshou's
PettingZooEnv (the reference of its tic-tac-toe example and its PettingZoo tests), step for step, and the
Collector with a MultiAgentOffPolicyAlgorithm of random policies, on tic-tac-toe (an AEC game) and on mpe2's
simple_spread (its AEC env, and its parallel env turned into one)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from mpe2 import simple_adversary_v3, simple_spread_v3
from pettingzoo.classic.tictactoe import tictactoe as tictactoe_v3  # (the module tictactoe_v3 names, no warning)

import fastvec
from fastvec.adapters.tianshou_ma import TianshouMultiAgentVectorEnv, TurnEnv

tianshou = pytest.importorskip("tianshou")
pytest.importorskip("torch")
from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm  # noqa: E402
from tianshou.data import AsyncCollector, Collector, CollectStats, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv  # noqa: E402
from tianshou.env.pettingzoo_env import PettingZooEnv  # noqa: E402

ENVS = {
    "tictactoe": tictactoe_v3.env,
    "simple_spread": functools.partial(simple_spread_v3.env, max_cycles=5),
    "simple_spread_continuous": functools.partial(simple_spread_v3.env, max_cycles=5, continuous_actions=True),
}


def ours_and_reference(name, n, **kw):
    fn = ENVS[name]
    ours = fastvec.tianshou_ma_venv(fn, n, **kw)
    ref = DummyVectorEnv([lambda: PettingZooEnv(fn())] * n)
    return ours, ref


def assert_same_obs(ours, ref):
    assert ours.dtype == object and len(ours) == len(ref)
    for a, b in zip(ours, ref, strict=True):
        assert sorted(a) == sorted(b)
        assert a["agent_id"] == b["agent_id"]
        np.testing.assert_array_equal(a["obs"], b["obs"])
        assert a["obs"].dtype == b["obs"].dtype
        if "mask" in b:
            np.testing.assert_array_equal(a["mask"], np.asarray(b["mask"]))


def legal_actions(obs, rng):
    """A legal action per env: a masked Discrete one, or a Box one (mpe2's continuous actions, in [0, 1])."""
    if "mask" not in obs[0]:
        return rng.uniform(0, 1, (len(obs), 5)).astype(np.float32)
    return np.array([rng.choice(np.flatnonzero(o["mask"])) for o in obs])


@pytest.mark.parametrize("name", sorted(ENVS))
def test_steps_as_dummy_vector_env_over_pettingzoo_env(name):
    """Seeded alike and given the same actions, every turn gives the same acting agent, observation, mask, every
    agent's rewards, flags and env ids, through episode ends and the resets of the finished envs."""
    n = 3
    ours, ref = ours_and_reference(name, n)
    try:
        assert ours.seed(5) == ref.seed(5)
        o1, i1 = ours.reset()
        o2, i2 = ref.reset()
        assert_same_obs(o1, o2)
        assert list(i1) == list(i2)
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(70):
            act = legal_actions(o1, rng)
            r1, r2 = ours.step(act), ref.step(act)
            assert_same_obs(r1[0], r2[0])
            assert r1[1].shape == r2[1].shape == (n, len(ours.agents)) and r1[1].dtype == np.float64
            np.testing.assert_array_equal(r1[1], r2[1])
            np.testing.assert_array_equal(r1[2], r2[2])
            np.testing.assert_array_equal(r1[3], r2[3])
            assert [d["env_id"] for d in r1[4]] == [d["env_id"] for d in r2[4]] == list(range(n))
            o1 = r1[0]
            done = np.flatnonzero(r1[2] | r1[3])
            if len(done):
                ends += len(done)
                a, _ = ours.reset(done)
                b, _ = ref.reset(done)
                assert_same_obs(a, b)
                o1[done] = a
        assert ends >= n  # the comparison went through episode ends
    finally:
        ours.close()
        ref.close()


@pytest.mark.parametrize("given", ["aec", "tianshou"])
def test_the_venvs_attributes(given):
    """Made from an AEC env or from Tianshou's PettingZooEnv over it (whose own reset and step then run)."""
    fn = tictactoe_v3.env if given == "aec" else lambda: PettingZooEnv(tictactoe_v3.env())
    envs = fastvec.tianshou_ma_venv(fn, 2, num_threads=1)  # one worker (that imports Tianshou and torch)
    try:
        ref = PettingZooEnv(tictactoe_v3.env())
        assert isinstance(envs, TianshouMultiAgentVectorEnv)
        assert envs.agents == ref.agents == ["player_1", "player_2"]
        assert envs.observation_space == [ref.observation_space] * 2
        assert envs.action_space == [ref.action_space] * 2
        obs, _ = envs.reset(seed=0)
        assert obs[0]["agent_id"] == "player_1" and obs[0]["mask"].dtype == bool
        obs, rew, _, _, _ = envs.step(np.array([4, 0]))
        assert [o["agent_id"] for o in obs] == ["player_2"] * 2 and not obs[0]["mask"][4] and not obs[1]["mask"][0]
        assert rew.tolist() == [[0.0, 0.0]] * 2
    finally:
        envs.close()


def random_algorithm(name):
    env = PettingZooEnv(ENVS[name]())
    players = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space) for _ in env.agents]
    return MultiAgentOffPolicyAlgorithm(algorithms=players, env=env)


@pytest.mark.parametrize("name", ["simple_spread", "tictactoe"])
def test_collector_with_random_policies_collects_what_dummy_vector_env_gives(name):
    """Collectors over fastvec's venv and over DummyVectorEnv, each with a MultiAgentOffPolicyAlgorithm of random
    (masked) policies drawing from numpy's global RNG seeded alike, collect the same episodes: the same returns
    per agent, lengths and buffer contents."""
    n = 4
    ours, ref = ours_and_reference(name, n)
    try:
        stats, buffers = [], []
        for venv in (ours, ref):
            venv.seed(11)
            np.random.seed(0)
            buf = VectorReplayBuffer(400, n)
            c = Collector[CollectStats](random_algorithm(name), venv, buf, exploration_noise=True)
            c.reset()
            stats.append(c.collect(n_episode=6))
            buffers.append(buf)
        s1, s2 = stats
        assert s1.n_collected_episodes == s2.n_collected_episodes >= 6
        assert s1.n_collected_steps == s2.n_collected_steps
        np.testing.assert_array_equal(s1.lens, s2.lens)
        assert s1.returns.shape == s2.returns.shape == (s1.n_collected_episodes, len(ours.agents))
        np.testing.assert_array_equal(s1.returns, s2.returns)
        b1, b2 = buffers
        assert len(b1) == len(b2) == s1.n_collected_steps
        np.testing.assert_array_equal(b1.obs.agent_id, b2.obs.agent_id)
        np.testing.assert_array_equal(b1.obs.obs, b2.obs.obs)
        np.testing.assert_array_equal(b1.obs.mask, b2.obs.mask)
        np.testing.assert_array_equal(b1.act, b2.act)
        np.testing.assert_array_equal(b1.rew, b2.rew)
        np.testing.assert_array_equal(b1.terminated, b2.terminated)
    finally:
        ours.close()
        ref.close()


def test_async_collector_with_wait_num():
    """batch_size=k is Tianshou's wait_num: the AsyncCollector takes the venv and collects whole tic-tac-toe
    games (each at most nine turns, a winner's reward +1 and the loser's -1, or a draw)."""
    envs = fastvec.tianshou_ma_venv(tictactoe_v3.env, 4, batch_size=2, seed=0)
    try:
        assert envs.is_async and envs.wait_num == 2
        np.random.seed(0)
        with pytest.warns(UserWarning, match="async"):  # (Tianshou's, over any async venv)
            c = AsyncCollector(random_algorithm("tictactoe"), envs, VectorReplayBuffer(400, 4), exploration_noise=True)
        c.reset()
        stats = c.collect(n_episode=8)
        assert stats.n_collected_episodes >= 8
        assert ((stats.lens >= 5) & (stats.lens <= 9)).all()
        assert set(map(tuple, stats.returns.tolist())) <= {(1.0, -1.0), (-1.0, 1.0), (0.0, 0.0)}
    finally:
        envs.close()


def test_a_parallel_env_is_taken_turn_by_turn():
    """A ParallelEnv is stepped as PettingZoo's parallel_to_aec steps it (as PettingZooEnv users wrap one): on
    mpe2's simple_spread, the same turns as its AEC env."""
    n = 2
    ours = fastvec.tianshou_ma_venv(functools.partial(simple_spread_v3.parallel_env, max_cycles=10), n)
    ref = DummyVectorEnv([lambda: PettingZooEnv(simple_spread_v3.env(max_cycles=10))] * n)
    try:
        ours.seed(2), ref.seed(2)
        o1, _ = ours.reset()
        o2, _ = ref.reset()
        assert_same_obs(o1, o2)
        for t in range(12):
            act = np.full(n, t % 5)
            r1, r2 = ours.step(act), ref.step(act)
            assert_same_obs(r1[0], r2[0])
            np.testing.assert_allclose(r1[1], r2[1])
    finally:
        ours.close()
        ref.close()


def test_bad_input_is_refused_naming_it():
    with pytest.raises(TypeError, match="takes a callable returning a PettingZoo env"):
        fastvec.tianshou_ma_venv("tictactoe_v3", 2)
    with pytest.raises(TypeError, match="num_envs is needed"):
        fastvec.tianshou_ma_venv(tictactoe_v3.env)
    with pytest.raises(ValueError, match="autoreset_mode='same_step'"):
        fastvec.tianshou_ma_venv(tictactoe_v3.env, 2, autoreset_mode="next_step")
    with pytest.raises(TypeError, match=r"multi-agent envs: .* fastvec.tianshou_ma_venv\(env_fn, num_envs\)"):
        fastvec.tianshou_venv(functools.partial(simple_spread_v3.parallel_env, max_cycles=5), 2)
    with pytest.raises(TypeError, match="AECEnv or ParallelEnv"):
        TurnEnv(lambda: object())
    with pytest.raises(ValueError, match="observation space equal: agent 'adversary_0'"):
        TurnEnv(simple_adversary_v3.env)
