"""Determinism: a trajectory depends on the seed and the actions only, not on threads, blocks or
whether the pool runs synchronously or asynchronously."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import FIXED_START_IDS, SEEDLESS_IDS, env_ids_under_test

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

ENV_IDS = env_ids_under_test()
N = 8
STEPS = 400
MAX_EPISODE_STEPS = 150  # several episode ends (and autoresets) per env within STEPS


def _action(space: gym.Space, env_id: int, step: int):
    """A deterministic action for env ``env_id`` at its ``step``-th step (a hash of both)."""
    h = (env_id * 2654435761 + step * 40503 + (step // 7) * 97) % 1000003
    if isinstance(space, gym.spaces.Discrete):
        return (h >> 3) % int(space.n)
    # a sweep through [-1.5, 1.5] x the bound: some actions outside the space, to exercise clipping
    value = (h / 1000003.0 * 3.0 - 1.5) * space.high
    return value.astype(np.float32)


def _actions(space: gym.Space, ids, steps) -> np.ndarray:
    return np.stack([np.asarray(_action(space, int(i), int(s))) for i, s in zip(ids, steps, strict=True)])


def _flat(obs: np.ndarray | dict[str, np.ndarray] | tuple[np.ndarray, ...]) -> np.ndarray:
    """The observations as one array, a row per env: a Dict's fields (dm_control's, one dtype) or a Tuple's
    (Blackjack's) concatenated in their order, which exact comparisons see through (every field compared, none
    converted)."""
    if not isinstance(obs, (dict, tuple)):
        return obs
    fields = list(obs.values()) if isinstance(obs, dict) else list(obs)
    assert len({f.dtype for f in fields}) == 1 and len({len(f) for f in fields}) == 1
    return np.concatenate([f.reshape(len(f), -1) for f in fields], axis=1)


def _sync_rollout(env_id: str, seed: int | list[int], steps: int = STEPS, **make_kwargs) -> dict[str, np.ndarray]:
    """Per-env trajectories (env, time, ...) of a synchronous pool; time 0 is the reset."""
    env = fastvec.make(env_id, N, max_episode_steps=MAX_EPISODE_STEPS, **make_kwargs)
    obs, info = env.reset(seed=seed)
    assert "env_id" not in info  # sync: rows in env order (test_pool checks the order)
    out = {
        "obs": [_flat(obs)],
        "reward": [np.zeros(N, np.float32)],
        "terminated": [np.zeros(N, bool)],
        "truncated": [np.zeros(N, bool)],
    }
    for t in range(steps):
        obs, reward, terminated, truncated, info = env.step(_actions(env.single_action_space, range(N), [t] * N))
        assert "env_id" not in info
        for key, value in zip(out, (_flat(obs), reward, terminated, truncated), strict=True):
            out[key].append(value)
    env.close()
    return {k: np.stack(v, axis=1) for k, v in out.items()}


def _async_rollout(env_id: str, seed: int, batch_size: int, steps: int = STEPS, **make_kwargs) -> dict[str, np.ndarray]:
    """The same per-env trajectories from an asynchronous pool: every env is driven by the same
    function of (env_id, its own step count), and results are reassembled by ``info["env_id"]``."""
    env = fastvec.make(env_id, N, batch_size=batch_size, max_episode_steps=MAX_EPISODE_STEPS, **make_kwargs)
    records: list[list[tuple]] = [[] for _ in range(N)]
    env.async_reset(seed=seed)
    while min(len(r) for r in records) < steps + 1:
        obs, reward, terminated, truncated, info = env.recv()
        obs = _flat(obs)
        ids = info["env_id"]
        assert len(ids) == batch_size and len(set(ids.tolist())) == batch_size
        for row, i in enumerate(ids):
            records[i].append((obs[row], reward[row], terminated[row], truncated[row]))
        # records[i] holds the reset plus the steps so far: the next one is step len(records[i]) - 1
        env.send(_actions(env.single_action_space, ids, [len(records[i]) - 1 for i in ids]), ids)
    env.close()
    keys = ("obs", "reward", "terminated", "truncated")
    return {k: np.stack([np.stack([r[j] for r in rec[: steps + 1]]) for rec in records]) for j, k in enumerate(keys)}


def _assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _assert_meaningful(traj: dict[str, np.ndarray]) -> None:
    """The trajectories compared must include episode ends (so autoresets are compared too)."""
    assert (traj["terminated"] | traj["truncated"]).sum(axis=1).min() >= 2
    assert not np.all(traj["obs"][:, 1:] == traj["obs"][:, :1])


@pytest.fixture(scope="module")
def baselines() -> dict[str, dict[str, np.ndarray]]:
    return {env_id: _sync_rollout(env_id, 2024, num_threads=1, block_size=1) for env_id in ENV_IDS}


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("num_threads", [1, 2, 4])
@pytest.mark.parametrize("block_size", [1, 2, N])
def test_sync_independent_of_threads_and_blocks(baselines, env_id, num_threads, block_size):
    traj = _sync_rollout(env_id, 2024, num_threads=num_threads, block_size=block_size)
    _assert_meaningful(traj)
    _assert_same(traj, baselines[env_id])


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sync_default_threads_and_blocks(baselines, env_id):
    _assert_same(_sync_rollout(env_id, 2024), baselines[env_id])


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(
    ("batch_size", "num_threads", "block_size"),
    [(4, 1, 1), (4, 2, 2), (4, 4, 4), (2, 2, 1), (2, 4, 2), (6, 4, 2), (1, 2, 1), (4, 2, None)],
)
def test_async_matches_sync(baselines, env_id, batch_size, num_threads, block_size):
    traj = _async_rollout(env_id, 2024, batch_size, num_threads=num_threads, block_size=block_size)
    _assert_same(traj, baselines[env_id])


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_trajectory(baselines, env_id):
    _assert_same(_sync_rollout(env_id, 2024, num_threads=2), baselines[env_id])
    by_list = _sync_rollout(env_id, [7 + i for i in range(N)])
    _assert_same(_sync_rollout(env_id, [7 + i for i in range(N)], num_threads=4, block_size=2), by_list)
    # make(seed=s) + reset() is the same as reset(seed=s) on a pool made with another seed
    env_a = fastvec.make(env_id, N, seed=99)
    env_b = fastvec.make(env_id, N, seed=1)
    np.testing.assert_array_equal(_flat(env_a.reset()[0]), _flat(env_b.reset(seed=99)[0]))


@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if e not in SEEDLESS_IDS])
def test_different_seeds_different_trajectories(baselines, env_id):
    other = _sync_rollout(env_id, 2025, steps=50)
    base = baselines[env_id]
    if fastvec.registry.lookup(env_id).rom or env_id in FIXED_START_IDS:
        # An Atari game starts on the same screen whatever the seed (FrozenLake and CliffWalking on their start
        # tile): seeds show in the noop starts and sticky actions (the slippery ice), so compare whole
        # trajectories.
        assert all(not np.array_equal(other["obs"][i], base["obs"][i, :51]) for i in range(N))
        assert len({base["obs"][i].tobytes() for i in range(N)}) == N
        by_list = _sync_rollout(env_id, [5 + i for i in range(N)], steps=50)["obs"]
        assert all(not np.array_equal(by_list[i], other["obs"][i]) for i in range(N))
        return
    # every env starts elsewhere, and within a pool the envs start in different states
    assert np.all(np.any(other["obs"][:, 0] != base["obs"][:, 0], axis=-1))
    assert len({row.tobytes() for row in base["obs"][:, 0]}) == N
    assert not np.array_equal(other["obs"], base["obs"][:, :51])
    # list seeds: equal seeds give equal start states, different seeds different ones
    obs = _flat(fastvec.make(env_id, N).reset(seed=[5, 5, 6, 6, 7, 7, 8, 8])[0])
    np.testing.assert_array_equal(obs[0::2], obs[1::2])
    assert len({row.tobytes() for row in obs[0::2]}) == N // 2
