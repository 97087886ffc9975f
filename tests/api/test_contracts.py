"""The vector-env contracts fastvec stands in for, checked against the classes it replaces on the same envs:
gymnasium's SyncVectorEnv (seeding, infos) and SB3's DummyVecEnv (per-env infos, reset infos)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)


class Counter(gym.Env):
    """Ends after a random 3-6 steps (from its seeded generator); reports its own info keys, some only on
    some steps, so that gymnasium's masks matter."""

    observation_space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.horizon = 0, int(self.np_random.integers(3, 7))
        return self._obs(), {"horizon": self.horizon}

    def step(self, action):
        self.t += 1
        info = {"t": self.t}
        if self.t % 2 == 0:
            info["even"] = True
        done = self.t >= self.horizon
        if done:
            info["is_success"] = bool(action)
        return self._obs(), float(self.t), done, False, info

    def _obs(self):
        return np.array([self.t, self.horizon], np.float32)


def assert_same_info(ours, theirs, path="info"):
    assert sorted(ours) == sorted(theirs), f"{path}: {sorted(ours)} != {sorted(theirs)}"
    for key, value in theirs.items():
        if isinstance(value, dict):
            assert_same_info(ours[key], value, f"{path}[{key!r}]")
        elif np.asarray(value).dtype == object:
            for a, b in zip(ours[key], value, strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=f"{path}[{key!r}]")
        else:
            np.testing.assert_array_equal(ours[key], value, err_msg=f"{path}[{key!r}]")
            assert np.asarray(ours[key]).dtype == np.asarray(value).dtype, f"{path}[{key!r}] dtype"


# -- seeding: gymnasium's convention, in both pools --------------------------------


@pytest.mark.parametrize("backend", ["native", "python"])
def test_int_seed_seeds_env_i_with_seed_plus_i_as_gymnasium(backend):
    n = 6
    reference = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n)
    env = fastvec.make("CartPole-v1", n, backend=backend)
    try:
        for seed in (0, 123, 2**40 + 5):
            ours, info = env.reset(seed=seed)
            theirs, their_info = reference.reset(seed=seed)
            np.testing.assert_array_equal(ours, theirs)
            assert info == their_info == {}
        ours, _ = env.reset(seed=[7, None, 9, 7, 8, 9])
        np.testing.assert_array_equal(ours[0], ours[3])
        np.testing.assert_array_equal(ours[2], reference.reset(seed=[9] * n)[0][0])
    finally:
        env.close()
        reference.close()


@pytest.mark.parametrize("backend", ["native", "python"])
def test_make_seed_seeds_each_envs_first_reset(backend):
    n = 4
    reference = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n)
    expected, _ = reference.reset(seed=11)
    reference.close()
    with fastvec.make("CartPole-v1", n, seed=11, backend=backend) as env:
        np.testing.assert_array_equal(env.reset()[0], expected)
        assert not np.array_equal(env.reset()[0], expected)  # the next reset continues the streams
    with fastvec.make("CartPole-v1", n, seed=11, batch_size=2, backend=backend) as env:
        env.async_reset()
        rows = [env.recv() for _ in range(2)]
        obs = np.concatenate([r[0] for r in rows])[np.argsort(np.concatenate([r[4]["env_id"] for r in rows]))]
        np.testing.assert_array_equal(obs, expected)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_partial_reset_takes_seeds_as_gymnasium(backend):
    n = 4
    mask = np.array([True, False, True, False])
    reference = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n, autoreset_mode=AutoresetMode.DISABLED)
    env = fastvec.make("CartPole-v1", n, autoreset_mode="disabled", backend=backend)
    try:
        env.reset(seed=0)
        reference.reset(seed=0)
        for seed in (5, [5, 6, 7, 8]):
            ours, _ = env.reset(seed=seed, options={"reset_mask": mask})
            theirs, _ = reference.reset(seed=seed, options={"reset_mask": mask})
            np.testing.assert_array_equal(ours[mask], theirs[mask])
        ours, _ = env.reset(seed=5, options={"env_id": [2]})  # an int: env i gets seed + i
        np.testing.assert_array_equal(ours[0], gym.make("CartPole-v1").reset(seed=7)[0])
        with pytest.raises(ValueError, match=r"one per env \(4\), got 2"):
            env.reset(seed=[1, 2], options={"reset_mask": mask})
        with pytest.raises(ValueError, match=r"one per env reset \(1\), got 2"):
            env.reset(seed=[1, 2], options={"env_id": [2]})
    finally:
        env.close()
        reference.close()


