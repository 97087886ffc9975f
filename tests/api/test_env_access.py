"""Per-env access: ``call``/``get_attr``/``set_attr`` of fastvec.VectorEnv against gymnasium's vector envs,
SB3's ``get_attr``/``set_attr``/``env_method``/``env_is_wrapped`` against DummyVecEnv and SubprocVecEnv on the
same envs (SB3's test_vecenv_custom_calls, ported), Tianshou's ``get_env_attr``/``set_env_attr``, what native
envs answer, and the failure paths: an env's exception, results and arguments that cannot be pickled, calls
while envs are in flight, an interrupted call."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest
from conftest import run_python

import fastvec
from fastvec import EnvError
from fastvec.pyenv import WorkerDiedError

sb3 = pytest.importorskip("stable_baselines3")
tianshou = pytest.importorskip("tianshou")
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import (  # noqa: E402
    DummyVecEnv,
    SubprocVecEnv,
    VecFrameStack,
    VecNormalize,
)
from tianshou.env import DummyVectorEnv, SubprocVectorEnv  # noqa: E402

pytestmark = pytest.mark.versions  # numpy's and gymnasium's behaviour (CI's variant passes)

N_ENVS = 3


class GoalError(Exception):
    """An exception type of the user's own, to be re-raised as itself."""


class BadInitError(Exception):
    """An exception that pickles but cannot be rebuilt from its args (its __init__ takes two)."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a} and {b}")


class GoalEnv(gym.Env):
    """A goal env like the ones HER samples from: ``compute_reward(achieved, desired, info)``, a plain
    attribute, methods that raise, and results that cannot be pickled."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, scale: float = 1.0) -> None:
        self.observation_space = gym.spaces.Box(-10, 10, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.render_mode = render_mode
        self.scale = scale
        self.difficulty = 1
        self.goal = [0.0]
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(3, self.t, np.float32), float(self.difficulty), False, False, {}

    def compute_reward(self, achieved, desired, info):
        return -self.scale * np.linalg.norm(np.asarray(achieved) - np.asarray(desired), axis=-1)

    def render(self):
        return np.full((4, 4, 3), self.t, np.uint8)

    def push_goal(self, value):
        self.goal.append(value)
        return list(self.goal)

    def fail(self, kind="goal"):
        if kind == "goal":
            raise GoalError(f"no goal at t={self.t}")
        if kind == "bad_init":
            raise BadInitError(1, 2)
        raise KeyError(kind)

    def lock(self):
        import threading

        return threading.Lock()

    def wait(self, seconds):
        time.sleep(seconds)  # an env that takes its time to answer (for the interrupted-call test)
        return seconds

    def interrupt_and_wait(self, pid, seconds):
        # Ctrl-C reaches the caller while this call is surely in flight (a timer in the caller could fire after a
        # busy machine had let the call end): env 0 sends it, then every env takes its time.
        if self.scale == 1.0:
            os.kill(pid, signal.SIGINT)
        return self.wait(seconds)


def goal_env(**kw):
    return gym.wrappers.TimeLimit(GoalEnv(**kw), 50)


def pool(n=4, workers=2, **kw):
    """n GoalEnvs (under TimeLimit) in the Python-env pool, env i with scale i + 1."""
    fns = [lambda i=i: goal_env(scale=i + 1.0) for i in range(n)]
    return fastvec.make(fns, num_workers=workers, start_method="fork", **kw)


def sync_reference(n=4):
    return gym.vector.SyncVectorEnv([lambda i=i: goal_env(scale=i + 1.0) for i in range(n)])


# -- gymnasium: call, get_attr, set_attr ---------------------------------------------------------------------


def test_call_get_attr_and_set_attr_answer_as_sync_vector_env():
    """Each result as gymnasium's SyncVectorEnv gives it for the same envs (its AsyncVectorEnv has the same
    contract: tuples in env order, a non-callable attribute returned as it is, get_attr == call)."""
    ours, ref = pool(), sync_reference()
    achieved, desired = np.ones((5, 3)), np.zeros((5, 3))
    for env in (ours, ref):
        env.reset(seed=0)
    for args in [("compute_reward", achieved, desired, {}), ("scale",), ("difficulty",), ("render_mode",)]:
        got, want = ours.call(*args), ref.call(*args)
        assert isinstance(got, tuple) and len(got) == 4
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    assert ours.call("compute_reward", achieved, desired=desired, info={})[3].tolist() == [-4.0 * np.sqrt(3)] * 5
    assert ours.get_attr("scale") == ref.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)
    with pytest.raises(TypeError, match="push_goal"):
        ref.get_attr("push_goal")  # gymnasium's get_attr is call(name): it calls a method, here without its argument
    with pytest.raises(TypeError, match="push_goal"):
        ours.get_attr("push_goal")
    for env in (ours, ref):
        env.set_attr("difficulty", [1, 2, 3, 4])
        assert env.get_attr("difficulty") == (1, 2, 3, 4)
        env.set_attr("difficulty", (5, 6, 7, 8))
        assert env.get_attr("difficulty") == (5, 6, 7, 8)
        env.set_attr("difficulty", 9)  # one value for every env
        assert env.get_attr("difficulty") == (9, 9, 9, 9)
        env.set_attr("brand_new", "x")  # set_wrapper_attr creates what no layer has, on the outermost wrapper
        assert env.get_attr("brand_new") == ("x",) * 4
    # set_wrapper_attr reached the env itself under its TimeLimit: its step sees the new difficulty
    _, reward, *_ = ours.step(np.zeros(4, np.int64))
    assert reward.tolist() == [9.0] * 4
    for env in (ours, ref):
        with pytest.raises(ValueError) as info:
            env.set_attr("difficulty", [1, 2])
        assert str(info.value) == (
            "Values must be a list or tuple with length equal to the number of environments. "
            "Got `2` values for 4 environments."
        )
    ours.close()
    ref.close()


