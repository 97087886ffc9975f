"""How the native pool hands out work: a slow env holds only the thread that steps it, and the default thread
count adapts to the machine's load without changing what the envs do (tests/cpp/core_tests.cpp drives the
thread tuner itself through made-up loads, and checks trajectories while it switches)."""

from __future__ import annotations

import time

import numpy as np

import fastvec

SLOW = 1  # the debug env's action that sleeps (sleep_action)


def test_a_slow_env_holds_only_its_own_thread_async():
    # Env 0's step sleeps 0.3 s; envs 1-3 step in microseconds. Each of them must come back, again and again,
    # while env 0 is still sleeping: none waits behind it for a thread (with the envs split in halves between
    # the two threads, env 1 would).
    env = fastvec.make("_Debug-v0", 4, batch_size=1, num_threads=2, block_size=1, sleep_us=300_000, sleep_action=SLOW)
    env.async_reset()
    for _ in range(4):
        env_id = env.recv()[4]["env_id"]
        env.send(np.array([SLOW if env_id[0] == 0 else 0]), env_id)
    rows = {1: 0, 2: 0, 3: 0}
    t0 = time.perf_counter()
    while True:
        env_id = env.recv()[4]["env_id"]
        if env_id[0] == 0:
            break
        rows[int(env_id[0])] += 1
        env.send(np.array([0]), env_id)
    waited = time.perf_counter() - t0
    env.close()
    assert waited > 0.2, waited  # env 0 really slept
    assert min(rows.values()) >= 10, rows


def test_a_sync_step_spreads_its_slow_envs_over_the_threads():
    # Envs 0 and 1 of 8 sleep 50 ms; two threads take the queued envs as they come free, so a step takes
    # one sleep, not two (which it would if one thread's share were fixed, or the second thread woke late).
    env = fastvec.make("_Debug-v0", 8, num_threads=2, block_size=1, sleep_us=50_000, sleep_action=SLOW)
    env.reset()
    actions = np.array([SLOW, SLOW, 0, 0, 0, 0, 0, 0])
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        env.step(actions)
        times.append(time.perf_counter() - t0)
    env.close()
    assert min(times) < 0.09, times


def test_an_explicit_thread_count_is_kept_and_the_default_adapts_within_it():
    fixed = fastvec.make("CartPole-v1", 4096, num_threads=2, seed=0)
    default = fastvec.make("CartPole-v1", 4096, seed=0)
    fixed.reset()
    default.reset()
    actions = np.random.default_rng(0).integers(0, 2, size=(300, 4096))
    for a in actions:
        for x, y in zip(fixed.step(a)[:4], default.step(a)[:4], strict=True):
            np.testing.assert_array_equal(x, y)  # whatever the default runs on, the envs do the same
        assert fixed.active_threads == 2
        assert 1 <= default.active_threads <= default.num_threads
    fixed.close()
    default.close()
