"""gymnasium's async API (reset_async/reset_wait, step_async/step_wait, with their time-outs and error classes),
recv's time-out, and what a worker that never answers does: checked against AsyncVectorEnv's contract."""

from __future__ import annotations

import multiprocessing
import time

import gymnasium as gym
import numpy as np
import pytest
from envs_for_tests import Thrower
from gymnasium.error import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError
from gymnasium.vector import SyncVectorEnv

import fastvec

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)


class Sleepy(gym.Env):
    """Sleeps ``delay`` seconds in each step (a simulator over a socket that may stop answering)."""

    observation_space = gym.spaces.Box(0.0, 1000.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, delay=0.0, reset_delay=0.0):
        self.delay, self.reset_delay = delay, reset_delay
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        time.sleep(self.reset_delay)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        time.sleep(self.delay)
        self.t += 1
        return np.full(2, self.t, np.float32), 1.0, False, False, {}


def cartpoles(backend, n=3):
    if backend == "native":
        return fastvec.make("CartPole-v1", n)
    return fastvec.make([lambda: gym.make("CartPole-v1")] * n)


ACTIONS = np.array([0, 1, 1])


@pytest.mark.parametrize("backend", ["native", "python"])
def test_reset_async_and_step_async_give_what_sync_vector_env_gives(backend):
    reference = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    with cartpoles(backend) as env:
        env.reset_async(seed=7)
        obs, info = env.reset_wait()
        want, _ = reference.reset(seed=7)
        np.testing.assert_array_equal(obs, want)
        assert env.np_random_seed == reference.np_random_seed == (7, 8, 9)
        for _ in range(30):
            env.step_async(ACTIONS)
            got = env.step_wait(timeout=10)
            want = reference.step(ACTIONS)
            for a, b in zip(got[:4], want[:4], strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_the_async_api_raises_gymnasiums_errors(backend):
    env = cartpoles(backend)
    with pytest.raises(NoAsyncCallError):
        env.reset_wait()
    with pytest.raises(NoAsyncCallError):
        env.step_wait()
    env.reset_async()
    with pytest.raises(AlreadyPendingCallError, match="reset"):
        env.reset_async()
    with pytest.raises(AlreadyPendingCallError, match="reset"):
        env.step_async(ACTIONS)
    with pytest.raises(NoAsyncCallError):
        env.step_wait()
    env.reset_wait()
    env.step_async(ACTIONS)
    for call in (lambda: env.step(ACTIONS), env.reset, lambda: env.get_attr("spec"), env.recv):
        with pytest.raises(AlreadyPendingCallError, match="step"):
            call()
    env.step_wait()
    env.step(ACTIONS)  # and the pool goes on
    env.close()
    for call in (env.reset_async, env.reset, lambda: env.step(ACTIONS), lambda: env.step_async(ACTIONS)):
        with pytest.raises(ClosedEnvironmentError):
            call()
    with pytest.raises(RuntimeError, match="closed"):  # still a RuntimeError, as before
        env.step(ACTIONS)


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), "1"])
def test_a_bad_timeout_is_refused_and_the_call_stays_pending(timeout):
    with cartpoles("native") as env:
        env.reset()
        env.step_async(ACTIONS)
        with pytest.raises((ValueError, TypeError), match="timeout"):
            env.step_wait(timeout=timeout)
        env.step_wait()


def test_step_wait_timing_out_on_a_silent_env_names_it_and_the_step_stays_pending():
    env = fastvec.make([lambda: Sleepy(0.0), lambda: Sleepy(2.0), lambda: Sleepy(0.0)], num_workers=3)
    env.reset()
    env.step_async(np.zeros(3, dtype=np.int64))
    start = time.perf_counter()
    with pytest.raises(multiprocessing.TimeoutError, match=r"env 1 \(worker 1\)") as caught:
        env.step_wait(timeout=0.1)
    assert time.perf_counter() - start < 1.5
    assert isinstance(caught.value, TimeoutError)
    assert "env 0" not in str(caught.value) and "env 2" not in str(caught.value)
    with pytest.raises(AlreadyPendingCallError):  # still pending: its results are on their way
        env.step_async(np.zeros(3, dtype=np.int64))
    obs, reward, *_ = env.step_wait(timeout=10)
    np.testing.assert_array_equal(obs[:, 0], [1, 1, 1])
    np.testing.assert_array_equal(reward, [1.0, 1.0, 1.0])
    env.close()


