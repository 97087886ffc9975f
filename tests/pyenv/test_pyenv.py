"""The Python-env pool: results identical to gymnasium's SyncVectorEnv, async ordering, Dict/Tuple
spaces, every start method, and failure paths (an env that raises, a killed worker, close during a
step, leaked processes or shared memory)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest

import fastvec
from fastvec.pyenv import EnvError, WorkerDiedError
from fastvec.vector import PyVectorEnv

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

MODES = {
    "next_step": gym.vector.AutoresetMode.NEXT_STEP,
    "same_step": gym.vector.AutoresetMode.SAME_STEP,
    "disabled": gym.vector.AutoresetMode.DISABLED,
}


class CountEnv(gym.Env):
    """obs = [steps since reset, last action]; reward = action; ends after ``episode_length`` steps;
    raises at step ``throw_at``; sleeps ``sleep`` seconds a step (only for close-during-a-step)."""

    def __init__(self, episode_length: int = 1_000_000, throw_at: int = -1, sleep: float = 0.0) -> None:
        self.observation_space = gym.spaces.Box(0, 1e9, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.episode_length, self.throw_at, self.sleep = episode_length, throw_at, sleep
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == self.throw_at:
            raise ValueError(f"CountEnv asked to throw at step {self.t}")
        if self.sleep:
            time.sleep(self.sleep)
        obs = np.array([self.t, action], np.float32)
        return obs, float(action), self.t >= self.episode_length, False, {}


class StructEnv(gym.Env):
    """Dict observations, Tuple actions, random episode ends and infos of every kind."""

    def __init__(self, scale: float = 1.0) -> None:
        self.observation_space = gym.spaces.Dict(
            {
                "pos": gym.spaces.Box(-10, 10, (3,), np.float32),
                "mode": gym.spaces.Discrete(3),
                "bits": gym.spaces.MultiBinary(4),
                "pair": gym.spaces.Tuple((gym.spaces.MultiDiscrete([3, 5]), gym.spaces.Box(0, 1, (2, 2), np.float64))),
            }
        )
        self.action_space = gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,), np.float32)))
        self.scale = scale

    def _obs(self):
        r = self.np_random
        return {
            "pos": (r.uniform(-1, 1, 3) * self.scale).astype(np.float32),
            "mode": int(r.integers(3)),
            "bits": r.integers(0, 2, 4).astype(np.int8),
            "pair": (r.integers(0, [3, 5]).astype(np.int64), r.uniform(0, 1, (2, 2))),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._obs(), {"phase": "reset", "level": int(self.np_random.integers(10))}

    def step(self, action):
        kind, push = action
        info = {"push": np.asarray(push, np.float32).copy(), "kind": int(kind)}
        if kind == 2:
            info["note"] = "two"
        end = self.np_random.uniform() < 0.08
        return self._obs(), float(kind) + float(push.sum()), end, False, info


def count_env(num_envs=4, env=None, **kw):
    env = env or {}
    return fastvec.make(lambda: CountEnv(**env), num_envs, start_method="fork", **{"episode_stats": True, **kw})


def assert_tree_equal(a, b, path="obs"):
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys {a.keys()} vs {b.keys()}"
        for key in a:
            assert_tree_equal(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_tree_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert b.dtype == object and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x is None or y is None:
                assert x is None and y is None, f"{path}[{i}]"
            else:
                assert_tree_equal(x, y, f"{path}[{i}]")
    else:
        np.testing.assert_array_equal(a, b, err_msg=path)
        assert np.asarray(a).dtype == np.asarray(b).dtype, f"{path}: {np.asarray(a).dtype} vs {np.asarray(b).dtype}"


def worker_is_gone(pid: int) -> bool:
    """Neither running nor a zombie nobody reaped."""
    return not os.path.exists(f"/proc/{pid}")


# -- identical to gymnasium's SyncVectorEnv ----------------------------------------


def _compare_with_sync_vector_env(make_env, mode, actions_fn, n=4, steps=120, compare_infos=True, **kw):
    ref = gym.vector.SyncVectorEnv([make_env] * n, autoreset_mode=MODES[mode])
    env = fastvec.make([make_env] * n, autoreset_mode=mode, start_method="fork", **kw)
    with env:
        assert env.single_observation_space == ref.single_observation_space
        assert env.single_action_space == ref.single_action_space
        ref_obs, ref_info = ref.reset(seed=11)
        obs, info = env.reset(seed=11)  # both seed env i with seed + i
        assert_tree_equal(obs, ref_obs)
        if compare_infos:
            assert_tree_equal(info, ref_info, "reset info")
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(steps):
            actions = actions_fn(rng, n)
            ref_obs, ref_rew, ref_term, ref_trunc, ref_info = ref.step(actions)
            obs, rew, term, trunc, info = env.step(actions)
            assert_tree_equal(obs, ref_obs)
            np.testing.assert_array_equal(rew, ref_rew)
            np.testing.assert_array_equal(term, ref_term)
            np.testing.assert_array_equal(trunc, ref_trunc)
            assert rew.dtype == ref_rew.dtype == np.float64 and term.dtype == np.bool_
            done = term | trunc
            ends += done.sum()
            if compare_infos:
                assert_tree_equal(info, ref_info, "info")  # the same keys, masks and values: nothing of fastvec's
            elif mode == "same_step" and done.any():
                assert_tree_equal(info["final_obs"], ref_info["final_obs"], "final_obs")
            if mode == "disabled" and done.any():
                ref_obs, _ = ref.reset(options={"reset_mask": done})
                obs, _ = env.reset(options={"reset_mask": done.copy()})
                assert_tree_equal(obs, ref_obs)
    ref.close()
    assert ends > 5


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_cartpole_matches_sync_vector_env(mode):
    def make_env():
        return gym.make("CartPole-v1", max_episode_steps=25)

    _compare_with_sync_vector_env(make_env, mode, lambda rng, n: rng.integers(0, 2, n), num_workers=2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_dict_and_tuple_spaces_and_infos_match_sync_vector_env(mode):
    def actions(rng, n):
        return (rng.integers(0, 3, n), rng.uniform(-1, 1, (n, 2)).astype(np.float32))

    _compare_with_sync_vector_env(StructEnv, mode, actions, n=3, steps=80, num_workers=2)


@pytest.mark.timeout(60)
def test_gymnasium_ids_run_in_the_python_pool_with_backend_python():
    # (Blackjack-v1 is native too now: backend="python" picks gymnasium's env in the Python-env pool)
    env = fastvec.make("Blackjack-v1", 4, seed=0, backend="python", start_method="fork", episode_stats=True)
    assert isinstance(env, PyVectorEnv)
    obs, info = env.reset()
    assert isinstance(obs, tuple) and obs[0].shape == (4,) and obs[0].dtype == np.int64
    obs, rew, term, trunc, info = env.step(np.zeros(4, dtype=np.int64))
    assert term.all()  # "stick" ends every hand
    assert np.isin(info["episode_return"], [-1.0, 0.0, 1.0, 1.5]).all()
    env.close()
    env = fastvec.make("CartPole-v1", 2, backend="python", start_method="fork")
    assert isinstance(env, PyVectorEnv) and env.max_episode_steps == 500
    env.close()
    with pytest.raises(ValueError, match="did you mean 'CartPole-v1'"):
        fastvec.make("Cartpole-v1")
    assert isinstance(fastvec.make("CartPole-v1", 2), fastvec.VectorEnv)


# -- async coverage and ordering ------------------------------------------------


@pytest.mark.timeout(60)
def test_async_serves_every_env_with_the_right_actions():
    env = count_env(num_envs=8, batch_size=3, num_workers=2)
    env.async_reset()
    steps = np.zeros(8, dtype=int)
    for _ in range(300):
        obs, rew, term, trunc, info = env.recv()
        ids = info["env_id"]
        assert len(ids) == 3 and len(set(ids.tolist())) == 3
        np.testing.assert_array_equal(obs[:, 0], steps[ids])
        if steps[ids].min() > 0:
            np.testing.assert_array_equal(obs[:, 1], ids % 4)
            np.testing.assert_array_equal(rew, (ids % 4).astype(np.float32))
        steps[ids] += 1
        env.send(ids % 4, ids)
    assert steps.min() > 20 and steps.sum() == 900
    env.close()


@pytest.mark.timeout(60)
def test_async_trajectories_equal_sync_ones():
    def make_env():
        return gym.make("CartPole-v1", max_episode_steps=30)

    def policy(e, t):
        return (e * 7 + t * 3 + t // 5) % 2

    n, steps = 6, 80
    sync = fastvec.make([make_env] * n, seed=3, start_method="fork", num_workers=2)
    sync.reset()
    want = [[] for _ in range(n)]
    for t in range(steps):
        obs, rew, *_ = sync.step(np.array([policy(e, t) for e in range(n)]))
        for e in range(n):
            want[e].append((obs[e], rew[e]))
    sync.close()
    env = fastvec.make([make_env] * n, seed=3, batch_size=4, start_method="fork", num_workers=2)
    env.async_reset()
    got = [[] for _ in range(n)]
    while min(len(g) for g in got) < steps + 1:
        obs, rew, _, _, info = env.recv()
        ids = info["env_id"]
        for row, e in enumerate(ids.tolist()):
            got[e].append((obs[row], rew[row]))
        env.send(np.array([policy(e, len(got[e]) - 1) for e in ids.tolist()]), ids)
    env.close()
    for e in range(n):
        for (o1, r1), (o2, r2) in zip(want[e], got[e][1 : steps + 1], strict=True):
            np.testing.assert_array_equal(o1, o2)
            assert r1 == r2


@pytest.mark.timeout(60)
def test_async_usage_errors_and_reset_in_async_mode():
    env = count_env(num_envs=5, batch_size=2, num_workers=2)
    with pytest.raises(RuntimeError, match="recv"):
        env.recv()
    env.async_reset()
    ids = env.recv()[4]["env_id"]
    env.send([1, 1], ids)
    with pytest.raises(RuntimeError, match="not awaiting"):
        env.send([0], ids[:1])
    with pytest.raises(ValueError, match="out of range"):
        env.send([0], [5])
    with pytest.raises(ValueError, match="twice"):
        env.send([0, 0], [4, 4])
    obs, info = env.reset()  # waits for what is in flight, then resets every env
    np.testing.assert_array_equal(info["env_id"], np.arange(5))
    assert obs[:, 0].tolist() == [0] * 5
    env.close()


@pytest.mark.timeout(60)
def test_recv_rest_and_async_reset_of_chosen_envs():
    """As the native pool: recv_rest() takes a last batch smaller than batch_size, and
    async_reset(env_id=...) resets idle envs while others step (Tianshou's adapter uses both)."""
    env = count_env(num_envs=5, batch_size=3, num_workers=2)
    env.async_reset()
    ids = env.recv()[4]["env_id"]
    others = np.setdiff1d(np.arange(5), ids)
    obs, rew, term, trunc, info = env.recv_rest()  # the other 2 resets: fewer than batch_size
    assert sorted(info["env_id"].tolist()) == others.tolist() and obs.shape == (2, 2) and rew.shape == (2,)
    with pytest.raises(RuntimeError, match="recv_rest"):
        env.recv_rest()  # nothing in flight
    env.send([1, 2, 3], ids)
    with pytest.raises(RuntimeError, match="recv_rest"):
        env.recv_rest()  # a whole batch in flight: that is recv()'s
    with pytest.raises(RuntimeError, match="in flight"):
        env.async_reset(env_id=ids[:1])
    with pytest.raises(ValueError, match=r"one per env reset \(2\), got 1"):
        env.async_reset(seed=[3], env_id=others)
    env.async_reset(seed=[None, 7], env_id=others)  # while the three step
    seen = {}
    for result in (env.recv(), env.recv_rest()):
        obs, rew, term, trunc, info = result
        seen.update(zip(info["env_id"].tolist(), obs[:, 0].tolist(), strict=True))
    assert sorted(seen) == list(range(5))
    assert [seen[e] for e in others.tolist()] == [0, 0] and [seen[e] for e in ids.tolist()] == [1, 1, 1]
    env.close()


# -- semantics shared with the native pool -----------------------------------------


@pytest.mark.timeout(60)
def test_next_step_autoreset_truncation_and_episode_statistics():
    env = count_env(num_envs=2, env={"episode_length": 3}, max_episode_steps=10)
    env.reset()
    for t in range(1, 4):
        obs, rew, term, trunc, info = env.step([1, 2])
        assert term.all() == (t == 3)
    np.testing.assert_array_equal(info["episode_return"], [3.0, 6.0])
    np.testing.assert_array_equal(info["episode_length"], [3, 3])
    assert info["episode_length"].dtype == np.int32 and info["_episode_return"].all()
    obs, rew, term, trunc, info = env.step([3, 3])  # the reset step
    assert obs.tolist() == [[0, 0], [0, 0]] and rew.tolist() == [0, 0] and "episode_return" not in info
    env.close()
    env = count_env(num_envs=3, max_episode_steps=5)
    env.reset()
    for t in range(1, 6):
        _, _, term, trunc, info = env.step([1, 1, 1])
        assert not term.any() and trunc.all() == (t == 5)
    np.testing.assert_array_equal(info["episode_length"], [5, 5, 5])
    env.close()


@pytest.mark.timeout(60)
def test_same_step_final_obs_and_disabled_mode():
    env = count_env(num_envs=2, env={"episode_length": 3}, autoreset_mode="same_step")
    env.reset()
    for _ in range(2):
        env.step([1, 2])
    obs, rew, term, trunc, info = env.step([1, 2])
    assert term.all() and obs.tolist() == [[0, 0], [0, 0]]
    assert info["final_obs"][0].tolist() == [3, 1] and info["final_obs"][1].tolist() == [3, 2]
    np.testing.assert_array_equal(info["final_info"]["episode_return"], [3.0, 6.0])
    env.close()
    env = count_env(num_envs=2, env={"episode_length": 2}, autoreset_mode="disabled")
    env.reset()
    env.step([1, 1])
    assert env.step([1, 1])[2].all()
    with pytest.raises(RuntimeError, match="disabled"):
        env.step([1, 1])
    obs, info = env.reset(options={"env_id": [1]})
    assert obs.tolist() == [[0, 0]] and "env_id" not in info
    obs, _ = env.reset(options={"reset_mask": np.array([True, False])})
    assert obs.tolist() == [[0, 0], [0, 0]]
    assert env.step([2, 3])[0].tolist() == [[1, 2], [1, 3]]
    env.close()


@pytest.mark.timeout(60)
def test_seeding():
    def make_env():
        return gym.make("CartPole-v1")

    env = fastvec.make([make_env] * 4, start_method="fork")
    a, _ = env.reset(seed=5)
    b, _ = env.reset(seed=5)
    c, _ = env.reset(seed=6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and len({tuple(row) for row in a}) == 4
    e, _ = env.reset(seed=[5, None, 5, None])
    np.testing.assert_array_equal(e[0], e[2])
    env.close()
    with fastvec.make([make_env] * 4, seed=5, start_method="fork") as env:
        np.testing.assert_array_equal(env.reset()[0], a)
    np.testing.assert_array_equal(make_env().reset(seed=5 + 2)[0], a[2])  # env i: seed + i, as gymnasium


@pytest.mark.timeout(60)
@pytest.mark.parametrize("batch_size", [8, 4])
def test_returned_arrays_are_never_overwritten(batch_size, check_results_kept):
    env = fastvec.make(lambda: gym.make("CartPole-v1"), 8, batch_size=batch_size, seed=0, start_method="fork")
    check_results_kept(env, 20)
    env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        (np.zeros(3, dtype=np.int64), ValueError, r"shape \(4,\)"),
        (np.zeros(4, dtype=np.float32), TypeError, "integers"),
        (np.array([0, 2**64 - 1, 0, 0], np.uint64), ValueError, r"actions\[1\] = 18446744073709551615 cannot be held"),
        ("left", TypeError, "integers"),
    ],
)
def test_bad_actions_raise_and_pool_stays_usable(actions, error, match):
    env = count_env(num_envs=4, num_workers=1)
    env.reset()
    with pytest.raises(error, match=match):
        env.step(actions)
    assert env.step([1, 1, 1, 1])[0][:, 0].tolist() == [1, 1, 1, 1]
    env.close()


