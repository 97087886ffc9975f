"""How the native pool hands out work: a slow env holds only the thread that steps it, and the default thread
count adapts to the machine's load without changing what the envs do (tests/cpp/core_tests.cpp drives the
thread tuner itself through made-up loads, and checks trajectories while it switches)."""

from __future__ import annotations

import time

import numpy as np
import pytest

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


def _thread_cpu_seconds(tid: int) -> float:
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9  # time on a CPU, in ns


def _two_cpus() -> tuple[set[int], int, int]:
    import os

    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("needs 2 CPUs")  # CI machines have 2 (and a skip fails there)
    a, b, *_ = sorted(allowed)
    return allowed, a, b


def test_a_worker_lent_the_callers_cpu_takes_its_own_affinity_back():
    # The caller is held on CPU a, a busy loop on CPU b; the worker may go anywhere. A worker that finds the caller
    # on its CPU moves off it, and a caller with nothing left to step lends its CPU to a worker the OS has
    # descheduled with a block in hand (cpu_spread.hpp). Each move is undone: afterwards the worker's affinity is
    # what it was. (What the moves buy is speed, which `fastvec bench --contention` measures beside the peers (the
    # README's "Shared cores"), not a test: on a busy machine the OS gives the threads what it has.)
    import os
    import threading

    from fastvec.bench.machine import BusyLoops

    allowed, a, b = _two_cpus()
    before = set(os.listdir("/proc/self/task"))
    env = fastvec.make("_Debug-v0", 8, num_threads=2, block_size=1, spin_us=300)
    actions = np.zeros(8, dtype=np.int64)
    env.reset()
    for _ in range(5):
        env.step(actions)
    # The pool's one worker: the new thread that stepped (a construction helper may linger in /proc a moment
    # after it was joined; a sanitizer may start a thread of its own).
    new = [int(t) for t in set(os.listdir("/proc/self/task")) - before if os.path.exists(f"/proc/self/task/{t}")]
    worker = max(new, key=_thread_cpu_seconds)
    assert worker != threading.get_native_id()
    with BusyLoops(1) as loops:
        os.sched_setaffinity(loops.pids[0], {b})
        os.sched_setaffinity(0, {a})
        try:
            for _ in range(300):
                env.step(actions)
        finally:
            os.sched_setaffinity(0, allowed)
    for _ in range(5):
        env.step(actions)
    after = os.sched_getaffinity(worker)
    env.close()
    assert after == allowed, (after, allowed)


def test_a_pool_narrowed_after_construction_stays_narrowed():
    # taskset -a -p -c A PID narrows every thread of a running process: the pool's threads must stay on A (a
    # worker that found the caller on its CPU moved to another CPU of the construction-time set, and restored
    # that whole set).
    import os

    allowed, a, _ = _two_cpus()
    env = fastvec.make("_Debug-v0", 8, num_threads=2, block_size=1, spin_us=100)
    actions = np.zeros(8, dtype=np.int64)
    env.reset()
    for _ in range(5):
        env.step(actions)
    tasks = [int(t) for t in os.listdir("/proc/self/task")]
    try:
        for t in tasks:
            try:
                os.sched_setaffinity(t, {a})
            except ProcessLookupError:  # a thread that ended meanwhile
                pass
        for _ in range(300):
            env.step(actions)
        wider = {}
        for t in tasks:
            try:
                if os.sched_getaffinity(t) != {a}:
                    wider[t] = os.sched_getaffinity(t)
            except ProcessLookupError:
                pass
    finally:
        for t in [int(t) for t in os.listdir("/proc/self/task")]:
            try:
                os.sched_setaffinity(t, allowed)
            except ProcessLookupError:
                pass
    env.close()
    assert not wider, wider