def test_after_a_time_out_reset_starts_over_and_close_returns_with_a_worker_that_never_answers():
    env = fastvec.make([lambda: Sleepy(0.0), lambda: Sleepy(0.4)], num_workers=2)
    env.reset()
    env.step_async(np.zeros(2, dtype=np.int64))
    with pytest.raises(multiprocessing.TimeoutError):
        env.step_wait(timeout=0.05)
    obs, _ = env.reset()  # waits for env 1, drops that step, resets both
    np.testing.assert_array_equal(obs, np.zeros((2, 2)))
    np.testing.assert_array_equal(env.step(np.zeros(2, dtype=np.int64))[0][:, 0], [1, 1])

    hung = fastvec.make([lambda: Sleepy(0.0), lambda: Sleepy(3600.0)], num_workers=2)
    hung.reset()
    hung.step_async(np.zeros(2, dtype=np.int64))
    with pytest.raises(multiprocessing.TimeoutError, match="env 1"):
        hung.step_wait(timeout=0.05)
    start = time.perf_counter()
    hung.close()
    assert time.perf_counter() - start < 30
    with pytest.raises(ClosedEnvironmentError):
        hung.step_wait()
    env.close()


def test_recv_timing_out_in_async_mode_keeps_the_batch_for_the_next_recv():
    env = fastvec.make([lambda: Sleepy(0.0), lambda: Sleepy(0.5)], num_workers=2, batch_size=1)
    env.async_reset()
    assert sorted(int(env.recv()[4]["env_id"][0]) for _ in range(2)) == [0, 1]
    env.send(np.zeros(2, dtype=np.int64), [0, 1])
    assert env.recv(timeout=10)[4]["env_id"].tolist() == [0]
    with pytest.raises(TimeoutError, match=r"no answer yet from env 1 \(worker 1\)"):
        env.recv(timeout=0.05)
    _, reward, _, _, info = env.recv(timeout=10)
    assert info["env_id"].tolist() == [1] and reward.tolist() == [1.0]
    env.close()


def test_native_recv_times_out_and_the_batch_comes_later():
    env = fastvec.make("_Debug-v0", 4, batch_size=2, num_threads=2, sleep_us=1_000_000)
    env.async_reset()
    for _ in range(2):
        env.recv()
    env.send(np.zeros(4, dtype=np.int64), np.arange(4))
    start = time.perf_counter()
    with pytest.raises(multiprocessing.TimeoutError, match="still in flight"):
        env.recv(timeout=0.05)
    assert time.perf_counter() - start < 0.9
    rows = [env.recv(timeout=10)[4]["env_id"] for _ in range(2)]
    assert sorted(np.concatenate(rows).tolist()) == [0, 1, 2, 3]
    env.close()


def test_reset_wait_timing_out_part_way_keeps_the_batches_it_has():
    env = fastvec.make(
        [lambda: Sleepy(), lambda: Sleepy(), lambda: Sleepy(reset_delay=0.4)], num_workers=3, batch_size=2
    )
    env.reset_async(seed=3)
    with pytest.raises(multiprocessing.TimeoutError, match=r"env 2 \(worker 2\)"):
        env.reset_wait(timeout=0.1)  # the first batch (envs 0 and 1) came; env 2 did not
    obs, info = env.reset_wait(timeout=10)
    np.testing.assert_array_equal(obs, np.zeros((3, 2)))
    assert info["env_id"].tolist() == [0, 1, 2]
    assert env.np_random_seed == (3, 4, 5)
    env.close()


# -- an env's exception in async mode --------------------------------------------------------------------------


