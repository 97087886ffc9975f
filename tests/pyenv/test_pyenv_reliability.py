"""The Python-env pool under abuse: envs that crash while being made or return observations that do not
fit their space, info values the parent cannot unpickle, env ids beyond int32, Ctrl-C or a signal handler
inside a blocking wait, close() from another thread, forked children that exit, scripts without a main
guard. Each error names the env, and leaves the pool usable where it can be; nothing hangs or leaks.

Cases that need a fresh interpreter (signals, fork, exit) run in a subprocess in a scratch directory, so
that the installed fastvec is imported, not the source tree."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from conftest import run_python

import fastvec
from fastvec.pyenv import EnvError

PRELUDE = """
import ctypes, os, signal, sys, threading, time
import gymnasium as gym
import numpy as np
import fastvec
from fastvec.pyenv import EnvError, WorkerDiedError

signal.signal(signal.SIGINT, signal.default_int_handler)  # in case the runner started us with SIGINT ignored

class Sleepy(gym.Env):
    '''reward = action; each step sleeps ``delay`` seconds.'''
    observation_space = gym.spaces.Box(0, 1e9, (1,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self, delay=0.0):
        self.delay, self.t = delay, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        time.sleep(self.delay)
        self.t += 1
        return np.array([self.t], np.float32), float(action), False, False, {}

def children():
    '''Process ids whose parent is this process (zombies included: a child nobody reaped leaks), but for
    the resource tracker that the spawn start method starts once per process.'''
    from multiprocessing import resource_tracker

    me, out, tracker = str(os.getpid()), [], resource_tracker._resource_tracker._pid
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if pid.isdigit() and stat.rsplit(")", 1)[1].split()[1] == me and int(pid) != tracker:
            out.append(int(pid))
    return out
"""


def run_script(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return run_python(PRELUDE + textwrap.dedent(code), timeout)


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def worker_is_gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


class Sleepy(gym.Env):
    """reward = action; each step sleeps ``delay`` seconds."""

    observation_space = gym.spaces.Box(0, 1e9, (1,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        time.sleep(self.delay)
        return np.ones(1, np.float32), float(action), False, False, {}


class Box3Env(gym.Env):
    """obs = [t, t, t] in a (3,) Box; returns ``bad`` instead at step ``bad_step`` (0: at the first reset)."""

    def __init__(self, bad=None, bad_step: int = -1, episode_length: int = 1_000_000) -> None:
        self.observation_space = gym.spaces.Box(-1e9, 1e9, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.bad, self.bad_step, self.episode_length = bad, bad_step, episode_length
        self.t = 0
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.resets += 1
        if self.bad_step == 0 and self.resets == 1:
            return self.bad, {}
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        obs = self.bad if self.t == self.bad_step else np.full(3, self.t, np.float32)
        return obs, float(action), self.t >= self.episode_length, False, {}


class DictObsEnv(gym.Env):
    """Dict({"pos": Box (3,), "mode": Discrete(3)}) observations; ``obs[key]`` is ``bad`` at the first step."""

    def __init__(self, key: str, bad) -> None:
        self.observation_space = gym.spaces.Dict(
            {"pos": gym.spaces.Box(-1, 1, (3,), np.float32), "mode": gym.spaces.Discrete(3)}
        )
        self.action_space = gym.spaces.Discrete(2)
        self.key, self.bad = key, bad
        self.t = self.resets = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.resets += 1
        return {"pos": np.zeros(3, np.float32), "mode": 0}, {}

    def step(self, action):
        self.t += 1
        obs = {"pos": np.full(3, 0.5, np.float32), "mode": 1}
        if self.t == 1 and self.resets == 1:
            obs[self.key] = self.bad
        return obs, 0.0, False, False, {}


# -- an env constructor that crashes ---------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("start_method", "crash"), [("fork", "os.kill(os.getpid(), signal.SIGSEGV)"), ("spawn", "ctypes.string_at(0)")]
)
def test_an_env_constructor_that_segfaults_is_an_error_naming_its_envs(start_method, crash):
    """Env 0's constructor segfaults: the caller gets a WorkerDiedError naming worker 0's envs and the
    signal (the spaces are read in a worker, never by running a constructor in the caller); nothing leaks."""
    run = run_script(f"""
        class Crash(Sleepy):
            def __init__(self):
                {crash}

        start = time.monotonic()
        try:
            fastvec.make([Crash, Sleepy, Sleepy, Sleepy], num_workers=2, start_method={start_method!r})
        except WorkerDiedError as e:
            print("error:", e)
        assert time.monotonic() - start < 30
        assert not children(), children()
        env = fastvec.make([Sleepy] * 2, num_workers=2, start_method={start_method!r})  # the next pool works
        assert env.reset()[0].tolist() == [[0], [0]] and env.step(np.array([1, 2]))[1].tolist() == [1, 2]
        env.close()
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok" in run.stdout and "Traceback" not in run.stderr, run.stderr  # the other worker goes quietly
    assert (
        "worker 0 (pid" in run.stdout
        and "envs 0..1) was killed by signal 11 (SIGSEGV) while making its envs" in run.stdout
    ), run.stdout


@pytest.mark.timeout(60)
def test_spaces_metadata_and_spec_come_from_a_worker():
    env = fastvec.make("CartPole-v1", 3, backend="python", start_method="fork", num_workers=2)
    assert env.spec.id == "CartPole-v1" and env.metadata["render_fps"] == 50
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    assert env.single_observation_space == gym.make("CartPole-v1").observation_space
    env.close()

    class Wider(Box3Env):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Box(-1e9, 1e9, (4,), np.float32)

    for fns, first in (([Box3Env, Wider, Box3Env, Box3Env], 1), ([Box3Env, Box3Env, Wider, Wider], 2)):
        with pytest.raises(ValueError, match=rf"env {first} has observation_space .* but env 0 has .* share"):
            fastvec.make(fns, start_method="fork", num_workers=2)


# -- bookkeeping that survives an exception at a blocking point ------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("call", ["step", "send_recv"])
def test_reset_after_ctrl_c_with_one_worker_answered_returns(call):
    """Worker 0 answers at once, worker 1 takes 2 s; Ctrl-C in between; reset() returns and the pool
    steps on correctly."""
    run = run_script(
        f"""
        env = fastvec.make([lambda: Sleepy(0.0), lambda: Sleepy(2.0)], num_workers=2)
        env.reset()
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            if {call!r} == "step":
                env.step(np.array([1, 1]))
            else:
                env.send(np.array([1, 1]))
                env.recv()
        except KeyboardInterrupt:
            print("interrupted")
        obs, info = env.reset()
        assert obs.tolist() == [[0], [0]], obs
        obs, reward, *_ = env.step(np.array([2, 3]))
        assert obs.tolist() == [[1], [1]] and reward.tolist() == [2, 3], (obs, reward)
        env.close()
        print("ok")
    """,
        timeout=40,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "interrupted" in run.stdout and run.stdout.rstrip().endswith("ok")


def _refuse(reason: str):
    raise ValueError(reason)


class Unloadable:
    """Pickles in the worker; unpickling it in the parent raises."""

    def __reduce__(self):
        return _refuse, ("refusing to be unpickled",)


class UnloadableInfoEnv(Box3Env):
    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.t == self.at and self.resets == 1:
            info = {"thing": Unloadable()}
        elif self.t > 1:
            info = {"t": self.t}
        return obs, reward, terminated, truncated, info


@pytest.mark.timeout(60)
@pytest.mark.parametrize("batch_size", [4, 2])
def test_an_info_that_cannot_be_unpickled_is_an_error_for_its_env(batch_size):
    env = fastvec.make(
        [lambda: UnloadableInfoEnv(-1), lambda: UnloadableInfoEnv(2)] * 2,
        batch_size=batch_size,
        start_method="fork",
        num_workers=2,
    )
    env.reset()
    with pytest.raises(
        EnvError,
        match=r"env 1: its info could not be unpickled in the parent: "
        r"ValueError: refusing to be unpickled",
    ):
        for _ in range(2):
            if batch_size == 4:
                env.step(np.ones(4, np.int64))
            else:
                for ids in ([0, 1], [2, 3]):
                    env.send(np.ones(2, np.int64), ids)
                    env.recv()
    obs, info = env.reset()
    assert obs[:, 0].tolist() == [0, 0, 0, 0]
    for t in range(1, 4):
        if batch_size == 4:
            obs, reward, _, _, info = env.step(np.ones(4, np.int64))
        else:
            env.send(np.ones(2, np.int64), [0, 1])
            env.send(np.ones(2, np.int64), [2, 3])
            rows = [env.recv(), env.recv()]
            order = np.argsort(np.concatenate([r[4]["env_id"] for r in rows]))
            obs = np.concatenate([r[0] for r in rows])[order]
            reward = np.concatenate([r[1] for r in rows])[order]
            info = {"t": np.concatenate([r[4]["t"] for r in rows])[order]} if t > 1 else rows[0][4]
        assert obs[:, 0].tolist() == [t] * 4 and reward.tolist() == [1] * 4
        assert (info["t"].tolist() == [t] * 4) if t > 1 else "t" not in info  # messages still go to their envs
    env.close()


# -- a signal handler that uses the pool -----------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("call", ["env.reset()", "env.async_reset()", "env.step(np.array([1, 1]))"])
def test_a_signal_handler_that_uses_the_pool_gets_a_clear_error(call):
    run = run_script(
        f"""
        env = fastvec.make([lambda: Sleepy(1.0)] * 2, num_workers=2)
        env.reset()
        caught = []

        def handler(signum, frame):
            try:
                {call}
            except RuntimeError as e:
                caught.append(str(e))

        signal.signal(signal.SIGUSR1, handler)
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
        obs, reward, *_ = env.step(np.array([1, 2]))  # the handler runs inside this step's wait
        assert obs.tolist() == [[1], [1]] and reward.tolist() == [1, 2], (obs, reward)
        assert len(caught) == 1, caught
        print("caught:", caught[0])
        obs, reward, *_ = env.step(np.array([3, 0]))
        assert obs.tolist() == [[2], [2]] and reward.tolist() == [3, 0], (obs, reward)
        env.close()
        print("ok")
    """,
        timeout=40,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "caught: " in run.stdout and run.stdout.rstrip().endswith("ok")
    assert "called from a signal handler (or re-entrantly) while this pool waits in recv(); " in run.stdout


@pytest.mark.timeout(120)
def test_a_signal_handler_may_close_the_pool():
    run = run_script(
        """
        env = fastvec.make([lambda: Sleepy(3.0)] * 2, num_workers=2, start_method="fork")
        env.reset()
        closed = []
        signal.signal(signal.SIGUSR1, lambda signum, frame: closed.append(env.close()))
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
        start = time.monotonic()
        try:
            env.step(np.array([1, 1]))
        except RuntimeError as e:
            print("error:", e)
        assert time.monotonic() - start < 2, time.monotonic() - start
        assert closed == [None] and env.closed
        assert not children(), children()
        try:
            env.reset()
        except RuntimeError as e:
            print("then:", e)
        print("ok")
    """,
        timeout=40,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "error: the pool is closed\n" in run.stdout and "then: the pool is closed\n" in run.stdout
    assert run.stdout.rstrip().endswith("ok")


# -- observations that do not fit the space --------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("bad", "bad_step", "mode", "match"),
    [
        (np.array([0.7], np.float32), 2, "next_step", r"step\(\) returned an observation of shape \(1,\)"),
        (0.25, 2, "next_step", r"step\(\) returned an observation of shape \(\) \(0.25\)"),
        (None, 2, "next_step", r"step\(\) returned an observation None"),
        (np.zeros((3, 1), np.float32), 2, "next_step", r"step\(\) returned an observation of shape \(3, 1\)"),
        (np.array([0.7], np.float32), 0, "next_step", r"reset\(\) returned an observation of shape \(1,\)"),
        (np.array([0.7], np.float32), 2, "same_step", r"step\(\) returned an observation of shape \(1,\)"),
        (None, 3, "same_step", r"step\(\) returned an observation None"),  # the final observation
    ],
)
def test_an_observation_that_does_not_fit_the_space_is_an_env_error(bad, bad_step, mode, match):
    episode_length = 3 if mode == "same_step" else 1_000_000
    env = fastvec.make(
        [Box3Env, lambda: Box3Env(bad, bad_step, episode_length)],
        start_method="fork",
        num_workers=2,
        autoreset_mode=mode,
    )
    # The space as this numpy prints it (1e+09 under numpy 2, 1000000000.0 under numpy 1.26).
    space = re.escape(f"for observation_space {Box3Env().observation_space}, which needs shape (3,)")
    with pytest.raises(EnvError, match=rf"^env 1: {match}.* {space}"):
        env.reset()
        for _ in range(3):
            env.step(np.ones(2, np.int64))
    obs, _ = env.reset()  # the pool goes on
    assert obs.tolist() == [[0, 0, 0]] * 2
    assert env.step(np.ones(2, np.int64))[0].tolist() == [[1, 1, 1]] * 2
    env.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("key", "bad", "match"),
    [
        ("pos", np.array([0.7], np.float32), r"obs\['pos'\] of shape \(1,\) .*Box\(-1.0, 1.0, \(3,\), float32\)"),
        ("pos", None, r"obs\['pos'\] None .*Box\(-1.0, 1.0, \(3,\), float32\)"),
        ("mode", np.array([1, 2]), r"obs\['mode'\] of shape \(2,\) .*Discrete\(3\), which needs shape \(\)"),
        ("mode", None, r"obs\['mode'\] None .*Discrete\(3\)"),
    ],
)
def test_a_dict_leaf_that_does_not_fit_is_an_env_error(key, bad, match):
    env = fastvec.make([lambda: DictObsEnv(key, bad)] * 2, start_method="fork", num_workers=1)
    env.reset()
    with pytest.raises(EnvError, match=rf"^env 0: step\(\) returned {match}"):
        env.step(np.ones(2, np.int64))
    env.reset()
    obs, *_ = env.step(np.ones(2, np.int64))
    assert obs["pos"].tolist() == [[0.5] * 3] * 2 and obs["mode"].tolist() == [1, 1]
    env.close()


# -- env ids beyond int32 --------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_env_ids_out_of_int32_range_are_errors_with_their_real_value():
    sync = fastvec.make(lambda: Box3Env(), 4, start_method="fork", num_workers=2)
    sync.reset()
    for ids, shown in (
        ([2**32 + 3, -(2**32)], 2**32 + 3),
        (np.array([2**32 + 3, -(2**32)]), 2**32 + 3),
        ([1, -(2**32)], -(2**32)),
        (np.array([1, -(2**32)]), -(2**32)),
        (np.array([2**64 - 1], np.uint64), 2**64 - 1),
        ([2**64 - 1], 2**64 - 1),
        ([2**64 - 1, -1], 2**64 - 1),  # numpy would make these floats
        ([1, 2**70], 2**70),  # and these objects
    ):
        with pytest.raises(ValueError, match=rf"^env_id {shown} is out of range \[0, 4\)$"):
            sync.reset(options={"env_id": ids})
    assert sync.step(np.ones(4, np.int64))[0][:, 0].tolist() == [1, 1, 1, 1]
    sync.close()
    env = fastvec.make(lambda: Box3Env(), 4, batch_size=2, start_method="fork", num_workers=2)
    env.async_reset()
    env.recv()
    env.recv()
    for call in (
        lambda: env.send([1], [2**32 + 3]),
        lambda: env.send(np.array([1]), np.array([2**32 + 2])),
        lambda: env.send([1], 2**32 + 2),
        lambda: env.step([1], [2**32]),
        lambda: env.async_reset(env_id=[2**32 + 1]),
    ):
        with pytest.raises(ValueError, match=r"^env_id 42949672\d\d is out of range \[0, 4\)$"):
            call()
    env.send([1, 1], [3, 0])
    got = env.recv()
    assert sorted(got[4]["env_id"].tolist()) == [0, 3] and got[0][:, 0].tolist() == [1, 1]
    env.close()


# -- a forked child that exits normally ------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("start_method", ["forkserver", "fork"])
def test_a_forked_child_exiting_leaves_the_parents_workers_alone(start_method):
    run = run_script(f"""
        env = fastvec.make([Sleepy] * 2, num_workers=2, start_method={start_method!r})
        env.reset()
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a normal exit: atexit hooks (multiprocessing's among them) run
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        obs, reward, *_ = env.step(np.array([1, 2]))
        assert reward.tolist() == [1, 2]
        env.close()
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("ok")


@pytest.mark.timeout(120)
def test_a_child_forked_while_another_thread_waits_in_the_pool_can_close_it():
    """The fork copies the pool's lock as held (by a thread the child does not have): the child's close()
    forgets the parent's workers and returns, its calls raise the after-fork error, the parent goes on."""
    run = run_script("""
        env = fastvec.make([lambda: Sleepy(1.0)] * 2, num_workers=2)
        env.reset()
        stepper = threading.Thread(target=lambda: print("stepped", env.step(np.array([1, 2]))[1].tolist()))
        stepper.start()
        while env._pool._busy.acquire(blocking=False):  # until the thread is inside step(), holding the pool's lock
            env._pool._busy.release()
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                env.reset()
            except RuntimeError as e:
                code = 0 if "after fork" in str(e) else 2
            env.close()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        stepper.join()
        obs, reward, *_ = env.step(np.array([3, 0]))
        assert reward.tolist() == [3, 0]
        env.close()
        print("ok")
    """)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "stepped [1.0, 2.0]" in run.stdout and run.stdout.rstrip().endswith("ok")


# -- close() from another thread -------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("busy", ["step", "recv"])
def test_close_from_another_thread_makes_the_waiting_call_raise_closed(busy):
    fds = open_fds()
    env = fastvec.make(
        [lambda: Sleepy(3.0)] * 4, batch_size=4 if busy == "step" else 2, start_method="fork", num_workers=2
    )
    pids = env.worker_pids
    if busy == "step":
        env.reset()
    else:
        env.async_reset()
        env.recv()
        env.recv()
        env.send(np.ones(2, np.int64), [0, 2])
    # Let the workers take the step, so that the wait below is long (3 s) and close() comes in the middle.
    closer = threading.Timer(0.3, env.close)
    closer.start()
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"^the pool is closed$"):
        env.step(np.ones(4, np.int64)) if busy == "step" else env.recv()
    assert time.perf_counter() - start < 2.0
    closer.join(5)
    assert not closer.is_alive()
    assert env.closed and all(worker_is_gone(p) for p in pids)
    with pytest.raises(RuntimeError, match=r"^the pool is closed$"):
        env.reset()
    del env
    assert open_fds() <= fds


# -- a script without a main guard -----------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_a_main_guard_is_told_to_add_one(guarded, tmp_path):
    make = "env = fastvec.make(make_env, 2, num_workers=1)\nenv.reset(seed=0)\nprint('stepped')\n"
    if guarded:  # the same code under a guard, whose worker exits while making its env: no advice then
        make = 'if __name__ == "__main__":\n' + textwrap.indent(make, "    ")
    body = (
        textwrap.dedent("""
        import os, gymnasium as gym, fastvec

        def make_env():
            if os.environ.get("FASTVEC_TEST_EXIT"):
                os._exit(3)
            return gym.make("CartPole-v1")

    """)
        + make
    )
    script = tmp_path / "train.py"
    script.write_text(body)
    environ = {**os.environ, "FASTVEC_TEST_EXIT": "1" if guarded else ""}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=environ
    )
    assert run.returncode == 1 and "stepped" not in run.stdout, run.stdout + run.stderr
    last = run.stderr.rstrip().splitlines()[-1]
    assert last.startswith("fastvec.pyenv.pool.WorkerDiedError: worker 0 (pid "), run.stderr
    if guarded:
        assert "exited with code 3 while making its envs" in last and "__main__" not in last, last
    else:
        assert "exited with code 1 while making its envs" in last and f"{script} has no module-level" in last, last
        assert 'if __name__ == "__main__":' in last and "start_method='fork'" in last, last
        # and the worker said why it stopped
        assert "fastvec.make() was called while a worker process imports the main module" in run.stderr, run.stderr


# -- closing with envs in flight ---------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_closing_with_envs_in_flight_prints_nothing_from_the_workers():
    # The workers are in their envs' steps when the pool closes; each then finds the pipes it would answer on
    # closed (its info would go on the side pipe). Before: BrokenPipeError, then "BufferError: cannot close
    # exported pointers exist" from the worker's mm.close(), on stderr.
    run = run_script("""
        class InfoSleepy(Sleepy):
            def step(self, action):
                obs, reward, terminated, truncated, _ = super().step(action)
                return obs, reward, terminated, truncated, {"t": self.t}

        if __name__ == "__main__":
            for start_method in ("forkserver", "fork"):
                venv = fastvec.tianshou_venv([lambda: InfoSleepy(0.05)] * 8, batch_size=2, start_method=start_method)
                venv.reset()
                venv.step(np.zeros(8, np.int64), list(range(8)))  # returns the first two; six stay in flight
                venv.close()
                env = fastvec.make([lambda: InfoSleepy(0.05)] * 4, batch_size=2, num_workers=2,
                                   start_method=start_method)
                env.async_reset()
                env.recv(), env.recv()
                env.send(np.zeros(4, np.int64), [0, 1, 2, 3])
                env.close()
            print("closed")
    """)
    assert run.returncode == 0 and run.stdout == "closed\n", run.stdout + run.stderr
    assert run.stderr == ""