def test_ported_gymnasium_call_and_set_attr_tests():
    """gymnasium's tests/vector/test_async_vector_env.py: test_call_async_vector_env (render without pygame: an
    env that renders arrays) and test_set_attr_async_vector_env, on CartPole-v1 made as they make it."""

    def make_env(env_name, seed, **kwargs):
        def _make():
            env = gym.make(env_name, disable_env_checker=True, **kwargs)
            env.action_space.seed(seed)
            env.reset(seed=seed)
            return env

        return _make

    env = fastvec.make([make_env("CartPole-v1", i) for i in range(4)], start_method="fork", num_workers=2)
    env.reset()
    gravity = env.call("gravity")
    assert isinstance(gravity, tuple) and len(gravity) == 4
    assert all(isinstance(g, float) and g == 9.8 for g in gravity)
    env.set_attr("gravity", [9.81, 3.72, 8.87, 1.62])
    assert env.get_attr("gravity") == (9.81, 3.72, 8.87, 1.62)
    env.close()

    env = fastvec.make([lambda: goal_env(render_mode="rgb_array")] * 3, start_method="fork", num_workers=2)
    assert env.render_mode == "rgb_array"  # the envs', as AsyncVectorEnv takes it from its first env
    env.reset()
    images = env.call("render")
    assert isinstance(images, tuple) and len(images) == 3
    assert all(isinstance(i, np.ndarray) and i.shape == (4, 4, 3) for i in images)
    env.step(np.ones(3, np.int64))
    frames = env.render()  # test_render_async_vector: render() is call("render")
    assert isinstance(frames, tuple) and [f[0, 0, 0] for f in frames] == [1, 1, 1]
    env.close()
    env = fastvec.make([make_env("CartPole-v1", i) for i in range(2)], start_method="fork")
    assert env.render_mode is None and env.metadata["render_fps"] == 50
    assert env.render() is None
    env.close()
    native = fastvec.make("CartPole-v1", 2)
    assert native.render_mode is None and native.render() is None
    native.close()


def test_calls_into_the_pools_own_methods_are_refused():
    """As AsyncVectorEnv refuses them: the pool resets, steps and closes the envs (and counts their steps)."""
    env = pool()
    for name in ("reset", "step", "close"):
        with pytest.raises(ValueError, match=f"Trying to call function `{name}` with `call`"):
            env.call(name)
    env.reset()
    env.step(np.zeros(4, np.int64))
    env.close()


def test_env_call_targets_envs_in_order_and_checks_its_arguments():
    env = pool()
    assert env.env_call("get", "scale", env_ids=[3, 0, 3]) == [4.0, 1.0, 4.0]
    assert env.env_call("get", "scale", env_ids=2) == [3.0]
    assert env.env_call("get", "scale", env_ids=[]) == []
    assert env.env_call("method", "push_goal", (5,), env_ids=[1]) == [[0.0, 5]]
    assert env.env_call("is_wrapped", "TimeLimit", (gym.wrappers.TimeLimit,)) == [True] * 4
    assert env.env_call("is_wrapped", "ClipReward", (gym.wrappers.ClipReward,)) == [False] * 4
    with pytest.raises(ValueError, match="kind must be one of"):
        env.env_call("delete", "scale")
    with pytest.raises(TypeError, match="attribute name must be a str"):
        env.env_call("get", 3)
    with pytest.raises(ValueError, match="out of range"):
        env.env_call("get", "scale", env_ids=[4])
    with pytest.raises(ValueError, match="one value per env"):
        env.env_call("set", "scale", (1.0,), env_ids=[0, 1])
    with pytest.raises(TypeError, match="wrapper class"):
        env.env_call("is_wrapped", "x", ("TimeLimit",))
    with pytest.raises(TypeError, match="no keyword arguments"):
        env.env_call("get", "scale", (), {"x": 1})
    assert env.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)  # nothing above reached the envs
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.get_attr("scale")


def test_each_env_gets_its_own_copy_of_values_and_arguments():
    """As from a process per env: envs that share a worker never share a value set or passed to them."""
    env = pool(workers=1)
    shared = [1.0]
    env.set_attr("goal", [shared] * 4)  # one list object, for every env
    assert env.env_call("method", "push_goal", (2.0,), env_ids=[0]) == [[1.0, 2.0]]
    assert env.get_attr("goal") == ([1.0, 2.0], [1.0], [1.0], [1.0])
    marker = [7]
    assert env.call("push_goal", marker) == ([1.0, 2.0, [7]], [1.0, [7]], [1.0, [7]], [1.0, [7]])
    results = env.get_attr("goal")
    results[1].append("changed here")
    assert env.get_attr("goal")[1] == [1.0, [7]]
    env.close()


