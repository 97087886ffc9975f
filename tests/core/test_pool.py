"""Pool semantics: ordering, async, autoreset modes, truncation, episode
statistics, buffer ownership, failures and bad input."""

from __future__ import annotations

import gc
import os
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from conftest import run_python

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)


def debug(num_envs=4, **kw):
    """The test-only env: obs = [steps since reset, last action], reward = action; with episode statistics."""
    return fastvec.make("_Debug-v0", num_envs, seed=0, **{"episode_stats": True, **kw})


def native_threads() -> int:
    gc.collect()  # pools of earlier tests that are garbage now close (and join their threads) first
    return len(os.listdir("/proc/self/task"))


# -- sync ordering and results ----------------------------------------------


def test_sync_rows_are_in_env_order():
    env = debug(8, num_threads=2, block_size=2)
    env.reset()
    actions = np.array([0, 1, 2, 3, 3, 2, 1, 0])
    obs, rew, term, trunc, info = env.step(actions)
    assert "env_id" not in info  # sync: rows in env order, as obs[:, 1] (each env's action) shows
    np.testing.assert_array_equal(obs[:, 1], actions)
    np.testing.assert_array_equal(obs[:, 0], np.ones(8))
    np.testing.assert_array_equal(rew, actions.astype(np.float32))
    assert rew.dtype == np.float32 and term.dtype == np.bool_ and trunc.dtype == np.bool_


def test_actions_may_be_a_list_and_any_integer_dtype():
    env = debug(3)
    env.reset()
    obs, *_ = env.step([1, 2, 3])
    np.testing.assert_array_equal(obs[:, 1], [1, 2, 3])
    obs, *_ = env.step(np.array([3, 2, 1], dtype=np.uint8))
    np.testing.assert_array_equal(obs[:, 1], [3, 2, 1])


# -- async -------------------------------------------------------------------


def test_default_num_threads():
    """Sync: the cores (the caller is one of the threads). Async: one fewer, as a caller waiting in
    recv() steps envs itself when a core is free."""
    cores = len(os.sched_getaffinity(0))
    assert fastvec.make("CartPole-v1", 64).num_threads == min(cores, 64)
    assert fastvec.make("CartPole-v1", 64, batch_size=32).num_threads == max(1, cores - 1)
    assert fastvec.make("CartPole-v1", 1).num_threads == 1


# num_threads 1 and 2 on 2 cores: the caller waiting in recv() steps envs itself, or leaves them to the workers.
@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_async_serves_every_env_with_the_right_actions(num_threads):
    env = debug(8, batch_size=2, num_threads=num_threads)
    env.async_reset()
    steps = np.zeros(8, dtype=int)
    for _ in range(200):
        obs, rew, term, trunc, info = env.recv()
        ids = info["env_id"]
        assert len(ids) == 2 and len(set(ids.tolist())) == 2
        # The row of env e reports e's own step count and the action sent to it.
        np.testing.assert_array_equal(obs[:, 0], steps[ids])
        if steps[ids].min() > 0:
            np.testing.assert_array_equal(obs[:, 1], ids % 4)
        steps[ids] += 1
        env.send(ids % 4, ids)
    assert steps.min() > 0 and steps.sum() == 400


def test_async_partial_sends_complete_a_batch():
    env = debug(4, batch_size=2, block_size=1)
    env.async_reset()
    _, _, _, _, info = env.recv()
    a, b = info["env_id"]
    env.send([1], [a])
    env.send([2], [b])
    got = {}
    for _ in range(2):  # the two remaining reset envs and the two stepped ones
        obs, _, _, _, info = env.recv()
        got.update(zip(info["env_id"].tolist(), obs.tolist(), strict=True))
    assert got[a] == [1, 1] and got[b] == [1, 2]


def test_recv_without_send_raises_and_pool_stays_usable():
    env = debug(4, batch_size=2)
    with pytest.raises(RuntimeError, match="recv"):
        env.recv()
    env.async_reset()
    env.recv()
    env.recv()
    with pytest.raises(RuntimeError, match="recv"):
        env.recv()
    env.send([0, 0], [0, 1])
    assert sorted(env.recv()[4]["env_id"].tolist()) == [0, 1]