@pytest.mark.timeout(60)
def test_actions_outside_the_space_reach_the_env():
    """A Python env gets its actions as gymnasium's vector envs pass them and decides itself: out-of-range Discrete
    actions reach CountEnv (which takes them), and a Tuple action's out-of-range Discrete and NaN Box parts reach
    StructEnv (which reports them in its info)."""
    env = count_env(num_envs=2, num_workers=1)
    env.reset()
    obs, reward, *_ = env.step(np.array([7, 2**40]))
    assert obs[:, 1].tolist() == [7, 2**40] and reward.tolist() == [7, 2**40]
    env.close()
    env = fastvec.make(StructEnv, 2, start_method="fork", num_workers=1)
    env.reset(seed=0)
    *_, info = env.step((np.array([0, 9]), np.array([[0, 0], [np.nan, 0]], np.float32)))
    assert info["kind"].tolist() == [0, 9] and np.isnan(info["push"][1, 0])
    env.close()


@pytest.mark.timeout(60)
def test_bad_box_and_struct_actions():
    env = fastvec.make(StructEnv, 2, start_method="fork", num_workers=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="representable as float32"):
        env.step((np.zeros(2, np.int64), np.array([[0, 0], [1e300, 0]], np.float64)))
    with pytest.raises(TypeError, match="batched like"):
        env.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="shape"):
        env.step((np.zeros(2, np.int64), np.zeros((2, 3), np.float32)))
    env.step((np.zeros(2, np.int64), np.zeros((2, 2), np.float32)))
    env.close()