def test_large_arguments_and_results_pass_through_full_pipes():
    """More than a pipe holds each way (a pipe buffer is 64 KiB)."""
    env = pool(workers=2)
    big = np.arange(3 * 200_000, dtype=np.float64).reshape(-1, 3)
    rewards = env.call("compute_reward", big, np.zeros_like(big), {})
    want = -np.linalg.norm(big, axis=-1)
    for i, r in enumerate(rewards):
        np.testing.assert_allclose(r, (i + 1) * want)
    env.set_attr("goal", [big + i for i in range(4)])
    for i, g in enumerate(env.get_attr("goal")):
        np.testing.assert_array_equal(g, big + i)
    env.close()


# -- failure paths -----------------------------------------------------------------------------------------


def test_an_exception_in_the_env_comes_back_with_its_type_and_the_env_named():
    env = pool()
    env.reset(seed=0)
    with pytest.raises(GoalError, match=r"no goal at t=0") as info:
        env.call("fail")
    notes = "\n".join(info.value.__notes__)
    assert "raised by env 0 in call 'fail'" in notes  # the first env, in env order
    assert "in fail" in notes and "GoalError: no goal at t=0" in notes  # the worker's traceback, from the env's frame
    assert "worker_calls.py" not in notes and "in call_env" not in notes  # the worker's own frames are cut
    with pytest.raises(KeyError, match="'lost'") as info:
        env.env_call("method", "fail", ("lost",), env_ids=[2, 1])
    assert "raised by env 2 in method 'fail'" in info.value.__notes__[0]
    with pytest.raises(EnvError, match=r"env 3 raised test_env_access.BadInitError: 1 and 2"):
        env.env_call("method", "fail", ("bad_init",), env_ids=[3])
    with pytest.raises(AttributeError, match="no attribute 'nothing'") as info:
        env.get_attr("nothing")  # gymnasium's own message, from get_wrapper_attr
    assert "raised by env 0" in info.value.__notes__[0]
    # every env answered; the pool goes on
    obs, reward, *_ = env.step(np.zeros(4, np.int64))
    assert obs[:, 0].tolist() == [1.0] * 4
    assert env.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)
    env.close()


def test_results_and_arguments_that_cannot_be_pickled():
    env = pool()
    with pytest.raises(pickle.PicklingError, match=r"env 0: the result of call 'lock' \(a _thread.lock\) cannot"):
        env.call("lock")
    with pytest.raises(TypeError, match=r"the arguments for 'push_goal' cannot be pickled"):
        env.call("push_goal", threading.Lock())
    with pytest.raises(TypeError, match=r"the value for 'goal' cannot be pickled"):
        env.set_attr("goal", threading.Lock())
    assert env.get_attr("goal") == ([0.0],) * 4  # nothing was sent
    assert env.call("push_goal", lambda: 1)[0][1]() == 1  # cloudpickle sends what pickle cannot
    env.close()


def test_a_result_of_a_class_defined_in_the_main_script_comes_back_as_that_class():
    """The worker pickles results with pickle, and with cloudpickle what pickle cannot do: here an instance of
    a class the main script defines (sent to the worker by value)."""
    for method in ("fork", "forkserver"):
        out = run_python(
            f"""
            import gymnasium as gym, numpy as np, fastvec

            class Goal:
                def __init__(self, where):
                    self.where = where

            class Env(gym.Env):
                observation_space = gym.spaces.Box(0, 1, (1,))
                action_space = gym.spaces.Discrete(2)
                def reset(self, *, seed=None, options=None):
                    return np.zeros(1, np.float32), {{}}
                def step(self, action):
                    return np.zeros(1, np.float32), 0.0, False, False, {{}}
                def goal(self, where):
                    return Goal(where)

            env = fastvec.make(Env, 2, start_method={method!r})
            got = env.call("goal", 3)
            assert all(type(g) is Goal and g.where == 3 for g in got), got
            env.close()
            print("ok")
            """
        )
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_calls_while_envs_are_in_flight():
    """gymnasium's AsyncVectorEnv refuses a call while a step is pending (AlreadyPendingCallError); Tianshou refuses
    envs that are stepping. Here: an env in flight is refused; an idle env of the same worker is answered once
    the worker has stepped the others, whose results stay for recv."""
    env = pool(batch_size=2, workers=1)
    env.async_reset()
    obs, _, _, _, info = env.recv()
    first = info["env_id"].tolist()
    with pytest.raises(RuntimeError, match=r"env \d is in flight"):
        env.get_attr("scale")  # every env: some are in flight
    env.send(np.ones(2, np.int64), first)
    rest = env.recv()[4]["env_id"].tolist()  # the other two are idle now; `first` are in flight
    with pytest.raises(RuntimeError, match=f"env {first[0]} is in flight"):
        env.env_call("get", "scale", env_ids=[rest[0], first[0]])
    assert env.env_call("get", "t", env_ids=rest) == [0, 0]
    env.env_call("set", "difficulty", (5,), env_ids=[rest[0]])
    obs, reward, *_, info = env.recv()  # the step sent before the calls, untouched by them
    assert sorted(info["env_id"].tolist()) == sorted(first)
    assert obs[:, 0].tolist() == [1.0, 1.0] and reward.tolist() == [1.0, 1.0]
    env.send(np.ones(2, np.int64), rest)
    _, reward, *_, info = env.recv()
    assert dict(zip(info["env_id"].tolist(), reward.tolist(), strict=True)) == {rest[0]: 5.0, rest[1]: 1.0}
    env.close()