def test_int_seed_that_would_pass_2_64_is_refused_and_the_pool_goes_on():
    with fastvec.make("CartPole-v1", 4) as env:
        with pytest.raises(ValueError, match=r"seed \+ i.*at most 18446744073709551612 for 4 envs"):
            env.reset(seed=2**64 - 2)
        assert env.reset(seed=2**64 - 4)[0].shape == (4, 4)


# -- infos: gymnasium's, plus fastvec's keys only where asked for -----------------


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_info_is_what_gymnasiums_vector_env_builds(mode):
    n, steps = 3, 14
    reference = SyncVectorEnv([Counter] * n, autoreset_mode=mode)
    env = fastvec.make([Counter] * n, autoreset_mode=mode)
    rng = np.random.default_rng(0)
    try:
        ours, info = env.reset(seed=4)
        theirs, their_info = reference.reset(seed=4)
        np.testing.assert_array_equal(ours, theirs)
        assert_same_info(info, their_info)
        for _ in range(steps):
            actions = rng.integers(0, 2, n)
            ours = env.step(actions)
            theirs = reference.step(actions)
            for a, b in zip(ours[:4], theirs[:4], strict=True):
                np.testing.assert_array_equal(a, b)
            assert_same_info(ours[4], theirs[4])
    finally:
        env.close()
        reference.close()


def test_native_sync_info_is_empty_and_episode_stats_are_asked_for():
    with fastvec.make("CartPole-v1", 4, seed=0) as env:
        env.reset()
        for _ in range(60):
            info = env.step(np.ones(4, np.int64))[4]
            assert info == {}
    with fastvec.make("CartPole-v1", 4, seed=0, episode_stats=True) as env:
        env.reset()
        ended = 0
        for _ in range(60):
            _, _, term, trunc, info = env.step(np.ones(4, np.int64))
            if (term | trunc).any():
                mask = info["_episode_return"]
                np.testing.assert_array_equal(mask, term | trunc)
                assert (info["episode_length"][mask] > 0).all()
                ended += 1
            else:
                assert "episode_return" not in info
        assert ended
        assert env.episode_stats
    with pytest.raises(TypeError, match="episode_stats must be a bool"):
        fastvec.make("CartPole-v1", 4, episode_stats=1)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_env_id_is_in_async_infos_only(backend):
    with fastvec.make("CartPole-v1", 4, batch_size=2, seed=0, backend=backend) as env:
        env.async_reset()
        _, _, _, _, info = env.recv()
        assert info["env_id"].shape == (2,)
        obs, info = env.reset()
        assert info["env_id"].tolist() == [0, 1, 2, 3]
    with fastvec.make("CartPole-v1", 4, seed=0, backend=backend) as env:
        assert "env_id" not in env.reset()[1]
        assert "env_id" not in env.step(np.zeros(4, np.int64))[4]


# -- SB3: each env's info, as DummyVecEnv gives it -----------------------------------


def test_sb3_infos_and_reset_infos_are_dummy_vec_envs():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    n = 3
    reference = DummyVecEnv([Counter] * n)
    env = fastvec.sb3_vec([Counter] * n, monitor=False)
    try:
        reference.seed(2)
        env.seed(2)
        np.testing.assert_array_equal(env.reset(), reference.reset())
        assert env.reset_infos == reference.reset_infos
        rng = np.random.default_rng(1)
        for _ in range(12):
            actions = rng.integers(0, 2, n)
            ours = env.step(actions)
            theirs = reference.step(actions)
            for a, b in zip(ours[:3], theirs[:3], strict=True):
                np.testing.assert_array_equal(a, b)
            for mine, ref in zip(ours[3], theirs[3], strict=True):
                assert sorted(mine) == sorted(ref)
                for key, value in ref.items():
                    np.testing.assert_array_equal(mine[key], value, err_msg=key)
            assert env.reset_infos == reference.reset_infos
    finally:
        env.close()
        reference.close()