def test_send_to_env_not_awaiting_an_action():
    env = debug(4, batch_size=2, block_size=1)
    env.async_reset()
    ids = env.recv()[4]["env_id"]
    env.send([0, 0], ids)
    with pytest.raises(RuntimeError, match="not awaiting"):
        env.send([0], ids[:1])
    with pytest.raises(ValueError, match="out of range"):
        env.send([0], [4])
    with pytest.raises(ValueError, match="twice"):
        env.send([0, 0], [ids[0], ids[0]])
    assert len(env.recv()[4]["env_id"]) == 2


def test_step_before_reset_raises():
    env = debug(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step([0, 0])
    env.reset()
    env.step([0, 0])


def test_reset_in_async_mode_returns_every_env_in_order():
    env = debug(6, batch_size=2, block_size=1)
    env.async_reset()
    env.recv()
    obs, info = env.reset()
    np.testing.assert_array_equal(info["env_id"], np.arange(6))
    assert obs.shape == (6, 2)


# -- autoreset modes, compared with gymnasium's SyncVectorEnv --------------


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_autoreset_matches_gymnasium_sync_vector_env(mode):
    n, steps, limit = 4, 300, 30
    gmode = {
        "next_step": gym.vector.AutoresetMode.NEXT_STEP,
        "same_step": gym.vector.AutoresetMode.SAME_STEP,
        "disabled": gym.vector.AutoresetMode.DISABLED,
    }[mode]
    ref = gym.make_vec(
        "CartPole-v1",
        num_envs=n,
        vectorization_mode="sync",
        max_episode_steps=limit,
        vector_kwargs={"autoreset_mode": gmode},
    )
    env = fastvec.make("CartPole-v1", n, autoreset_mode=mode, max_episode_steps=limit)
    assert env.metadata["autoreset_mode"] == gmode
    seeds = [7 + i for i in range(n)]  # SyncVectorEnv seeds env i with seed + i
    ref_obs, _ = ref.reset(seed=7)
    obs, _ = env.reset(seed=seeds)
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(steps):
        actions = rng.integers(0, 2, n)
        ref_obs, ref_rew, ref_term, ref_trunc, ref_info = ref.step(actions)
        obs, rew, term, trunc, info = env.step(actions)
        # Dynamics agree to float32 rounding (np.cos vs libm cos); see test_parity.
        np.testing.assert_allclose(obs, ref_obs, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(rew, ref_rew.astype(np.float32))
        np.testing.assert_array_equal(term, ref_term)
        np.testing.assert_array_equal(trunc, ref_trunc)
        done = term | trunc
        ends += done.sum()
        if mode == "same_step" and done.any():
            np.testing.assert_array_equal(info["_final_obs"], ref_info["_final_obs"])
            for i in np.flatnonzero(done):
                np.testing.assert_allclose(info["final_obs"][i], ref_info["final_obs"][i], rtol=1e-5, atol=1e-6)
        if mode == "disabled" and done.any():
            ref_obs, _ = ref.reset(options={"reset_mask": done})
            obs, _ = env.reset(options={"reset_mask": done.copy()})
            np.testing.assert_allclose(obs, ref_obs, rtol=1e-5, atol=1e-6)
    assert ends > 10


def test_disabled_mode_refuses_to_step_a_finished_env():
    env = debug(2, autoreset_mode="disabled", episode_length=2)
    env.reset()
    env.step([1, 1])
    _, _, term, _, _ = env.step([1, 1])
    assert term.all()
    with pytest.raises(RuntimeError, match="disabled"):
        env.step([1, 1])
    obs, info = env.reset(options={"env_id": [1]})
    assert obs.tolist() == [[0, 0]] and "env_id" not in info
    with pytest.raises(RuntimeError, match="disabled"):
        env.step([1, 1])
    obs, _ = env.reset(options={"reset_mask": np.array([True, False])})
    assert obs.tolist() == [[0, 0], [0, 0]]
    obs, *_ = env.step([2, 3])
    assert obs.tolist() == [[1, 2], [1, 3]]


def test_same_step_final_obs_and_final_info():
    env = debug(2, autoreset_mode="same_step", episode_length=3)
    env.reset()
    for _ in range(2):
        env.step([1, 2])
    obs, rew, term, trunc, info = env.step([1, 2])
    assert term.all() and obs.tolist() == [[0, 0], [0, 0]]
    assert info["final_obs"][0].tolist() == [3, 1] and info["final_obs"][1].tolist() == [3, 2]
    np.testing.assert_array_equal(info["final_info"]["episode_return"], [3.0, 6.0])
    assert info["_final_info"].all()


def test_next_step_autoreset_and_episode_statistics():
    env = debug(2, episode_length=3)
    env.reset()
    for t in range(1, 4):
        obs, rew, term, trunc, info = env.step([1, 2])
        assert term.all() == (t == 3)
    assert "episode_return" not in fastvec.make("_Debug-v0", 1).reset()[1]
    np.testing.assert_array_equal(info["episode_return"], [3.0, 6.0])
    np.testing.assert_array_equal(info["episode_length"], [3, 3])
    assert info["_episode_return"].all() and info["_episode_length"].all()
    obs, rew, term, trunc, info = env.step([3, 3])  # the reset step
    assert obs.tolist() == [[0, 0], [0, 0]] and rew.tolist() == [0, 0]
    assert not term.any() and not trunc.any() and "episode_return" not in info
    obs, *_ = env.step([3, 3])
    assert obs.tolist() == [[1, 3], [1, 3]]


def test_truncation_at_max_episode_steps():
    env = debug(3, max_episode_steps=5)
    env.reset()
    for t in range(1, 6):
        _, _, term, trunc, info = env.step([1, 1, 1])
        assert not term.any()
        assert trunc.all() == (t == 5)
    np.testing.assert_array_equal(info["episode_length"], [5, 5, 5])
    assert fastvec.make("CartPole-v1", 1).max_episode_steps == 500


def test_cartpole_episode_return_is_the_sum_of_rewards():
    env = fastvec.make("CartPole-v1", 16, seed=3, episode_stats=True)
    env.reset()
    rng = np.random.default_rng(1)
    running = np.zeros(16)
    checked = 0
    fresh = np.zeros(16, dtype=bool)
    for _ in range(400):
        _, rew, term, trunc, info = env.step(rng.integers(0, 2, 16))
        running[fresh] = 0  # the reset step of next_step autoreset
        running += rew
        done = term | trunc
        if done.any():
            np.testing.assert_allclose(info["episode_return"][done], running[done])
            np.testing.assert_array_equal(info["episode_length"][done], running[done])
            checked += done.sum()
        fresh = done
    assert checked > 20


# -- ownership of returned arrays --------------------------------------------


@pytest.mark.parametrize("batch_size", [8, 4])
def test_returned_arrays_are_never_overwritten(batch_size, check_results_kept):
    env = fastvec.make("CartPole-v1", 8, batch_size=batch_size, seed=0, block_size=4)
    check_results_kept(env, 30)


def test_buffers_are_recycled_once_released():
    env = fastvec.make("CartPole-v1", 4, seed=0)
    env.reset()
    addresses = set()
    for _ in range(50):
        obs = env.step(np.zeros(4, dtype=np.int64))[0]
        addresses.add(obs.__array_interface__["data"][0])
        del obs
    assert len(addresses) < 10


# -- failures -----------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [4, 2])
def test_env_exception_names_the_env_and_pool_stays_usable(batch_size):
    env = debug(4, batch_size=batch_size, block_size=1, throw_on_action=3)
    env.reset()
    actions = np.array([0, 0, 3, 0])[:batch_size] if batch_size == 4 else None
    if batch_size == 4:
        with pytest.raises(RuntimeError, match="env 2 raised: debug env asked to throw"):
            env.step(actions)
        with pytest.raises(RuntimeError, match="env 2 raised an exception earlier"):
            env.step([0, 0, 0, 0])
    else:
        env.send([3, 0], [2, 0])
        with pytest.raises(RuntimeError, match="env 2 raised"):
            env.recv()
    obs, _ = env.reset()
    assert obs[:, 0].tolist() == [0, 0, 0, 0]
    if batch_size == 4:
        obs, *_ = env.step([1, 1, 1, 1])
        assert obs[:, 0].tolist() == [1, 1, 1, 1]


def test_close_is_idempotent_and_prompt_with_work_in_flight():
    before = native_threads()
    env = debug(4, batch_size=2, block_size=1, num_threads=2, sleep_us=200_000)
    assert native_threads() == before + 2
    env.async_reset()
    env.recv()
    env.recv()
    env.send([1, 1], [0, 1])
    env.send([1, 1], [2, 3])
    t = time.perf_counter()
    env.close()
    assert time.perf_counter() - t < 1.0  # at most the step already running, not the queued ones
    env.close()
    assert env.closed
    assert native_threads() == before
    for call in (lambda: env.step([0, 0, 0, 0]), env.recv, env.reset, env.async_reset, lambda: env.send([0], [0])):
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_garbage_collection_and_context_manager_close_the_pool():
    before = native_threads()
    with fastvec.make("CartPole-v1", 64, num_threads=2, batch_size=32) as env:
        env.reset()
        assert native_threads() > before
    assert env.closed and native_threads() == before
    env = fastvec.make("CartPole-v1", 64, num_threads=2, batch_size=32)
    env.async_reset()
    del env
    assert native_threads() == before


def test_gil_is_released_while_the_pool_works():
    env = debug(2, num_threads=1, sleep_us=50_000)
    env.reset()
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        start = ticks
        env.step([0, 0])  # 2 x 50 ms of env work on one thread
        during = ticks - start
    finally:
        stop.set()
        t.join()
    assert during > 1000


# -- bad input: a clear exception, and the pool still works -----------------


@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        (np.zeros(3, dtype=np.int64), ValueError, r"shape \(4,\)"),
        (np.zeros((4, 1), dtype=np.int64), ValueError, r"shape \(4,\)"),
        (np.zeros(4, dtype=np.float32), TypeError, "integers"),
        (np.array([0, 1, 2, 2]), ValueError, r"actions\[2\] = 2 is out of range for Discrete\(2\)"),
        (np.array([0, -1, 0, 0]), ValueError, "out of range"),
        ("left", TypeError, "integers"),
        (0, ValueError, "shape"),
    ],
)
def test_bad_discrete_actions(actions, error, match):
    env = fastvec.make("CartPole-v1", 4, seed=0)
    env.reset()
    with pytest.raises(error, match=match):
        env.step(actions)
    assert env.step(np.zeros(4, dtype=np.int64))[0].shape == (4, 4)