def test_an_interrupted_call_leaves_the_pool_usable():
    """Ctrl-C while the envs answer: the next call gets its own answers, not the late ones of the call that was
    interrupted."""
    env = pool(workers=2)
    # Ctrl-C is KeyboardInterrupt only under Python's own handler: whatever an earlier test of this process
    # (or a library it loaded) left there, the test runs under that handler.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            env.call("interrupt_and_wait", os.getpid(), 0.5)  # each worker answers after 1 s (two envs each)
    finally:
        signal.signal(signal.SIGINT, handler)
    assert env.call("wait", 0.0) == (0.0,) * 4  # waits out the interrupted call's late answers and drops them
    assert env.get_attr("scale") == (1.0, 2.0, 3.0, 4.0)
    env.reset()
    assert env.step(np.zeros(4, np.int64))[0][:, 0].tolist() == [1.0] * 4
    env.close()


def test_a_call_request_is_written_and_taken_off_in_one_call():
    """Ctrl-C right after a request went into its worker's pipe, before the pool took it off what it has to
    send, made the next call send it again: the env ran the method twice (the test above, ~1 run in 3).
    fastvec._core.write_pending does both in one call, where no signal handler runs between them."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        pending = bytearray(b"abc" * 30_000)  # more than a pipe holds (64 KiB)
        left = fastvec._core.write_pending(w, pending)
        assert 0 < left == len(pending) < 90_000  # what went in is gone from pending
        assert fastvec._core.write_pending(w, pending) == left  # a full pipe takes nothing, and raises nothing
        got = os.read(r, 1 << 20)
        assert got + bytes(pending) == b"abc" * 30_000
        assert fastvec._core.write_pending(w, pending) == 0 and pending == bytearray()
        assert got + os.read(r, 1 << 20) == b"abc" * 30_000  # every byte once, in order
    finally:
        os.close(r)
    with pytest.raises(BrokenPipeError):  # the worker is gone
        fastvec._core.write_pending(w, bytearray(b"x"))
    os.close(w)


def test_close_is_prompt_while_a_call_waits():
    env = pool(workers=2)
    threading.Timer(0.2, env.close).start()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="closed"):
        env.call("wait", 30.0)
    assert time.monotonic() - start < 5


@pytest.mark.slow
def test_a_worker_killed_during_a_call_is_reported():
    """The first worker the call waits for dies: its side pipe then reads as hung up, again and again (under
    forkserver: a forked worker would hold a copy of the pipe of the worker made before it)."""
    env = fastvec.make(
        [lambda i=i: goal_env(scale=i + 1.0) for i in range(4)], num_workers=2, start_method="forkserver"
    )
    pid = env.worker_pids[0]
    threading.Timer(0.2, os.kill, (pid, signal.SIGKILL)).start()
    start = time.monotonic()
    with pytest.raises(WorkerDiedError, match=r"worker 0 \(pid \d+, envs 0..1\) was killed by signal 9"):
        env.call("wait", 30.0)
    assert time.monotonic() - start < 5
    env.close()


# -- native envs -----------------------------------------------------------------------------------------------


def test_native_envs_answer_the_attributes_they_have():
    env = fastvec.make("Pendulum-v1", 3, seed=0, g=9.81, max_episode_steps=100)
    spec = env.get_attr("spec")
    assert len(spec) == 3 and spec[0] == spec[2] and spec[0] is not spec[1]  # one copy each
    assert spec[0].id == "fastvec/Pendulum-v1" and spec[0].max_episode_steps == 100
    assert spec[0].kwargs == {"g": 9.81}
    assert env.get_attr("g") == (9.81,) * 3  # gymnasium's PendulumEnv has g too
    assert env.get_attr("render_mode") == (None,) * 3
    assert env.get_attr("metadata") == ({"render_modes": ["rgb_array"]},) * 3  # (gymnasium draws it: test_render)
    assert env.get_attr("observation_space") == (env.single_observation_space,) * 3
    assert env.call("action_space") == (env.single_action_space,) * 3
    again = gym.make_vec(spec[0], num_envs=2)  # the spec makes the same envs again
    assert again.get_attr("g") == (9.81,) * 2 and again.get_attr("spec")[0].max_episode_steps == 100
    again.close()
    with pytest.raises(AttributeError, match=r"^fastvec's native Pendulum-v1 has no attribute 'foo' \(it has: "):
        env.get_attr("foo")
    with pytest.raises(AttributeError, match="fastvec's native Pendulum-v1 has no Python env object"):
        env.set_attr("g", 1.0)
    with pytest.raises(TypeError, match="'g' is not callable"):
        env.env_call("method", "g")
    assert env.env_call("is_wrapped", "TimeLimit", (gym.wrappers.TimeLimit,)) == [False] * 3
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.get_attr("spec")


def test_native_defaults_and_async_pools():
    env = fastvec.make("CartPole-v1", 4, batch_size=2, seed=0)
    env.async_reset()
    env.recv()  # two envs are in flight: a native env's attributes are fixed, answered at any time
    assert env.get_attr("spec")[0].kwargs == {"sutton_barto_reward": False}
    assert env.get_attr("sutton_barto_reward") == (False,) * 4
    env.close()


CLASSIC_OPTIONS = [
    ("CartPole-v1", {}),
    ("CartPole-v1", {"sutton_barto_reward": True}),
    ("Acrobot-v1", {}),
    ("MountainCar-v0", {"goal_velocity": 0.01}),
    ("MountainCarContinuous-v0", {}),
    ("Pendulum-v1", {"g": 9.81}),
]


@pytest.mark.parametrize(("env_id", "options"), CLASSIC_OPTIONS)
def test_native_envs_answer_their_gymnasium_classes_constants(env_id, options):
    """What gymnasium's class of the env has as constants (CartPole's gravity, masscart, ..., Pendulum's g with the
    option given), a native env answers with the same values, read-only, through get_attr, call and SB3's
    get_attr; its state (CartPole's state, steps_beyond_terminated) it does not have."""
    reference = gym.make(env_id, disable_env_checker=True, **options).unwrapped
    env = fastvec.make(env_id, 2, seed=0, **options)
    names = [
        n
        for n in {**vars(type(reference)), **vars(reference)}
        if not n.startswith("_") and n != "isopen" and isinstance(getattr(reference, n), (int, float))
    ]  # (the constants of the class (Acrobot's) and of the instance; isopen is its window's state)
    assert names
    keywords = env.get_attr("spec")[0].kwargs  # the env's options (fastvec's, as floats) are answered as they are
    for name in names:
        want = getattr(reference, name)
        got = env.get_attr(name)
        assert got == (want, want) and (name in keywords or type(got[0]) is type(want)), name
    assert env.call(names[0]) == env.get_attr(names[0])  # (a value, not a method: call gives it as it is)
    with pytest.raises(AttributeError, match="no Python env object"):
        env.set_attr(names[0], 1.0)
    with pytest.raises(AttributeError, match="has no attribute 'state'"):
        env.get_attr("state")
    sb3 = fastvec.sb3_vec(env_id, 2, seed=0, **options)
    assert sb3.get_attr(names[0], indices=[1]) == [getattr(reference, names[0])]
    sb3.close()
    env.close()
    reference.close()


def test_native_call_gravity_as_gymnasiums_test_call():
    """gymnasium's test_call_async_vector_env's gravity, on native CartPoles: a tuple of one float 9.8 per env."""
    env = fastvec.make("CartPole-v1", 4)
    env.reset()
    gravity = env.call("gravity")
    env.close()
    assert isinstance(gravity, tuple)
    assert len(gravity) == 4
    for i in range(4):
        assert isinstance(gravity[i], float)
        assert gravity[i] == 9.8


def test_native_np_random_seed_is_each_envs_seed():
    """np_random_seed names each env's seed, as gymnasium's envs do, never -1: make()'s (s + i) before and after
    the first reset; without a seed, one drawn from entropy per env (distinct, kept by unseeded resets), with
    which gymnasium's own env starts the same episode; a reset's seed replaces it."""
    env = fastvec.make("CartPole-v1", 3, seed=5)
    assert env.np_random_seed == (5, 6, 7)
    env.reset()
    assert env.np_random_seed == (5, 6, 7)
    env.close()
    env = fastvec.make("CartPole-v1", 4)
    seeds = env.np_random_seed
    assert len(set(seeds)) == 4 and all(isinstance(s, int) and s >= 0 for s in seeds)
    obs, _ = env.reset()
    assert env.np_random_seed == seeds
    for i, seed in enumerate(seeds):
        want, _ = gym.make("CartPole-v1").reset(seed=seed)
        np.testing.assert_array_equal(obs[i], want)
    env.reset(seed=None)
    assert env.np_random_seed == seeds
    env.reset(seed=[1, None, 3, None])
    assert env.np_random_seed == (1, seeds[1], 3, seeds[3])
    env.close()
    other = fastvec.make("CartPole-v1", 4)
    assert set(other.np_random_seed).isdisjoint(seeds)
    other.close()


@pytest.mark.atari
def test_native_atari_answers_as_ale_pys_env():
    """A native Atari env answers what ale-py's AtariEnv has for SB3's Atari tooling: env_method(
    "get_action_meanings") as SB3's make_atari_env envs answer it (the minimal action set; the full one with
    full_action_space), and ale, a read-only stand-in whose lives() is the env's lives (info["lives"]) and whose
    modes, difficulties, action sets and screen size are the game's, as ale-py's emulator gives them."""
    import ale_py
    from stable_baselines3.common.env_util import make_atari_env

    gym.register_envs(ale_py)
    reference = make_atari_env("ALE/Breakout-v5", n_envs=2, seed=0, vec_env_cls=DummyVecEnv)
    ours = fastvec.sb3_vec("Breakout-v5", 2, seed=0)
    want = reference.env_method("get_action_meanings")
    assert ours.env_method("get_action_meanings") == want == [["NOOP", "FIRE", "RIGHT", "LEFT"]] * 2
    assert ours.env_method("get_action_meanings", indices=[1]) == want[1:]
    reference.reset()
    ours.reset()
    ale, theirs = ours.get_attr("ale")[0], reference.get_attr("ale")[0]
    assert ale.lives() == theirs.lives() == 5
    for method in ("getAvailableModes", "getAvailableDifficulties", "getMinimalActionSet", "getLegalActionSet"):
        assert getattr(ale, method)() == getattr(theirs, method)(), method
    assert ale.getScreenDims() == theirs.getScreenDims()
    reference.close()
    ours.close()
    env = fastvec.make("Breakout-v5", 2, seed=0, full_action_space=True, repeat_action_probability=0.0)
    assert len(env.call("get_action_meanings")[0]) == env.single_action_space.n == 18
    _, info = env.reset()
    actions = np.array([1, 0])
    while info["lives"][0] == 5:  # FIRE, then NOOP: the ball is missed and a life lost
        _, _, _, _, info = env.step(actions)
        actions = np.array([0, 0])
    assert [a.lives() for a in env.get_attr("ale")] == info["lives"].tolist() and info["lives"][0] == 4
    with pytest.raises(TypeError, match="'ale' is not callable"):
        env.env_call("method", "ale")
    env.close()


# -- Stable-Baselines3 -----------------------------------------------------------------------------------------


class CustomGymEnv(gym.Env):
    """SB3's tests/test_vec_envs.py CustomGymEnv."""

    def __init__(self, space, render_mode: str = "rgb_array"):
        self.action_space = space
        self.observation_space = space
        self.current_step = 0
        self.ep_length = 4
        self.render_mode = render_mode
        self.current_options: dict | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.seed(seed)
        self.current_step = 0
        self.current_options = options
        self._choose_next_state()
        return self.state, {}

    def step(self, action):
        reward = float(np.random.rand())
        self._choose_next_state()
        self.current_step += 1
        terminated = False
        truncated = self.current_step >= self.ep_length
        return self.state, reward, terminated, truncated, {}

    def _choose_next_state(self):
        self.state = self.observation_space.sample()

    def render(self):
        if self.render_mode == "rgb_array":
            return np.zeros((4, 4, 3))

    def seed(self, seed=None):
        if seed is not None:
            np.random.seed(seed)
            self.observation_space.seed(seed)

    @staticmethod
    def custom_method(dim_0=1, dim_1=1):
        return np.ones((dim_0, dim_1))


def make_custom_env():
    # (float32 bounds: SB3's float64 ones make gymnasium warn, and warnings are errors here)
    return Monitor(CustomGymEnv(gym.spaces.Box(low=np.zeros(2, np.float32), high=np.ones(2, np.float32))))


def sb3_vec_env(kind, env_fns):
    if kind == "fastvec":
        return fastvec.sb3_vec(env_fns, start_method="fork", num_workers=2)
    if kind == "SubprocVecEnv":
        return SubprocVecEnv(env_fns, start_method="fork")
    return DummyVecEnv(env_fns)


@pytest.mark.parametrize("kind", ["DummyVecEnv", "SubprocVecEnv", "fastvec"])
@pytest.mark.parametrize("vec_env_wrapper", [None, VecNormalize, VecFrameStack])
def test_vecenv_custom_calls(kind, vec_env_wrapper):
    """SB3's test_vecenv_custom_calls, the same assertions for SB3's two VecEnvs and fastvec's, up to its
    set_options part (reset options reaching the envs is another item of issue 15)."""
    vec_env = sb3_vec_env(kind, [make_custom_env for _ in range(N_ENVS)])
    if vec_env_wrapper is not None:
        vec_env = vec_env_wrapper(vec_env, n_stack=2) if vec_env_wrapper == VecFrameStack else vec_env_wrapper(vec_env)

    vec_env.seed(0)
    array_explicit_mode = vec_env.render(mode="rgb_array")
    array_implicit_mode = vec_env.render()
    assert np.array_equal(array_implicit_mode, array_explicit_mode)
    with pytest.warns(UserWarning):
        vec_env.render(mode="something_else")

    assert not vec_env.has_attr("dummy")
    vec_env.set_attr("dummy", 12)  # on the last wrapper only
    assert vec_env.get_attr("dummy") == [12] * N_ENVS
    assert not vec_env.has_attr("dummy2")
    vec_env.env_method("set_wrapper_attr", "dummy2", 2)
    assert vec_env.get_attr("dummy2") == [2] * N_ENVS

    env_method_results = vec_env.env_method("custom_method", 1, indices=None, dim_1=2)
    setattr_results = []
    for env_idx in range(N_ENVS):
        setattr_results.append(vec_env.set_attr("dummy1", env_idx, indices=env_idx))
    assert vec_env.has_attr("dummy1")
    getattr_results = vec_env.get_attr("dummy1")
    assert len(env_method_results) == len(setattr_results) == len(getattr_results) == N_ENVS
    for env_idx in range(N_ENVS):
        assert (env_method_results[env_idx] == np.ones((1, 2))).all()
        assert setattr_results[env_idx] is None
        assert getattr_results[env_idx] == env_idx

    env_method_subset = vec_env.env_method("custom_method", 1, indices=[0, 2], dim_1=3)
    assert (env_method_subset[0] == np.ones((1, 3))).all()
    assert (env_method_subset[1] == np.ones((1, 3))).all()
    assert len(env_method_subset) == 2

    setattr_result = vec_env.set_attr("dummy1", 42, indices=None)
    getattr_result = vec_env.get_attr("dummy1")
    assert setattr_result is None
    assert getattr_result == [42 for _ in range(N_ENVS)]

    vec_env.reset()
    setattr_result = vec_env.env_method("set_wrapper_attr", "current_step", 12, indices=[0, 1])
    getattr_result = vec_env.get_attr("current_step")
    getattr_result_subset = vec_env.get_attr("current_step", indices=[0, 1])
    assert setattr_result == [True, True]
    assert getattr_result == [12 for _ in range(2)] + [0 for _ in range(N_ENVS - 2)]
    assert getattr_result_subset == [12, 12]
    assert vec_env.get_attr("current_step", indices=[0, 2]) == [12, 0]

    vec_env.reset()
    setattr_result = vec_env.env_method("set_wrapper_attr", "current_step", 12, indices=[0, -1])
    getattr_result = vec_env.get_attr("current_step")
    assert setattr_result == [True, True]
    assert getattr_result == [12] + [0 for _ in range(N_ENVS - 2)] + [12]
    assert vec_env.get_attr("current_step", indices=[-1]) == [12]

    assert vec_env.get_attr("current_options")[0] is None
    vec_env.close()


@pytest.mark.parametrize("kind", ["DummyVecEnv", "SubprocVecEnv", "fastvec"])
def test_sb3_set_attr_sets_the_outermost_wrapper_and_errors_are_the_envs(kind):
    vec_env = sb3_vec_env(kind, [make_custom_env for _ in range(N_ENVS)])
    vec_env.reset()
    vec_env.set_attr("current_step", 3, indices=[1])  # SB3: on the Monitor; the env's own counter is not touched
    assert vec_env.get_attr("current_step") == [0, 3, 0]
    assert vec_env.env_method("get_wrapper_attr", "current_step") == [0, 3, 0]
    assert [e.current_step for e in vec_env.get_attr("unwrapped")] == [0, 0, 0]
    with pytest.raises(IndexError):
        vec_env.get_attr("current_step", indices=[N_ENVS])
    if kind != "SubprocVecEnv":  # (SubprocVecEnv's worker dies of an exception in the env)
        with pytest.raises(TypeError, match="not callable"):
            vec_env.env_method("ep_length")  # env_method calls what it gets, callable or not
        with pytest.raises(AttributeError, match="no_such_method"):
            vec_env.env_method("no_such_method")
        assert vec_env.get_attr("ep_length") == [4] * N_ENVS  # usable afterwards
    vec_env.close()


def test_sb3_render_mode_and_metadata_come_from_the_envs():
    ours = fastvec.sb3_vec([make_custom_env] * 2, start_method="fork")
    ref = SubprocVecEnv([make_custom_env] * 2, start_method="fork")
    assert ours.render_mode == ref.render_mode == "rgb_array"
    assert ours.metadata == ref.metadata == {"render_modes": ["human", "rgb_array"]}
    ours.reset()
    ref.reset()
    for a, b in zip(ours.get_images(), ref.get_images(), strict=True):
        np.testing.assert_array_equal(a, b)
    ours.close()
    ref.close()
    native = fastvec.sb3_vec("CartPole-v1", 2, seed=0)
    assert native.render_mode is None and native.metadata == {"render_modes": []}  # (SB3's, from render_mode)
    native.close()


def test_sb3_env_is_wrapped_reports_the_real_wrappers():
    """The envs' own wrappers, as DummyVecEnv reports them (a list of callables adds no Monitor by default, as
    SubprocVecEnv); monitor=True (fastvec adds Monitor's episode info itself) reports Monitor for every env on top
    of that."""
    fns = [
        lambda: Monitor(gym.wrappers.TimeLimit(GoalEnv(), 10)),
        lambda: gym.wrappers.TimeLimit(GoalEnv(), 10),
        GoalEnv,
    ]
    ref = DummyVecEnv(fns)
    plain = fastvec.sb3_vec(fns, start_method="fork")
    monitored = fastvec.sb3_vec(fns, monitor=True, start_method="fork")
    for cls in (Monitor, gym.wrappers.TimeLimit, gym.Wrapper, gym.wrappers.ClipReward):
        assert plain.env_is_wrapped(cls) == ref.env_is_wrapped(cls)
        assert plain.env_is_wrapped(cls, indices=[2, 0]) == ref.env_is_wrapped(cls, indices=[2, 0])
    assert plain.env_is_wrapped(Monitor) == [True, False, False]
    assert monitored.env_is_wrapped(Monitor) == [True, True, True]
    assert monitored.env_is_wrapped(gym.wrappers.TimeLimit) == [True, True, False]
    assert monitored.env_is_wrapped(gym.Wrapper, indices=-1) == [True]  # Monitor is a gym.Wrapper
    for env in (ref, plain, monitored):
        env.close()


def test_sb3_monitor_false_passes_the_envs_own_monitor_episode_info():
    """An env the user wrapped in Monitor reports it (monitor=False), so SB3's evaluate_policy counts episodes by
    Monitor's episode info: that info reaches SB3, as DummyVecEnv passes it, and evaluate_policy agrees."""
    from stable_baselines3.common.evaluation import evaluate_policy

    class Zeros:  # a policy: evaluate_policy needs only predict
        def predict(self, obs, state=None, episode_start=None, deterministic=False):
            return np.zeros(len(obs), np.int64), None

    fns = [lambda i=i: Monitor(gym.wrappers.TimeLimit(GoalEnv(scale=i + 1.0), 5 + i)) for i in range(2)]
    ours = fastvec.sb3_vec(fns, monitor=False, start_method="fork")
    ref = DummyVecEnv(fns)
    assert ours.env_is_wrapped(Monitor) == ref.env_is_wrapped(Monitor) == [True, True]
    ours.reset()
    ref.reset()
    for _ in range(6):
        *_, got = ours.step(np.zeros(2, np.int64))
        *_, want = ref.step(np.zeros(2, np.int64))
        for g, w in zip(got, want, strict=True):
            assert ("episode" in g) == ("episode" in w)
            if "episode" in w:
                assert (g["episode"]["r"], g["episode"]["l"]) == (w["episode"]["r"], w["episode"]["l"])
                assert isinstance(g["episode"]["r"], float) and isinstance(g["episode"]["l"], int)
    assert evaluate_policy(Zeros(), ours, n_eval_episodes=4, return_episode_rewards=True) == evaluate_policy(
        Zeros(), ref, n_eval_episodes=4, return_episode_rewards=True
    )
    ours.close()
    ref.close()


@pytest.mark.slow
def test_her_reaches_compute_reward_through_env_method():
    """HerReplayBuffer relabels goals with env_method("compute_reward", ..., indices=[0]): a short DQN + HER run
    on SB3's BitFlippingEnv, and its rewards as the env computes them."""
    from stable_baselines3 import DQN, HerReplayBuffer
    from stable_baselines3.common.envs import BitFlippingEnv

    env = fastvec.sb3_vec([lambda: BitFlippingEnv(n_bits=4, max_steps=4)], start_method="fork")
    reference = BitFlippingEnv(n_bits=4, max_steps=4)
    achieved = np.array([[0, 1, 0, 1], [1, 1, 1, 1]], dtype=np.int64)
    desired = np.array([[0, 1, 0, 1], [0, 0, 0, 0]], dtype=np.int64)
    got = env.env_method("compute_reward", achieved, desired, [{}, {}], indices=[0])
    np.testing.assert_array_equal(got[0], reference.compute_reward(achieved, desired, [{}, {}]))
    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 2, "goal_selection_strategy": "future"},
        learning_starts=40,
        train_freq=4,
        seed=0,
    )
    model.learn(120)
    sample = model.replay_buffer.sample(32)
    recomputed = reference.compute_reward(
        sample.next_observations["achieved_goal"].numpy(), sample.observations["desired_goal"].numpy(), [{}] * 32
    )
    np.testing.assert_array_equal(sample.rewards.numpy().ravel(), recomputed)
    env.close()


