"""Signals and processes: Ctrl-C during a blocking wait, pools after fork, interpreter exit with open pools.

Each case runs in a fresh interpreter, so that a signal or a fork cannot disturb the test runner."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap

import pytest

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
    # From a scratch directory, so that the installed fastvec is imported, not the source tree.
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=tempfile.gettempdir())


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
    the parent's pool works on."""
    run = run_script(f"""
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
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        obs, reward, *_ = env.step(np.zeros(4, dtype=np.int64))
        assert reward.tolist() == [1.0] * 4
        env.close()
        print("ok")
    """, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("ok")


def test_interpreter_exit_with_open_pools_neither_hangs_nor_crashes():
    run = run_script("""
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
    """, timeout=30)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "exiting" in run.stdout