def recipe_run(backend, n, batch_size, block_size, mode, fail, min_steps=12, max_calls=100_000):
    """The README's recipe: recv -> send(actions, info["env_id"]), and on an env's exception, reset that env
    (exc.env_id) and go on, until every env was sent ``min_steps`` actions. ``fail``: {env: its step whose action
    is 3 (it raises)}. Per env, the rows it got (obs, reward, flags, episode statistics, final_obs) in order, and
    the env ids the exceptions named.

    (Not a fixed number of calls: recv returns whichever envs finish first, and on a busy machine one pool thread
    can be off its core while the other makes hundreds of calls with the other envs.)"""
    kw = {"batch_size": batch_size, "autoreset_mode": mode, "episode_stats": True}
    if backend == "native":
        env = fastvec.make(
            "_Debug-v0", n, block_size=block_size, num_threads=2, episode_length=5, throw_on_action=3, **kw
        )
    else:
        env = fastvec.make(Thrower, n, backend="python", num_workers=2, start_method="fork", **kw)
    rows: dict[int, list] = {e: [] for e in range(n)}
    steps = np.zeros(n, int)
    raised = []
    with env:
        env.async_reset()
        for _ in range(max_calls):
            if steps.min() >= min_steps:
                break
            try:
                obs, rew, term, trunc, info = env.recv()
            except Exception as exc:
                raised.append(exc.env_id)  # the env that raised: reset it to go on
                env.async_reset(env_id=[exc.env_id])
                continue
            ids = info["env_id"]
            assert rew.dtype == (np.float32 if backend == "native" else np.float64)
            for r, e in enumerate(ids.tolist()):
                ended = "_episode_return" in info and info["_episode_return"][r]
                final = info["final_obs"][r].tolist() if ended and mode == "same_step" else None
                stats = (float(info["episode_return"][r]), int(info["episode_length"][r])) if ended else None
                rows[e].append((obs[r].tolist(), float(rew[r]), bool(term[r]), bool(trunc[r]), stats, final))
            actions = [3 if fail.get(e) == steps[e] else (e + steps[e]) % 3 for e in ids.tolist()]
            steps[ids] += 1
            env.send(np.array(actions), ids)
        assert steps.min() >= min_steps, f"an env was left out of {max_calls} calls: {steps}"
        back: set[int] = set()  # every env is in flight now, so each comes back once more (one left out never would)
        while len(back) < n:
            try:
                info = (env.recv(timeout=60) if n - len(back) >= batch_size else env.recv_rest(timeout=60))[4]
            except Exception as exc:
                raised.append(exc.env_id)
                back.add(exc.env_id)
                continue
            back.update(info["env_id"].tolist())
    return rows, raised


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["next_step", "same_step"])
@pytest.mark.parametrize(
    ("n", "batch_size", "block_size", "fail"),
    [
        (8, 4, 1, {5: 6}),
        (8, 4, 2, {5: 6}),
        (8, 2, 1, {0: 3}),
        (8, 6, 2, {7: 4}),
        (8, 4, 4, {1: 6, 2: 6}),  # two envs of one block raise in the same step: one exception each
        (6, 3, 3, {4: 2}),
    ],
)
@pytest.mark.parametrize("backend", ["native", "python"])
def test_an_env_exception_keeps_its_batch_mates_in_play(backend, n, batch_size, block_size, fail, mode):
    # Before, recv() raised and dropped the batch's other rows: their envs were no longer in flight, so a
    # recv/send loop never sent them again (8 envs ran on 7), or recv() refused to wait forever.
    rows, raised = recipe_run(backend, n, batch_size, block_size, mode, fail)
    want, none = recipe_run(backend, n, batch_size, block_size, mode, {})
    assert none == [] and sorted(raised) == sorted(fail), raised
    for e in range(n):  # every env is still in play: recipe_run took each back once more after its calls
        if e not in fail:  # the kept rows are what the healthy envs produced
            k = min(len(rows[e]), len(want[e]))
            assert rows[e][:k] == want[e][:k], f"env {e}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["native", "python"])
def test_the_recv_after_an_env_exception_returns_the_rows_it_kept_first(backend):
    if backend == "native":
        env = fastvec.make("_Debug-v0", 8, batch_size=4, block_size=4, num_threads=2, throw_on_action=3)
    else:
        env = fastvec.make(Thrower, 8, batch_size=4, backend="python", num_workers=2, start_method="fork")
    with env:
        env.async_reset()
        env.recv(), env.recv()
        env.send(np.array([1, 3, 2, 1]), [0, 1, 2, 3])
        with pytest.raises(RuntimeError if backend == "native" else ValueError, match="env 1") as raised:
            env.recv()
        assert raised.value.env_id == 1
        # The kept envs are in flight until a recv returns them; the env that raised is idle, to be reset.
        with pytest.raises(RuntimeError, match=r"^env 2 is not awaiting an action"):
            env.send(np.array([0]), [2])
        with pytest.raises(RuntimeError, match=r"^env 1 raised an exception earlier; reset it"):
            env.send(np.array([0]), [1])
        env.send(np.array([0, 0, 0, 0]), [4, 5, 6, 7])
        obs, rew, _, _, info = env.recv()
        assert sorted(info["env_id"][:3].tolist()) == [0, 2, 3]
        kept = np.argsort(info["env_id"][:3])
        assert obs[:3][kept].tolist() == [[1, 1], [1, 2], [1, 1]] and rew[:3][kept].tolist() == [1, 2, 1]
        env.async_reset(env_id=[1])
        got = sorted(info["env_id"][3:].tolist() + env.recv()[4]["env_id"].tolist())
        assert got == [1, 4, 5, 6, 7]


class SeedThrower(gym.Env):
    """Raises in a reset seeded 13; else its observation is its seeded generator's draw."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed == 13:
            raise ValueError("SeedThrower's seed 13")
        return self.np_random.random(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_a_reset_after_a_reset_that_raised_part_way_returns_its_own_rows():
    # Async, 8 envs in batches of 2: env 3's reset raises (seed 10 + 3), after some batches came back. The next
    # full reset must return its own rows, none of the failed reset's (they were kept for it, and reused).
    env = fastvec.make([SeedThrower] * 8, batch_size=2, num_workers=2)
    want = fastvec.make([SeedThrower] * 8, batch_size=2, num_workers=2)
    try:
        with pytest.raises(ValueError, match="seed 13"):
            env.reset(seed=10)
        obs, info = env.reset(seed=0)
        ref, ref_info = want.reset(seed=0)
        np.testing.assert_array_equal(info["env_id"], np.arange(8))
        np.testing.assert_array_equal(obs, ref)
    finally:
        env.close()
        want.close()