# -- Tianshou --------------------------------------------------------------------------------------------------


def test_tianshou_get_and_set_env_attr_as_dummy_vector_env():
    fns = [lambda i=i: goal_env(scale=i + 1.0) for i in range(4)]
    ours = fastvec.tianshou_venv(fns, start_method="fork", num_workers=2)
    ref = DummyVectorEnv(fns)
    for envs in (ours, ref):
        envs.reset()
        assert envs.get_env_attr("scale") == [1.0, 2.0, 3.0, 4.0]
        assert envs.get_env_attr("scale", 2) == [3.0]
        assert envs.get_env_attr("scale", np.array([3, 1])) == [4.0, 2.0]
        envs.set_env_attr("difficulty", 7, id=[1, 2])  # on env.unwrapped: the env's step sees it
        assert envs.get_env_attr("difficulty") == [1, 7, 7, 1]
        _, rew, *_ = envs.step(np.zeros(4, np.int64))
        assert rew.tolist() == [1.0, 7.0, 7.0, 1.0]
        envs.set_env_attr("new_attr", "n")
        assert envs.get_env_attr("new_attr") == ["n"] * 4
        assert envs.spec == [None] * 4  # (GoalEnv is not registered)
        assert envs.metadata == [GoalEnv.metadata] * 4
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        ours.get_env_attr("nothing")
    ours.close()
    ref.close()
    with pytest.raises(RuntimeError, match="after close"):
        ours.get_env_attr("scale")
    # spec and metadata: SubprocVectorEnv reads the outermost wrapper's (DummyVectorEnv reads env.unwrapped's, a
    # spec without the TimeLimit's max_episode_steps)
    ours = fastvec.tianshou_venv([lambda: gym.make("CartPole-v1")] * 2, start_method="fork")
    ref = SubprocVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    assert ours.spec == ref.spec and ours.spec[0].id == "CartPole-v1" and ours.spec[0].max_episode_steps == 500
    assert ours.metadata == ref.metadata and ours.metadata[0]["render_fps"] == 50
    ours.close()
    ref.close()