@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        (np.array([[0.0], [np.nan]]), ValueError, "finite"),
        (np.array([[0.0], [np.inf]]), ValueError, "finite"),
        (np.zeros((2, 2)), ValueError, r"shape \(2, 1\)"),
        (np.zeros((3, 1)), ValueError, r"shape \(2, 1\)"),
        (np.array([["a"], ["b"]]), TypeError, "real numbers"),
    ],
)
def test_bad_continuous_actions(actions, error, match):
    env = fastvec.make("Pendulum-v1", 2, seed=0)
    env.reset()
    with pytest.raises(error, match=match):
        env.step(actions)
    assert env.step(np.zeros((2, 1), dtype=np.float32))[0].shape == (2, 3)
    assert env.step(np.zeros(2))[0].shape == (2, 3)  # (n,) is accepted for 1-D actions


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_envs": 0}, ValueError, "num_envs"),
        ({"num_envs": -3}, ValueError, "num_envs"),
        ({"num_envs": "8"}, TypeError, "num_envs"),
        ({"num_envs": 2.5}, TypeError, "num_envs"),
        ({"num_envs": True}, TypeError, "num_envs"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"batch_size": 9}, ValueError, "batch_size"),
        ({"num_threads": 0}, ValueError, "num_threads"),
        ({"block_size": 3}, ValueError, "block_size"),
        ({"batch_size": 4, "block_size": 8}, ValueError, "block_size"),
        ({"autoreset_mode": "sometimes"}, ValueError, "autoreset_mode"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"max_episode_steps": 0}, ValueError, "max_episode_steps"),
        ({"gravity": 3.0}, TypeError, "unexpected keyword argument 'gravity'"),
        ({"backend": "gpu"}, ValueError, "backend"),
    ],
)
def test_bad_make_arguments(kwargs, error, match):
    kwargs = {"num_envs": 8, **kwargs}
    with pytest.raises(error, match=match):
        fastvec.make("CartPole-v1", **kwargs)


