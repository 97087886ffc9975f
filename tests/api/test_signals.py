"""Signals and processes: Ctrl-C during a blocking wait, pools after fork, interpreter exit with open pools.

Each case runs in a fresh interpreter, so that a signal or a fork cannot disturb the test runner."""

from __future__ import annotations

import subprocess
import textwrap

import pytest
from conftest import run_python

PRELUDE = """
import os, signal, sys, threading, time
import gymnasium as gym
import numpy as np
import fastvec

# Python leaves SIGINT ignored if it started so (a job run in the background with '&' or nohup):
# raise KeyboardInterrupt on it, as an interactive session does.
signal.signal(signal.SIGINT, signal.default_int_handler)

class Slow(gym.Env):
    '''A Python env whose step takes 3 s.'''
    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        time.sleep(3)
        return np.zeros(1, np.float32), float(action), False, False, {}

def make_pool(backend, **kw):
    if backend == "native":
        return fastvec.make("_Debug-v0", 2, num_threads=2, sleep_us=3_000_000, **kw)
    return fastvec.make([Slow] * 2, num_workers=2, **kw)
"""


def run_script(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return run_python(PRELUDE + textwrap.dedent(code), timeout)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_ctrl_c_during_a_blocking_recv_raises_keyboard_interrupt_promptly(backend):
    """A step that takes 3 s is in flight; SIGINT after 0.3 s raises KeyboardInterrupt in recv() at
    once, and the pool is still usable: the next recv() returns that step's result."""
    run = run_script(f"""
        env = make_pool({backend!r}, batch_size=1)
        env.async_reset()
        first = int(env.recv()[4]["env_id"][0])
        env.recv()
        env.send(np.array([1]), np.array([first]))
        # Let a worker take the step: a caller waiting in recv() steps queued envs itself, and a step
        # it runs cannot be interrupted until it returns.
        time.sleep(0.5)
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            env.recv()
        except KeyboardInterrupt:
            print("interrupted after", round(time.monotonic() - start, 2))
        else:
            sys.exit("recv returned without KeyboardInterrupt")
        assert time.monotonic() - start < 1.5, "KeyboardInterrupt came late"
        obs, reward, terminated, truncated, info = env.recv()  # the step in flight arrives
        assert int(info["env_id"][0]) == first and reward[0] == 1.0
        start = time.monotonic()
        env.close()
        assert time.monotonic() - start < 5
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "interrupted after" in run.stdout and run.stdout.rstrip().endswith("ok")


def test_ctrl_c_during_a_sync_step_leaves_the_pool_closable():
    """Sync step of 2 envs on 2 threads: the caller steps one env itself (uninterruptible while the env
    runs), so KeyboardInterrupt comes once that env step is over, with the other still in flight;
    reset() then waits for it and the pool goes on."""
    run = run_script("""
        env = fastvec.make("_Debug-v0", 2, num_threads=2, sleep_us=300_000, block_size=1)
        env.reset()
        threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            for _ in range(20):
                env.step(np.array([1, 1]))
        except KeyboardInterrupt:
            print("interrupted")
        obs, info = env.reset()
        obs, reward, *_ = env.step(np.array([2, 3]))
        assert reward.tolist() == [2.0, 3.0]
        env.close()
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "interrupted" in run.stdout and run.stdout.rstrip().endswith("ok")


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_pool_used_after_fork_is_a_clear_error(backend):
    """The child gets a RuntimeError naming fork (not a hang); its close() leaves the parent's pool alone;
    a native pool the child makes works; the parent's pool works on."""
    run = run_script(
        f"""
        env = fastvec.make("CartPole-v1", 4, backend={backend!r}, seed=0)
        env.reset()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                env.step(np.zeros(4, dtype=np.int64))
            except RuntimeError as e:
                code = 0 if "fork" in str(e) else 2
            env.close()
            del env
            if {backend!r} == "native":  # a native pool made in the child works (fork_generation)
                own = fastvec.make("CartPole-v1", 4, seed=0)
                own.reset()
                if own.step(np.zeros(4, dtype=np.int64))[1].tolist() != [1.0] * 4:
                    code = 3
                own.close()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        obs, reward, *_ = env.step(np.zeros(4, dtype=np.int64))
        assert reward.tolist() == [1.0] * 4
        env.close()
        print("ok")
    """,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("ok")


def test_interpreter_exit_with_open_pools_neither_hangs_nor_crashes():
    run = run_script(
        """
        keep = []
        sync = fastvec.make("CartPole-v1", 8, num_threads=2)
        sync.reset()
        keep.append(sync)
        busy = fastvec.make("_Debug-v0", 4, batch_size=2, num_threads=2, sleep_us=200_000)
        busy.async_reset()
        ready = busy.recv()[4]["env_id"]
        busy.send(np.array([1, 1]), ready)  # steps in flight at exit
        keep.append(busy)
        atari = fastvec.make("Pong-v5", 2) if "Pong-v5" in fastvec.list_envs() else None
        keep.append(atari)
        py = fastvec.make("CartPole-v1", 2, backend="python", num_workers=1)
        py.reset()
        py.send(np.zeros(2, dtype=np.int64))
        keep.append(py)
        print("exiting")
    """,
        timeout=30,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "exiting" in run.stdout


@pytest.mark.parametrize("use", ["recv", "step"])
def test_interpreter_exit_while_a_daemon_thread_uses_a_native_pool_is_clean(use):
    """A daemon thread blocked in recv() (or stepping in a loop) when the main thread exits: CPython ends such
    threads when they ask for the GIL back during finalization; fastvec's thread must not abort the process
    ("terminate called without an active exception"). Three runs each: the abort came 5 times of 5."""
    code = f"""
        if {use!r} == "recv":
            env = fastvec.make("_Debug-v0", 2, batch_size=1, num_threads=2, sleep_us=3_000_000)
            env.async_reset(); env.recv(); env.recv()
            env.send(np.array([1]), np.array([0]))
            target = env.recv
        else:
            env = fastvec.make("CartPole-v1", 64, num_threads=2)
            env.reset()
            def target():
                while True:
                    env.step(np.zeros(64, dtype=np.int64))
        threading.Thread(target=target, daemon=True).start()
        time.sleep(0.3)
        print("exiting")
    """
    for _ in range(3):
        run = run_script(code, timeout=30)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "exiting" in run.stdout and "terminate" not in run.stderr


@pytest.mark.parametrize("call", ["async_reset", "step", "close"])
def test_a_signal_handler_that_uses_a_native_pool_never_deadlocks(call):
    """A Python signal handler runs inside recv()'s wait, on the waiting thread. A handler that calls the same
    pool gets a clear RuntimeError (the pool's lock is its own thread's); close() works, and the waiting
    recv() then raises that the pool is closed."""
    run = run_script(
        f"""
        env = fastvec.make("_Debug-v0", 2, batch_size=1, num_threads=2, sleep_us=1_000_000)
        env.async_reset(); env.recv(); env.recv()
        env.send(np.array([1]), np.array([0]))
        time.sleep(0.3)  # let a worker take the step, so that recv() waits
        def handler(signum, frame):
            try:
                if {call!r} == "async_reset":
                    env.async_reset()
                elif {call!r} == "step":
                    env.step(np.array([0]), np.array([1]))
                else:
                    env.close()
                    print("closed in the handler")
            except RuntimeError as e:
                print("handler:", e)
        signal.signal(signal.SIGUSR1, handler)
        threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
        try:
            info = env.recv()[4]
            print("received", info["env_id"].tolist())
        except RuntimeError as e:
            print("recv:", e)
        if {call!r} != "close":  # the pool goes on
            env.send(np.array([1]), np.array([0]))
            assert env.recv()[4]["env_id"].tolist() == [0]
        env.close()
        print("ok")
    """,
        timeout=30,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    if call == "close":
        assert "closed in the handler" in run.stdout and "recv: the pool is closed" in run.stdout
    else:
        assert "handler: this pool was called from a signal handler" in run.stdout
        assert "received [0]" in run.stdout
    assert run.stdout.rstrip().endswith("ok")