def test_tianshou_async_refuses_stepping_envs_only():
    envs = fastvec.tianshou_venv(
        [lambda i=i: goal_env(scale=i + 1.0) for i in range(4)], batch_size=2, start_method="fork", num_workers=1
    )
    envs.reset()
    envs.step(np.zeros(4, np.int64))  # returns 2 envs; the other 2 are still stepping
    stepping, ready = envs.waiting_id, envs.ready_id
    assert len(stepping) == 2
    with pytest.raises(RuntimeError, match=f"env {stepping[0]} is in flight"):
        envs.get_env_attr("scale", stepping[0])
    assert envs.get_env_attr("scale", ready) == [r + 1.0 for r in ready]
    envs.step(None)
    assert envs.get_env_attr("t") == [1, 1, 1, 1]
    envs.close()


def test_constructors_returning_one_shared_instance_are_refused_as_sb3_refuses_them():
    """SB3's DummyVecEnv raises ValueError when env_fns return one instance; so does the Python-env pool for the
    envs a worker makes, instead of stepping one env as several."""
    shared = gym.make("CartPole-v1")
    with pytest.raises(ValueError, match="same instance instead of creating different objects"):
        fastvec.make([lambda: shared] * 3, num_workers=1, start_method="fork")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    with pytest.raises(ValueError, match="same instance instead of creating different objects"):
        DummyVecEnv([lambda: shared] * 3)
    with fastvec.make([lambda: gym.make("CartPole-v1")] * 3, num_workers=1, start_method="fork") as env:
        assert env.reset(seed=0)[0].shape == (3, 4)