def test_unknown_env_id_suggests_a_close_one():
    with pytest.raises(ValueError, match="did you mean 'CartPole-v1'"):
        fastvec.make("Cartpole-v1")
    with pytest.raises(TypeError, match="env_id"):
        fastvec.registry.lookup(3)


def test_atari_ids_follow_the_build():
    """With the Atari backend every ale-py game has an id; built with FASTVEC_ATARI=OFF, an Atari id says so."""
    if fastvec._core.has_atari:
        assert "Pong-v5" in fastvec.list_envs()
        with pytest.raises(ValueError, match="did you mean 'Pong-v5'"):
            fastvec.make("Pongg-v5")
    else:
        assert not any(fastvec.registry.lookup(e).family == "atari" for e in fastvec.list_envs())
        assert "Pong-v5" not in fastvec.list_envs()
        with pytest.raises(ValueError, match="FASTVEC_ATARI=OFF"):
            fastvec.make("Pong-v5")


def test_bad_reset_arguments_leave_the_pool_usable():
    env = fastvec.make("CartPole-v1", 4, seed=0, autoreset_mode="disabled")
    env.reset()
    for options, error in [
        ({"reset_mask": [True, False, False, False]}, TypeError),
        ({"reset_mask": np.ones(3, dtype=bool)}, ValueError),
        ({"reset_mask": np.zeros(4, dtype=bool)}, ValueError),
        ({"env_id": [7]}, ValueError),
        ({"colour": 1}, ValueError),
    ]:
        with pytest.raises(error):
            env.reset(options=options)
    with pytest.raises(ValueError, match="one per env"):
        env.reset(seed=[1, 2])
    with pytest.raises(TypeError, match="seed"):
        env.reset(seed="one")
    assert env.step(np.zeros(4, dtype=np.int64))[0].shape == (4, 4)