def test_bad_make_arguments():
    with pytest.raises(TypeError, match="env_id must be"):
        fastvec.pyenv.make(3)
    with pytest.raises(ValueError, match="num_envs"):
        fastvec.make([CountEnv, CountEnv], 3)
    with pytest.raises(TypeError, match="keyword arguments"):
        fastvec.make(CountEnv, 2, gravity=3.0)
    with pytest.raises(ValueError, match="start_method"):
        fastvec.make(CountEnv, 2, start_method="teleport")
    with pytest.raises(ValueError, match="block_size"):
        fastvec.make(CountEnv, 2, block_size=1)


@pytest.mark.timeout(60)
def test_a_list_of_callables_may_differ_in_configuration_but_not_in_spaces():
    env = fastvec.make([lambda: StructEnv(1.0), lambda: StructEnv(5.0)], start_method="fork")
    assert env.num_envs == 2
    obs, _ = env.reset(seed=[0, 0])
    np.testing.assert_allclose(obs["pos"][1], obs["pos"][0] * 5, rtol=1e-6)
    env.close()

    class Wider(CountEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Box(0, 1e9, (3,), np.float32)

    with pytest.raises(ValueError, match=r"env 2 has observation_space .* but env 0 has .* share"):
        fastvec.make([CountEnv, CountEnv, Wider], start_method="fork", num_workers=2)


# -- start methods ------------------------------------------------------------------


@pytest.mark.timeout(90)
@pytest.mark.parametrize("start_method", ["fork", "forkserver", "spawn"])
def test_start_methods(start_method):
    length = 7
    env = fastvec.make(
        [lambda: CountEnv(episode_length=length)] * 3,
        start_method=start_method,
        num_workers=2,
        autoreset_mode="same_step",
    )
    pids = env.worker_pids
    env.reset()
    for _ in range(length):
        obs, rew, term, trunc, info = env.step([1, 2, 3])
    assert term.all() and obs[:, 0].tolist() == [0, 0, 0]
    assert [o.tolist() for o in info["final_obs"]] == [[7, 1], [7, 2], [7, 3]]
    env.close()
    assert all(worker_is_gone(p) for p in pids)


# -- failures --------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_env_exception_names_the_env_and_carries_the_traceback():
    env = fastvec.make([CountEnv, CountEnv, lambda: CountEnv(throw_at=3), CountEnv], start_method="fork", num_workers=2)
    env.reset()
    env.step([0, 0, 0, 0])
    env.step([0, 0, 0, 0])
    with pytest.raises(ValueError) as raised:  # its own type
        env.step([1, 1, 1, 1])
    assert str(raised.value) == "CountEnv asked to throw at step 3"
    (note,) = raised.value.__notes__
    assert note.startswith("raised by env 2 in step(), in its worker process; traceback there:\nTraceback"), note
    assert "in step" in note and 'raise ValueError(f"CountEnv asked to throw' in note
    with pytest.raises(RuntimeError, match="env 2 raised an exception earlier"):
        env.step([0, 0, 0, 0])
    obs, _ = env.reset()
    assert obs[:, 0].tolist() == [0, 0, 0, 0]
    assert env.step([1, 1, 1, 1])[0][:, 0].tolist() == [1, 1, 1, 1]
    env.close()


class TwoArgError(Exception):
    """Pickles in the worker but cannot be rebuilt (pickle calls it with its message alone)."""

    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


class RaisesTwoArgError(CountEnv):
    def step(self, action):
        raise TwoArgError(1, 2)


@pytest.mark.timeout(60)
def test_an_env_exception_that_cannot_travel_is_an_env_error_with_its_type_and_message():
    with fastvec.make([CountEnv, RaisesTwoArgError], start_method="fork") as env:
        env.reset()
        with pytest.raises(EnvError) as raised:
            env.step([0, 0])
        assert str(raised.value) == "env 1 raised test_pyenv.TwoArgError: 1 and 2"
        assert raised.value.__notes__[0].startswith("raised by env 1 in step(), in its worker process")


@pytest.mark.timeout(60)
def test_step_before_the_first_reset_goes_to_the_env_as_in_gymnasiums_vector_envs():
    # An env without gymnasium's OrderEnforcing steps (as SyncVectorEnv, AsyncVectorEnv and SB3's DummyVecEnv
    # step it): before, the pool refused with RuntimeError "env 0 has not been reset".
    ref = gym.vector.SyncVectorEnv([CountEnv] * 3)
    with fastvec.make([CountEnv] * 3, start_method="fork") as env:
        actions = np.array([1, 2, 3])
        ref_result, result = ref.step(actions), env.step(actions)
        for got, want in zip(result[:4], ref_result[:4], strict=True):
            np.testing.assert_array_equal(got, want)
        assert result[0].tolist() == [[1, 1], [1, 2], [1, 3]]
    # One with it raises gymnasium's ResetNeeded, with its type, from the env; the pool stays usable.
    make_cartpole = lambda: gym.make("CartPole-v1")  # noqa: E731
    with pytest.raises(gym.error.ResetNeeded) as raised:
        gym.vector.SyncVectorEnv([make_cartpole] * 2).step(np.zeros(2, np.int64))
    message = str(raised.value)
    assert message == "Cannot call env.step() before calling env.reset()"
    with fastvec.make([make_cartpole] * 2, start_method="fork") as env:
        with pytest.raises(gym.error.ResetNeeded) as raised:
            env.step(np.zeros(2, np.int64))
        assert str(raised.value) == message
        assert raised.value.__notes__[0].startswith("raised by env 0 in step(), in its worker process")
        obs, _ = env.reset(seed=0)
        assert env.step(np.zeros(2, np.int64))[0].shape == (2, 4)
    # In async mode the send goes through, and recv returns the steps.
    with count_env(num_envs=4, batch_size=2) as env:
        env.send(np.array([1, 2]), [1, 3])
        obs, rew, *_, info = env.recv()
        assert sorted(info["env_id"].tolist()) == [1, 3] and sorted(rew.tolist()) == [1.0, 2.0]
        assert obs[:, 0].tolist() == [1, 1]


@pytest.mark.timeout(60)
def test_env_exception_in_async_mode():
    env = fastvec.make([CountEnv, lambda: CountEnv(throw_at=1)] * 2, batch_size=2, start_method="fork")
    env.async_reset()
    seen = set()
    with pytest.raises(ValueError, match=r"raised by env [13] in step\(\)"):
        for _ in range(4):
            ids = env.recv()[4]["env_id"]
            seen.update(ids.tolist())
            env.send([0] * len(ids), ids)
    env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("busy", [False, True])
def test_a_killed_worker_is_reported_within_a_second(busy):
    env = count_env(num_envs=4, num_workers=2, env={"sleep": 0.5 if busy else 0.0})
    env.reset()
    pids = env.worker_pids
    if busy:
        env.send([1, 1, 1, 1])
    os.kill(pids[1], signal.SIGKILL)
    t = time.perf_counter()
    with pytest.raises(WorkerDiedError, match=rf"worker 1 \(pid {pids[1]}, envs 2..3\) was killed by signal 9"):
        env.recv() if busy else env.step([1, 1, 1, 1])
    assert time.perf_counter() - t < 1.0
    with pytest.raises(WorkerDiedError):
        env.reset()
    env.close()
    assert all(worker_is_gone(p) for p in pids)


@pytest.mark.timeout(60)
def test_close_during_a_step_is_prompt_and_reaps_every_worker():
    env = count_env(num_envs=4, num_workers=2, env={"sleep": 2.0}, batch_size=2)
    env.async_reset()
    env.recv()
    env.recv()
    env.send([1, 1], [0, 2])
    pids = env.worker_pids
    time.sleep(0.05)
    t = time.perf_counter()
    env.close()
    assert time.perf_counter() - t < 1.5
    env.close()
    assert env.closed and all(worker_is_gone(p) for p in pids)
    for call in (lambda: env.step([0, 0, 0, 0]), env.recv, env.reset, env.async_reset, lambda: env.send([0], [0])):
        with pytest.raises(RuntimeError, match="closed"):
            call()


@pytest.mark.timeout(60)
def test_no_shared_memory_segments_or_processes_outlive_the_pool():
    before = set(os.listdir("/dev/shm"))
    env = fastvec.make(StructEnv, 4, start_method="fork")
    pids = env.worker_pids
    env.reset(seed=0)
    env.step((np.zeros(4, np.int64), np.zeros((4, 2), np.float32)))
    del env  # garbage collection closes the pool
    assert all(worker_is_gone(p) for p in pids)
    assert set(os.listdir("/dev/shm")) <= before


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ending", ["exit", "keyboard_interrupt"])
def test_interpreter_exit_without_close_leaves_nothing_behind(ending, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(f"""
        import numpy as np, gymnasium as gym, fastvec
        if __name__ == "__main__":
            env = fastvec.make(lambda: gym.make("CartPole-v1"), 4, num_workers=2)
            env.reset(seed=0)
            env.step(np.zeros(4, dtype=np.int64))
            print(*env.worker_pids, flush=True)
            if {ending == "keyboard_interrupt"}:
                env.send(np.zeros(4, dtype=np.int64))
                raise KeyboardInterrupt
    """)
    )
    before = set(os.listdir("/dev/shm"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=50)
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2, proc.stderr
    if ending == "keyboard_interrupt":
        assert "KeyboardInterrupt" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
    assert "leaked" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    deadline = time.monotonic() + 2
    while not all(worker_is_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(worker_is_gone(p) for p in pids)
    assert set(os.listdir("/dev/shm")) <= before


@pytest.mark.timeout(60)
def test_pool_works_when_file_descriptors_exceed_1024():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1400
    assert hard == resource.RLIM_INFINITY or hard >= want, f"the test needs {want} file descriptors, hard limit {hard}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    held = []
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        held = [os.dup(null) for _ in range(1100)]  # what other pools or subprocesses may hold
        held.append(null)
        env = fastvec.make(lambda: gym.make("CartPole-v1"), 4, seed=0, start_method="fork")
        env.reset()
        for _ in range(20):
            obs, *_ = env.step(np.zeros(4, dtype=np.int64))
        assert obs.shape == (4, 4)
        env.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- envs that wait ----------------------------------------------------------------


@pytest.mark.timeout(60)
def test_envs_that_sleep_overlap_with_one_worker_per_env():
    n, steps, sleep = 8, 4, 0.05
    env = count_env(num_envs=n, num_workers="per_env", env={"sleep": sleep})
    with env:
        assert env.num_workers == n and len(set(env.worker_pids)) == n
        env.reset()
        start = time.perf_counter()
        for _ in range(steps):
            obs, *_ = env.step(np.ones(n, np.int64))
        elapsed = time.perf_counter() - start
    assert obs[:, 0].tolist() == [steps] * n
    serial = n * steps * sleep  # what one worker stepping the envs one after another sleeps (1.6 s)
    assert elapsed < serial / 2, f"{n} envs sleeping {sleep} s a step took {elapsed:.2f} s for {steps} steps"


def test_num_workers_per_env_and_its_spellings():
    with fastvec.make(CountEnv, 3, num_threads="per_env", start_method="fork") as env:  # make()'s name for it
        assert env.num_workers == 3
    with fastvec.make([CountEnv] * 2, num_workers="per_env", start_method="fork") as env:
        assert env.num_workers == 2
    with pytest.raises(ValueError, match=r"num_workers must be an int or 'per_env', got 'per-env'"):
        fastvec.make(CountEnv, 2, num_workers="per-env")
    with pytest.raises(ValueError, match=r"num_workers must be in \[1, 2\], got 3"):
        fastvec.make(CountEnv, 2, num_workers=3)


# -- observations on their space's bounds --------------------------------------------


_I64 = np.iinfo(np.int64)
EDGE_SPACES = {
    "float32": gym.spaces.Box(np.float32(0.1), np.float32(0.7), (3,), np.float32),
    "float64 bounds of a float32 box": gym.spaces.Box(0.1, 0.7, (3,), np.float32),  # stored rounded to float32
    "inf": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
    "half inf, float64": gym.spaces.Box(np.array([-np.inf, 0.0]), np.array([0.0, np.inf]), (2,), np.float64),
    "scalar": gym.spaces.Box(-1.0, 1.0, (), np.float32),
    "uint8": gym.spaces.Box(0, 255, (4,), np.uint8),
    "int64 full range": gym.spaces.Box(_I64.min, _I64.max, (2,), np.int64),
    "dict": gym.spaces.Dict(
        {"a": gym.spaces.Box(-np.inf, 1.0, (2,), np.float32), "b": gym.spaces.Box(-2, 2, (1,), np.float64)}
    ),
}


class EdgeEnv(gym.Env):
    """Observes its space's low (action 0, and at reset) or high (action 1) exactly, as float64 arrays when
    ``as_float64`` (what an env computing in float64 returns for a float32 box)."""

    def __init__(self, name: str, as_float64: bool) -> None:
        self.observation_space = EDGE_SPACES[name]
        self.action_space = gym.spaces.Discrete(2)
        self.as_float64 = as_float64

    def _edge(self, space, high):
        value = space.high if high else space.low
        return value.astype(np.float64) if self.as_float64 and value.dtype.kind == "f" else value.copy()

    def _obs(self, high):
        if isinstance(self.observation_space, gym.spaces.Dict):
            return {k: self._edge(s, high) for k, s in self.observation_space.spaces.items()}
        return self._edge(self.observation_space, high)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._obs(False), {}

    def step(self, action):
        return self._obs(bool(action)), 0.0, False, False, {}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("as_float64", [False, True])
@pytest.mark.parametrize("name", list(EDGE_SPACES))
def test_observations_on_their_space_bounds_come_out_unchanged(name, as_float64):
    fns = [lambda: EdgeEnv(name, as_float64)] * 2
    ref = gym.vector.SyncVectorEnv(fns)
    with fastvec.make(fns, start_method="fork") as env:
        assert_tree_equal(env.reset()[0], ref.reset()[0])
        for actions in ([0, 1], [1, 0], [1, 1]):
            obs = env.step(np.array(actions))[0]
            assert_tree_equal(obs, ref.step(np.array(actions))[0])  # values and dtypes, bit for bit
            for row in gym.vector.utils.iterate(env.observation_space, obs):  # (a scalar box's rows: numpy scalars)
                assert env.single_observation_space.contains(row if isinstance(row, dict) else np.asarray(row)), row


# -- reset options ------------------------------------------------------------------


class OptionsEnv(CountEnv):
    """Keeps the options of its last reset (``last_options``; "unset" before any) and starts its count there at
    ``options["start"]``."""

    def __init__(self) -> None:
        super().__init__()
        self.last_options = "unset"

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        self.last_options = options
        if options and "start" in options:
            self.t = options["start"]
            obs[0] = self.t
        if options and "log" in options:
            options["log"].append("mutated in the env")  # each env has its own copy
        return obs, info


@pytest.mark.timeout(60)
def test_reset_options_reach_every_reset_env_as_gymnasium_passes_them():
    env = fastvec.make(OptionsEnv, 4, start_method="fork", num_workers=2)
    mine = {"start": 3, "log": []}
    obs, _ = env.reset(options=mine)
    np.testing.assert_array_equal(obs[:, 0], [3, 3, 3, 3])
    assert env.get_attr("last_options") == ({"start": 3, "log": ["mutated in the env"]},) * 4
    assert mine == {"start": 3, "log": []}
    obs, *_ = env.step(np.zeros(4, np.int64))
    np.testing.assert_array_equal(obs[:, 0], [4, 4, 4, 4])
    env.reset()
    assert env.get_attr("last_options") == (None,) * 4

    # A partial reset passes the options other than reset_mask/env_id (gymnasium: {} when there are none).
    mask = np.array([False, True, False, True])
    given = {"reset_mask": mask, "start": 9}
    obs, _ = env.reset(options=given)
    np.testing.assert_array_equal(obs[:, 0], [0, 9, 0, 9])
    assert env.get_attr("last_options") == (None, {"start": 9}, None, {"start": 9})
    assert set(given) == {"reset_mask", "start"}  # the caller's dict is left as it was
    env.reset(options={"reset_mask": ~mask})
    assert env.get_attr("last_options") == ({}, {"start": 9}, {}, {"start": 9})
    obs, _ = env.reset(options={"env_id": [2], "start": 5})
    np.testing.assert_array_equal(obs[:, 0], [5])
    assert env.get_attr("last_options") == ({}, {"start": 9}, {"start": 5}, {"start": 9})

    # Options that cannot travel: a TypeError before anything is sent; the pool goes on.
    with pytest.raises(TypeError, match="reset options cannot be pickled"):
        env.reset(options={"lock": __import__("threading").Lock()})
    obs, _ = env.reset(options={"start": 1})
    np.testing.assert_array_equal(obs[:, 0], [1, 1, 1, 1])
    big = {"start": 2, "blob": bytes(range(256)) * 2000}  # more than a pipe holds: the workers read it in pieces
    obs, _ = env.reset(options=big)
    np.testing.assert_array_equal(obs[:, 0], [2, 2, 2, 2])
    assert env.get_attr("last_options") == (big,) * 4
    env.close()


@pytest.mark.timeout(60)
def test_reset_options_in_async_mode():
    env = fastvec.make(OptionsEnv, 4, batch_size=2, start_method="fork", num_workers=2)
    env.async_reset(options={"start": 2})
    rows = [env.recv() for _ in range(2)]
    assert sorted(np.concatenate([r[4]["env_id"] for r in rows]).tolist()) == [0, 1, 2, 3]
    for obs, *_ in rows:
        np.testing.assert_array_equal(obs[:, 0], [2, 2])
    assert env.get_attr("last_options") == ({"start": 2},) * 4
    env.async_reset(env_id=[3, 0], options={"start": 7})
    obs, *_, info = env.recv()
    assert sorted(info["env_id"].tolist()) == [0, 3]
    np.testing.assert_array_equal(obs[:, 0], [7, 7])
    assert env.get_attr("last_options") == ({"start": 7}, {"start": 2}, {"start": 2}, {"start": 7})
    with pytest.raises(ValueError, match="async_reset takes the envs to reset as env_id"):
        env.async_reset(options={"env_id": [1]})
    env.async_reset(env_id=[1])
    env.recv_rest()
    assert env.get_attr("last_options")[1] is None
    env.close()


@pytest.mark.timeout(60)
def test_native_envs_refuse_reset_options_naming_them():
    env = fastvec.make("CartPole-v1", 4)
    env.reset(seed=0)
    mask = np.array([True, False, True, False])
    for options in ({"start": 1, "low": -0.1}, {"reset_mask": mask, "start": 1}, {"env_id": [1], "start": 1}):
        with pytest.raises(
            ValueError, match=r"unknown reset option\(s\) \[('low', )?'start'\] for fastvec's native CartPole-v1"
        ):
            env.reset(options=options)
    obs, _ = env.reset(options={"reset_mask": mask})  # the pool's own options pass, and the pool goes on
    assert obs.shape == (4, 4)
    env.close()
    env = fastvec.make("CartPole-v1", 4, batch_size=2)
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['start'\]"):
        env.async_reset(options={"start": 1})
    env.async_reset(options={})
    env.recv()
    env.close()


class RewardEnv(CountEnv):
    """Rewards float32 cannot hold (16777217.0, 0.1, 1/3), in turn; episodes of 3 steps."""

    REWARDS = (16777217.0, 0.1, 1 / 3)

    def step(self, action):
        obs, _, _, truncated, info = super().step(action)
        return obs, self.REWARDS[(self.t - 1) % 3], self.t >= 3, truncated, info


@pytest.mark.timeout(60)
@pytest.mark.parametrize("batch_size", [4, 2])
def test_rewards_arrive_as_the_env_returned_them_and_returns_are_their_sums(batch_size):
    # The shared reward rows were float32: 16777217.0 came as 16777216.0 and 0.1 as 0.10000000149, while
    # episode_return summed the float64 values, so it no longer equalled the sum of the rewards received.
    with fastvec.make(RewardEnv, 4, batch_size=batch_size, start_method="fork", episode_stats=True) as env:
        ref = gym.vector.SyncVectorEnv([RewardEnv] * 4)
        ref.reset()
        want = ref.step(np.zeros(4, np.int64))[1]
        assert want.dtype == np.float64  # gymnasium's vector envs
        received = {e: 0.0 for e in range(4)}
        returns = []
        if batch_size == 4:
            env.reset()
            batches = [env.step(np.zeros(4, np.int64)) for _ in range(6)]
        else:
            env.async_reset()
            batches = []
            for _ in range(14):
                *_, info = batch = env.recv()
                batches.append(batch)
                env.send(np.zeros(2, np.int64), info["env_id"])
            batches = batches[2:]  # (async_reset's rows: no reward)
        assert want.tolist() == [16777217.0] * 4 and batches[0][1].tolist() == [16777217.0] * batch_size
        for _, rew, term, _, info in batches:
            assert rew.dtype == np.float64
            for r, e in enumerate(info.get("env_id", range(4))):
                assert rew[r] in (0.0, *RewardEnv.REWARDS)  # (0: an autoreset row)
                received[e] += rew[r]
                if term[r]:
                    assert info["episode_return"][r] == received[e]  # exactly: the same float64 sum
                    returns.append(received[e])
                    received[e] = 0.0
        assert len(returns) >= 4 and set(returns) == {16777217.0 + 0.1 + 1 / 3}