def test_seeding():
    env = fastvec.make("CartPole-v1", 4)
    a, _ = env.reset(seed=5)
    b, _ = env.reset(seed=5)
    c, _ = env.reset(seed=6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len({tuple(row) for row in a}) == 4  # envs differ from each other
    d, _ = fastvec.make("CartPole-v1", 4, seed=5).reset()
    np.testing.assert_array_equal(a, d)
    e, _ = env.reset(seed=[5, None, 5, None])
    np.testing.assert_array_equal(e[0], e[2])


# -- regressions from review ---------------------------------------------------


@pytest.mark.timeout(30)
def test_reset_waits_for_a_partial_batch_in_flight():
    env = debug(4, batch_size=2, num_threads=2, block_size=1, sleep_us=20_000)
    env.async_reset()
    ids = env.recv()[4]["env_id"]
    env.send([1], ids[:1])  # one env in flight, fewer than batch_size
    time.sleep(0.002)
    obs, info = env.reset()
    np.testing.assert_array_equal(info["env_id"], np.arange(4))
    assert obs[:, 0].tolist() == [0, 0, 0, 0]


@pytest.mark.timeout(30)
def test_async_reset_returns_every_env_when_batch_size_does_not_divide_num_envs():
    env = debug(5, batch_size=2, block_size=1)
    for _ in range(3):
        obs, info = env.reset()
        np.testing.assert_array_equal(info["env_id"], np.arange(5))
        env.send([1, 1], [0, 1])
        env.send([1], [4])
    env.async_reset()
    seen = np.concatenate([env.recv()[4]["env_id"] for _ in range(2)])
    assert len(set(seen.tolist())) == 4


def test_sync_step_with_a_subset_of_env_ids_is_refused_and_pool_stays_usable():
    env = debug(4, block_size=2)
    env.reset()
    with pytest.raises(ValueError, match="every env"):
        env.step([1, 1], env_id=[2, 3])
    obs, *_ = env.step([1, 1, 1, 1])
    assert obs[:, 0].tolist() == [1, 1, 1, 1]
    env.send([2, 2], [2, 3])  # a half-sent sync step: reset() waits for it and starts over
    obs, _ = env.reset()
    assert obs[:, 0].tolist() == [0, 0, 0, 0]
    obs, *_ = env.step([3, 3, 3, 3], env_id=[3, 2, 1, 0])
    assert obs[:, 1].tolist() == [3, 3, 3, 3]


def test_threads_stepping_one_pool_never_see_each_others_actions():
    env = debug(8, num_threads=2)
    env.reset()
    wrong = []

    def run(action):
        actions = np.full(8, action, dtype=np.int32)
        deadline = time.perf_counter() + 0.5
        while time.perf_counter() < deadline:
            try:
                obs, *_ = env.step(actions)
            except RuntimeError as e:  # the other thread's step is in flight: a clear refusal
                assert "not awaiting an action" in str(e)
                continue
            if not (obs[:, 1] == action).all():
                wrong.append(action)

    threads = [threading.Thread(target=run, args=(a,)) for a in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_partial_async_reset_and_recv_rest():
    env = debug(4, batch_size=2, block_size=1)
    env.async_reset()
    first = env.recv()[4]["env_id"]
    with pytest.raises(ValueError, match=r"one per env reset \(1\), got 2"):
        env.async_reset(seed=[3, 4], env_id=first[:1])
    env.async_reset(seed=[7], env_id=first[:1])  # one idle env resets while the others are in flight
    ids = np.concatenate([env.recv()[4]["env_id"], env.recv_rest()[4]["env_id"]])
    assert sorted(ids.tolist()) == sorted([*set(range(4)) - set(first.tolist()), int(first[0])])
    with pytest.raises(RuntimeError, match="recv_rest"):
        env.recv_rest()


# -- sends of part of a block --------------------------------------------------


def _drive(env, plan):
    """Runs ``plan`` (a list of env-id lists) on an async pool: each entry sends those envs one action each
    (the entry's index), then receives everything in flight; returns {env: [obs rows]} in order."""
    seen: dict[int, list] = {}
    env.async_reset()
    for _ in range(env.num_envs // env.batch_size):
        obs, _, _, _, info = env.recv()
        for e, o in zip(info["env_id"].tolist(), obs, strict=True):
            seen.setdefault(e, []).append(o.tolist())
    for k, ids in enumerate(plan):
        env.send(np.full(len(ids), k % 2, dtype=np.int64), np.array(ids))
        left = len(ids)
        while left:
            obs, _, _, _, info = env.recv() if left >= env.batch_size else env.recv_rest()
            left -= len(info["env_id"])
            for e, o in zip(info["env_id"].tolist(), obs, strict=True):
                seen.setdefault(e, []).append(o.tolist())
    return seen


def test_a_send_of_part_of_a_block_steps_exactly_those_envs():
    """With CartPole's automatic block size (several envs a block), send(actions, env_id) for some envs of a
    block steps those and leaves the others alone: trajectories equal a pool of one env per block."""
    plan = [[0], [1, 0], [2, 3, 4, 5], [7], [6, 0, 1], [3], [0, 1, 2, 3, 4, 5, 6, 7], [5, 2]] * 20
    blocked = fastvec.make("CartPole-v1", 8, batch_size=4, seed=3)
    assert blocked.block_size > 1
    single = fastvec.make("CartPole-v1", 8, batch_size=4, seed=3, block_size=1)
    assert _drive(blocked, plan) == _drive(single, plan)


def test_a_sync_pool_sent_in_parts_steps_every_env_once():
    env = fastvec.make("CartPole-v1", 8, seed=0)
    ref = fastvec.make("CartPole-v1", 8, seed=0)
    assert env.block_size == 8
    env.reset()
    ref.reset()
    actions = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    env.send(actions[:3], np.arange(3))
    with pytest.raises(RuntimeError, match="wait forever"):
        env.recv()
    env.send(actions[3:], np.arange(3, 8))
    got, want = env.recv(), ref.step(actions)
    for g, w in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(g, w)
    assert got[4] == want[4] == {}  # sync: rows in env order, no env_id


@pytest.mark.timeout(60)
def test_a_send_to_a_held_env_waits_for_its_block_and_close_ends_the_wait():
    """env 0 of a two-env block steps for 0.5 s; a send to env 1 waits for that block (its E is busy) and then
    runs; a close from another thread ends such a wait with the pool's closed error."""
    env = debug(4, batch_size=2, block_size=2, num_threads=2, sleep_us=500_000)
    env.async_reset()
    env.recv()
    env.recv()
    env.send([1], [0])
    start = time.monotonic()
    env.send([2], [1])  # waits for env 0's step
    assert time.monotonic() - start > 0.3
    obs, *_, info = env.recv()
    assert sorted(info["env_id"].tolist()) == [0, 1]
    env.send([1], [2])
    threading.Timer(0.2, env.close).start()
    with pytest.raises(RuntimeError, match="closed"):
        env.send([1], [3])


# -- threads ---------------------------------------------------------------------


def test_num_threads_is_capped_at_what_the_pool_can_use():
    before = native_threads()
    env = fastvec.make("CartPole-v1", 4, num_threads=1024)
    assert env.num_threads == 4  # no more threads than envs
    assert native_threads() - before <= 4
    env.close()
    env = fastvec.make("_Debug-v0", 8, num_threads=8, block_size=4, batch_size=4)
    assert native_threads() - before <= 2  # two blocks: two workers
    env.async_reset()
    assert len(env.recv()[4]["env_id"]) == 4


def run_child(code: str):
    return run_python(code, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})  # OpenBLAS's threads would count


@pytest.mark.address_space
def test_threads_the_system_refuses_are_a_runtime_error_and_every_started_one_is_joined():
    """Under an address-space limit that leaves room for a few thread stacks only, a pool of 200 threads fails
    with a RuntimeError naming the counts (not std::terminate), leaves no thread behind, and smaller pools work."""
    run = run_child("""
        import os, resource, numpy as np, fastvec
        used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = used + (300 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        threads = len(os.listdir("/proc/self/task"))
        try:
            fastvec.make("_Debug-v0", 200, block_size=1, num_threads=200)
        except RuntimeError as e:
            print("error:", e)
        assert len(os.listdir("/proc/self/task")) == threads
        env = fastvec.make("CartPole-v1", 4, num_threads=2)
        env.reset()
        assert env.step(np.zeros(4, dtype=np.int64))[1].tolist() == [1.0] * 4
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "error: could not start the pool's threads: 199 worker thread(s) asked (num_threads=200)" in run.stdout
    assert run.stdout.rstrip().endswith("ok")


@pytest.mark.address_space
def test_a_pool_too_large_for_the_memory_limit_is_refused_at_once():
    run = run_child("""
        import resource, time, fastvec
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        start = time.monotonic()
        try:
            fastvec.make("CartPole-v1", 1 << 24)
        except MemoryError as e:
            print("error:", e)
        assert time.monotonic() - start < 5
        fastvec.make("CartPole-v1", 1 << 16).reset()
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "error: a pool of 16777216 envs needs about" in run.stdout and "RLIMIT_AS" in run.stdout
    assert run.stdout.rstrip().endswith("ok")


# -- messages that say what to do ------------------------------------------------


def test_a_tensor_that_requires_grad_says_to_detach_it():
    torch = pytest.importorskip("torch")
    env = fastvec.make("CartPole-v1", 2, seed=0)
    env.reset()
    with pytest.raises(TypeError, match=r"actions could not be converted to a numpy array: .*detach"):
        env.step(torch.zeros(2, requires_grad=True))
    assert env.step(torch.zeros(2, dtype=torch.int64))[1].tolist() == [1.0, 1.0]


def test_huge_unsigned_actions_and_env_ids_are_reported_as_they_are():
    env = fastvec.make("CartPole-v1", 2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"actions\[1\] = 18446744073709551615 is out of range"):
        env.step(np.array([0, 2**64 - 1], dtype=np.uint64))
    env = fastvec.make("CartPole-v1", 4, batch_size=2, seed=0)
    env.async_reset()
    ids = env.recv()[4]["env_id"]
    env.recv()
    with pytest.raises(ValueError, match="env_id 18446744073709551615 is out of range"):
        env.send([0, 0], np.array([ids[0], 2**64 - 1], dtype=np.uint64))
    with pytest.raises(ValueError, match="env_id 4294967299 is out of range"):
        env.send([0], [2**32 + 3])
    env.send(np.array([1, 1], dtype=np.uint64), ids.astype(np.uint64))
    assert sorted(env.recv()[4]["env_id"].tolist()) == sorted(ids.tolist())


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_0d_array_seed_is_an_int_seed_and_options_must_be_a_dict(backend):
    env = fastvec.make("CartPole-v1", 2, backend=backend)
    a, _ = env.reset(seed=np.array(7))
    b, _ = env.reset(seed=7)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="options must be a dict"):
        env.reset(options="abc")
    assert env.reset()[0].shape == (2, 4)
    env.close()


@pytest.mark.parametrize("block_size", [1, 4])
def test_a_sync_pool_takes_a_partial_send(block_size):
    """A sync pool (EnvPool's step of some envs): send to some envs, recv_rest returns exactly their rows in env
    order, with the observations one-env pools give for the same actions; the envs not sent stay where they were
    (held envs of a block included), on two threads."""
    n = 8
    env = fastvec.make("CartPole-v1", num_envs=n, num_threads=2, block_size=block_size, seed=0)
    refs = [fastvec.make("CartPole-v1", num_envs=1, seed=i) for i in range(n)]
    env.reset()
    last = np.stack([r.reset()[0][0] for r in refs])
    rng = np.random.default_rng(0)
    for _ in range(200):
        ids = np.sort(rng.choice(n, size=int(rng.integers(1, n)), replace=False)).astype(np.int32)
        actions = rng.integers(0, 2, len(ids))
        env.send(actions, ids)
        obs, reward, term, trunc, info = env.recv_rest()
        assert obs.shape == (len(ids), 4)
        for row, (i, a) in enumerate(zip(ids, actions, strict=True)):
            want = refs[i].step(np.array([a]))
            np.testing.assert_array_equal(obs[row], want[0][0])
            assert (term[row], trunc[row]) == (want[2][0], want[3][0])
            last[i] = want[0][0]
    # The envs' current observations (what a render draws) are where their last steps left them.
    np.testing.assert_array_equal(env._pool.peek(None, False), last)
    for e in (env, *refs):
        e.close()


def test_peek_of_idle_envs_while_others_are_in_flight():
    """An async pool: the envs just received can be observed (peek) while the others are still being stepped on
    the pool's threads; an env in flight is refused by name; the pool goes on."""
    env = fastvec.make("Acrobot-v1", num_envs=8, batch_size=4, num_threads=2, block_size=1, seed=0)
    env.async_reset()
    for _ in range(50):
        obs, *_, info = env.recv()
        ids = info["env_id"]
        np.testing.assert_array_equal(env._pool.peek(ids, False), obs)
        others = np.setdiff1d(np.arange(8), ids)
        if len(others) and env.batch_size < 8:
            with pytest.raises(RuntimeError, match=r"env \d is in flight"):
                env._pool.peek(others[:1], False)
        env.send(np.zeros(4, np.int64), ids)
    env.close()
